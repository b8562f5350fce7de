/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The IBRC request ring in pinned host memory: GPU threads write requests, the CPU proxy reads them and writes
 * its progress back. kernels.cu's {@code proxy_post} uses the same layout.
 *
 * <pre>
 * header (256 bytes, counters on their own cache lines):
 *     0  tail      (u64)  tickets taken by GPU threads (atomic add)
 *    64  consumed  (u64)  requests the proxy has read (the proxy's release store)
 *   128  completed (u64)  requests whose completions the proxy has seen
 *   192  error     (u64)  0, or the first error: (status + 1) | pe << 16 of a failed completion, or
 *                          0xFFFF | field << 16 | (u32) value << 24 of a request refused (field: 1 PE, 2 op,
 *                          3 signal op, 4 length; see {@link #check})
 * record of ticket t at 256 + 64 * (t mod depth):
 *     0  seq       (u64)  t + 1, the GPU's release store after the other fields
 *     8  op (u8)  9 signal op (u8)  10 pe (u16)  12 length (u32)
 *    16  dst offset (u64)   24 src offset (u64)   32 value / compare (u64)   40 swap (u64)
 *        a put of 1 to 16 bytes may carry its data in 32..47 (little-endian), signal op {@link #INLINE} then
 *    48  signal offset (u64)                      56 issue stamp (u64, the GPU's clock)
 * done of ticket t at 256 + 64 * depth + 8 * (t mod depth): (u64) t + 1 once complete (proxy's release store)
 * </pre>
 */
final class ProxyRing {
    static final long TAIL = 0;
    static final long CONSUMED = 64;
    static final long COMPLETED = 128;
    static final long ERROR = 192;
    static final int HEADER = 256;
    static final int RECORD = 64;
    /** A put's signal-op byte when its data (1 to {@link #INLINE_MAX} bytes) is in the record's words 32 and 40. */
    static final int INLINE = 0x40;
    static final int INLINE_MAX = 16;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    final MemorySegment mem;
    final int depth;
    private final long doneBase;

    ProxyRing(final MemorySegment mem, final int depth) {
        this.mem = mem;
        this.depth = depth;
        this.doneBase = HEADER + (long) RECORD * depth;
        mem.fill((byte) 0);
    }

    /** Low 16 bits of an error word that says a request was refused (a completion status + 1 never is). */
    static final int REFUSED = 0xFFFF;
    static final int FIELD_PE = 1;
    static final int FIELD_OP = 2;
    static final int FIELD_SIGNAL_OP = 3;
    static final int FIELD_LENGTH = 4;

    /**
     * Proxy side: checks the GPU-written fields of the record at {@code r} (untrusted: a kernel may write anything)
     * before any is used as an index or a size. 0 when the request is well formed, else its error word.
     */
    static long check(final MemorySegment m, final long r, final int nPes) {
        final int op = m.get(ValueLayout.JAVA_BYTE, r + 8);
        final int sigOp = m.get(ValueLayout.JAVA_BYTE, r + 9);
        final int pe = m.get(ValueLayout.JAVA_SHORT, r + 10);
        final int len = m.get(ValueLayout.JAVA_INT, r + 12);
        if (pe < 0 || pe >= nPes) {
            return refused(FIELD_PE, pe);
        }
        if (op < Op.PUT || op > Op.COMPARE_SWAP) {
            return refused(FIELD_OP, op);
        }
        if (op == Op.PUT_SIGNAL && sigOp != SignalOp.SET.ordinal() && sigOp != SignalOp.ADD.ordinal()) {
            return refused(FIELD_SIGNAL_OP, sigOp);
        }
        if (len < 0 || len > ShmemPe.MAX_LEN) {
            return refused(FIELD_LENGTH, len);
        }
        if (op != Op.PUT_SIGNAL && sigOp != 0 && !(op == Op.PUT && sigOp == INLINE)) {
            return refused(FIELD_SIGNAL_OP, sigOp);
        }
        if (sigOp == INLINE && (len < 1 || len > INLINE_MAX)) {
            return refused(FIELD_LENGTH, len);
        }
        return 0;
    }

    private static long refused(final int field, final int value) {
        return REFUSED | (long) field << 16 | (value & 0xFFFFFFFFL) << 24;
    }

    /** The named error of a non-zero error word (a refused request or a failed completion). */
    static ShmemException error(final long e) {
        if ((e & 0xFFFF) == REFUSED) {
            final int field = (int) (e >>> 16) & 0xFF;
            final int value = (int) (e >>> 24);
            final String what = switch (field) {
                case FIELD_PE -> "PE " + value;
                case FIELD_OP -> "operation " + value;
                case FIELD_SIGNAL_OP -> "signal operation " + value;
                default -> "length " + value;
            };
            return new ShmemException(field == FIELD_PE ? ShmemException.Reason.PE_OUT_OF_RANGE
                : ShmemException.Reason.BAD_ARGUMENT, "the proxy refused a request from the GPU: " + what
                + " is out of range");
        }
        return new ShmemException(ShmemException.Reason.OPERATION_FAILED, "the proxy saw a completion with "
            + io.gdrkit.verbs.WcStatus.name((int) (e & 0xFFFF) - 1) + " for PE " + (e >>> 16));
    }

    static long bytes(final int depth) {
        return HEADER + (long) RECORD * depth + 8L * depth;
    }

    long record(final long ticket) {
        return HEADER + (ticket & (depth - 1)) * RECORD;
    }

    long get(final long off) {
        return (long) LONG.getAcquire(mem, off);
    }

    void put(final long off, final long v) {
        LONG.setRelease(mem, off, v);
    }

    long take() {
        return (long) LONG.getAndAdd(mem, TAIL, 1L);
    }

    long doneOf(final long ticket) {
        return get(doneBase + (ticket & (depth - 1)) * 8);
    }

    void done(final long ticket) {
        put(doneBase + (ticket & (depth - 1)) * 8, ticket + 1);
    }

    /** GPU side: fills the record of {@code ticket} and publishes it with its seq word. */
    void write(final long ticket, final int op, final int sigOp, final int pe, final int len, final long dst,
               final long src, final long a, final long b, final long sig, final long stamp) {
        final long r = record(ticket);
        mem.set(ValueLayout.JAVA_BYTE, r + 8, (byte) op);
        mem.set(ValueLayout.JAVA_BYTE, r + 9, (byte) sigOp);
        mem.set(ValueLayout.JAVA_SHORT, r + 10, (short) pe);
        mem.set(ValueLayout.JAVA_INT, r + 12, len);
        mem.set(ValueLayout.JAVA_LONG, r + 16, dst);
        mem.set(ValueLayout.JAVA_LONG, r + 24, src);
        mem.set(ValueLayout.JAVA_LONG, r + 32, a);
        mem.set(ValueLayout.JAVA_LONG, r + 40, b);
        mem.set(ValueLayout.JAVA_LONG, r + 48, sig);
        mem.set(ValueLayout.JAVA_LONG, r + 56, stamp);
        put(r, ticket + 1);
    }
}
