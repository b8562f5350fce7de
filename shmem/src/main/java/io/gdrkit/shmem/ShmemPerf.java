/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * NVSHMEM-perftest-shaped measurements over the device API: each test runs kernels on PE 0 (and PE 1 for the
 * ping-pong), checks the data byte for byte on the target, and returns records; it prints nothing.
 */
public final class ShmemPerf {
    /** The tests, named as in NVSHMEM's perftest. */
    public enum Test {
        /** Latency of a blocking put. */
        PUT_LAT("put_lat"),
        /** Latency of a blocking get. */
        GET_LAT("get_lat"),
        /** Bandwidth of non-blocking puts from many GPU threads. */
        PUT_BW("put_bw"),
        /** Latency of a put with signal, to the target seeing the signal and the initiator its answer. */
        PUT_SIGNAL_LAT("put_signal_lat"),
        /** Latency of a fetching atomic. */
        ATOMIC_LAT("atomic_lat"),
        /** Rate of small non-blocking puts, in millions of operations per second. */
        MSG_RATE("msg_rate");

        /** The test's name, as NVSHMEM's perftest names it. */
        public final String label;

        Test(final String label) {
            this.label = label;
        }

        /**
         * Finds a test by its perftest name.
         *
         * @param s the name, such as {@code put_lat}
         * @return the test named
         * @throws ShmemException BAD_ARGUMENT if no test has that name
         */
        public static Test byLabel(final String s) {
            for (final Test t : values()) {
                if (t.label.equals(s)) {
                    return t;
                }
            }
            throw new ShmemException(ShmemException.Reason.BAD_ARGUMENT, "unknown test '" + s + "' (put_lat, get_lat, "
                + "put_bw, put_signal_lat, atomic_lat, msg_rate)");
        }
    }

    /** {@link Row#latency}: min/median/max are one blocking operation's time, issue to completion. */
    public static final String OP = "op";
    /** {@link Row#latency}: min/median/max are half a ping-pong's round trip (put_signal_lat). */
    public static final String HALF_RTT = "half_rtt";
    /** {@link Row#latency}: a bandwidth test, no latency. */
    public static final String NONE = "none";

    /**
     * One size: latency per operation (min/median/max over iterations, microseconds) or throughput.
     *
     * @param bytes     the message size in bytes
     * @param iters     the operations timed
     * @param threads   the GPU threads that issued them
     * @param minUs     the fastest operation, in microseconds (latency tests; what {@code latency} names)
     * @param medianUs  the median operation, in microseconds (latency tests; what {@code latency} names)
     * @param maxUs     the slowest operation, in microseconds (latency tests; what {@code latency} names)
     * @param mibPerSec the throughput in MiB/s (bandwidth tests)
     * @param mops      the operation rate in millions per second (message-rate test)
     * @param verified  true when the data was checked byte for byte and was right
     * @param latency   what min/median/max measure: {@link #OP}, {@link #HALF_RTT} or {@link #NONE}
     * @param split     where the size's time went (latency tests), or null
     */
    public record Row(long bytes, int iters, int threads, double minUs, double medianUs, double maxUs,
                      double mibPerSec, double mops, boolean verified, String latency, Split split) {
    }

