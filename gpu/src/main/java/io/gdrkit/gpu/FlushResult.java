/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

/**
 * What {@code flushGpuDirectRdmaWrites} did.
 *
 * @param scope    the scope asked for
 * @param noOp     true when the device's writes ordering already covers the scope, so nothing had to be done
 * @param flushed  how many posted writes were made visible by this call (simulated GPU; 0 for real CUDA, which
 *                 does not say)
 * @param evidence why: the ordering attribute value, the call made and its result
 */
public record FlushResult(FlushScope scope, boolean noOp, long flushed, String evidence) {
}
