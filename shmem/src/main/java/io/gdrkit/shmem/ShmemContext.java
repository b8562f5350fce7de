package io.gdrkit.shmem;

import java.time.Duration;

/** Settings of a shmem run (Aeron's Context pattern): defaults, setters, {@link #conclude()} validates. */
public final class ShmemContext {
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
    private boolean stamps;
    private String idle = "backoff";
    private final io.gdrkit.core.config.ContextFreeze freeze = new io.gdrkit.core.config.ContextFreeze(
        "ShmemContext");

    public ShmemContext nPes(final int v) {
        freeze.set("nPes");
        nPes = v;
        return this;
    }

    public ShmemContext gpu(final String v) {
        freeze.set("gpu");
        gpu = v;
        return this;
    }

    public ShmemContext mode(final ShmemMode v) {
        freeze.set("mode");
        mode = v;
        return this;
    }

    public ShmemContext heapBytes(final long v) {
        freeze.set("heapBytes");
        heapBytes = v;
        return this;
    }

    public ShmemContext sqDepth(final int v) {
        freeze.set("sqDepth");
        sqDepth = v;
        return this;
    }

    public ShmemContext proxyDepth(final int v) {
        freeze.set("proxyDepth");
        proxyDepth = v;
        return this;
    }

    /**
     * False leaves out the system-scope fence between writing a WQE and ringing the doorbell (the negative control).
     * On the simulated GPU the WQE's stores then reach host memory after the doorbell with
     * {@link #staleProbability(double)}.
     */
    public ShmemContext wqeFence(final boolean v) {
        freeze.set("wqeFence");
        wqeFence = v;
        return this;
    }

    public ShmemContext staleProbability(final double v) {
        freeze.set("staleProbability");
        staleProbability = v;
        return this;
    }

    public ShmemContext seed(final long v) {
        freeze.set("seed");
        seed = v;
        return this;
    }

    public ShmemContext timeout(final Duration v) {
        freeze.set("timeout");
        timeout = v;
        return this;
    }

    /** Records per-operation stamps (issue, proxy pick-up, NIC pick-up, landing, completion) for the breakdown. */
    public ShmemContext stamps(final boolean v) {
        freeze.set("stamps");
        stamps = v;
        return this;
    }

    /** Idle strategy of the NIC threads and the proxy (spin, yield, backoff, sleep:&lt;us&gt;): spin on a real host. */
    public ShmemContext idle(final String v) {
        freeze.set("idle");
        idle = v;
        return this;
    }

    public String idle() {
        return idle;
    }

    public int nPes() {
        return nPes;
    }

    public String gpu() {
        return gpu;
    }

    public ShmemMode mode() {
        return mode;
    }

    public long heapBytes() {
        return heapBytes;
    }

    public int sqDepth() {
        return sqDepth;
    }

    public int proxyDepth() {
        return proxyDepth;
    }

    public boolean wqeFence() {
        return wqeFence;
    }

    public double staleProbability() {
        return staleProbability;
    }

    public long seed() {
        return seed;
    }

    public Duration timeout() {
        return timeout;
    }

    public boolean stamps() {
        return stamps;
    }

    /**
     * Validates once and freezes the context: afterwards a setter and a second {@code conclude()} throw
     * {@link IllegalStateException} ({@link #isConcluded()} tells code that is handed a context whether to conclude
     * it); a bad value is a {@link ShmemException} naming it.
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
        freeze.concluded();
        return this;
    }

    /** Whether {@link #conclude()} ran (then setters and a second conclude() throw). */
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
