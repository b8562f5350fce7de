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
    private boolean concluded;

    public ShmemContext nPes(final int v) {
        nPes = v;
        return this;
    }

    public ShmemContext gpu(final String v) {
        gpu = v;
        return this;
    }

    public ShmemContext mode(final ShmemMode v) {
        mode = v;
        return this;
    }

    public ShmemContext heapBytes(final long v) {
        heapBytes = v;
        return this;
    }

    public ShmemContext sqDepth(final int v) {
        sqDepth = v;
        return this;
    }

    public ShmemContext proxyDepth(final int v) {
        proxyDepth = v;
        return this;
    }

    /**
     * False leaves out the system-scope fence between writing a WQE and ringing the doorbell (the negative control).
     * On the simulated GPU the WQE's stores then reach host memory after the doorbell with
     * {@link #staleProbability(double)}.
     */
    public ShmemContext wqeFence(final boolean v) {
        wqeFence = v;
        return this;
    }

    public ShmemContext staleProbability(final double v) {
        staleProbability = v;
        return this;
    }

    public ShmemContext seed(final long v) {
        seed = v;
        return this;
    }

    public ShmemContext timeout(final Duration v) {
        timeout = v;
        return this;
    }

    /** Records per-operation stamps (issue, proxy pick-up, NIC pick-up, landing, completion) for the breakdown. */
    public ShmemContext stamps(final boolean v) {
        stamps = v;
        return this;
    }

    /** Idle strategy of the NIC threads and the proxy (spin, yield, backoff, sleep:&lt;us&gt;): spin on a real host. */
    public ShmemContext idle(final String v) {
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
     * Validates the settings; once they pass, calling it again does nothing.
     *
     * @return this context
     * @throws ShmemException naming the setting, for a bad value
     */
    public ShmemContext conclude() {
        if (concluded) {
            return this;
        }
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
        concluded = true;
        return this;
    }

    private static void bad(final boolean cond, final String what) {
        if (cond) {
            throw new ShmemException(ShmemException.Reason.BAD_ARGUMENT, what);
        }
    }
}
