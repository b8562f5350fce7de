package io.gdrkit.labs.shmem;

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
 *   192  error     (u64)  0, or (status + 1) | pe << 16 of the first failed completion
 * record of ticket t at 256 + 64 * (t mod depth):
 *     0  seq       (u64)  t + 1, the GPU's release store after the other fields
 *     8  op (u8)  9 signal op (u8)  10 pe (u16)  12 length (u32)
 *    16  dst offset (u64)   24 src offset (u64)   32 value / compare (u64)   40 swap (u64)
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
