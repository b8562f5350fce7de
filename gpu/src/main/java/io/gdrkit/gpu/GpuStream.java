/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

/** An ordered queue of GPU work: copies, launches and event records run in submission order. */
public interface GpuStream {
    /** The GPU this stream belongs to. */
    GpuDevice device();
}
