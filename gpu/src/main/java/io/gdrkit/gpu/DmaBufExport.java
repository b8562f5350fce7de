/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

/**
 * The outcome of exporting device memory as a DMA-BUF file descriptor
 * ({@code cuMemGetHandleForAddressRange} with {@code CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD}).
 *
 * @param supported false when the device or driver cannot export; {@code fd} is then -1
 * @param fd        the file descriptor (owned by the caller, close it), or -1
 * @param evidence  attribute 124's value, the call and its result
 */
public record DmaBufExport(boolean supported, int fd, String evidence) {
}
