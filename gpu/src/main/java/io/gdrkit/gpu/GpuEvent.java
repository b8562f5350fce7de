package io.gdrkit.gpu;

/** A marker recorded on a stream; completes when all work before it on that stream has completed. */
public interface GpuEvent {
    GpuDevice device();
}
