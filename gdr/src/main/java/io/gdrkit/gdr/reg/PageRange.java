/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

/**
 * A byte range widened to whole pages, as both NCCL registration caches do before lookup: the start rounded
 * down and the end rounded up to the page size.
 *
 * @param addr  the first byte of the first page
 * @param pages the number of pages
 */
record PageRange(long addr, long pages) {

    static PageRange of(final long addr, final long len, final long pageSize) {
        if (addr < 0) {
            throw new IllegalArgumentException("address must be non-negative: 0x" + Long.toHexString(addr));
        }
        if (len <= 0) {
            throw new IllegalArgumentException("length must be positive: " + len);
        }
        final long end;
        try {
            end = Math.addExact(addr, len);
        } catch (final ArithmeticException ex) {
            throw new IllegalArgumentException("range overflows: addr=0x" + Long.toHexString(addr) + " len=" + len, ex);
        }
        final long begin = addr & -pageSize;
        return new PageRange(begin, Math.ceilDiv(end - begin, pageSize));
    }

    static long checkPageSize(final long pageSize) {
        if (pageSize <= 0 || Long.bitCount(pageSize) != 1) {
            throw new IllegalArgumentException("page size must be a positive power of two: " + pageSize);
        }
        return pageSize;
    }
}
