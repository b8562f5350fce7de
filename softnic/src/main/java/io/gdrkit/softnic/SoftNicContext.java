package io.gdrkit.softnic;

import io.gdrkit.core.agent.IdleStrategy;
import io.gdrkit.core.agent.NanoClock;
import io.gdrkit.softnic.fabric.LinkHook;

/**
 * Configuration of a {@link SoftNicDriver}: defaults, overridable by system properties named by the constants
 * below, then by setters; {@link #conclude()} validates the whole.
 */
public final class SoftNicContext {
    /** invoker | own_device | dedicated | deterministic. */
    public static final String PROGRESS_PROP = "gdrkit.nic.progress";
    /** spin | yield | backoff | sleep:&lt;micros&gt; (dedicated threads). */
    public static final String IDLE_STRATEGY_PROP = "gdrkit.nic.idle";
    /** Bytes of ring per directed link (power of two). */
    public static final String LINK_CAPACITY_PROP = "gdrkit.nic.link.capacity";
    /** Multiplier on the IB retransmit timeout 4.096 us * 2^timeout. */
    public static final String RETRANSMIT_FACTOR_PROP = "gdrkit.nic.retransmit.factor";
    /** Packets after which the requester sets AckReq even inside a message. */
    public static final String ACK_REQ_INTERVAL_PROP = "gdrkit.nic.ackreq.interval";
    /** true: every packet carries a CRC32C checked on receipt (an ICRC); corrupted packets are dropped. */
    public static final String LINK_CRC_PROP = "gdrkit.nic.link.crc";
    /** Most PSNs a QP may have unacknowledged; bounds what go-back-N resends after a loss. */
    public static final String WINDOW_PROP = "gdrkit.nic.window";
    /** Packets one agent handles per duty cycle, per QP or link. */
    public static final String BURST_PROP = "gdrkit.nic.burst";
    /**
     * true | false (default true): the provider registers DMA-BUF file descriptors (ibv_reg_dmabuf_mr). Off, it
     * answers EOPNOTSUPP as a provider or kernel without DMA-BUF support does, so NCCL's fd = -1 probe says no.
     */
    public static final String DMABUF_PROP = "gdrkit.nic.dmabuf";
    /**
     * true | false (default true): a peer-memory client (the nvidia-peermem analogue) lets ibv_reg_mr register
     * GPU memory by its address. Off, registering GPU memory by pointer fails with EFAULT, as without the module.
     */
    public static final String PEERMEM_PROP = "gdrkit.nic.peermem";
    /**
     * true | false (default true): on the in-JVM fabric, a SEND or WRITE packet from registered host memory carries
     * a reference to the sender's bytes instead of the bytes, and the responder copies them straight from the
     * sender's MR into its own: one copy of every payload byte instead of two. Used only where it is safe; the
     * bytes travel as before with a link CRC ({@link #LINK_CRC_PROP}), a link hook that may look at payloads
     * (fault injection), DMA (GPU) or thread-confined source memory, inline data, and on other fabrics.
     */
    public static final String ONE_COPY_PROP = "gdrkit.nic.onecopy";
    /** Most QPs one device holds at a time (ibv_device_attr.max_qp); creating one more fails with ENOMEM. */
    public static final String MAX_QP_PROP = "gdrkit.nic.max.qp";
    /** The largest {@link #MAX_QP_PROP} a device supports (and the default). */
    public static final int MAX_QP_LIMIT = SoftDevice.MAX_QP - SoftDevice.QPN_BASE;

    public enum ProgressMode {
        /** Polling a CQ advances every NIC of the driver (one JVM, no extra threads). */
        INVOKER,
        /**
         * Polling a CQ advances only the NIC that CQ belongs to: each application thread drives its own NIC,
         * as separate processes would (perftest's client and server).
         */
        OWN_DEVICE,
        /** Each device runs its agents on its own thread with the idle strategy. */
        DEDICATED,
        /** Nobody runs the agents: a DeterministicRunner steps them (tests). */
        DETERMINISTIC
    }

    private ProgressMode progressMode = ProgressMode.valueOf(
        System.getProperty(PROGRESS_PROP, "invoker").toUpperCase(java.util.Locale.ROOT).replace('-', '_'));
    private String idleStrategy = System.getProperty(IDLE_STRATEGY_PROP, "backoff");
    private int linkCapacity = Integer.getInteger(LINK_CAPACITY_PROP, 4 << 20);
    private double retransmitFactor = Double.parseDouble(System.getProperty(RETRANSMIT_FACTOR_PROP, "1.0"));
    private int ackReqInterval = Integer.getInteger(ACK_REQ_INTERVAL_PROP, 64);
    private int window = Integer.getInteger(WINDOW_PROP, 512);
    private int burst = Integer.getInteger(BURST_PROP, 32);
    private boolean linkCrc = Boolean.getBoolean(LINK_CRC_PROP);
    // kept as text until conclude(): a misspelt property must be an error naming it, not a silent "false"
    private String dmaBuf = System.getProperty(DMABUF_PROP, "true");
    private String peermem = System.getProperty(PEERMEM_PROP, "true");
    private String oneCopy = System.getProperty(ONE_COPY_PROP, "true");
    private int maxQp = Integer.getInteger(MAX_QP_PROP, MAX_QP_LIMIT);
    private NanoClock clock = NanoClock.SYSTEM;
    private LinkHook linkHook = LinkHook.PASS;
    private boolean concluded;