    /**
     * Where one size's time went: means per operation over the size's operations, microseconds. The parts add up:
     * {@code totalUs = kernelUs + commUs + cpuWaitUs}; {@code proxyUs} is the share of {@code commUs} before the
     * proxy picked the request up (IBRC; null on IBGDA).
     *
     * @param totalUs             the host's wall time of the size's pass (launch to the kernel's end seen by the
     *                            host, System.nanoTime), per operation
     * @param kernelUs            the kernel's span (first issue to last completion, on the kernel's clock) less the
     *                            communication, per operation: the kernel's own work between operations
     * @param commUs              issue to completion, mean per operation, on the kernel's clock; for
     *                            put_signal_lat the full round trip (issue to the answer seen)
     * @param rttUs               the same as {@code commUs} for put_signal_lat, null otherwise: the full round trip,
     *                            twice the rows' half_rtt
     * @param cpuWaitUs           the wall time outside the kernel's span, per operation: the host's launch and its
     *                            wait for the kernel to start and to be seen finished (a difference of two
     *                            durations, each on its own clock: no pairing)
     * @param proxyUs             issue (kernel clock) to the proxy's pick-up (host clock mapped onto the kernel's),
     *                            mean over {@code proxySamples} operations; null without a proxy
     * @param proxySamples        the operations {@code proxyUs} is the mean of (those whose pick-up stamp is still
     *                            held)
     * @param clockPairingErrorUs the error of {@code proxyUs}: the bound of the kernel-to-host clock pairing (0: one
     *                            clock)
     * @param method              how the parts were measured, in words
     */
    public record Split(double totalUs, double kernelUs, double commUs, Double rttUs, double cpuWaitUs,
                        Double proxyUs, int proxySamples, double clockPairingErrorUs, String method) {
        /**
         * From sums over one size's {@code ops} operations, in nanoseconds.
         *
         * @param wallNs      the host's wall time of the pass
         * @param spanNs      the kernel's span, first issue to last completion
         * @param commNs      the sum of issue-to-completion over the operations
         * @param ops         the operations
         * @param roundTrip   whether completion is the answer of a ping-pong (full round trip)
         * @param proxyNs     the sum of issue-to-pick-up over {@code proxyN} operations (0 with no proxy)
         * @param proxyN      the operations with a pick-up stamp; -1 when the path has no proxy
         * @param pairErrorNs the clock pairing's error bound (0: one clock)
         * @param method      how it was measured
         * @return the split
         */
        static Split of(final long wallNs, final long spanNs, final long commNs, final int ops, final boolean roundTrip,
                        final double proxyNs, final int proxyN, final double pairErrorNs, final String method) {
            final double n = Math.max(1, ops) * 1e3;
            final double comm = commNs / n;
            return new Split(wallNs / n, (spanNs - commNs) / n, comm, roundTrip ? comm : null, (wallNs - spanNs) / n,
                proxyN > 0 ? proxyNs / proxyN / 1e3 : null, Math.max(proxyN, 0), pairErrorNs / 1e3, method);
        }
    }

    /**
     * One size's split as one line of text.
     *
     * @param r the row
     * @return the line, or "" when the row has no split
     */
    public static String formatSplit(final Row r) {
        final Split x = r.split();
        if (x == null) {
            return "";
        }
        return String.format(Locale.ROOT, "%d B: total %.2f = kernel %.2f + comm %.2f%s + cpu-wait %.2f%s",
            r.bytes(), x.totalUs(), x.kernelUs(), x.commUs(), x.rttUs() != null ? " (full round trips)" : "",
            x.cpuWaitUs(), x.proxyUs() == null ? "" : String.format(Locale.ROOT, "; proxy %.2f%s of comm (%d ops)",
                x.proxyUs(), x.clockPairingErrorUs() > 0 ? String.format(Locale.ROOT, " ±%.2f",
                    x.clockPairingErrorUs()) : "", x.proxySamples()));
    }

    /**
     * One step of the breakdown: the median over the samples, microseconds, and the error of that median's clock
     * pairing ({@code errorUs}: 0 when both ends were stamped on one clock; on CUDA a step from a GPU stamp to a
     * host stamp or back carries the pairing's error). A step whose median is within its error is not resolved:
     * {@code us} is null and {@code text} says "within the clock-pairing error" (never a negative time). A median
     * below minus the error is a clock fault, said in {@code text}.
     *
     * @param name     the step's name, such as {@link #TO_NIC}
     * @param us       the median in microseconds, or null when not resolved
     * @param errorUs  the error of the clock pairing, in microseconds (0: one clock)
     * @param resolved true when the median is larger than its error
     * @param text     the step as text, including why it is not resolved
     */
    public record Step(String name, Double us, double errorUs, boolean resolved, String text) {
        static Step of(final String name, final double medianUs, final double errorUs) {
            if (medianUs > errorUs || errorUs == 0 && medianUs >= 0) {
                return new Step(name, medianUs, errorUs, true, errorUs > 0
                    ? String.format(Locale.ROOT, "%.2f ±%.2f", medianUs, errorUs)
                    : String.format(Locale.ROOT, "%.2f", medianUs));
            }
            if (medianUs >= -errorUs) {
                return new Step(name, null, errorUs, false, String.format(Locale.ROOT, "<= %.2f (within the "
                    + "clock-pairing error)", errorUs));
            }
            return new Step(name, null, errorUs, false, String.format(Locale.ROOT, "unresolved: the stamps put "
                + "it at %.2f, beyond the pairing error %.2f (the clocks drifted apart)", medianUs, errorUs));
        }
    }

