/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

import java.time.Duration;

/** Settings of a shmem run (Aeron's Context pattern): defaults, setters, {@link #conclude()} validates. */
public final class ShmemContext {
    /** Creates a context with every setting at its default; change them with the setters, then {@link #conclude()}. */
    public ShmemContext() {
    }

    /** Bytes at the start of every heap that the library keeps for itself (atomic fetch slots, signal sources). */
    public static final long RESERVED = 64 * 1024;
    private int nPes = 2;
    private String gpu = "sim:h200";
    private ShmemMode mode = ShmemMode.IBGDA;
    private long heapBytes = 8L << 20;
    private int sqDepth = 128;
    private int proxyDepth = 256;
    private boolean wqeFence = true;
    private double staleProbability = 1.0;
    private long seed = 1;
    private Duration timeout = Duration.ofSeconds(20);
    private Duration warmup = Duration.ofMillis(300);
    private boolean stamps;
    private String idle = "backoff";
    private final io.gdrkit.core.config.ContextFreeze freeze = new io.gdrkit.core.config.ContextFreeze(
        "ShmemContext");

    /**
     * Sets the number of PEs (default 2).
     *
     * @param v the number of PEs, 1..64
     * @return this context
     */
    public ShmemContext nPes(final int v) {
        freeze.set("nPes");
        nPes = v;
        return this;
    }

    /**
     * Sets the GPUs the PEs run on (default {@code sim:h200}, simulated H200s).
     *
     * @param v the GPU spec, such as {@code sim:h200} or {@code cuda:0}
     * @return this context
     */
    public ShmemContext gpu(final String v) {
        freeze.set("gpu");
        gpu = v;
        return this;
    }

    /**
     * Sets the control path (default {@link ShmemMode#IBGDA}).
     *
     * @param v the control path
     * @return this context
     */
    public ShmemContext mode(final ShmemMode v) {
        freeze.set("mode");
        mode = v;
        return this;
    }

    /**
     * Sets the size of each PE's symmetric heap (default 8 MiB), including the {@value #RESERVED} bytes the library
     * keeps.
     *
     * @param v the heap size in bytes, at most 2^34
     * @return this context
     */
    public ShmemContext heapBytes(final long v) {
        freeze.set("heapBytes");
        heapBytes = v;
        return this;
    }

    /**
     * Sets the depth of each send queue the GPU writes WQEs into (default 128).
     *
     * @param v the depth, a power of two in 8..4096
     * @return this context
     */
    public ShmemContext sqDepth(final int v) {
        freeze.set("sqDepth");
        sqDepth = v;
        return this;
    }

    /**
     * Sets the depth of the proxy ring the GPU posts requests to in IBRC mode (default 256).
     *
     * @param v the depth, a power of two in 8..65536
     * @return this context
     */
    public ShmemContext proxyDepth(final int v) {
        freeze.set("proxyDepth");
        proxyDepth = v;
        return this;
    }

    /**
     * False leaves out the system-scope fence between writing a WQE and ringing the doorbell (the negative control).
     * On the simulated GPU the WQE's stores then reach host memory after the doorbell with
     * {@link #staleProbability(double)}.
     *
     * @param v true (the default) to fence, false to leave the fence out
     * @return this context
     */
    public ShmemContext wqeFence(final boolean v) {
        freeze.set("wqeFence");
        wqeFence = v;
        return this;
    }

    /**
     * Sets how likely a WQE's stores reach host memory after the doorbell when the fence is left out, on the
     * simulated GPU (default 1).
     *
     * @param v the probability, 0..1
     * @return this context
     */
    public ShmemContext staleProbability(final double v) {
        freeze.set("staleProbability");
        staleProbability = v;
        return this;
    }

    /**
     * Sets the seed of the run's random choices, such as the simulated GPU's store reordering (default 1).
     *
     * @param v the seed
     * @return this context
     */
    public ShmemContext seed(final long v) {
        freeze.set("seed");
        seed = v;
        return this;
    }

    /**
     * Sets the timeout of every wait (default 20 seconds).
     *
     * @param v the timeout, positive
     * @return this context
     */
    public ShmemContext timeout(final Duration v) {
        freeze.set("timeout");
        timeout = v;
        return this;
    }

    /**
     * Records per-operation stamps (issue, proxy pick-up, NIC pick-up, landing, completion) for the breakdown.
     *
     * @param v true to record the stamps
     * @return this context
     */
    public ShmemContext stamps(final boolean v) {
        freeze.set("stamps");
        stamps = v;
        return this;
    }

    /**
     * Idle strategy of the NIC threads and the proxy (spin, yield, backoff, sleep:&lt;us&gt;): spin on a real host.
     *
     * @param v the idle strategy (default {@code backoff})
     * @return this context
     */
    public ShmemContext idle(final String v) {
        freeze.set("idle");
        idle = v;
        return this;
    }

