/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * perftest's data validation for a bandwidth run on the in-JVM fabric (host memory): before the run the source
 * buffer gets a seeded pattern and the destination is zeroed; after it the destination's first {@code size} bytes
 * must equal the source's. WRITE and SEND move A's buffer to B, READ moves B's to A.
 */
public final class DataCheck {
    private DataCheck() {
    }

    /** What was compared and where the first difference is (-1: none). */
    public record Result(boolean byteExact, long mismatchAt, long bytes, String evidence) {
    }

    /** Fills the source with the pattern of {@code seed} and zeroes the destination. */
    public static void prepare(final Loopback lb, final PerfConfig cfg, final long seed) {
        final MemorySegment src = source(lb, cfg);
        final MemorySegment dst = destination(lb, cfg);
        long x = seed;
        for (long i = 0; i < src.byteSize(); i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            src.set(ValueLayout.JAVA_BYTE, i, (byte) (x >>> 56));
        }
        dst.fill((byte) 0);
    }

    /** Compares the destination with the source after the run. */
    public static Result verify(final Loopback lb, final PerfConfig cfg) {
        final MemorySegment src = source(lb, cfg);
        final MemorySegment dst = destination(lb, cfg);
        final long at = src.mismatch(dst);
        final String dir = cfg.test().opcode == io.gdrkit.verbs.WrOpcode.RDMA_READ ? "B -> A" : "A -> B";
        return new Result(at == -1, at, src.byteSize(), (at == -1 ? "byte-exact: " : "MISMATCH at byte " + at + ": ")
            + src.byteSize() + " bytes " + dir + " compared after the run, seeded pattern");
    }

    private static MemorySegment source(final Loopback lb, final PerfConfig cfg) {
        final Loopback.Side s = cfg.test().opcode == io.gdrkit.verbs.WrOpcode.RDMA_READ ? lb.b : lb.a;
        return s.buf.asSlice(0, cfg.size());
    }

    private static MemorySegment destination(final Loopback lb, final PerfConfig cfg) {
        final Loopback.Side s = cfg.test().opcode == io.gdrkit.verbs.WrOpcode.RDMA_READ ? lb.a : lb.b;
        return s.buf.asSlice(0, cfg.size());
    }
}