    /**
     * Where the time of a latency test's blocking operations goes, medians in microseconds over the last size's
     * samples. Steps in order, only those the path has: issue (in the kernel) to the proxy's pick-up (IBRC), to
     * the NIC's pick-up of the WQE, to the landing seen by the target (put_signal_lat), to the completion seen by
     * the issuing GPU thread; {@code totalUs} from issue to completion (one clock, no pairing error).
     * {@code clockPairingErrorUs}: the bound of the GPU-to-host clock pairing (0: one clock).
     *
     * @param samples             the number of operations sampled
     * @param clockPairingErrorUs the bound of the GPU-to-host clock pairing, in microseconds (0: one clock)
     * @param steps               the steps, in order
     * @param totalUs             the median from issue to completion, in microseconds
     */
    public record Breakdown(int samples, double clockPairingErrorUs, List<Step> steps, double totalUs) {
        static Breakdown none() {
            return new Breakdown(0, 0, List.of(), 0);
        }

        /**
         * The step named {@code name}, or null when the path has none.
         *
         * @param name the step's name, such as {@link #TO_NIC}
         * @return the step, or null
         */
        public Step step(final String name) {
            for (final Step s : steps) {
                if (s.name().equals(name)) {
                    return s;
                }
            }
            return null;
        }
    }

    /** Step name: from the issue in the kernel to the proxy's pick-up (IBRC only). */
    public static final String ISSUE_TO_PROXY = "issue->proxy pick-up";
    /** Step name: from the proxy's pick-up (or the issue) to the NIC's pick-up of the WQE. */
    public static final String TO_NIC = "->NIC pick-up";
    /** Step name: from the NIC's pick-up to the target seeing the data land. */
    public static final String NIC_TO_LANDING = "NIC pick-up->landing";
    /** Step name: to the issuing GPU thread seeing the completion. */
    public static final String TO_COMPLETION = "->completion seen";
    /**
     * Step name: to the NIC writing the operation's CQE (host clock only): from the NIC's pick-up, or from
     * {@link #TO_ACK_TAKEN} where the path's steps are stamped.
     */
    public static final String TO_CQE = "->CQE written";
    /** Step name: from the NIC's pick-up to the target's responder placing the data (host clock only). */
    public static final String TO_PLACED = "->placed at the target";
    /** Step name: from the placement to its ACK leaving the target, behind the completion fence (host clock only). */
    public static final String TO_ACK_SENT = "->ACK sent (fenced)";
    /** Step name: from the ACK leaving to the initiator's NIC taking up the completion (host clock only). */
    public static final String TO_ACK_TAKEN = "->ACK taken";
    /** put_signal_lat: from the target seeing the signal to the initiator seeing the target's answer. */
    public static final String TO_ANSWER = "landing->answer seen";

    /**
     * A run: what ran, on what (simulated or not), the rows, the breakdown and the NIC's doorbell counters.
     *
     * @param test         the test's perftest name
     * @param mode         the control path
     * @param nPes         the number of PEs
     * @param gpu          the GPU spec
     * @param device       the GPU's name
     * @param simulatedGpu true when the GPU was simulated
     * @param simulatedNic true when the NIC was a software one
     * @param wqeFence     whether the fence between writing a WQE and ringing the doorbell was kept
     * @param rows         the rows, one per size
     * @param breakdown    where the time went, for latency tests (null otherwise)
     * @param cpuDoorbells the doorbells the CPU rang
     * @param gpuDoorbells the doorbells the GPU rang directly
     * @param staleWqes    the WQEs the NIC refused because their stores had not landed when the doorbell rang
     * @param clock        how the times were taken
     */
    public record Result(String test, ShmemMode mode, int nPes, String gpu, String device, boolean simulatedGpu,
                         boolean simulatedNic, boolean wqeFence, List<Row> rows, Breakdown breakdown,
                         long cpuDoorbells, long gpuDoorbells, long staleWqes, String clock) {
    }

