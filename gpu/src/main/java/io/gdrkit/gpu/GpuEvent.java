/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

/** A marker recorded on a stream; completes when all work before it on that stream has completed. */
public interface GpuEvent {
    GpuDevice device();
}