    /**
     * How long the untimed warm-up of a CUDA {@code shmem-perf} run lasts at least: its warm-up pass (the smallest
     * size) is repeated until this much time has gone by, so that the NICs' and the proxy's code is compiled before
     * the first reported size, as {@code perf} warms up for 300 ms (default 300 ms; zero: one pass).
     *
     * @param v the warm-up time, zero or positive
     * @return this context
     */
    public ShmemContext warmup(final Duration v) {
        freeze.set("warmup");
        warmup = v;
        return this;
    }

    /** {@return how long the warm-up of a CUDA {@code shmem-perf} run lasts at least} */
    public Duration warmup() {
        return warmup;
    }

    /** {@return the idle strategy of the NIC threads and the proxy} */
    public String idle() {
        return idle;
    }

    /** {@return the number of PEs} */
    public int nPes() {
        return nPes;
    }

    /** {@return the GPU spec} */
    public String gpu() {
        return gpu;
    }

    /** {@return the control path} */
    public ShmemMode mode() {
        return mode;
    }

    /** {@return the size of each PE's symmetric heap, in bytes} */
    public long heapBytes() {
        return heapBytes;
    }

    /** {@return the depth of each send queue} */
    public int sqDepth() {
        return sqDepth;
    }

    /** {@return the depth of the proxy ring} */
    public int proxyDepth() {
        return proxyDepth;
    }

    /** {@return whether the fence between writing a WQE and ringing the doorbell is kept} */
    public boolean wqeFence() {
        return wqeFence;
    }

    /** {@return how likely an unfenced WQE's stores arrive after the doorbell, on the simulated GPU} */
    public double staleProbability() {
        return staleProbability;
    }

    /** {@return the seed of the run's random choices} */
    public long seed() {
        return seed;
    }

    /** {@return the timeout of every wait} */
    public Duration timeout() {
        return timeout;
    }

    /** {@return whether per-operation stamps are recorded} */
    public boolean stamps() {
        return stamps;
    }

    /**
     * Validates once and freezes the context: afterwards a setter and a second {@code conclude()} throw
     * {@link IllegalStateException} ({@link #isConcluded()} tells code that is handed a context whether to conclude
     * it).
     *
     * @return this context
     * @throws ShmemException naming the setting, for a bad value
     */
    public synchronized ShmemContext conclude() {
        freeze.checkConclude();
        bad(nPes < 1 || nPes > 64, "nPes " + nPes + " is not in 1..64");
        bad(gpu == null || gpu.isBlank(), "no GPU spec");
        bad(mode == null, "no mode");
        bad(heapBytes < RESERVED + 4096 || heapBytes > (1L << 34), "heap of " + heapBytes + " bytes is not in "
            + (RESERVED + 4096) + "..2^34");
        bad(Integer.bitCount(sqDepth) != 1 || sqDepth < 8 || sqDepth > 4096, "sqDepth " + sqDepth
            + " is not a power of two in 8..4096");
        bad(Integer.bitCount(proxyDepth) != 1 || proxyDepth < 8 || proxyDepth > 65536, "proxyDepth " + proxyDepth
            + " is not a power of two in 8..65536");
        bad((long) nPes * sqDepth * 8 > RESERVED / 2, "nPes x sqDepth x 8 bytes of fetch slots exceed the reserved "
            + RESERVED / 2 + " bytes");
        bad(staleProbability < 0 || staleProbability > 1, "staleProbability " + staleProbability + " is not in 0..1");
        try {
            io.gdrkit.core.agent.IdleStrategy.parse(idle);
        } catch (final IllegalArgumentException | NullPointerException e) {
            bad(true, "idle strategy: " + e.getMessage());
        }
        bad(timeout == null || timeout.isNegative() || timeout.isZero(), "timeout must be positive");
        bad(warmup == null || warmup.isNegative() || warmup.compareTo(Duration.ofMinutes(10)) > 0,
            "warm-up must be 0 to 10 minutes");
        freeze.concluded();
        return this;
    }

    /** {@return whether {@link #conclude()} ran (then setters and a second conclude() throw)} */
    public boolean isConcluded() {
        return freeze.isConcluded();
    }

    /**
     * {@link #conclude()} unless it ran, atomically: for the code a context is handed to, which may find it concluded
     * by its caller (or by another rank's thread sharing it).
     */
    synchronized ShmemContext concludeOnce() {
        return isConcluded() ? this : conclude();
    }

    private static void bad(final boolean cond, final String what) {
        if (cond) {
            throw new ShmemException(ShmemException.Reason.BAD_ARGUMENT, what);
        }
    }
}