    private ShmemPerf() {
    }

    /**
     * Runs {@code test} for sizes min..max (doubling) with {@code iters} operations each; bandwidth tests use
     * {@code blocks} x {@code threads} GPU threads.
     *
     * @param ctx     the run's settings
     * @param test    which test to run
     * @param min     the smallest message size, in bytes
     * @param max     the largest message size, in bytes
     * @param iters   the operations per size
     * @param blocks  the thread blocks of bandwidth tests
     * @param threads the threads per block of bandwidth tests
     * @return the run's result
     */
    public static Result run(final ShmemContext ctx, final Test test, final long min, final long max, final int iters,
                             final int blocks, final int threads) {
        if (min < 1 || max < min || max > (64L << 20)) {
            throw new ShmemException(ShmemException.Reason.BAD_ARGUMENT, "sizes " + min + ".." + max
                + " must be 1 <= min <= max <= 64 MiB");
        }
        if (iters < 1 || blocks < 1 || threads < 1 || (long) blocks * threads > 4096) {
            throw new ShmemException(ShmemException.Reason.BAD_ARGUMENT, "iters, blocks, threads must be >= 1 and "
                + "blocks x threads <= 4096");
        }
        final long maxBytes = test == Test.ATOMIC_LAT ? 8 : max;
        final long minBytes = test == Test.ATOMIC_LAT ? 8 : min;
        ctx.nPes(Math.max(2, ctx.nPes())).stamps(true);
        final long heapNeed = ShmemContext.RESERVED + 2 * maxBytes * (test == Test.PUT_BW || test == Test.MSG_RATE
            ? (long) blocks * threads : 1) + 4096;
        ctx.heapBytes(Math.max(ctx.heapBytes(), heapNeed + 4096));
        ctx.concludeOnce();
        final long[] landing = new long[iters];
        final List<Result> results = ShmemWorld.run(ctx, pe -> body(pe, test, minBytes, maxBytes, iters, blocks,
            threads, landing));
        return results.get(0);
    }

