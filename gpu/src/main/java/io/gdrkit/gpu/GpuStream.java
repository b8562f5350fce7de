package io.gdrkit.gpu;

/** An ordered queue of GPU work: copies, launches and event records run in submission order. */
public interface GpuStream {
    /** The GPU this stream belongs to. */
    GpuDevice device();
}
