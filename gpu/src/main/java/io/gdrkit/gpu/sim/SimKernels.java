package io.gdrkit.gpu.sim;

import io.gdrkit.gpu.Pattern;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;

/**
 * The Java twins of the PTX kernels in {@code io/gdrkit/gpu/cuda/kernels.cu} (module {@code "kernels"}), with the same
 * names and parameters, so that experiment code launches the same kernels on a simulated and a real GPU.
 *
 * <p>Result buffers ({@code unsigned long long result[4]}): [0] mismatching bytes, [1] index of the first mismatch
 * (the host sets it to -1 before the launch), [2] 1 when a poll timed out, [3] polls made.
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

    static Map<String, SimFunction> builtins() {
        return Map.of(FILL_PATTERN.name(), FILL_PATTERN, VERIFY_PATTERN.name(), VERIFY_PATTERN,
            POLL_FLAG_VERIFY.name(), POLL_FLAG_VERIFY);
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