    private static Result body(final ShmemPe pe, final Test test, final long min, final long max, final int iters,
                               final int blocks, final int threads, final long[] landing) {
        final boolean bw = test == Test.PUT_BW || test == Test.MSG_RATE;
        final long slots = bw ? (long) blocks * threads : 1;
        final long src = pe.malloc(max * slots);
        final long dst = pe.malloc(max * slots);
        final long sig = pe.malloc(8);
        final long ctr = pe.malloc(8);
        final byte[] pattern = new byte[(int) Math.min(max * slots, 1 << 26)];
        for (int i = 0; i < pattern.length; i++) {
            pattern[i] = (byte) (i * 131 + 17 + pe.myPe());
        }
        pe.write(src, MemorySegment.ofArray(pattern));
        final ShmemDevice d = pe.device();
        final List<Row> rows = new ArrayList<>();
        final List<long[]> stamps = new ArrayList<>();
        long signalBase = 0;
        pe.barrierAll();
        // pass -1 is the warm-up: the smallest size, run in full but not reported, so that the first reported size
        // does not pay for the first run of each kernel and of the path (JIT, the first WQE, doorbell, pick-up)
        for (int pass = -1; (min << Math.max(pass, 0)) <= max; pass++) {
            final long len = min << Math.max(pass, 0);
            final boolean warmUp = pass < 0;
            final double[] t = new double[iters];
            final long[] bwTime = new long[1];
            final long[] answer = new long[iters];
            final long[] issue = new long[iters];
            final long base = signalBase;
            long wall = 0;
            long proxyNs = 0;
            int proxyN = -1;
            if (pe.myPe() == 0) {
                d.drainStamps();
                final long launched = System.nanoTime();
                pe.launchSim(test.label, bw ? blocks : 1, bw ? threads : 1, k -> {
                    switch (test) {
                        case PUT_LAT -> {
                            for (int i = 0; i < iters; i++) {
                                issue[i] = System.nanoTime();
                                d.put(k, dst, src, len, 1);
                                answer[i] = System.nanoTime();
                            }
                        }
                        case GET_LAT -> {
                            for (int i = 0; i < iters; i++) {
                                issue[i] = System.nanoTime();
                                d.get(k, dst, src, len, 1);
                                answer[i] = System.nanoTime();
                            }
                        }
                        case ATOMIC_LAT -> {
                            for (int i = 0; i < iters; i++) {
                                issue[i] = System.nanoTime();
                                d.fetchAdd(k, ctr, 1, 1);
                                answer[i] = System.nanoTime();
                            }
                        }
                        case PUT_SIGNAL_LAT -> {
                            for (int i = 0; i < iters; i++) {
                                issue[i] = System.nanoTime();
                                d.putSignal(k, dst, src, len, sig, 1, SignalOp.ADD, 1);
                                d.signalWaitUntil(k, sig, Cmp.GE, base + i + 1);
                                answer[i] = System.nanoTime();
                            }
                        }
                        default -> {
                            // one block: its threads each issue iters/threads non-blocking puts into their own slot
                            final long t0 = System.nanoTime();
                            final int per = Math.max(1, iters / (blocks * threads));
                            for (int i = 0; i < per; i++) {
                                for (int th = 0; th < threads; th++) {
                                    final long slot = ((long) k.blockIdx() * threads + th) * len;
                                    d.putNbi(k, dst + slot, src + slot, len, 1);
                                }
                            }
                            d.quiet(k);
                            synchronized (bwTime) {
                                bwTime[0] = Math.max(bwTime[0], System.nanoTime() - t0);
                            }
                        }
                    }
                });
                wall = System.nanoTime() - launched;
                final List<long[]> got = d.drainStamps();
                for (final long[] st : got) {
                    if (st[2] != 0) { // IBRC: the proxy's pick-up, on the same clock as the issue
                        proxyN = Math.max(proxyN, 0) + 1;
                        proxyNs += st[2] - st[1];
                    }
                }
                if (test == Test.PUT_SIGNAL_LAT) {
                    // the ping-pong's end is the answer seen, not the put's own completion (which may come first:
                    // the ACK can be back before the target's kernel polls the signal)
                    for (int i = 0; i < got.size() && i < iters; i++) {
                        got.get(i)[4] = answer[i];
                    }
                }
                stamps.addAll(got);
            } else if (pe.myPe() == 1 && test == Test.PUT_SIGNAL_LAT) {
                pe.launchSim("pong", 1, 1, k -> {
                    for (int i = 0; i < iters; i++) {
                        d.signalWaitUntil(k, sig, Cmp.GE, base + i + 1);
                        landing[i] = System.nanoTime();
                        d.putSignal(k, dst, src, len, sig, 1, SignalOp.ADD, 0);
                    }
                });
            }
            signalBase += iters;
            pe.barrierAll();
            // byte check on the target: PE 1 holds PE 0's pattern (put tests), PE 0 holds PE 1's (get)
            boolean ok = true;
            if (test != Test.ATOMIC_LAT) {
                final int checker = test == Test.GET_LAT ? 0 : 1;
                final int from = 1 - checker;
                if (pe.myPe() == checker) {
                    final long n = Math.min(len * slots, pattern.length);
                    final byte[] got = pe.read(dst, (int) n);
                    for (int i = 0; i < n; i++) {
                        if (got[i] != (byte) (i * 131 + 17 + from)) {
                            throw new ShmemException(ShmemException.Reason.OPERATION_FAILED, test.label + " " + len
                                + " B: byte " + i + " on PE " + checker + " is " + got[i] + ", expected "
                                + (byte) (i * 131 + 17 + from));
                        }
                    }
                }
            } else if (pe.myPe() == 1 && pe.readLong(ctr) != (long) iters * (pass + 2)) {
                throw new ShmemException(ShmemException.Reason.OPERATION_FAILED, "atomic_lat: the counter on PE 1 is "
                    + pe.readLong(ctr) + " after " + (long) iters * (pass + 2) + " fetch-adds of 1 (warm-up included)");
            }
            pe.barrierAll();
            if (pe.myPe() == 0 && !warmUp) {
                if (bw) {
                    final int per = Math.max(1, iters / (blocks * threads));
                    final long ops = (long) per * blocks * threads;
                    final double secs = bwTime[0] / 1e9;
                    rows.add(new Row(len, (int) ops, blocks * threads, 0, 0, 0, ops * len / secs / (1 << 20),
                        ops / secs / 1e6, ok, NONE, null));
                } else {
                    final boolean pingpong = test == Test.PUT_SIGNAL_LAT;
                    long comm = 0;
                    for (int i = 0; i < iters; i++) {
                        comm += answer[i] - issue[i];
                        t[i] = (answer[i] - issue[i]) / (pingpong ? 2e3 : 1e3); // the ping-pong: half the round trip
                    }
                    final double[] s = t.clone();
                    Arrays.sort(s);
                    final Split split = Split.of(wall, answer[iters - 1] - issue[0], comm, iters, pingpong, proxyNs,
                        proxyN, 0, "one clock (System.nanoTime, the simulator's): total from the launch to the "
                        + "stream's synchronize returning, kernel span from the first issue to the last completion, "
                        + "comm the sum of issue to completion" + (pingpong ? " (answer seen: full round trips)" : "")
                        + (proxyN > 0 ? ", proxy the sum of issue to the proxy's pick-up stamp" : ""));
                    rows.add(new Row(len, iters, 1, s[0], s[s.length / 2], s[s.length - 1], 0, 0, ok,
                        pingpong ? HALF_RTT : OP, split));
                }
            }
        }
        if (pe.myPe() != 0) {
            return null;
        }
        final long[] db = pe.doorbellCounters();
        return new Result(test.label, pe.context().mode(), pe.nPes(), pe.context().gpu(), pe.gpu().describe(),
            pe.gpu().isSimulated(), true,
            pe.context().wqeFence(), rows, breakdown(stamps, test == Test.PUT_SIGNAL_LAT ? landing : null, iters),
            db[0], db[1], db[2], pe.gpu().isSimulated() ? "System.nanoTime (the simulator's shared clock)"
                : "System.nanoTime");
    }

