/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * A MoE-style dispatch and combine over the device API: every PE holds {@code tokens} tokens of {@code bytes} bytes;
 * a seeded router sends each to an expert (one per PE) with put-with-signal (ADD 1 on the expert's per-source
 * counter); each expert waits for its tokens, applies its "expert" (adds expert + 1 to every byte), and puts each
 * result back to the token's home slot with a signal; every PE waits for all its tokens and the host checks them
 * byte for byte. One simulated kernel per PE does all of it.
 */
public final class MoeRun {
    /**
     * The run: what ran, whether every byte was right, and the kernel's wall time on PE 0.
     *
     * @param nPes            the number of PEs
     * @param mode            the control path the puts took
     * @param tokens          the number of tokens each PE dispatched
     * @param bytes           the bytes of each token
     * @param verified        true when every token came back to every PE with every byte right
     * @param mismatches      the number of wrong bytes found, over every PE
     * @param kernelMillis    the dispatch kernel's wall time on PE 0, in milliseconds
     * @param tokensPerExpert how many tokens each expert (PE) received
     * @param simulated       true when the GPUs were simulated
     * @param device          the GPU's name
     * @param split           where PE 0's time went
     */
    public record Result(int nPes, ShmemMode mode, int tokens, int bytes, boolean verified, long mismatches,
                         double kernelMillis, int[] tokensPerExpert, boolean simulated, String device, Split split) {
    }

    /**
     * Where PE 0's time went, milliseconds: {@code totalMs = kernelMs + commMs + cpuWaitMs} where comm is
     * measured; {@code commMs} null where the kernel does not stamp its communication (the CUDA kernel stamps only
     * its span: kernel then includes it).
     *
     * @param totalMs   host wall time from the launch to the kernel's end seen by the host (System.nanoTime)
     * @param kernelMs  the kernel's span (its own clock) less the communication
     * @param commMs    the time the kernel spent issuing puts and waiting for signals and quiet, or null
     * @param cpuWaitMs total less the kernel's span: the host's launch and its wait for the start and the end
     * @param method    how each part was measured, in words
     */
    public record Split(double totalMs, double kernelMs, Double commMs, double cpuWaitMs, String method) {
        static Split of(final long totalNs, final long spanNs, final long commNs) {
            final boolean comm = commNs >= 0;
            return new Split(totalNs / 1e6, (spanNs - Math.max(commNs, 0)) / 1e6, comm ? commNs / 1e6 : null,
                (totalNs - spanNs) / 1e6, comm
                    ? "one clock (System.nanoTime): total from the launch to the synchronize's return, the kernel's "
                    + "span from its first to its last statement, comm the sum of its put issues, signal waits and "
                    + "quiet; cpu-wait total less the span"
                    : "total System.nanoTime from the launch to cuStreamSynchronize's return; kernel the span the "
                    + "kernel stamps (%globaltimer), communication included (the kernel does not stamp it apart); "
                    + "cpu-wait total less the span (two durations, each on its own clock)");
        }
    }

    /**
     * PE 0's split as one line of text.
     *
     * @param x the split
     * @return the line
     */
    public static String format(final Split x) {
        return String.format(java.util.Locale.ROOT, "total %.3f ms = kernel %.3f + comm %s + cpu-wait %.3f",
            x.totalMs(), x.kernelMs(), x.commMs() == null ? "(in kernel)" : String.format(java.util.Locale.ROOT,
                "%.3f", x.commMs()), x.cpuWaitMs());
    }

    private MoeRun() {
    }

    /** The router; shmem_device.cuh's moe_route is the same function (CudaFakeDriverTest runs both). */
    static int route(final long seed, final int pe, final int token, final int n) {
        long z = seed * 0x9E3779B97F4A7C15L + pe * 0xBF58476D1CE4E5B9L + token * 0x94D049BB133111EBL;
        z = (z ^ (z >>> 31)) * 0x94D049BB133111EBL;
        return (int) Long.remainderUnsigned(z ^ (z >>> 29), n);
    }

    static byte input(final int pe, final int token, final int i) {
        return (byte) (pe * 29 + token * 13 + i * 7 + 1);
    }

