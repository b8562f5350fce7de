/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.GpuFunction;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.devices.GpuDevices;
import io.gdrkit.verbs.DirectQueue;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The shmem measurements with real CUDA kernels (kernels.cu: {@code shmem_lat}, {@code shmem_pingpong},
 * {@code shmem_put_bw} over the device functions of shmem_device.cuh): the kernels write WQEs into the software NIC's
 * send queues (IBGDA) or requests into the proxy ring (IBRC), in host memory mapped into the GPU
 * ({@link GpuDevice#mapHost}), and poll CQ rings and counters there. Also the floor: {@link #ringRtt}, a kernel that
 * only rings host memory and polls for the CPU's answer. On a machine without a GPU the same code runs against the
 * CPU test double of libcuda (CudaFakeDriverTest), which runs the same device functions on the CPU.
 */
public final class CudaShmemPerf {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    /**
     * Round trips of a kernel that rings host memory and spins on the CPU's answer (microseconds).
     *
     * @param iters        the number of round trips timed
     * @param minUs        the fastest round trip, in microseconds
     * @param medianUs     the median round trip, in microseconds
     * @param maxUs        the slowest round trip, in microseconds
     * @param simulatedGpu true when the GPU was simulated, so the times are not a real GPU's
     */
    public record RingRtt(int iters, double minUs, double medianUs, double maxUs, boolean simulatedGpu) {
    }

    private CudaShmemPerf() {
    }

    /**
     * Runs one perftest over PEs whose kernels run on CUDA GPUs, as {@link ShmemPerf#run} does over simulated GPUs.
     *
     * @param ctx     the run's settings: the number of PEs, the transport and the GPUs
     * @param test    which perftest to run
     * @param min     the smallest message size, in bytes
     * @param max     the largest message size, in bytes (sizes double from {@code min})
     * @param iters   the timed iterations per size
     * @param blocks  the kernel's thread blocks
     * @param threads the threads per block
     * @param variant who issues each operation: 0 a thread, 1 a warp, 2 a block (put_bw and msg_rate only)
     * @return the result rows, one per size
     */
    public static ShmemPerf.Result run(final ShmemContext ctx, final ShmemPerf.Test test, final long min,
                                       final long max, final int iters, final int blocks, final int threads,
                                       final int variant) {
        if (min < 1 || max < min || max > (64L << 20) || iters < 1 || blocks < 1 || threads < 1 || threads > 1024) {
            throw new ShmemException(ShmemException.Reason.BAD_ARGUMENT, "sizes 1 <= min <= max <= 64 MiB, iters >= 1,"
                + " blocks >= 1, threads 1..1024");
        }
        final boolean bw = test == ShmemPerf.Test.PUT_BW || test == ShmemPerf.Test.MSG_RATE;
        final long minB = test == ShmemPerf.Test.ATOMIC_LAT ? 8 : min;
        final long maxB = test == ShmemPerf.Test.ATOMIC_LAT ? 8 : max;
        final long slots = bw ? (long) blocks * threads : 1;
        ctx.nPes(Math.max(2, ctx.nPes())).stamps(true);
        ctx.heapBytes(Math.max(ctx.heapBytes(), ShmemContext.RESERVED + 2 * maxB * slots + 16384));
        ctx.concludeOnce();
        final long[] landing = new long[iters];
        final List<ShmemPerf.Result> rs = ShmemWorld.run(ctx, pe -> body(pe, test, minB, maxB, iters, blocks, threads,
            variant, slots, landing));
        return rs.get(0);
    }

    private static ShmemPerf.Result body(final ShmemPe pe, final ShmemPerf.Test test, final long min, final long max,
                                         final int iters, final int blocks, final int threads, final int variant,
                                         final long slots, final long[] landing) {
        final GpuDevice gpu = pe.gpu();
        final ShmemContext ctx = pe.context();
        final long src = pe.malloc(max * slots);
        final long dst = pe.malloc(max * slots);
        final long sig = pe.malloc(8);
        final long ctr = pe.malloc(8);
        final byte[] pattern = new byte[(int) Math.min(max * slots, 1 << 26)];
        for (int i = 0; i < pattern.length; i++) {
            pattern[i] = (byte) (i * 131 + 17 + pe.myPe());
        }
        pe.write(src, MemorySegment.ofArray(pattern));
        // the signal and the counter start at 0: malloc does not clear, and CUDA memory holds what it held before
        pe.write(sig, MemorySegment.ofArray(new long[1]));
        pe.write(ctr, MemorySegment.ofArray(new long[1]));
        final DeviceBuffer state = deviceState(pe);
        final DeviceBuffer times = gpu.alloc(16L * iters + 8 + 8L * blocks);
        final GpuStream stream = gpu.createNonBlockingStream();
        final boolean pingpong = test == ShmemPerf.Test.PUT_SIGNAL_LAT;
        final boolean bw = test == ShmemPerf.Test.PUT_BW || test == ShmemPerf.Test.MSG_RATE;
        final boolean active = pe.myPe() == 0 || pingpong && pe.myPe() == 1;
        final String name = pingpong ? "shmem_pingpong" : bw ? "shmem_put_bw" : "shmem_lat";
        // every kernel of the run resolved before anyone launches: loading a module waits for running kernels
        // (docs/results/h200-lazy-load.txt), and the ping-pong's two kernels wait for each other
        final GpuFunction kernel = active ? gpu.function("kernels", name) : null;
        final GpuFunction sync = pe.myPe() == 0 ? gpu.function("kernels", "shmem_clock_sync") : null;
        final ClockPair before = pe.myPe() == 0 ? clockPair(gpu, stream, ctx, sync) : null;
        final List<ShmemPerf.Row> rows = new ArrayList<>();
        final List<Sized> sized = new ArrayList<>();
        long[] lastTimes = null;
        long lastReqBase = 0;
        long base = 0;
        pe.barrierAll();
        final long warmStart = System.nanoTime();
        try {
            // pass -1 is the warm-up: the smallest size, run in full but not reported, so that the first reported
            // size does not pay for the first launch of the kernel (module load, JIT of its PTX, the context's first
            // work), nor the path's first WQE, doorbell and proxy pick-up; then the sizes, doubling
            for (int pass = -1; (min << Math.max(pass, 0)) <= max; pass++) {
                final long len = min << Math.max(pass, 0);
                final boolean warmUp = pass < 0;
                long wall = 0;
                final int per = Math.max(1, iters / (blocks * threads));
                // IBGDA: WQEs reserved on the queue to PE 1; IBRC: proxy tickets taken (both in the state block)
                final long reqBase = pe.myPe() != 0 ? 0 : longs(gpu, state,
                    ctx.mode() == ShmemMode.IBGDA ? 128 + 128 + 88 : 88, 1)[0];
                if (active) {
                    final KernelArgs a = new KernelArgs(12);
                    Dim3 grid = Dim3.of(1);
                    Dim3 block = Dim3.of(1);
                    if (pingpong) {
                        a.ptr(state).u32(1 - pe.myPe()).u64(dst).u64(src).u32((int) len).u64(sig).u32(iters)
                            .u32(pe.myPe() == 0 ? 1 : 0).u64(base).ptr(times);
                    } else if (bw) {
                        grid = Dim3.of(blocks);
                        block = Dim3.of(threads);
                        a.ptr(state).u32(1).u64(dst).u64(src).u32((int) len).u32(per).u32(variant).ptr(times);
                    } else {
                        final int op = test == ShmemPerf.Test.GET_LAT ? Op.GET : test == ShmemPerf.Test.ATOMIC_LAT
                            ? Op.FETCH_ADD : Op.PUT;
                        a.ptr(state).u32(op).u32(1).u64(test == ShmemPerf.Test.ATOMIC_LAT ? ctr : dst).u64(src)
                            .u32((int) len).u32(iters).ptr(times);
                    }
                    final long launched = System.nanoTime();
                    gpu.launch(kernel, grid, block, stream, a);
                    gpu.synchronize(stream, ctx.timeout().multipliedBy(4));
                    wall = System.nanoTime() - launched;
                    checkError(pe, state, name);
                    if (pingpong && pe.myPe() == 1) {
                        final long[] t = longs(gpu, times, 0, 2 * iters);
                        for (int i = 0; i < iters; i++) {
                            landing[i] = t[2 * i]; // the signal seen by PE 1: same GPU, same %globaltimer
                        }
                    }
                }
                base += iters;
                pe.barrierAll();
                verify(pe, test, dst, ctr, len, slots, pattern.length, iters);
                pe.barrierAll();
                if (warmUp && warmAgain(pe, warmStart, ctx.warmup().toNanos())) {
                    pass = -2; // the loop's pass++ runs the warm-up pass again
                    continue;
                }
                if (pe.myPe() == 0 && !warmUp) {
                    if (bw) {
                        final long[] t = longs(gpu, times, 0, blocks);
                        final long ns = Arrays.stream(t).max().orElse(1);
                        final long ops = (long) per * (variant == 0 ? (long) blocks * threads : variant == 1
                            ? (long) blocks * ((threads + 31) / 32) : blocks);
                        final long bytes = (long) per * blocks * threads * len;
                        rows.add(new ShmemPerf.Row(len, (int) ops, blocks * threads, 0, 0, 0,
                            bytes / (ns / 1e9) / (1 << 20), ops / (ns / 1e9) / 1e6, true, ShmemPerf.NONE, null));
                    } else {
                        final long[] t = longs(gpu, times, 0, 2 * iters);
                        // the proxy's pick-up stamps of this size's last requests, before the next size reuses the
                        // ring's slots; mapped onto the GPU's clock after the run, when the second pairing is known
                        long[] pickups = null;
                        int pickFrom = iters;
                        if (ctx.mode() == ShmemMode.IBRC) {
                            final int depth = pe.proxyRing().depth;
                            pickFrom = breakdownFrom(iters, wqesPerOp(pingpong), depth, pe.direct(1).sqDepth());
                            pickups = new long[iters - pickFrom];
                            for (int i = pickFrom; i < iters; i++) {
                                pickups[i - pickFrom] = pe.proxy().pickupNanos[(int) ((reqBase + i) & (depth - 1))];
                            }
                        }
                        sized.add(new Sized(len, t, wall, pickups, pickFrom));
                        lastTimes = t;
                        lastReqBase = reqBase;
                    }
                }
            }
            ShmemPerf.Breakdown breakdown = ShmemPerf.Breakdown.none();
            String clock = "";
            if (pe.myPe() == 0) {
                final ClockPair after = clockPair(gpu, stream, ctx, sync);
                final ClockMap map = new ClockMap(before, after);
                clock = "GPU %globaltimer for the kernel's stamps, System.nanoTime for the proxy and the NIC, paired by "
                    + "shmem_clock_sync before and after the measurement and interpolated: " + map.describe();
                if (lastTimes != null) {
                    breakdown = breakdown(pe, lastTimes, iters, map, lastReqBase, pingpong ? landing : null);
                }
                for (final Sized z : sized) {
                    rows.add(latencyRow(z, iters, pingpong, map));
                }
            }
            pe.barrierAll();
            if (pe.myPe() != 0) {
                return null;
            }
            final long[] db = pe.doorbellCounters();
            return new ShmemPerf.Result(test.label, ctx.mode(), pe.nPes(), ctx.gpu(), gpu.describe(),
                gpu.isSimulated(), true, ctx.wqeFence(), rows, breakdown, db[0], db[1], db[2], clock);
        } finally {
            gpu.destroyStream(stream);
            gpu.free(times);
            gpu.free(state);
        }
    }

    /**
     * Whether the warm-up pass runs again: until {@code warmNanos} have gone by since {@code start} on PE 0's clock,
     * so that the NICs' and the proxy's code is compiled before the first reported size (a thousand operations leave
     * it interpreted: on the H200 an 8-byte IBGDA put took about twice as long in such a run as after 200,000). PE 0
     * decides and every PE takes its answer through the bootstrap, so all run the same passes and the decision
     * touches neither the NICs nor the GPU.
     */
    private static boolean warmAgain(final ShmemPe pe, final long start, final long warmNanos) {
        final byte again = (byte) (pe.myPe() == 0 && System.nanoTime() - start < warmNanos ? 1 : 0);
        final byte[][] all = pe.allGather(new byte[] {again});
        return all[0].length == 1 && all[0][0] == 1;
    }

    /**
     * One latency size's raw measurements: the kernel's stamps (issue, completion per operation, GPU clock), the
     * host's wall time of the launch and synchronize, and on IBRC the proxy's pick-up stamps (host clock) of
     * operations {@code pickFrom..iters-1}.
     */
    private record Sized(long len, long[] t, long wallNs, long[] pickups, int pickFrom) {
    }

    /** A latency row and its time split; proxy stamps mapped onto the GPU's clock by {@code map}. */
    private static ShmemPerf.Row latencyRow(final Sized z, final int iters, final boolean pingpong,
                                            final ClockMap map) {
        final long[] t = z.t();
        final double[] lat = new double[iters];
        long comm = 0;
        for (int i = 0; i < iters; i++) {
            comm += t[2 * i + 1] - t[2 * i];
            lat[i] = (t[2 * i + 1] - t[2 * i]) / (pingpong ? 2e3 : 1e3); // the ping-pong: half the round trip
        }
        double proxyNs = 0;
        int proxyN = -1;
        if (z.pickups() != null) {
            proxyN = 0;
            for (int i = z.pickFrom(); i < iters; i++) {
                final long pick = z.pickups()[i - z.pickFrom()];
                if (pick != 0) {
                    proxyNs += map.toGpu(pick) - t[2 * i];
                    proxyN++;
                }
            }
        }
        final double[] s = lat.clone();
        Arrays.sort(s);
        final ShmemPerf.Split split = ShmemPerf.Split.of(z.wallNs(), t[2 * iters - 1] - t[0], comm, iters, pingpong,
            proxyNs, proxyN, proxyN > 0 ? map.errorNs() : 0, "total: System.nanoTime from before cuLaunchKernel to "
            + "cuStreamSynchronize's return; kernel span and comm: the kernel's %globaltimer stamps (first issue to "
            + "last completion; the sum of issue to completion" + (pingpong ? ", completion = the answer seen: full "
            + "round trips" : "") + "); cpu-wait: total less the span (two durations, each on its own clock)"
            + (proxyN >= 0 ? "; proxy: the proxy's pick-up (System.nanoTime) mapped onto %globaltimer by the "
            + "shmem_clock_sync pairings before and after the run, less the issue, over the last operations whose "
            + "stamps the ring still held" : ""));
        return new ShmemPerf.Row(z.len(), iters, 1, s[0], s[iters / 2], s[iters - 1], 0, 0, true,
            pingpong ? ShmemPerf.HALF_RTT : ShmemPerf.OP, split);
    }

    /** The kernel's state block (layout in shmem_device.cuh), copied into GPU memory. */
    static DeviceBuffer deviceState(final ShmemPe pe) {
        final GpuDevice gpu = pe.gpu();
        final ShmemContext ctx = pe.context();
        final int n = pe.nPes();
        final long[] st = new long[16 + 16 * n];
        st[0] = ctx.mode() == ShmemMode.IBGDA ? 1 : 0;
        st[1] = pe.myPe();
        st[2] = n;
        st[3] = pe.heapAddress();
        st[4] = pe.heapMr().lkey() & 0xFFFFFFFFL;
        if (ctx.mode() == ShmemMode.IBRC) {
            st[5] = gpu.mapHost(pe.proxyRing().mem);
            st[6] = pe.proxyRing().depth;
        }
        st[7] = ctx.wqeFence() ? 1 : 0;
        st[8] = ctx.timeout().toNanos();
        for (int p = 0; p < n; p++) {
            final int b = 16 + 16 * p;
            st[b] = pe.peerHeap(p);
            st[b + 1] = pe.peerRkey(p) & 0xFFFFFFFFL;
            if (ctx.mode() == ShmemMode.IBGDA) {
                final DirectQueue dq = pe.direct(p);
                st[b + 2] = gpu.mapHost(dq.sqRing());
                st[b + 3] = gpu.mapHost(dq.sqDoorbell());
                st[b + 4] = dq.sqDepth();
                st[b + 5] = dq.sqStride();
                st[b + 6] = dq.inlineOffset();
                st[b + 7] = gpu.mapHost(dq.cqRing());
                st[b + 8] = gpu.mapHost(dq.cqCounters());
                st[b + 9] = dq.cqDepth();
                st[b + 10] = pe.heapAddress() + (long) p * ctx.sqDepth() * 8;
                st[b + 12] = ShmemPe.MAX_INLINE;
            }
        }
        final DeviceBuffer buf = gpu.alloc(8L * st.length);
        ShmemPe.toDevice(gpu, buf, 0, MemorySegment.ofArray(st));
        return buf;
    }

    static void checkError(final ShmemPe pe, final DeviceBuffer state, final String kernel) {
        final long e = longs(pe.gpu(), state, 72, 1)[0];
        if (e == 0) {
            return;
        }
        final int code = (int) (e & 0xFF);
        final long detail = e >>> 8;
        final ShmemException.Reason r = switch (code) {
            case 1 -> ShmemException.Reason.TIMEOUT;
            case 2 -> pe.doorbellCounters()[2] > 0 ? ShmemException.Reason.STALE_WQE
                : ShmemException.Reason.OPERATION_FAILED;
            case 3 -> ProxyRing.error(detail).reason();
            case 4 -> ShmemException.Reason.ADDRESS_OUT_OF_HEAP;
            case 5 -> ShmemException.Reason.PE_OUT_OF_RANGE;
            default -> ShmemException.Reason.OPERATION_FAILED;
        };
        final String what = switch (code) {
            case 1 -> "a wait timed out (wait site " + detail + " in shmem_device.cuh)";
            case 2 -> "a CQE of the queue to PE " + (detail >>> 8) + " completed with "
                + io.gdrkit.verbs.WcStatus.name((int) (detail & 0xFF));
            case 3 -> ProxyRing.error(detail).getMessage();
            case 4 -> "heap offset " + detail + " is outside the symmetric heap";
            case 5 -> "PE " + detail + " is out of range";
            default -> "error code " + code + " detail " + detail;
        };
        throw new ShmemException(r, "kernel " + kernel + " on PE " + pe.myPe() + ": " + what);
    }

    private static void verify(final ShmemPe pe, final ShmemPerf.Test test, final long dst, final long ctr,
                               final long len, final long slots, final int patternLen, final int iters) {
        if (test == ShmemPerf.Test.ATOMIC_LAT) {
            return; // counted across sizes by the caller's single size; the fetched values are checked in the test
        }
        final int checker = test == ShmemPerf.Test.GET_LAT ? 0 : 1;
        if (pe.myPe() != checker) {
            return;
        }
        final int from = 1 - checker;
        final long n = Math.min(len * slots, patternLen);
        final byte[] got = pe.read(dst, (int) n);
        for (int i = 0; i < n; i++) {
            if (got[i] != (byte) (i * 131 + 17 + from)) {
                throw new ShmemException(ShmemException.Reason.OPERATION_FAILED, test.label + " " + len + " B: byte "
                    + i + " on PE " + checker + " is " + got[i] + ", expected " + (byte) (i * 131 + 17 + from));
            }
        }
    }

    /**
     * Breakdown of the last operations whose NIC pick-up stamps are still in the rings: host stamps (proxy, NIC
     * pick-up) mapped onto the GPU's clock by {@code map}; the steps between the two clocks carry its error.
     * {@code landing}: PE 1's stamps of the signal seen (ping-pong), on the same GPU's clock. A sample whose NIC stamp
     * is gone (its send-queue slot reused) is left out rather than read from a later WQE.
     */
    private static ShmemPerf.Breakdown breakdown(final ShmemPe pe, final long[] t, final int iters, final ClockMap map,
                                                 final long reqBase, final long[] landing) {
        final boolean gda = pe.context().mode() == ShmemMode.IBGDA;
        final int perOp = wqesPerOp(landing != null);
        final int from = breakdownFrom(iters, perOp, gda ? 0 : pe.proxyRing().depth, pe.direct(1).sqDepth());
        final List<long[]> stamps = new ArrayList<>();
        final long[] land = landing == null ? null : new long[iters - from];
        for (int i = from; i < iters; i++) {
            final long[] s = new long[9];
            s[1] = t[2 * i];
            s[4] = t[2 * i + 1];
            final long nic;
            final long lastWqe;
            if (gda) {
                nic = pe.nicPickup(1, reqBase + (long) perOp * i);
                lastWqe = reqBase + (long) perOp * i + perOp - 1; // the op's last WQE
            } else {
                final int slot = (int) ((reqBase + i) & (pe.proxyRing().depth - 1));
                s[2] = map.toGpu(pe.proxy().pickupNanos[slot]);
                nic = pe.nicPickup(1, pe.proxy().wqeIndex[slot]);
                lastWqe = pe.proxy().wqeIndex[slot] + perOp - 1;
            }
            if (nic == 0) {
                continue; // no stamp of this WQE any more
            }
            s[3] = map.toGpu(nic);
            // the NIC's own steps of the op's last WQE (the target's responder is in this process), onto the GPU's
            // clock; a stamp that is not there stays 0
            pe.nicSteps(1, lastWqe, s);
            for (int k = 5; k <= 8; k++) {
                s[k] = s[k] == 0 ? 0 : map.toGpu(s[k]);
            }
            if (land != null) {
                land[stamps.size()] = landing[i];
            }
            stamps.add(s);
        }
        return ShmemPerf.breakdown(stamps, land == null ? null : Arrays.copyOf(land, stamps.size()), stamps.size(),
            map.errorNs());
    }

    /** WQEs of one measured operation on both paths: a put-with-signal is two (data, then signal), else one. */
    static int wqesPerOp(final boolean putWithSignal) {
        return putWithSignal ? 2 : 1;
    }

    /**
     * The first operation of the breakdown's sample: the last operations whose stamps are all still held, i.e. whose
     * WQEs fit in half the send queue ({@code sqDepth}) and, on IBRC, whose requests fit in half the proxy ring
     * ({@code proxyDepth}; 0 on IBGDA). Half: a margin, as the sample has always had; at least one operation.
     */
    static int breakdownFrom(final int iters, final int wqesPerOp, final int proxyDepth, final int sqDepth) {
        final int ops = Math.min(sqDepth / wqesPerOp, proxyDepth > 0 ? proxyDepth : Integer.MAX_VALUE) / 2;
        return Math.max(0, iters - Math.max(1, ops));
    }

    /**
     * One pairing of the GPU's %globaltimer with the host's nanoTime: at host time {@code hostNs} the GPU clock read
     * {@code hostNs + offsetNs}, to within {@code errorNs} (half the host's round trip around the GPU's stamp).
     */
    record ClockPair(long hostNs, double offsetNs, double errorNs) {
    }

    /**
     * Host nanoTime onto the GPU's clock: the offsets of two pairings (before and after the measurement),
     * interpolated linearly in host time, so that a drift between the two clocks over the run is taken out. The
     * error of a mapped stamp is the larger of the two pairings' errors.
     */
    record ClockMap(ClockPair before, ClockPair after) {
        double errorNs() {
            return Math.max(before.errorNs(), after.errorNs());
        }

        double driftPpm() {
            final long dt = after.hostNs() - before.hostNs();
            return dt == 0 ? 0 : (after.offsetNs() - before.offsetNs()) / dt * 1e6;
        }

        long toGpu(final long hostNs) {
            final long dt = after.hostNs() - before.hostNs();
            final double f = dt == 0 ? 0 : (double) (hostNs - before.hostNs()) / dt;
            return Math.round(hostNs + before.offsetNs() + f * (after.offsetNs() - before.offsetNs()));
        }

        String describe() {
            return String.format(java.util.Locale.ROOT, "offset %.0f ns then %.0f ns %.3f s later (drift %.2f ppm), "
                + "error ±%.0f ns", before.offsetNs(), after.offsetNs(), (after.hostNs() - before.hostNs()) / 1e9,
                driftPpm(), errorNs());
        }
    }

    /**
     * Pairs the GPU's %globaltimer with host nanoTime: for each of 64 rounds the host stamps h0, releases the
     * round, the kernel reads %globaltimer and answers, the host stamps h1. The round with the shortest h1 - h0
     * gives the offset at the midpoint, with error at most (h1 - h0) / 2.
     */
    static ClockPair clockPair(final GpuDevice gpu, final GpuStream stream, final ShmemContext ctx,
                               final GpuFunction sync) {
        final int rounds = 64;
        final MemorySegment req = gpu.allocHost(64);
        final MemorySegment reply = gpu.allocHost(8L * rounds + 8);
        req.fill((byte) 0);
        reply.fill((byte) 0);
        final long[] h0s = new long[rounds];
        final long[] h1s = new long[rounds];
        final java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        final Thread host = Thread.ofPlatform().daemon(true).name("shmem-clock-sync").start(() -> {
            for (int i = 0; i < rounds && !stop.get(); i++) {
                final long h0 = System.nanoTime();
                LONG.setRelease(req, 0L, (long) i + 1);
                final long limit = h0 + ctx.timeout().toNanos();
                while ((long) LONG.getAcquire(reply, 8L * rounds) != i + 1) {
                    if (System.nanoTime() - limit > 0 || stop.get()) {
                        return;
                    }
                    Thread.onSpinWait();
                }
                h1s[i] = System.nanoTime();
                h0s[i] = h0;
            }
        });
        try {
            final KernelArgs a = new KernelArgs(4).u64(gpu.mapHost(req)).u64(gpu.mapHost(reply)).u32(rounds)
                .u64(ctx.timeout().toNanos());
            gpu.launch(sync, Dim3.of(1), Dim3.of(1), stream, a);
            gpu.synchronize(stream, ctx.timeout());
            host.join(ctx.timeout().toMillis());
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            // the host thread touches the pinned pages: stop it before freeing them (see ringRtt)
            stop.set(true);
            try {
                host.join(ctx.timeout().toMillis() + 1000);
            } catch (final InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (host.isAlive()) {
            throw new ShmemException(ShmemException.Reason.TIMEOUT, "shmem_clock_sync: the host thread did not stop; "
                + "the host pages are left allocated");
        }
        int best = -1;
        for (int i = 0; i < rounds; i++) {
            if (h1s[i] != 0 && (best < 0 || h1s[i] - h0s[i] < h1s[best] - h0s[best])) {
                best = i;
            }
        }
        final ClockPair p = best < 0 ? null : new ClockPair((h0s[best] + h1s[best]) / 2,
            reply.get(ValueLayout.JAVA_LONG, 8L * best) - (h0s[best] + h1s[best]) / 2.0, (h1s[best] - h0s[best]) / 2.0);
        gpu.freeHost(req);
        gpu.freeHost(reply);
        if (p == null) {
            throw new ShmemException(ShmemException.Reason.TIMEOUT, "shmem_clock_sync: the kernel never answered");
        }
        return p;
    }

    /**
     * The floor: a kernel rings a host word and spins on the CPU's answer, {@code iters} times.
     *
     * @param gpuSpec the GPU to run the kernel on
     * @param iters   the number of round trips
     * @param timeout the longest to wait for the kernel
     * @return the round trips' times
     */
    public static RingRtt ringRtt(final String gpuSpec, final int iters, final java.time.Duration timeout) {
        try (GpuDevice gpu = GpuDevices.open(gpuSpec)) {
            final MemorySegment ring = gpu.allocHost(128);
            final MemorySegment answer = gpu.allocHost(128);
            ring.fill((byte) 0);
            answer.fill((byte) 0);
            final DeviceBuffer times = gpu.alloc(8L * iters);
            final GpuStream stream = gpu.createNonBlockingStream();
            final java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
            final Thread echo = Thread.ofPlatform().daemon(true).name("shmem-ring-echo").start(() -> {
                long seen = 0;
                final long limit = System.nanoTime() + timeout.toNanos();
                while (seen < iters && System.nanoTime() - limit < 0 && !stop.get()) {
                    final long v = (long) LONG.getAcquire(ring, 0L);
                    if (v != seen) {
                        seen = v;
                        LONG.setRelease(answer, 0L, v);
                    } else {
                        Thread.onSpinWait();
                    }
                }
            });
            try {
                final GpuFunction rtt = gpu.function("kernels", "shmem_ring_rtt");
            gpu.launch(rtt, Dim3.of(1), Dim3.of(1), stream,
                    new KernelArgs(5).u64(gpu.mapHost(ring)).u64(gpu.mapHost(answer)).u32(iters)
                        .u64(timeout.toNanos()).ptr(times));
                gpu.synchronize(stream, timeout.multipliedBy(2));
                echo.join(timeout.toMillis());
            } catch (final InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                // the echo thread reads the pinned pages: it must be gone before they are freed (a launch that
                // failed would otherwise leave it reading freed memory, which crashes the JVM)
                stop.set(true);
                try {
                    echo.join(timeout.toMillis() + 1000);
                } catch (final InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                gpu.destroyStream(stream);
            }
            if (echo.isAlive()) {
                throw new ShmemException(ShmemException.Reason.TIMEOUT, "shmem_ring_rtt: the echo thread did not "
                    + "stop; the host pages are left allocated");
            }
            final long[] t = longs(gpu, times, 0, iters);
            gpu.free(times);
            gpu.freeHost(ring);
            gpu.freeHost(answer);
            final double[] us = new double[iters];
            for (int i = 0; i < iters; i++) {
                if (t[i] == 0) {
                    throw new ShmemException(ShmemException.Reason.TIMEOUT, "shmem_ring_rtt: ring " + i
                        + " got no answer");
                }
                us[i] = t[i] / 1e3;
            }
            Arrays.sort(us);
            return new RingRtt(iters, us[0], us[iters / 2], us[iters - 1], gpu.isSimulated());
        }
    }

    private static long[] longs(final GpuDevice gpu, final DeviceBuffer buf, final long off, final int count) {
        final long[] out = new long[count];
        ShmemPe.fromDevice(gpu, MemorySegment.ofArray(out), buf, off);
        return out;
    }
}