    /** Medians per step over the last size's samples (ping-pong: the i-th stamp pairs with the i-th landing). */
    static Breakdown breakdown(final List<long[]> stamps, final long[] landing, final int iters) {
        return breakdown(stamps, landing, iters, 0);
    }

    /**
     * Stamps {op, issue, proxy pick-up (0: none), NIC pick-up, completion seen[, CQE written (0: none)[, placed at the
     * target, ACK sent, ACK taken (0: none)]]}, all on one time line; landing (null: none) on the issue's clock. Where
     * every sample has its CQE stamp (and no landing), the NIC's part ends there: NIC pick-up to CQE written (both host
     * stamps), then CQE written to completion seen; where every sample also has the three path stamps, the NIC's part
     * is split at them.
     * {@code pairErrorNs}: the error of steps between the issue's clock (issue, landing, completion: the GPU's on
     * CUDA) and the host's (proxy and NIC pick-up); 0 when they are one clock.
     */
    static Breakdown breakdown(final List<long[]> stamps, final long[] landing, final int iters,
                               final double pairErrorNs) {
        if (stamps.isEmpty()) {
            return Breakdown.none();
        }
        final List<long[]> last = stamps.subList(Math.max(0, stamps.size() - iters), stamps.size());
        final int n = last.size();
        final boolean proxied = last.get(0)[2] != 0;
        boolean landed = landing != null;
        for (int i = 0; landed && i < n; i++) {
            landed = i < landing.length && landing[i] != 0;
        }
        final double[] proxy = new double[n];
        final double[] nic = new double[n];
        final double[] land = new double[n];
        final double[] done = new double[n];
        final double[] total = new double[n];
        boolean cqes = !landed;
        for (int i = 0; cqes && i < n; i++) {
            cqes = last.get(i).length > 5 && last.get(i)[5] != 0;
        }
        final double[] toCqe = new double[n];
        // the NIC's own steps (placed at the target, ACK sent, ACK taken), where every sample has them
        boolean path = cqes;
        for (int i = 0; path && i < n; i++) {
            final long[] s = last.get(i);
            path = s.length > 8 && s[6] != 0 && s[7] != 0 && s[8] != 0;
        }
        final double[] placed = new double[n];
        final double[] acked = new double[n];
        final double[] taken = new double[n];
        for (int i = 0; i < n; i++) {
            final long[] s = last.get(i);
            final long issue = s[1];
            final long before = proxied ? s[2] : issue;
            proxy[i] = (s[2] - issue) / 1e3;
            nic[i] = (s[3] - before) / 1e3;
            if (landed) {
                land[i] = (landing[i] - s[3]) / 1e3;
                done[i] = (s[4] - landing[i]) / 1e3;
            } else if (cqes) {
                toCqe[i] = (s[5] - (path ? s[8] : s[3])) / 1e3;
                done[i] = (s[4] - s[5]) / 1e3;
                if (path) {
                    placed[i] = (s[6] - s[3]) / 1e3;
                    acked[i] = (s[7] - s[6]) / 1e3;
                    taken[i] = (s[8] - s[7]) / 1e3;
                }
            } else {
                done[i] = (s[4] - s[3]) / 1e3;
            }
            total[i] = (s[4] - issue) / 1e3;
        }
        final double e = pairErrorNs / 1e3;
        final List<Step> steps = new ArrayList<>();
        if (proxied) {
            steps.add(Step.of(ISSUE_TO_PROXY, median(proxy), e));
        }
        steps.add(Step.of(TO_NIC, median(nic), proxied ? 0 : e)); // proxy and NIC: both host stamps
        if (landed) {
            steps.add(Step.of(NIC_TO_LANDING, median(land), e));
            steps.add(Step.of(TO_ANSWER, median(done), 0)); // landing and answer: stamps of one GPU clock
        } else if (cqes) {
            if (path) {
                steps.add(Step.of(TO_PLACED, median(placed), 0)); // host stamps from here to the CQE
                steps.add(Step.of(TO_ACK_SENT, median(acked), 0));
                steps.add(Step.of(TO_ACK_TAKEN, median(taken), 0));
            }
            steps.add(Step.of(TO_CQE, median(toCqe), 0)); // both host stamps
            steps.add(Step.of(TO_COMPLETION, median(done), e));
        } else {
            steps.add(Step.of(TO_COMPLETION, median(done), e));
        }
        return new Breakdown(n, e, List.copyOf(steps), median(total));
    }

    /**
     * The breakdown as one line of text.
     *
     * @param b the breakdown
     * @return the line
     */
    public static String format(final Breakdown b) {
        final StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "median us over %d ops of the largest "
            + "size%s:", b.samples(), b.clockPairingErrorUs() > 0 ? String.format(Locale.ROOT, ", GPU-host clock "
            + "pairing ±%.2f", b.clockPairingErrorUs()) : ""));
        for (final Step s : b.steps()) {
            sb.append(' ').append(s.name()).append(' ').append(s.text()).append(',');
        }
        return sb.append(String.format(Locale.ROOT, " total %.2f", b.totalUs())).toString();
    }

    private static double median(final double[] v) {
        final double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    /**
     * One line per row, perftest-like, for tools that print.
     *
     * @param r the row
     * @return the line
     */
    public static String format(final Row r) {
        return r.mibPerSec() > 0
            ? String.format(Locale.ROOT, "%-10d %-8d %-8d %12.2f %10.3f", r.bytes(), r.iters(), r.threads(),
                r.mibPerSec(), r.mops())
            : String.format(Locale.ROOT, "%-10d %-8d %10.2f %10.2f %10.2f", r.bytes(), r.iters(), r.minUs(),
                r.medianUs(), r.maxUs());
    }
}
