/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import io.gdrkit.gpu.Pattern;
import io.gdrkit.gpu.VisKernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;

/**
 * The Java twins of the PTX kernels in {@code io/gdrkit/gpu/cuda/kernels.cu} (module {@code "kernels"}), with the same
 * names and parameters, so that experiment code launches the same kernels on a simulated and a real GPU.
 *
 * <p>Result buffers of verify_pattern and poll_flag_verify ({@code unsigned long long result[4]}): [0] mismatching
 * bytes, [1] index of the first mismatch (the host sets it to -1 before the launch), [2] 1 when a poll timed out,
 * [3] polls made. The visibility consumers (vis_*) have their own layouts: see {@link VisKernels}.
 */
public final class SimKernels {
    public static final String MODULE = "kernels";

    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);
    private static final int CHUNK = 4096;

    private SimKernels() {
    }

    /** {@code fill_pattern(unsigned char* buf, u64 n, u32 round, u32 seed)}: writes {@link Pattern#at} everywhere. */
    public static final SimFunction FILL_PATTERN = new SimFunction("fill_pattern", ctx -> {
        final DeviceView buf = ctx.view(0);
        final long n = ctx.u64(1);
        final int round = ctx.u32(2);
        final int seed = ctx.u32(3);
        final long from = n * ctx.blockIdx() / ctx.grid().count();
        final long to = n * (ctx.blockIdx() + 1) / ctx.grid().count();
        for (long i = from; i < to; i++) {
            buf.putByte(i, Pattern.at(i, round, seed));
        }
    });

    /** {@code verify_pattern(const unsigned char* buf, u64 n, u32 round, u32 seed, u64* result)}. */
    public static final SimFunction VERIFY_PATTERN = new SimFunction("verify_pattern", ctx -> {
        verifyRange(ctx, ctx.view(0), ctx.u64(1), ctx.u32(2), ctx.u32(3), ctx.view(4), 4);
    });

    /**
     * {@code poll_flag_verify(const volatile u32* flag, u32 expect, u64 max_polls, const unsigned char* buf, u64 n,
     * u32 round, u32 seed, u64* result)}: a persistent consumer. Polls the flag until it is at least {@code expect}
     * (or {@code max_polls} polls, then result[2] = 1), then verifies the buffer.
     */
    public static final SimFunction POLL_FLAG_VERIFY = new SimFunction("poll_flag_verify", ctx -> {
        final DeviceView flag = ctx.view(0);
        final int expect = ctx.u32(1);
        final long maxPolls = ctx.u64(2);
        final DeviceView result = ctx.view(7);
        long polls = 0;
        boolean seen = false;
        while (polls < maxPolls && !ctx.stopRequested()) {
            polls++;
            if (Integer.compareUnsigned(flag.getIntAcquire(0), expect) >= 0) {
                seen = true;
                break;
            }
            // SM threads share two host cores with the NIC in CI: give way now and then
            if ((polls & 63) == 0) {
                Thread.yield();
            } else {
                Thread.onSpinWait();
            }
        }
        synchronized (((SimDeviceBuffer) ctx.args().buffer(7))) {
            if (!seen) {
                result.putLong(16, 1);
            }
            result.putLong(24, result.getLong(24) + polls);
        }
        if (seen) {
            verifyRange(ctx, ctx.view(3), ctx.u64(4), ctx.u32(5), ctx.u32(6), result, 7);
        }
    });

    /**
     * {@code vis_verify(const u8* buf, u64 n, u32 round, u32 seed, u64* result)}: block b checks its contiguous share
     * of {@code [0, n)} and merges into result as the CUDA kernel's per-block atomics do: [0] += bad, [1] = min first
     * bad position (~0 none), [2] = max(1 + position holding this round's byte) (0 none), [3] += bad bytes holding
     * round - 1's byte. See {@link VisKernels}.
     */
    public static final SimFunction VIS_VERIFY = new SimFunction(VisKernels.VERIFY, ctx -> {
        final long n = ctx.u64(1);
        final long from = n * ctx.blockIdx() / ctx.grid().count();
        final long to = n * (ctx.blockIdx() + 1) / ctx.grid().count();
        final long[] c = visCount(ctx.view(0), from, to, ctx.u32(2), ctx.u32(3));
        final DeviceView result = ctx.view(4);
        synchronized (((SimDeviceBuffer) ctx.args().buffer(4))) {
            result.putLong(0, result.getLong(0) + c[VisKernels.BAD]);
            if (Long.compareUnsigned(c[VisKernels.FIRST], result.getLong(8)) < 0) {
                result.putLong(8, c[VisKernels.FIRST]);
            }
            if (Long.compareUnsigned(c[VisKernels.LAST], result.getLong(16)) > 0) {
                result.putLong(16, c[VisKernels.LAST]);
            }
            result.putLong(24, result.getLong(24) + c[VisKernels.PREV]);
        }
    });

    /**
     * {@code vis_persistent_plain(const u32* flags, const u64* bufs, u32 senders, u64 n, u32 rounds, u32 seed,
     * u64 timeout_ns, u64* res)}. The three persistent twins are the same kernel: each polls with an acquire load,
     * because Java has nothing like a GPU compiler hoisting a plain load out of a loop or an L1 serving a stale line;
     * what differs between the variants exists only on CUDA. See {@link #persistent}.
     */
    public static final SimFunction VIS_PERSISTENT_PLAIN = persistent(VisKernels.Poll.PLAIN);
    /** {@code vis_persistent_volatile}: as {@link #VIS_PERSISTENT_PLAIN}. */
    public static final SimFunction VIS_PERSISTENT_VOLATILE = persistent(VisKernels.Poll.VOLATILE);
    /** {@code vis_persistent_acquire}: as {@link #VIS_PERSISTENT_PLAIN}. */
    public static final SimFunction VIS_PERSISTENT_ACQUIRE = persistent(VisKernels.Poll.ACQUIRE);

    /**
     * {@code coll_reduce(u8* dst, u64 dst_off, const u8* src, u64 src_off, u64 count, u32 type, u32 op)}
     * ({@link io.gdrkit.gpu.ReduceKernel}): block b of the grid reduces its share of the elements on its SM worker.
     */
    public static final SimFunction COLL_REDUCE = new SimFunction(io.gdrkit.gpu.ReduceKernel.NAME, ctx -> {
        final DeviceView dst = ctx.view(0);
        final long dstOff = ctx.u64(1);
        final DeviceView src = ctx.view(2);
        final long srcOff = ctx.u64(3);
        final long count = ctx.u64(4);
        final int type = ctx.u32(5);
        final int op = ctx.u32(6);
        final int es = io.gdrkit.gpu.ReduceKernel.size(type);
        final long from = count * ctx.blockIdx() / ctx.grid().count();
        final long to = count * (ctx.blockIdx() + 1) / ctx.grid().count();
        if (to <= from) {
            return;
        }
        final long len = (to - from) * es;
        try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
            final MemorySegment d = a.allocate(len, 8);
            final MemorySegment s = a.allocate(len, 8);
            dst.read(dstOff + from * es, d, 0, len);
            src.read(srcOff + from * es, s, 0, len);
            reduceHost(d, s, to - from, type, op);
            long i = 0;
            for (; i + 8 <= len; i += 8) {
                dst.putLong(dstOff + from * es + i, d.get(LONG, i));
            }
            for (; i < len; i++) {
                dst.putByte(dstOff + from * es + i, d.get(ValueLayout.JAVA_BYTE, i));
            }
        }
    });

    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(
        java.nio.ByteOrder.LITTLE_ENDIAN);

    /** The element loop of {@link #COLL_REDUCE} on the block's copy: d[i] = op(d[i], s[i]). */
    static void reduceHost(final MemorySegment d, final MemorySegment s, final long n, final int type, final int op) {
        for (long i = 0; i < n; i++) {
            switch (type) {
                case io.gdrkit.gpu.ReduceKernel.INT8 -> d.set(ValueLayout.JAVA_BYTE, i, (byte) redLong(
                    d.get(ValueLayout.JAVA_BYTE, i), s.get(ValueLayout.JAVA_BYTE, i), op));
                case io.gdrkit.gpu.ReduceKernel.INT32 -> d.set(ValueLayout.JAVA_INT_UNALIGNED, i * 4, (int) redLong(
                    d.get(ValueLayout.JAVA_INT_UNALIGNED, i * 4), s.get(ValueLayout.JAVA_INT_UNALIGNED, i * 4), op));
                case io.gdrkit.gpu.ReduceKernel.INT64 -> d.set(LONG, i * 8, redLong(d.get(LONG, i * 8),
                    s.get(LONG, i * 8), op));
                case io.gdrkit.gpu.ReduceKernel.FLOAT32 -> d.set(ValueLayout.JAVA_FLOAT_UNALIGNED, i * 4, redFloat(
                    d.get(ValueLayout.JAVA_FLOAT_UNALIGNED, i * 4), s.get(ValueLayout.JAVA_FLOAT_UNALIGNED, i * 4), op));
                case io.gdrkit.gpu.ReduceKernel.FLOAT64 -> {
                    final double a = d.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, i * 8);
                    final double b = s.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, i * 8);
                    d.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, i * 8, switch (op) {
                        case io.gdrkit.gpu.ReduceKernel.SUM -> a + b;
                        case io.gdrkit.gpu.ReduceKernel.PROD -> a * b;
                        case io.gdrkit.gpu.ReduceKernel.MIN -> b < a ? b : a;
                        default -> a < b ? b : a;
                    });
                }
                case io.gdrkit.gpu.ReduceKernel.FLOAT16 -> d.set(SHORT, i * 2, Float.floatToFloat16(redFloat(
                    Float.float16ToFloat(d.get(SHORT, i * 2)), Float.float16ToFloat(s.get(SHORT, i * 2)), op)));
                case io.gdrkit.gpu.ReduceKernel.BFLOAT16 -> d.set(SHORT, i * 2, toBf16(redFloat(
                    Float.intBitsToFloat((d.get(SHORT, i * 2) & 0xffff) << 16),
                    Float.intBitsToFloat((s.get(SHORT, i * 2) & 0xffff) << 16), op)));
                default -> throw new IllegalArgumentException("coll_reduce type " + type);
            }
        }
    }

    private static long redLong(final long a, final long b, final int op) {
        return switch (op) {
            case io.gdrkit.gpu.ReduceKernel.SUM -> a + b;
            case io.gdrkit.gpu.ReduceKernel.PROD -> a * b;
            case io.gdrkit.gpu.ReduceKernel.MIN -> Math.min(a, b);
            default -> Math.max(a, b);
        };
    }

    private static float redFloat(final float a, final float b, final int op) {
        return switch (op) {
            case io.gdrkit.gpu.ReduceKernel.SUM -> a + b;
            case io.gdrkit.gpu.ReduceKernel.PROD -> a * b;
            case io.gdrkit.gpu.ReduceKernel.MIN -> b < a ? b : a;
            default -> a < b ? b : a;
        };
    }

    /** float to bfloat16, round to nearest even (NaN stays a quiet NaN), as __float2bfloat16_rn. */
    private static short toBf16(final float f) {
        if (Float.isNaN(f)) {
            return (short) 0x7fc0;
        }
        final int bits = Float.floatToRawIntBits(f);
        return (short) ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16);
    }

    static Map<String, SimFunction> builtins() {
        return Map.of(COLL_REDUCE.name(), COLL_REDUCE, FILL_PATTERN.name(), FILL_PATTERN, VERIFY_PATTERN.name(), VERIFY_PATTERN,
            POLL_FLAG_VERIFY.name(), POLL_FLAG_VERIFY, VIS_VERIFY.name(), VIS_VERIFY,
            VIS_PERSISTENT_PLAIN.name(), VIS_PERSISTENT_PLAIN, VIS_PERSISTENT_VOLATILE.name(), VIS_PERSISTENT_VOLATILE,
            VIS_PERSISTENT_ACQUIRE.name(), VIS_PERSISTENT_ACQUIRE);
    }

    /**
     * The persistent consumer. Arguments: 0 flags (u32 per sender), 1 bufs (a buffer of u64 device addresses, one per
     * sender, each resolved to the simulated buffer holding it and read through the same owner/peer view as a pointer
     * parameter), 2 senders, 3 n, 4 rounds, 5 seed, 6 timeout_ns, 7 res. For r = 1..rounds, for the senders
     * s = b, b + grid, ... of block b: poll flags[s] &gt;= r, check bufs[s] against round r, write the slot
     * (see {@link VisKernels}), word 7 last with a release store.
     *
     * <p>The poll yields the SM worker now and then (the NIC and the drain agent may share few cores), returns when
     * the GPU closes, and times out after timeout_ns on the GPU's clock ({@code SimGpuConfig.clock()}). A
     * {@code ManualClock} moves only when a test advances it, so the wall clock stands guard too, after
     * max(timeout_ns, {@code SimGpuConfig.defaultTimeout()}), so that a forgotten flag cannot hold a worker forever.
     */
    private static SimFunction persistent(final VisKernels.Poll poll) {
        return new SimFunction(poll.kernel(), ctx -> {
            final DeviceView flags = ctx.view(0);
            final DeviceView bufs = ctx.view(1);
            final int senders = ctx.u32(2);
            final long n = ctx.u64(3);
            final long rounds = Integer.toUnsignedLong(ctx.u32(4));
            final int seed = ctx.u32(5);
            final long timeoutNs = ctx.u64(6);
            final DeviceView res = ctx.view(7);
            final SimGpuConfig config = ctx.gpu().system().config();
            final long guardNs = Long.compareUnsigned(timeoutNs, config.defaultTimeout().toNanos()) > 0
                ? timeoutNs : config.defaultTimeout().toNanos();
            final int grid = (int) ctx.grid().count();
            for (long r = 1; r <= rounds; r++) {
                // round-major, as on CUDA: see kernels.cu
                for (int s = ctx.blockIdx(); Integer.compareUnsigned(s, senders) < 0; s += grid) {
                    final int round = (int) r;
                    final long t0 = config.clock().nanoTime();
                    final long w0 = System.nanoTime();
                    long polls = 0;
                    boolean seen = false;
                    while (true) {
                        polls++;
                        if (Integer.compareUnsigned(flags.getIntAcquire(4L * s), round) >= 0) {
                            seen = true;
                            break;
                        }
                        if (Long.compareUnsigned(config.clock().nanoTime() - t0, timeoutNs) >= 0
                            || Long.compareUnsigned(System.nanoTime() - w0, guardNs) >= 0) {
                            break;
                        }
                        if (ctx.stopRequested()) {
                            return;
                        }
                        if ((polls & 63) == 0) {
                            Thread.yield();
                        } else {
                            Thread.onSpinWait();
                        }
                    }
                    final long at = ((r - 1) * Integer.toUnsignedLong(senders) + s) * VisKernels.SLOT_BYTES;
                    final long[] c = seen ? visCount(ctx.view(bufs.getLong(8L * s), n), 0, n, round, seed)
                        : new long[] {n, VisKernels.NONE, 0, 0};
                    for (int w = 0; w < 4; w++) {
                        res.putLong(at + 8L * w, c[w]);
                    }
                    res.putLong(at + 8L * VisKernels.POLLS, polls);
                    res.putLong(at + 8L * VisKernels.TIMED_OUT, seen ? 0 : 1);
                    res.putLong(at + 48, 0);
                    res.putLongRelease(at + 8L * VisKernels.ROUND, r); // last: the host that sees it sees the rest
                }
            }
        });
    }

    /** {bad, first, last, prev} of {@code buf[from, to)} against {@code round} (see {@link VisKernels}). */
    private static long[] visCount(final DeviceView buf, final long from, final long to, final int round,
                                   final int seed) {
        final MemorySegment local = MemorySegment.ofArray(new byte[CHUNK]);
        long bad = 0;
        long first = VisKernels.NONE;
        long last = 0;
        long prev = 0;
        for (long base = from; base < to; base += CHUNK) {
            final int len = (int) Math.min(CHUNK, to - base);
            buf.read(base, local, 0, len); // one snapshot per chunk, like a warp's coalesced load
            for (int j = 0; j < len; j++) {
                final long i = base + j;
                final byte b = local.get(ValueLayout.JAVA_BYTE, j);
                if (b == Pattern.at(i, round, seed)) {
                    last = i + 1;
                } else {
                    bad++;
                    if (first == VisKernels.NONE) {
                        first = i;
                    }
                    if (b == Pattern.at(i, round - 1, seed)) {
                        prev++;
                    }
                }
            }
        }
        return new long[] {bad, first, last, prev};
    }

    private static void verifyRange(final KernelContext ctx, final DeviceView buf, final long n, final int round,
                                    final int seed, final DeviceView result, final int resultArg) {
        final long from = n * ctx.blockIdx() / ctx.grid().count();
        final long to = n * (ctx.blockIdx() + 1) / ctx.grid().count();
        final MemorySegment local = MemorySegment.ofArray(new byte[CHUNK]);
        long bad = 0;
        long first = -1;
        for (long base = from; base < to; base += CHUNK) {
            final int len = (int) Math.min(CHUNK, to - base);
            buf.read(base, local, 0, len); // one snapshot per chunk, like a warp's coalesced load
            for (int j = 0; j < len; j++) {
                if (local.get(ValueLayout.JAVA_BYTE, j) != Pattern.at(base + j, round, seed)) {
                    bad++;
                    if (first < 0) {
                        first = base + j;
                    }
                }
            }
        }
        // blocks merge their results like atomicAdd / atomicMin on the device
        synchronized (((SimDeviceBuffer) ctx.args().buffer(resultArg))) {
            result.putLong(0, result.getLong(0) + bad);
            if (first >= 0 && Long.compareUnsigned(first, result.getLong(8)) < 0) {
                result.putLong(8, first);
            }
        }
    }

    /** Reads result word {@code i} from a host copy of a result buffer. */
    public static long resultWord(final MemorySegment hostCopy, final int i) {
        return hostCopy.get(LONG, 8L * i);
    }
}
