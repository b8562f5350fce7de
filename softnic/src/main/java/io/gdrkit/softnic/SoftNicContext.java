/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.core.agent.IdleStrategy;
import io.gdrkit.core.agent.NanoClock;
import io.gdrkit.core.config.ContextFreeze;
import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.softnic.config.SoftNicConfiguration;
import io.gdrkit.softnic.fabric.FaultInjector;
import io.gdrkit.softnic.fabric.LinkHook;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Configuration of a {@link SoftNicDriver} (Aeron's Context pattern): every value has a default, a system property
 * named by the constants below overrides it, a setter overrides both. {@link #conclude()} reads the properties once
 * through {@link SettingsReader}, validates the whole, records where each value came from ({@link #settings()}) and
 * freezes the context; the getters answer only after it. A malformed property is an IllegalArgumentException that
 * names the property, the text and what was expected.
 */
public final class SoftNicContext {
    /**
     * invoker | own_device | dedicated | deterministic: who moves the NICs ({@link ProgressMode}). With own_device a
     * thread polling one NIC's CQ never moves another NIC: a single thread that waits on one peer's CQ at a time
     * stalls (the other side retries until RETRY_EXC_ERR); poll each side in turn, or use invoker.
     */
    public static final String PROGRESS_PROP = SoftNicConfiguration.PROGRESS.name();
    /** spin | yield | backoff | sleep:&lt;micros&gt; (dedicated threads). */
    public static final String IDLE_STRATEGY_PROP = SoftNicConfiguration.IDLE.name();
    /**
     * Microseconds (0 = off, the default): with own_device, a backstop thread per device also steps the NIC once
     * per period, so a NIC whose host thread is busy computing (reducing a large chunk) still acknowledges and
     * answers before the peer's retransmission timer runs out, while the polling thread keeps the fast path
     * (no hand-off between threads). Ignored in the other modes.
     */
    public static final String BACKSTOP_PROP = SoftNicConfiguration.BACKSTOP_US.name();
    /** Bytes of ring per directed link (power of two). */
    public static final String LINK_CAPACITY_PROP = SoftNicConfiguration.LINK_CAPACITY.name();
    /** Multiplier on the IB retransmit timeout 4.096 us * 2^timeout. */
    public static final String RETRANSMIT_FACTOR_PROP = SoftNicConfiguration.RETRANSMIT_FACTOR.name();
    /** Most doublings of the retransmit timeout after consecutive timeouts (0 turns backoff off; default 5). */
    public static final String RETRANSMIT_BACKOFF_PROP = SoftNicConfiguration.RETRANSMIT_BACKOFF.name();
    /** Packets after which the requester sets AckReq even inside a message. */
    public static final String ACK_REQ_INTERVAL_PROP = SoftNicConfiguration.ACK_REQ_INTERVAL.name();
    /** true: every packet carries a CRC32C checked on receipt (an ICRC); corrupted packets are dropped. */
    public static final String LINK_CRC_PROP = SoftNicConfiguration.LINK_CRC.name();
    /** Most PSNs a QP may have unacknowledged; bounds what go-back-N resends after a loss. */
    public static final String WINDOW_PROP = SoftNicConfiguration.WINDOW.name();
    /** Packets one agent handles per duty cycle, per QP or link. */
    public static final String BURST_PROP = SoftNicConfiguration.BURST.name();
    /**
     * true | false (default true): the provider registers DMA-BUF file descriptors (ibv_reg_dmabuf_mr). Off, it
     * answers EOPNOTSUPP as a provider or kernel without DMA-BUF support does, so NCCL's fd = -1 probe says no.
     */
    public static final String DMABUF_PROP = SoftNicConfiguration.DMABUF_NAME;
    /**
     * true | false (default true): a peer-memory client (the nvidia-peermem analogue) lets ibv_reg_mr register
     * GPU memory by its address. Off, registering GPU memory by pointer fails with EFAULT, as without the module.
     */
    public static final String PEERMEM_PROP = SoftNicConfiguration.PEERMEM_NAME;
    /**
     * true | false (default true): on the in-JVM fabric, a SEND or WRITE packet from registered host memory carries
     * a reference to the sender's bytes instead of the bytes, and the responder copies them straight from the
     * sender's MR into its own: one copy of every payload byte instead of two. Used only where it is safe; the
     * bytes themselves travel with a link CRC ({@link #LINK_CRC_PROP}), a link hook that may look at payloads
     * (fault injection), DMA (GPU) or thread-confined source memory, inline data, and on other fabrics.
     */
    public static final String ONE_COPY_PROP = SoftNicConfiguration.ONE_COPY.name();
    /**
     * Smallest message (bytes, default {@value #DEFAULT_ONE_COPY_MIN}) whose payload travels as a reference on the
     * single-copy path; smaller ones are copied into the packet. Referencing costs an SGE walk on the sender and a
     * lookup on the receiver, more than copying a short payload: 64 B WRITEs run at a lower message rate referenced
     * than copied (docs/PERFORMANCE.md).
     */
    public static final String ONE_COPY_MIN_PROP = SoftNicConfiguration.ONE_COPY_MIN.name();
    /** The default of {@link #ONE_COPY_MIN_PROP}. */
    public static final int DEFAULT_ONE_COPY_MIN = 1024;
    /**
     * true | false (default true): idle QPs leave the engines' scan (ScanSet) until work comes back, at the price of
     * a full fence in every post (the wake-up handshake); false keeps every QP in the scan and posts without it.
     */
    public static final String SCAN_PARK_PROP = SoftNicConfiguration.SCAN_PARK.name();
    /**
     * true | false (default true): on the shared-memory fabric, a SEND or WRITE packet of at least
     * {@link #SHM_CMA_THRESHOLD_PROP} payload bytes carries the sender's address instead of its bytes, and the
     * receiving process pulls them straight into the destination with process_vm_readv (UCX's cma): one copy
     * instead of two, through no ring. Needs {@link #ONE_COPY_PROP} too, and a peer that proved at link setup that
     * it may read this process (ptrace permission); otherwise the bytes travel through the ring and the fabric's
     * copy mode says why. Off, this process neither sends references nor grants reads of its peers.
     */
    public static final String SHM_CMA_PROP = SoftNicConfiguration.SHM_CMA.name();
    /**
     * Smallest packet payload in bytes that travels as a cross-process reference (default 4096): below it a system
     * call costs more than copying the bytes through the ring twice.
     */
    public static final String SHM_CMA_THRESHOLD_PROP = SoftNicConfiguration.SHM_CMA_THRESHOLD.name();
    /**
     * true | false (default false): segment offload ({@link #BATCH_PROP}) across processes too, on shm links where
     * cma was granted: one reference record for up to {@code batch} packets of a SEND/WRITE. Off by default: large
     * 2-rank allreduces are no faster with it than with one record per packet, and slower where each rank has a NIC
     * thread (docs/PERFORMANCE.md, "Collectives against OpenMPI").
     */
    public static final String SHM_BATCH_PROP = SoftNicConfiguration.SHM_BATCH.name();
    /**
     * auto | 1..{@value io.gdrkit.softnic.fabric.CopyEngines#MAX_ENGINES} (default auto): copy engines of a NIC on the
     * shm fabric. A cross-process pull (cma) of at least {@link #COPY_THRESHOLD_PROP} bytes is split into this many
     * parts, read at once by the NIC thread and {@code engines - 1} daemon copy threads the NIC owns; the NIC goes on
     * only when every part is in, so completion order, PSNs and ACKs are unchanged. 1 turns it off. auto: 1 below 8
     * processors (two ranks' NIC and rank threads already fill such a host: copy threads would only preempt them), else
     * min(4, processors / 4) (a quarter of the cores per NIC leaves the rest to 2-4 ranks' own threads; past 4 kernel
     * copies a rank's pulls meet the memory bandwidth, not the threads). See {@link #defaultCopyEngines(int)}.
     */
    public static final String COPY_ENGINES_PROP = SoftNicConfiguration.COPY_ENGINES.name();
    /**
     * Smallest cross-process pull in bytes split over the copy engines (default {@value #DEFAULT_COPY_THRESHOLD},
     * 4096..2^30): below it waking threads costs more than the copy. A WRITE pulls up to 1 MiB of its message at once,
     * a SEND span or one packet of a 64 KiB software MTU its payload.
     */
    public static final String COPY_THRESHOLD_PROP = SoftNicConfiguration.COPY_THRESHOLD.name();
    /** The default of {@link #COPY_THRESHOLD_PROP}. */
    public static final int DEFAULT_COPY_THRESHOLD = 256 * 1024;
    /**
     * Segment offload (default 16; 1 turns it off): the most MTU-sized packets of one SEND or WRITE the requester
     * describes in one fabric record, as a NIC's TSO does, where the bytes travel in the record, are pulled from
     * another process or sit in the NIC's pinned source ring; a reference record within one process may stand for
     * {@link #REF_BATCH_PROP} packets instead. The responder checks the span
     * once, copies it with one copy, advances its expected PSN by the packet count and acknowledges once. PSNs,
     * the window, AckReq, ACK/NAK and go-back-N still count single packets. Used only where references are
     * ({@link #ONE_COPY_PROP}; across processes on the shm fabric only with {@link #SHM_BATCH_PROP}) and the link
     * hook takes whole spans (not with fault injection).
     */
    public static final String BATCH_PROP = SoftNicConfiguration.BATCH.name();
    /** Packets per reference record within one process (default 256; {@link #refBatch()}). */
    public static final String REF_BATCH_PROP = SoftNicConfiguration.REF_BATCH.name();
    /** The largest {@link #BATCH_PROP}. */
    public static final int MAX_BATCH = 1024;
    /**
     * Smallest UD send (bytes, default {@value #DEFAULT_UD_ONE_COPY_MIN}, at most the UD MTU 4096) that travels as a
     * reference on the in-JVM single-copy path: below it a copy into the packet costs less than the ticket and the
     * in-order wait for the receiver (measured with UdVsRcSendBench, docs/PERFORMANCE.md).
     */
    public static final String UD_ONE_COPY_MIN_PROP = SoftNicConfiguration.UD_ONE_COPY_MIN.name();
    /** The default of {@link #UD_ONE_COPY_MIN_PROP}. */
    public static final int DEFAULT_UD_ONE_COPY_MIN = 2048;
    /**
     * How long (ms, default {@value #DEFAULT_UD_REFERENCE_TIMEOUT_MS}) a referenced UD datagram that nobody claimed
     * or released may hold its send's completion back before the sender gives it up (the datagram is then lost, as
     * UD allows).
     */
    public static final String UD_REFERENCE_TIMEOUT_PROP = SoftNicConfiguration.UD_REFERENCE_TIMEOUT_MS.name();
    /** The default of {@link #UD_REFERENCE_TIMEOUT_PROP}. */
    public static final int DEFAULT_UD_REFERENCE_TIMEOUT_MS = 1000;
    /** Most QPs one device holds at a time (ibv_device_attr.max_qp); creating one more fails with ENOMEM. */
    public static final String MAX_QP_PROP = SoftNicConfiguration.MAX_QP.name();
    /** The largest {@link #MAX_QP_PROP} a device supports (and the default). */
    public static final int MAX_QP_LIMIT = SoftDevice.MAX_QP - SoftDevice.QPN_BASE;

    public enum ProgressMode {
        /**
         * Polling a CQ advances every NIC of the driver (one JVM, no extra threads); so does a blocked getCqEvent
         * or getAsyncEvent. The mode for a one-thread harness.
         */
        INVOKER,
        /**
         * Polling a CQ advances only the NIC that CQ belongs to: each application thread drives its own NIC,
         * as separate processes would (perftest's client and server). Limit: every NIC needs someone polling one
         * of its CQs. A one-thread harness that waits on one peer's CQ at a time (rdma-core's tests) stalls, since
         * the other NIC is never stepped and its QP ends in RETRY_EXC_ERR; such a harness must poll both sides in
         * turn, or use {@link #INVOKER}. A blocked getCqEvent steps the NICs of the channel's CQs;
         * getAsyncEvent steps its own device.
         */
        OWN_DEVICE,
        /**
         * Each device runs its agents on its own thread with the idle strategy; getCqEvent parks and the NIC thread
         * wakes it.
         */
        DEDICATED,
        /**
         * Nobody runs the agents: a DeterministicRunner steps them (tests). getCqEvent and getAsyncEvent move
         * nothing and return null at their timeout unless the runner runs on another thread.
         */
        DETERMINISTIC
    }

    /** Setter values by property name: they win over the properties and are recorded as {@code FLAG}. */
    private final Map<String, String> overrides = new LinkedHashMap<>();
    /** Where properties are read from; null: the JVM's system properties at {@link #conclude()}. */
    private Map<String, String> properties;
    private NanoClock clock = NanoClock.SYSTEM;
    private LinkHook linkHook = LinkHook.PASS;
    private io.gdrkit.core.mem.HostPinner hostPinner;
    private final ContextFreeze freeze = new ContextFreeze("SoftNicContext");
    /** A lab's defaults ({@link #defaultProgress}): the progress mode, and the backstop that goes with it. */
    private ProgressMode defaultProgress = ProgressMode.INVOKER;
    private int defaultBackstopMicros;
    private String defaultIdle = "backoff";

    // the concluded values (read only after conclude())
    private ProgressMode progressMode;
    private String idleStrategy;
    private int backstopMicros;
    private int linkCapacity;
    private double retransmitFactor;
    private int retransmitBackoff;
    private int ackReqInterval;
    private int window;
    private int burst;
    private boolean linkCrc;
    private boolean dmaBuf;
    private boolean peermem;
    private boolean oneCopy;
    private boolean sourceRing;
    private boolean sourceAhead;
    private int oneCopyMin;
    private int udOneCopyMin;
    private int udReferenceTimeoutMs;
    private boolean scanPark;
    private int batch;
    private int refBatch;
    private boolean shmCma;
    private boolean shmBatch;
    private int shmCmaThreshold;
    private int copyEngines;
    private int copyThreshold;
    private int maxQp;
    private List<Setting<?>> settings = List.of();

    /** Reads {@code gdrkit.nic.*} from {@code props} instead of the system properties (tests, a child's view). */
    public SoftNicContext properties(final Map<String, String> props) {
        freeze.set("properties");
        properties = Map.copyOf(props);
        return this;
    }

    public SoftNicContext progressMode(final ProgressMode mode) {
        return set("progressMode", PROGRESS_PROP, Objects.requireNonNull(mode, "progress mode").name());
    }

    /**
     * A lab's own default progress mode, used where {@link #PROGRESS_PROP} is set neither by property nor by setter,
     * and the backstop period that goes with it (the default of {@link #BACKSTOP_PROP}, which still overrides it,
     * only while the mode is this default; a mode given by property or setter keeps the backstop's default 0). Both
     * are recorded as DEFAULT: the lab's defaults, read here, so no lab asks the system properties itself.
     */
    public SoftNicContext defaultProgress(final ProgressMode mode, final int backstopMicros) {
        return defaultProgress(mode, backstopMicros, "backoff");
    }

    /**
     * {@link #defaultProgress(ProgressMode, int)}, and the idle strategy that goes with the mode (the default of
     * {@link #IDLE_STRATEGY_PROP}, only while the mode is this default), recorded as DEFAULT too.
     */
    public SoftNicContext defaultProgress(final ProgressMode mode, final int backstopMicros, final String idle) {
        freeze.set("defaultProgress");
        if (backstopMicros < 0 || backstopMicros > 1_000_000) {
            throw new IllegalArgumentException("default backstop " + backstopMicros + " us outside 0..1000000");
        }
        IdleStrategy.parse(Objects.requireNonNull(idle, "idle strategy"));
        defaultProgress = Objects.requireNonNull(mode, "progress mode");
        defaultBackstopMicros = backstopMicros;
        defaultIdle = idle;
        return this;
    }

    /** {@code invoker} (default), {@code own_device}, {@code dedicated} or {@code deterministic}. */
    public ProgressMode progressMode() {
        concluded();
        return progressMode;
    }

    public SoftNicContext idleStrategy(final String spec) {
        return set("idleStrategy", IDLE_STRATEGY_PROP, Objects.requireNonNull(spec, "idle strategy"));
    }

    /** Idle strategy of dedicated threads (default {@code backoff}). */
    public String idleStrategy() {
        concluded();
        return idleStrategy;
    }

    /** With own_device: step each NIC from a backstop thread every {@code micros} (0: no backstop). */
    public SoftNicContext backstopMicros(final int micros) {
        return set("backstopMicros", BACKSTOP_PROP, Integer.toString(micros));
    }

    /** The own_device backstop period in microseconds ({@link #BACKSTOP_PROP}, default 0: none). */
    public int backstopMicros() {
        concluded();
        return backstopMicros;
    }

    public SoftNicContext linkCapacity(final int bytes) {
        return set("linkCapacity", LINK_CAPACITY_PROP, Integer.toString(bytes));
    }

    /** Bytes of ring per directed link (default 4 MiB). */
    public int linkCapacity() {
        concluded();
        return linkCapacity;
    }

    public SoftNicContext retransmitFactor(final double f) {
        return set("retransmitFactor", RETRANSMIT_FACTOR_PROP, Double.toString(f));
    }

    public SoftNicContext retransmitBackoff(final int maxDoublings) {
        return set("retransmitBackoff", RETRANSMIT_BACKOFF_PROP, Integer.toString(maxDoublings));
    }

    /** Most doublings of the retransmit timeout after consecutive timeouts without progress (0..5, default 5). */
    public int retransmitBackoff() {
        concluded();
        return retransmitBackoff;
    }

    /** Multiplier on the IB retransmit timeout (default 1.0). */
    public double retransmitFactor() {
        concluded();
        return retransmitFactor;
    }

    public SoftNicContext ackReqInterval(final int packets) {
        return set("ackReqInterval", ACK_REQ_INTERVAL_PROP, Integer.toString(packets));
    }

    /** Packets between AckReq bits inside a message (default 64). */
    public int ackReqInterval() {
        concluded();
        return ackReqInterval;
    }

    public SoftNicContext window(final int packets) {
        return set("window", WINDOW_PROP, Integer.toString(packets));
    }

    /** Most unacknowledged PSNs per QP (default 512). */
    public int window() {
        concluded();
        return window;
    }

    public SoftNicContext burst(final int packets) {
        return set("burst", BURST_PROP, Integer.toString(packets));
    }

    /** Packets per agent duty cycle (default 32). */
    public int burst() {
        concluded();
        return burst;
    }

    public SoftNicContext linkCrc(final boolean on) {
        return set("linkCrc", LINK_CRC_PROP, Boolean.toString(on));
    }

    /** Every packet carries a CRC32C (default off). */
    public boolean linkCrc() {
        concluded();
        return linkCrc;
    }

    public SoftNicContext dmaBuf(final boolean on) {
        return set("dmaBuf", DMABUF_PROP, Boolean.toString(on));
    }

    /** The provider registers DMA-BUF ({@link #DMABUF_PROP}, default on). */
    public boolean dmaBuf() {
        concluded();
        return dmaBuf;
    }

    public SoftNicContext peermem(final boolean on) {
        return set("peermem", PEERMEM_PROP, Boolean.toString(on));
    }

    /** The provider registers GPU memory by pointer ({@link #PEERMEM_PROP}, default on). */
    public boolean peermem() {
        concluded();
        return peermem;
    }

    public SoftNicContext oneCopy(final boolean on) {
        return set("oneCopy", ONE_COPY_PROP, Boolean.toString(on));
    }

    /** The single-copy path may be used where safe ({@link #ONE_COPY_PROP}, default on). */
    public boolean oneCopy() {
        concluded();
        return oneCopy;
    }

    public SoftNicContext sourceRing(final boolean on) {
        return set("sourceRing", SoftNicConfiguration.SOURCE_RING.name(), Boolean.toString(on));
    }

    /**
     * Packets out of bulk-read memory (a CUDA GPU) reference the NIC's pinned ring for a receiver in this process
     * ({@code gdrkit.nic.source.ring}, default on; needs {@link #oneCopy()}).
     */
    public boolean sourceRing() {
        concluded();
        return sourceRing;
    }

    public SoftNicContext sourceAhead(final boolean on) {
        return set("sourceAhead", SoftNicConfiguration.SOURCE_AHEAD.name(), Boolean.toString(on));
    }

    /** The source ring reads the next span ahead ({@code gdrkit.nic.source.ahead}, default on). */
    public boolean sourceAhead() {
        concluded();
        return sourceAhead;
    }

    /** Smallest referenced message ({@link #ONE_COPY_MIN_PROP}, default {@value #DEFAULT_ONE_COPY_MIN}). */
    public int oneCopyMin() {
        concluded();
        return oneCopyMin;
    }

    public SoftNicContext oneCopyMin(final int bytes) {
        return set("oneCopyMin", ONE_COPY_MIN_PROP, Integer.toString(bytes));
    }

    /** Smallest referenced UD send ({@link #UD_ONE_COPY_MIN_PROP}, default {@value #DEFAULT_UD_ONE_COPY_MIN}). */
    public int udOneCopyMin() {
        concluded();
        return udOneCopyMin;
    }

    public SoftNicContext udOneCopyMin(final int bytes) {
        return set("udOneCopyMin", UD_ONE_COPY_MIN_PROP, Integer.toString(bytes));
    }

    /** How long a referenced UD datagram may hold its send back ({@link #UD_REFERENCE_TIMEOUT_PROP}), in ms. */
    public int udReferenceTimeoutMs() {
        concluded();
        return udReferenceTimeoutMs;
    }

    public SoftNicContext udReferenceTimeoutMs(final int ms) {
        return set("udReferenceTimeoutMs", UD_REFERENCE_TIMEOUT_PROP, Integer.toString(ms));
    }

    /** Whether idle QPs are parked out of the scan ({@link #SCAN_PARK_PROP}, default true). */
    public boolean scanPark() {
        concluded();
        return scanPark;
    }

    public SoftNicContext scanPark(final boolean on) {
        return set("scanPark", SCAN_PARK_PROP, Boolean.toString(on));
    }

    public SoftNicContext shmCma(final boolean on) {
        return set("shmCma", SHM_CMA_PROP, Boolean.toString(on));
    }

    public SoftNicContext shmBatch(final boolean on) {
        return set("shmBatch", SHM_BATCH_PROP, Boolean.toString(on));
    }

    /** Segment offload across processes on granted shm links ({@link #SHM_BATCH_PROP}, default off). */
    public boolean shmBatch() {
        concluded();
        return shmBatch;
    }

    /** The shared-memory fabric may pull payloads across processes ({@link #SHM_CMA_PROP}, default on). */
    public boolean shmCma() {
        concluded();
        return shmCma;
    }

    public SoftNicContext shmCmaThreshold(final int bytes) {
        return set("shmCmaThreshold", SHM_CMA_THRESHOLD_PROP, Integer.toString(bytes));
    }

    /** Smallest payload pulled across processes ({@link #SHM_CMA_THRESHOLD_PROP}, default 4096). */
    public int shmCmaThreshold() {
        concluded();
        return shmCmaThreshold;
    }

    public SoftNicContext copyEngines(final int engines) {
        return set("copyEngines", COPY_ENGINES_PROP, Integer.toString(engines));
    }

    /** Copy engines per NIC on the shm fabric ({@link #COPY_ENGINES_PROP}; 1 = the NIC thread alone). */
    public int copyEngines() {
        concluded();
        return copyEngines;
    }

    public SoftNicContext copyThreshold(final int bytes) {
        return set("copyThreshold", COPY_THRESHOLD_PROP, Integer.toString(bytes));
    }

    /** Smallest pull split over the copy engines ({@link #COPY_THRESHOLD_PROP}). */
    public int copyThreshold() {
        concluded();
        return copyThreshold;
    }

    /** {@link #COPY_ENGINES_PROP}'s auto value on a host with {@code processors}: see there why. */
    public static int defaultCopyEngines(final int processors) {
        return SoftNicConfiguration.defaultCopyEngines(processors);
    }

    public SoftNicContext batch(final int packets) {
        return set("batch", BATCH_PROP, Integer.toString(packets));
    }

    /** Packets per segment-offload record ({@link #BATCH_PROP}, default 16, 1 = one record per packet). */
    public int batch() {
        concluded();
        return batch;
    }

    public SoftNicContext refBatch(final int packets) {
        return set("refBatch", REF_BATCH_PROP, Integer.toString(packets));
    }

    /**
     * Packets per reference record within one process ({@link #REF_BATCH_PROP}, default 256): a record that refers
     * to the sender's host memory carries no bytes, so it may stand for a long span.
     */
    public int refBatch() {
        concluded();
        return refBatch;
    }

    public SoftNicContext maxQp(final int qps) {
        return set("maxQp", MAX_QP_PROP, Integer.toString(qps));
    }

    /** Most QPs per device (default {@link #MAX_QP_LIMIT}). */
    public int maxQp() {
        concluded();
        return maxQp;
    }

    /** Time source of retransmit timers (not a property: code sets it, tests a ManualClock). */
    public SoftNicContext clock(final NanoClock clock) {
        freeze.set("clock");
        this.clock = Objects.requireNonNull(clock, "clock");
        return this;
    }

    public NanoClock clock() {
        return clock;
    }

    /** What every link does to packets (not a property: fault injection, link models). */
    public SoftNicContext linkHook(final LinkHook hook) {
        freeze.set("linkHook");
        linkHook = Objects.requireNonNull(hook, "link hook");
        return this;
    }

    public LinkHook linkHook() {
        return linkHook;
    }

    /**
     * Pins every host MR these NICs register ({@link io.gdrkit.core.mem.HostPinner}; unpinned at deregistration),
     * as a GPUDirect-capable stack pins registered memory so that the GPU's DMA reads it where a packet references
     * it. Null (the default): host MRs are not pinned.
     */
    public SoftNicContext hostPinner(final io.gdrkit.core.mem.HostPinner pinner) {
        freeze.set("hostPinner");
        hostPinner = pinner;
        return this;
    }

    public io.gdrkit.core.mem.HostPinner hostPinner() {
        return hostPinner;
    }

    /** Every property-backed value in effect, with its source (default, property, flag = a setter), in order. */
    public List<Setting<?>> settings() {
        concluded();
        return settings;
    }

    /**
     * Reads the properties once, validates every value and their combinations and freezes the context; every
     * problem names the property. A context is concluded once, by the driver that owns it.
     */
    public SoftNicContext conclude() {
        freeze.checkConclude();
        final SettingsReader r = new SettingsReader(Map.of(), properties != null ? properties
            : SettingsReader.systemProperties("gdrkit.nic."), overrides);
        final Setting<String> progress = SoftNicConfiguration.PROGRESS.read(r,
            defaultProgress.name().toLowerCase(java.util.Locale.ROOT));
        progressMode = ProgressMode.valueOf(progress.value().toUpperCase(java.util.Locale.ROOT));
        final boolean labDefaults = progress.source() == io.gdrkit.core.config.Source.DEFAULT;
        idleStrategy = SoftNicConfiguration.IDLE.read(r, labDefaults ? defaultIdle : SoftNicConfiguration.IDLE.defaultValue()).value();
        backstopMicros = SoftNicConfiguration.BACKSTOP_US.read(r, labDefaults ? defaultBackstopMicros : SoftNicConfiguration.BACKSTOP_US.defaultValue())
            .value();
        linkCapacity = SoftNicConfiguration.LINK_CAPACITY.read(r).value();
        retransmitFactor = SoftNicConfiguration.RETRANSMIT_FACTOR.read(r).value();
        retransmitBackoff = SoftNicConfiguration.RETRANSMIT_BACKOFF.read(r).value();
        ackReqInterval = SoftNicConfiguration.ACK_REQ_INTERVAL.read(r).value();
        window = SoftNicConfiguration.WINDOW.read(r).value();
        burst = SoftNicConfiguration.BURST.read(r).value();
        linkCrc = SoftNicConfiguration.LINK_CRC.read(r).value();
        dmaBuf = SoftNicConfiguration.DMABUF.read(r).value();
        peermem = SoftNicConfiguration.PEERMEM.read(r).value();
        oneCopy = SoftNicConfiguration.ONE_COPY.read(r).value();
        sourceRing = SoftNicConfiguration.SOURCE_RING.read(r).value();
        sourceAhead = SoftNicConfiguration.SOURCE_AHEAD.read(r).value();
        oneCopyMin = SoftNicConfiguration.ONE_COPY_MIN.read(r).value();
        scanPark = SoftNicConfiguration.SCAN_PARK.read(r).value();
        udOneCopyMin = SoftNicConfiguration.UD_ONE_COPY_MIN.read(r).value();
        udReferenceTimeoutMs = SoftNicConfiguration.UD_REFERENCE_TIMEOUT_MS.read(r).value();
        batch = SoftNicConfiguration.BATCH.read(r).value();
        refBatch = SoftNicConfiguration.REF_BATCH.read(r).value();
        shmCma = SoftNicConfiguration.SHM_CMA.read(r).value();
        shmCmaThreshold = SoftNicConfiguration.SHM_CMA_THRESHOLD.read(r).value();
        shmBatch = SoftNicConfiguration.SHM_BATCH.read(r).value();
        // default 1: the engines are correct (tested) but their gain on a many-core host is not measured yet;
        // "auto" asks for the processor-based choice
        copyEngines = SoftNicConfiguration.COPY_ENGINES.read(r).value();
        copyThreshold = SoftNicConfiguration.COPY_THRESHOLD.read(r).value();
        maxQp = SoftNicConfiguration.MAX_QP.read(r).value();
        if (linkHook instanceof FaultInjector fi && fi.config().corrupt() > 0 && !linkCrc) {
            throw new IllegalArgumentException("fault injection corrupts packets but " + LINK_CRC_PROP
                + " is off: corruption would go undetected; turn the link CRC on");
        }
        // the progress mode is recorded as the enum constant it names
        settings = r.recorded().stream().map(s -> s == progress ? new Setting<>(s.name(), progressMode, s.source(),
            s.raw()) : s).toList();
        freeze.concluded();
        return this;
    }

    /** {@return whether {@link #conclude()} ran (then setters and a second conclude() throw)} */
    public boolean isConcluded() {
        return freeze.isConcluded();
    }

    private SoftNicContext set(final String setter, final String property, final String value) {
        freeze.set(setter);
        overrides.put(property, value);
        return this;
    }

    private void concluded() {
        freeze.requireConcluded("reading its values (SoftNicDriver.launch concludes it)");
    }
}