    /**
     * Runs the dispatch and combine with every PE a thread of this JVM, as the class comment describes.
     *
     * @param ctx    the run's settings: the number of PEs, the control path, the transport and the GPUs
     * @param tokens the number of tokens each PE dispatches
     * @param bytes  the bytes of each token
     * @return the run's result
     */
    public static Result run(final ShmemContext ctx, final int tokens, final int bytes) {
        check(tokens, bytes);
        final int n = ctx.nPes();
        ctx.heapBytes(Math.max(ctx.heapBytes(), ShmemContext.RESERVED + (long) (n + 2) * tokens * bytes + 64L * n
            + 8192));
        ctx.concludeOnce();
        final java.util.concurrent.atomic.AtomicReference<String> device = new java.util.concurrent.atomic.AtomicReference<>();
        final List<long[]> per = ShmemWorld.run(ctx, pe -> {
            if (pe.myPe() == 0) {
                device.set(pe.gpu().describe());
            }
            return body(pe, ctx.seed(), tokens, bytes);
        });
        long bad = 0;
        final int[] load = new int[n];
        for (int p = 0; p < n; p++) {
            bad += per.get(p)[0];
            load[p] = (int) per.get(p)[2];
        }
        return new Result(n, ctx.mode(), tokens, bytes, bad == 0, bad, per.get(0)[1] / 1e6, load,
            ctx.gpu().startsWith("sim:"), device.get(), Split.of(per.get(0)[3], per.get(0)[1], per.get(0)[4]));
    }


    /**
     * This process's PE of a MoE run whose PEs are processes (one per rank of {@code boot}: {@code gdrkit launch});
     * every rank returns the whole run's result, gathered through the bootstrap (mismatches summed over PEs).
     *
     * @param ctx    the run's settings: the control path, the transport and the GPU
     * @param boot   this process's bootstrap, joined to every other rank of the run
     * @param tokens the number of tokens each PE dispatches
     * @param bytes  the bytes of each token
     * @return the whole run's result, the same on every rank
     */
    public static Result runProcess(final ShmemContext ctx, final io.gdrkit.comm.bootstrap.Bootstrap boot,
                                    final int tokens, final int bytes) {
        check(tokens, bytes);
        final int n = boot.nranks();
        ctx.nPes(n).heapBytes(Math.max(ctx.heapBytes(), ShmemContext.RESERVED + (long) (n + 2) * tokens * bytes
            + 64L * n + 8192));
        return ShmemProcess.run(ctx, boot, pe -> {
            final String device = pe.gpu().describe();
            final long[] mine = body(pe, ctx.seed(), tokens, bytes);
            final java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(40).putLong(mine[0]).putLong(mine[1])
                .putLong(mine[2]).putLong(mine[3]).putLong(mine[4]);
            final byte[][] all = pe.bootstrap().allGather(b.array());
            long bad = 0;
            final int[] load = new int[n];
            for (int p = 0; p < n; p++) {
                if (all[p].length != 40) {
                    throw new ShmemException(ShmemException.Reason.NOT_COLLECTIVE, "PE " + p + " sent a "
                        + all[p].length + "-byte result, expected 40");
                }
                final java.nio.ByteBuffer r = java.nio.ByteBuffer.wrap(all[p]);
                final long pBad = r.getLong();
                r.getLong();
                final long pLoad = r.getLong();
                if (pBad < 0 || pLoad < 0 || pLoad > (long) n * tokens) {
                    throw new ShmemException(ShmemException.Reason.NOT_COLLECTIVE, "PE " + p + " sent counts out of "
                        + "range (" + pBad + " mismatches, " + pLoad + " tokens)");
                }
                bad += pBad;
                load[p] = (int) pLoad;
            }
            final java.nio.ByteBuffer pe0 = java.nio.ByteBuffer.wrap(all[0]);
            return new Result(n, ctx.mode(), tokens, bytes, bad == 0, bad,
                pe0.getLong(8) / 1e6, load, pe.gpu().isSimulated(), device
                    + "; PEs are " + n + " processes, software NICs on the shared-memory fabric",
                Split.of(pe0.getLong(24), pe0.getLong(8), pe0.getLong(32)));
        });
    }

    private static void check(final int tokens, final int bytes) {
        if (tokens < 1 || tokens > 1024 || bytes < 8 || bytes > 65536 || (bytes & 7) != 0) {
            throw new ShmemException(ShmemException.Reason.BAD_ARGUMENT, "tokens 1..1024, bytes 8..65536 (multiple of 8)");
        }
    }