    public ProgressMode progressMode() {
        return progressMode;
    }

    public SoftNicContext progressMode(final ProgressMode mode) {
        progressMode = mode;
        return this;
    }

    public String idleStrategy() {
        return idleStrategy;
    }

    public SoftNicContext idleStrategy(final String spec) {
        idleStrategy = spec;
        return this;
    }

    public int linkCapacity() {
        return linkCapacity;
    }

    public SoftNicContext linkCapacity(final int bytes) {
        linkCapacity = bytes;
        return this;
    }

    public double retransmitFactor() {
        return retransmitFactor;
    }

    public SoftNicContext retransmitFactor(final double f) {
        retransmitFactor = f;
        return this;
    }

    public int ackReqInterval() {
        return ackReqInterval;
    }

    public SoftNicContext ackReqInterval(final int packets) {
        ackReqInterval = packets;
        return this;
    }

    public int window() {
        return window;
    }

    public SoftNicContext window(final int packets) {
        window = packets;
        return this;
    }

    public int burst() {
        return burst;
    }

    public SoftNicContext burst(final int packets) {
        burst = packets;
        return this;
    }

    public boolean linkCrc() {
        return linkCrc;
    }

    public SoftNicContext linkCrc(final boolean on) {
        linkCrc = on;
        return this;
    }

    /** The provider registers DMA-BUF ({@link #DMABUF_PROP}). */
    public boolean dmaBuf() {
        return Boolean.parseBoolean(dmaBuf);
    }

    public SoftNicContext dmaBuf(final boolean on) {
        dmaBuf = Boolean.toString(on);
        return this;
    }

    /** The provider registers GPU memory by pointer ({@link #PEERMEM_PROP}). */
    public boolean peermem() {
        return Boolean.parseBoolean(peermem);
    }

    public SoftNicContext peermem(final boolean on) {
        peermem = Boolean.toString(on);
        return this;
    }

    /** The single-copy path may be used where safe ({@link #ONE_COPY_PROP}). */
    public boolean oneCopy() {
        return Boolean.parseBoolean(oneCopy);
    }

    public SoftNicContext oneCopy(final boolean on) {
        oneCopy = Boolean.toString(on);
        return this;
    }

    public int maxQp() {
        return maxQp;
    }

    public SoftNicContext maxQp(final int qps) {
        maxQp = qps;
        return this;
    }

    public NanoClock clock() {
        return clock;
    }

    public SoftNicContext clock(final NanoClock clock) {
        this.clock = clock;
        return this;
    }

    public LinkHook linkHook() {
        return linkHook;
    }

    public SoftNicContext linkHook(final LinkHook hook) {
        linkHook = hook;
        return this;
    }

    /** Validates; every problem names the setting and its property. */
    public SoftNicContext conclude() {
        if (concluded) {
            throw new IllegalStateException("SoftNicContext already concluded; use a new one per driver");
        }
        if (progressMode == null) {
            throw new IllegalArgumentException(PROGRESS_PROP + " must be invoker, dedicated or deterministic");
        }
        IdleStrategy.parse(idleStrategy);
        if (linkCapacity < 64 * 1024 || Integer.bitCount(linkCapacity) != 1 || linkCapacity > (1 << 30)) {
            throw new IllegalArgumentException(LINK_CAPACITY_PROP + " = " + linkCapacity
                + ": must be a power of two from 64 KiB to 1 GiB");
        }
        if (!(retransmitFactor > 0) || retransmitFactor > 1e6) {
            throw new IllegalArgumentException(RETRANSMIT_FACTOR_PROP + " = " + retransmitFactor
                + ": must be > 0 and <= 1e6");
        }
        if (ackReqInterval < 1) {
            throw new IllegalArgumentException(ACK_REQ_INTERVAL_PROP + " = " + ackReqInterval + ": must be >= 1");
        }
        if (window < 1 || window > (1 << 22)) {
            throw new IllegalArgumentException(WINDOW_PROP + " = " + window + ": must be within 1..2^22");
        }
        checkBoolean(DMABUF_PROP, dmaBuf);
        checkBoolean(PEERMEM_PROP, peermem);
        checkBoolean(ONE_COPY_PROP, oneCopy);
        if (maxQp < 1 || maxQp > MAX_QP_LIMIT) {
            throw new IllegalArgumentException(MAX_QP_PROP + " = " + maxQp + ": must be within 1.." + MAX_QP_LIMIT);
        }
        if (burst < 1) {
            throw new IllegalArgumentException(BURST_PROP + " = " + burst + ": must be >= 1");
        }
        if (linkHook instanceof io.gdrkit.softnic.fabric.FaultInjector fi && fi.config().corrupt() > 0 && !linkCrc) {
            throw new IllegalArgumentException("fault injection corrupts packets but " + LINK_CRC_PROP
                + " is off: corruption would go undetected; turn the link CRC on");
        }
        if (clock == null || linkHook == null) {
            throw new IllegalArgumentException("clock and link hook must not be null");
        }
        concluded = true;
        return this;
    }

    private static void checkBoolean(final String property, final String value) {
        if (!"true".equalsIgnoreCase(value) && !"false".equalsIgnoreCase(value)) {
            throw new IllegalArgumentException(property + " = '" + value + "': must be true or false");
        }
    }

}