    private static long[] body(final ShmemPe pe, final long seed, final int tokens, final int bytes) {
        final int n = pe.nPes();
        final int me = pe.myPe();
        final long in = pe.malloc((long) tokens * bytes);
        final long recv = pe.malloc((long) n * tokens * bytes);
        final long out = pe.malloc((long) tokens * bytes);
        final long recvSig = pe.malloc(8L * n);
        final long doneSig = pe.malloc(8);
        final byte[] mine = new byte[tokens * bytes];
        for (int t = 0; t < tokens; t++) {
            for (int i = 0; i < bytes; i++) {
                mine[t * bytes + i] = input(me, t, i);
            }
        }
        pe.write(in, MemorySegment.ofArray(mine));
        // the signal words start at 0: malloc does not clear, and CUDA memory holds what it held before (a count
        // that started negative would never reach the expected one: a timed-out wait)
        pe.write(recvSig, MemorySegment.ofArray(new long[n]));
        pe.write(doneSig, MemorySegment.ofArray(new long[1]));
        final int[] expected = new int[n]; // tokens each source sends to me
        for (int src = 0; src < n; src++) {
            for (int t = 0; t < tokens; t++) {
                if (route(seed, src, t, n) == me) {
                    expected[src]++;
                }
            }
        }
        // CUDA: the kernel resolved and its buffers allocated before the barrier: loading a module waits for the
        // kernels already running (docs/SHMEM.md, "H200"), and every PE's kernel waits for the others
        final CudaLaunch cuda = pe.gpu().isSimulated() ? null : new CudaLaunch(pe);
        pe.barrierAll();
        // wall: {the kernel's span, its communication (-1: not stamped)}; total: the host's launch to its end
        final long[] wall = {0, -1};
        final long launched = System.nanoTime();
        if (cuda != null) {
            wall[0] = cuda.run(pe, seed, tokens, bytes, in, recv, out, recvSig, doneSig, expected);
        } else {
            simKernel(pe, seed, tokens, bytes, in, recv, out, recvSig, doneSig, expected, wall);
        }
        final long total = System.nanoTime() - launched;
        final byte[] got = pe.read(out, tokens * bytes);
        long bad = 0;
        for (int t = 0; t < tokens; t++) {
            final int e = route(seed, me, t, n);
            for (int i = 0; i < bytes; i++) {
                if (got[t * bytes + i] != (byte) (input(me, t, i) + e + 1)) {
                    bad++;
                }
            }
        }
        int load = 0;
        for (final int c : expected) {
            load += c;
        }
        pe.barrierAll();
        if (cuda != null) {
            cuda.close(pe);
        }
        return new long[] {bad, wall[0], load, total, wall[1]};
    }

    /** kernels.cu's shmem_moe (shmem_moe_body in shmem_device.cuh): the same steps in one CUDA thread. */
    private static final class CudaLaunch {
        private final io.gdrkit.gpu.GpuFunction kernel;
        private final io.gdrkit.gpu.DeviceBuffer state;
        private final io.gdrkit.gpu.DeviceBuffer times;
        private final io.gdrkit.gpu.GpuStream stream;

        CudaLaunch(final ShmemPe pe) {
            final io.gdrkit.gpu.GpuDevice gpu = pe.gpu();
            kernel = gpu.function("kernels", "shmem_moe");
            state = CudaShmemPerf.deviceState(pe);
            times = gpu.alloc(8);
            stream = gpu.createNonBlockingStream();
            ShmemPe.toDevice(gpu, times, 0, MemorySegment.ofArray(new long[1]));
        }

        long run(final ShmemPe pe, final long seed, final int tokens, final int bytes, final long in, final long recv,
                 final long out, final long recvSig, final long doneSig, final int[] expected) {
            final io.gdrkit.gpu.GpuDevice gpu = pe.gpu();
            try {
                gpu.launch(kernel, io.gdrkit.gpu.Dim3.of(1), io.gdrkit.gpu.Dim3.of(1), stream,
                    new io.gdrkit.gpu.KernelArgs(10).ptr(state).u64(seed).u32(tokens).u32(bytes).u64(in).u64(recv)
                        .u64(out).u64(recvSig).u64(doneSig).ptr(times));
                gpu.synchronize(stream, pe.context().timeout().multipliedBy(4));
                try {
                    CudaShmemPerf.checkError(pe, state, "shmem_moe");
                } catch (final ShmemException e) {
                    if (e.reason() != ShmemException.Reason.TIMEOUT) {
                        throw e;
                    }
                    // the kernel has ended: its counts and queues say which wait fell short and where the rest is
                    throw new ShmemException(e.reason(), e.getMessage().substring(e.reason().name().length() + 2)
                        + "; " + stateAfter(pe, tokens, recvSig, doneSig, expected), e);
                }
                final long[] t = new long[1];
                ShmemPe.fromDevice(gpu, MemorySegment.ofArray(t), times, 0);
                return t[0];
            } catch (final RuntimeException e) {
                close(pe); // failed: nobody waits at the barrier for this PE
                throw e;
            }
        }

        /**
         * What a timed-out MoE kernel left behind, for the error message: each signal word against what it waits
         * for, and per queue (IBGDA) the WQEs reserved, the doorbell (rung / retired by the NIC), the CQ
         * (produced by the NIC / reaped by the kernel) and the stale WQEs; IBRC: the proxy ring's counters.
         */
        private String stateAfter(final ShmemPe pe, final int tokens, final long recvSig, final long doneSig,
                                  final int[] expected) {
            final StringBuilder sb = new StringBuilder("state after the kernel: recv_sig");
            for (int src = 0; src < expected.length; src++) {
                sb.append(src == 0 ? " " : ", ").append(src).append(": ").append(pe.readLong(recvSig + 8L * src))
                    .append('/').append(expected[src]);
            }
            sb.append("; done_sig ").append(pe.readLong(doneSig)).append('/').append(tokens);
            if (pe.context().mode() == ShmemMode.IBGDA) {
                final long[] st = new long[16 + 16 * expected.length];
                ShmemPe.fromDevice(pe.gpu(), MemorySegment.ofArray(st), state, 0);
                for (int p = 0; p < expected.length; p++) {
                    final io.gdrkit.verbs.DirectQueue dq = pe.direct(p);
                    sb.append("; queue to PE ").append(p).append(": WQEs ").append(st[16 + 16 * p + 11])
                        .append(", doorbell ").append(dq.sqDoorbell().get(java.lang.foreign.ValueLayout.JAVA_LONG,
                            io.gdrkit.verbs.DirectQueue.DB_PRODUCER))
                        .append(" rung / ").append(dq.sqDoorbell().get(java.lang.foreign.ValueLayout.JAVA_LONG,
                            io.gdrkit.verbs.DirectQueue.DB_CONSUMER))
                        .append(" retired, CQ ").append(dq.cqCounters().get(java.lang.foreign.ValueLayout.JAVA_LONG, 0))
                        .append(" produced / ").append(dq.cqCounters().get(java.lang.foreign.ValueLayout.JAVA_LONG, 64))
                        .append(" reaped, stale ").append(dq.staleWqes());
                }
            } else {
                final ProxyRing r = pe.proxyRing();
                final long[] taken = new long[1];
                ShmemPe.fromDevice(pe.gpu(), MemorySegment.ofArray(taken), state, 88); // tickets: the state block's
                sb.append("; proxy ring: ").append(taken[0]).append(" requests, ")
                    .append(r.get(ProxyRing.CONSUMED)).append(" posted, ").append(r.get(ProxyRing.COMPLETED))
                    .append(" completed, error ").append(r.get(ProxyRing.ERROR));
            }
            return sb.toString();
        }

        /** After the last barrier: cuMemFree waits for every running kernel, the other PEs' included. */
        void close(final ShmemPe pe) {
            pe.gpu().destroyStream(stream);
            pe.gpu().free(times);
            pe.gpu().free(state);
        }
    }

    private static void simKernel(final ShmemPe pe, final long seed, final int tokens, final int bytes,
                                  final long in, final long recv, final long out, final long recvSig,
                                  final long doneSig, final int[] expected, final long[] wall) {
        final int n = pe.nPes();
        final int me = pe.myPe();
        final ShmemDevice d = pe.device();
        pe.launchSim("moe", 1, 1, k -> {
            final long t0 = System.nanoTime();
            long comm = 0;
            // dispatch: token t to expert e, into e's slot [me][t], counted on e's recvSig[me]
            for (int t = 0; t < tokens; t++) {
                final int e = route(seed, me, t, n);
                final long c0 = System.nanoTime();
                d.putSignalNbi(k, recv + ((long) me * tokens + t) * bytes, in + (long) t * bytes, bytes,
                    recvSig + 8L * me, 1, SignalOp.ADD, e);
                comm += System.nanoTime() - c0;
            }
            // expert: wait for every source's tokens, apply, send each result home
            final var heap = k.view(pe.heapAddress(), pe.context().heapBytes());
            for (int src = 0; src < n; src++) {
                long c0 = System.nanoTime();
                d.signalWaitUntil(k, recvSig + 8L * src, Cmp.GE, expected[src]);
                comm += System.nanoTime() - c0;
                for (int t = 0; t < tokens; t++) {
                    if (route(seed, src, t, n) != me) {
                        continue;
                    }
                    final long slot = recv + ((long) src * tokens + t) * bytes;
                    for (int i = 0; i < bytes; i++) {
                        heap.putByte(slot + i, (byte) (heap.getByte(slot + i) + me + 1));
                    }
                    c0 = System.nanoTime();
                    d.putSignalNbi(k, out + (long) t * bytes, slot, bytes, doneSig, 1, SignalOp.ADD, src);
                    comm += System.nanoTime() - c0;
                }
            }
            // combine: wait until all my tokens are back
            final long c0 = System.nanoTime();
            d.signalWaitUntil(k, doneSig, Cmp.GE, tokens);
            d.quiet(k);
            final long end = System.nanoTime();
            wall[0] = end - t0;
            wall[1] = comm + end - c0;
        });
    }
}
