/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.core.agent.Agent;
import io.gdrkit.softnic.fabric.FabricPort;
import io.gdrkit.softnic.fabric.PortOwner;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.AsyncEvent;
import io.gdrkit.verbs.AsyncEventType;
import io.gdrkit.verbs.Device;
import io.gdrkit.verbs.DeviceAttr;
import io.gdrkit.core.mem.DmaBuf;
import io.gdrkit.core.mem.DmaMemory;
import io.gdrkit.core.Errno;
import io.gdrkit.core.ErrnoException;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.Mtu;
import io.gdrkit.verbs.PortAttr;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QpStateTable;
import io.gdrkit.verbs.QpType;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.VerbsException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A software RDMA NIC: one port on a fabric, and the agents that move packets for its QPs: a
 * {@link Receiver} that demultiplexes incoming packets, a {@link Requester} that turns WQEs into packets, a
 * {@link Responder} that executes requests and answers them, and a {@link Completer} that turns
 * acknowledgements into completions and drives retransmission, split as Linux rxe splits them.
 */
public final class SoftDevice implements Device, Agent, PortOwner {
    static final int QPN_BASE = 16;
    /** The port's GID table: one entry (index 0); a GRH's sgid_index must be 0. */
    static final int GID_TABLE_LENGTH = 1;
    static final int MAX_QP = 1 << 16;
    static final int MAX_MR = 1 << 20;
    static final int MAX_RD_ATOMIC = 16;
    static final int MAX_INLINE = 4096;
    static final int MAX_SGE = 32;
    static final int MAX_QP_WR = 1 << 15;
    static final int MAX_CQE = 1 << 22;
    static final int MAX_SRQ = 1 << 10;
    static final int MAX_CQ = 1 << 16;
    /** ibv_device_attr.local_ca_ack_delay, as rxe reports it. */
    static final int LOCAL_CA_ACK_DELAY = 15;
    static final int MAX_SRQ_WR = MAX_QP_WR;
    /**
     * Completion vectors: one. Every CQ of a software NIC is served by the thread that moves the NIC, so a vector
     * would not change who handles its events; libibverbs requires at least one.
     */
    static final int NUM_COMP_VECTORS = 1;
    private static final long CONTROL_TIMEOUT_NS = TimeUnit.SECONDS.toNanos(10);

    private final SoftNicDriver driver;
    private final String name;
    private final long guid;
    final FabricPort port;
    final Duty duty = new Duty();
    final MrTable mrs = new MrTable(MAX_MR);
    /**
     * QP number to QP. Written under duty with release stores and read by this NIC's engines (under duty) and, with
     * {@link #publishedQp}, by a peer NIC's responder resolving a reference packet from another thread.
     */
    private final SoftQp[] qpTable = new SoftQp[MAX_QP];
    private static final java.lang.invoke.VarHandle QP_SLOT =
        java.lang.invoke.MethodHandles.arrayElementVarHandle(SoftQp[].class);
    /** QPs the agents scan; replaced copy-on-write under duty. */
    volatile SoftQp[] activeQps = new SoftQp[0];
    /** The QPs the engines visit: those with work, or idle only briefly (the active set). */
    final ScanSet scan = new ScanSet(this);
    /** The UD QPs among them, for the {@link UdEngine}: empty (and costing nothing per duty cycle) without UD. */
    volatile SoftQp[] udQps = new SoftQp[0];
    private final List<SoftCq> cqs = new ArrayList<>();
    private final List<SoftSrq> srqs = new java.util.concurrent.CopyOnWriteArrayList<>();
    private int nextSrqHandle = 1;
    /** The open contexts: QP, CQ and SRQ events go to their owner's, port and device events to every one. */
    private final java.util.concurrent.CopyOnWriteArrayList<SoftVerbsContext> contexts =
        new java.util.concurrent.CopyOnWriteArrayList<>();
    private final DeviceAttr attr;
    private int nextQpIndex;
    private int nextCqHandle = 1;
    private int openContexts;

    /** SEND/WRITE packets may reference host memory where the port allows it (SoftNicContext.ONE_COPY_PROP). */
    final boolean oneCopy;
    /** {@link SoftNicContext#sourceRing()}. */
    final boolean sourceRing;
    /** {@link SoftNicContext#sourceAhead()}. */
    final boolean sourceAhead;
    /** Payloads below this travel in the packet even where references could ({@code gdrkit.nic.onecopy.min}). */
    final int oneCopyMin;
    final Receiver receiver;
    final Requester requester;
    final Responder responder;
    final Completer completer;
    final UdEngine ud;

    /**
     * How long a pull waits for its copy engines' parts: a process_vm_readv of a few MiB takes milliseconds, so only a
     * wedged thread gets near it; the pull then fails by name (REM_OP_ERR at the requester) instead of hanging.
     */
    static final long COPY_TIMEOUT_NS = TimeUnit.SECONDS.toNanos(10);
    /** The port's copy engines ({@link SoftNicContext#COPY_ENGINES_PROP}); null: pulls run on the NIC thread alone. */
    final io.gdrkit.softnic.fabric.CopyEngines copyEngines;

    SoftDevice(final SoftNicDriver driver, final String name, final FabricPort port) {
        this.driver = driver;
        this.name = name;
        this.port = port;
        this.guid = 0x0002_c9ff_fe00_0000L | port.lid();
        this.attr = deviceAttr(name, guid, driver.context().maxQp(),
            Math.min(Mtu.MAX_SOFTWARE_BYTES, Integer.highestOneBit(port.maxPacket() - 256)));
        this.oneCopy = driver.context().oneCopy();
        this.sourceRing = driver.context().sourceRing();
        this.sourceAhead = driver.context().sourceAhead();
        this.oneCopyMin = driver.context().oneCopyMin();
        scan.parking(driver.context().scanPark());
        port.owner(this);
        port.crossProcessCopy(oneCopy && driver.context().shmCma(), driver.context().shmCmaThreshold());
        port.crossProcessBatches(driver.context().shmBatch());
        // only a port that pulls from other processes has pulls to split; the threads live as long as the device
        this.copyEngines = port.pullsReferences() && driver.context().copyEngines() > 1
            ? new io.gdrkit.softnic.fabric.CopyEngines(driver.context().copyEngines(),
                driver.context().copyThreshold(), COPY_TIMEOUT_NS, name)
            : null;
        port.copyEngines(copyEngines);
        this.completer = new Completer(this);
        this.requester = new Requester(this);
        this.responder = new Responder(this);
        this.receiver = new Receiver(this);
        this.ud = new UdEngine(this);
    }

    /**
     * What queryDevice reports: the limits this class enforces and the capabilities it implements, nothing more.
     * Each capability flag is checked against a probe in SoftVerbsConformanceTest.
     */
    private static DeviceAttr deviceAttr(final String name, final long guid, final int maxQp, final int maxSoftwareMtu) {
        final int caps = io.gdrkit.verbs.DeviceCap.RC_RNR_NAK_GEN // an empty receive queue answers RNR NAK
            | io.gdrkit.verbs.DeviceCap.MEM_WINDOW                 // type 1 windows
            | io.gdrkit.verbs.DeviceCap.MEM_WINDOW_TYPE_2B         // type 2 windows, bound to a QP
            | io.gdrkit.verbs.DeviceCap.CURR_QP_STATE_MOD          // modify_qp accepts IBV_QP_CUR_STATE
            | io.gdrkit.verbs.DeviceCap.PORT_ACTIVE_EVENT          // portUp raises IBV_EVENT_PORT_ACTIVE
            | io.gdrkit.verbs.DeviceCap.SYS_IMAGE_GUID;            // sys_image_guid is set
        return new DeviceAttr("gdrkit-softnic 0.1 (simulated)", guid, guid, Long.MAX_VALUE, 0xFFFF_F000L,
            0, 0, 0, maxQp, MAX_QP_WR, caps, MAX_SGE, MAX_SGE, MAX_CQ, MAX_CQE, MAX_MR - 1, Integer.MAX_VALUE,
            MAX_RD_ATOMIC, 0, (int) Math.min(Integer.MAX_VALUE, (long) maxQp * MAX_RD_ATOMIC), MAX_RD_ATOMIC, 0,
            io.gdrkit.verbs.DeviceCap.ATOMIC_HCA, 0, 0, MAX_MR - 1 /* max_mw: the key table MRs share */, 0, 0, 0, 0, 0,
            Integer.MAX_VALUE /* max_ah */, 0, 0,
            MAX_SRQ, MAX_SRQ_WR, MAX_SGE, 1, LOCAL_CA_ACK_DELAY, 1, name, MAX_INLINE, maxSoftwareMtu, true);
    }

    SoftNicDriver driver() {
        return driver;
    }

    long now() {
        return driver.context().clock().nanoTime();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public long guid() {
        return guid;
    }

    /** The LID peers put in their address vector to reach this device. */
    public int lid() {
        return port.lid();
    }

    @Override
    public boolean isSimulated() {
        return true;
    }

    @Override
    public synchronized VerbsContext open() {
        openContexts++;
        final SoftVerbsContext c = new SoftVerbsContext(this);
        contexts.add(c);
        return c;
    }

    synchronized void closeContext(final SoftVerbsContext context) {
        if (contexts.remove(context)) {
            openContexts--;
        }
    }

    DeviceAttr attr() {
        return attr;
    }

    PortAttr queryPort(final int portNum) {
        if (portNum != 1) {
            throw new VerbsException(Errno.EINVAL, "device " + name + " has one port (1), not " + portNum);
        }
        final boolean up = portActive;
        return new PortAttr(up ? PortAttr.PORT_ACTIVE : PortAttr.PORT_DOWN, Mtu.MTU_4096, Mtu.MTU_4096, port.lid(),
            "software", GID_TABLE_LENGTH, 0, 1L << 31, 1, 0, 0, up ? PortAttr.PHYS_LINK_UP : PortAttr.PHYS_POLLING);
    }

    // ---------------- port state ----------------

    /**
     * Whether port 1 carries traffic. Written under duty by {@link #portDown}/{@link #portUp}; read by the engines
     * (under duty) and by queryPort.
     */
    volatile boolean portActive = true;
    /** Packets that died at this port because it was down: built and sent into a dead link, or arriving at it. */
    long portDownTxLost;
    long portDownRxLost;

    /**
     * Takes port 1 down, as a pulled cable does (rxe: the netdev losing carrier): queryPort then reports
     * {@code PORT_DOWN} with phys_state {@code POLLING}, and an {@code IBV_EVENT_PORT_ERR} async event (element:
     * the port number, 1) is raised. While down, the port neither sends nor receives: posts are still accepted and
     * processed, their packets are lost, so RC QPs retransmit and end in RETRY_EXC_ERR once the port stays down
     * longer than their retry budget, and UD datagrams are simply lost. QPs keep their state (the IB spec moves no
     * QP on a port change). A port already down is left alone: no event.
     *
     * @param why what happened, carried in the event's detail
     * @return whether the port changed state (false: it was already down)
     */
    public boolean portDown(final String why) {
        return portState(false, why);
    }

    /**
     * Brings port 1 back up: queryPort reports {@code PORT_ACTIVE} / {@code LINK_UP} again and an
     * {@code IBV_EVENT_PORT_ACTIVE} async event is raised. QPs that have not run out of retries meanwhile resume:
     * their next retransmission gets through. A port already up is left alone: no event.
     *
     * @return whether the port changed state (false: it was already up)
     */
    public boolean portUp() {
        return portState(true, "link up");
    }

    /** Whether port 1 is ACTIVE. */
    public boolean isPortActive() {
        return portActive;
    }

    /**
     * RC packets this NIC dropped because they came from another port than their QP's connected peer (or reached a
     * QP not yet connected): a stranger's requests and forged responses, counted, never executed.
     *
     * @return the count since the NIC started
     */
    public long packetsFromStrangers() {
        duty.acquire(CONTROL_TIMEOUT_NS, "read the port counters");
        try {
            return receiver.foreign();
        } finally {
            duty.release();
        }
    }

    /** Packets lost at this port while it was down (sent into it, or arriving at it). */
    public long packetsLostPortDown() {
        duty.acquire(CONTROL_TIMEOUT_NS, "read the port counters");
        try {
            return portDownTxLost + portDownRxLost;
        } finally {
            duty.release();
        }
    }

    private boolean portState(final boolean up, final String why) {
        // under duty: once this returns, no engine of this NIC sends or takes a packet on the old state
        duty.acquire(CONTROL_TIMEOUT_NS, up ? "bring port 1 up" : "take port 1 down");
        try {
            if (portActive == up) {
                return false;
            }
            portActive = up;
            raise(new AsyncEvent(up ? AsyncEventType.PORT_ACTIVE : AsyncEventType.PORT_ERR, 1, "port 1 of " + name
                + (up ? " is ACTIVE" : " is DOWN: " + why)));
            return true;
        } finally {
            duty.release();
        }
    }

    /**
     * GID 0 of port 1: the link-local GID fe80::/64 with the port GUID as interface id (IBA 4.1.1), the default
     * GID an IB port has.
     */
    byte[] queryGid(final int portNum, final int index) {
        if (portNum != 1 || index < 0 || index >= GID_TABLE_LENGTH) {
            throw new VerbsException(Errno.EINVAL, "device " + name + ": no GID " + index + " on port " + portNum
                + " (port 1 has " + GID_TABLE_LENGTH + " GID)");
        }
        final byte[] gid = new byte[16];
        gid[0] = (byte) 0xfe;
        gid[1] = (byte) 0x80;
        final long g = guid();
        for (int i = 0; i < 8; i++) {
            gid[8 + i] = (byte) (g >>> (56 - 8 * i));
        }
        return gid;
    }

    // ---------------- agents ----------------

    /** The four engines, for a {@link io.gdrkit.core.agent.DeterministicRunner} to step one by one. */
    public List<Agent> agents() {
        return List.of(guarded(receiver), guarded(requester), guarded(responder), guarded(completer), guarded(ud));
    }

    private Agent guarded(final Agent agent) {
        return new Agent() {
            @Override
            public int doWork() {
                if (!duty.tryAcquire()) {
                    return 0;
                }
                try {
                    if (fatal != null || stopped) {
                        return flushAll();
                    }
                    return agent.doWork();
                } catch (final RuntimeException | Error e) {
                    fail(e);
                    return 1;
                } finally {
                    duty.release();
                }
            }

            @Override
            public String roleName() {
                return name + "-" + agent.roleName();
            }
        };
    }

    /**
     * One duty cycle of all engines; a no-op when another thread holds the duty. An engine that throws does not
     * take the caller's thread (or a dedicated NIC thread) down silently: the device becomes fatal
     * ({@link #fail}), and from then on a cycle only flushes.
     */
    @Override
    public int doWork() {
        if (!duty.tryAcquire()) {
            return 0;
        }
        try {
            if (fatal != null || stopped) {
                return flushAll();
            }
            int work = receiver.doWork();
            work += responder.doWork();
            work += completer.doWork();
            work += requester.doWork();
            work += ud.doWork();
            if (work == 0) {
                port.idle(now()); // a socket fabric may wait for traffic here (off unless configured)
            }
            return work;
        } catch (final RuntimeException | Error e) {
            fail(e);
            return 1;
        } finally {
            duty.release();
        }
    }

    /** Why the device failed, or null. */
    private volatile Throwable fatal;
    /** The driver closed: no more packets; QPs flush. */
    private volatile boolean stopped;

    /** The error that made this device fatal, or null (poll reports it once the flush completions are read). */
    Throwable fatal() {
        return fatal;
    }

    /**
     * A NIC engine threw: every QP goes to ERR (their WRs complete with WR_FLUSH_ERR), a DEVICE_FATAL async
     * event says why, and polls of this device's CQs report it. Under duty.
     */
    private void fail(final Throwable e) {
        if (fatal == null) {
            // every QP in ERR and in the scan before the failure is published: a poller that sees it flushes them
            for (final SoftQp qp : activeQps) {
                toError(qp, -1, "");
            }
            fatal = e;
            raise(new AsyncEvent(AsyncEventType.DEVICE_FATAL, 0, "device " + name + " failed: " + e));
        }
    }

    /** Driver close: every QP to ERR and flushed, so no poller waits for completions that cannot come. */
    void stop() {
        try {
            duty.acquire(CONTROL_TIMEOUT_NS, "stop device " + name);
        } catch (final RuntimeException e) {
            stopped = true; // a duty holder will see it on its next cycle
            closeCopyEngines();
            return;
        }
        try {
            stopped = true;
            for (final SoftQp qp : activeQps) {
                toError(qp, -1, "");
            }
            for (int i = 0; i < 64 && flushAll() > 0; i++) {
                // flush until every queue is empty or a CQ is full (the rest flushes as it is polled)
            }
        } finally {
            duty.release();
            closeCopyEngines();
        }
    }

    /**
     * Ends the copy engine threads. A pull still running (the duty could not be taken) reads the parts no worker took
     * itself and waits for the taken ones, which their workers finish before they end.
     */
    private void closeCopyEngines() {
        if (copyEngines != null) {
            copyEngines.close();
        }
    }

    /**
     * For a poller that found its CQ empty on a failed or stopped device: flush what is still queued (a WR may
     * have been posted after the last flushing cycle of a dedicated NIC thread), so that the poll reports the
     * failure only once no flush completion can still come. Waits for the duty with the control timeout.
     */
    void flushPending() {
        duty.acquire(CONTROL_TIMEOUT_NS, "flush the QPs of failed device " + name);
        try {
            // a QP parked while idle is out of the scan, and a post to it only queues a wake-up that the receiver's
            // cycle (which a failed device no longer runs) would take: every QP back in, so its WRs are flushed
            for (final SoftQp qp : activeQps) {
                toError(qp, -1, "");
            }
            for (int i = 0; i < 64 && flushAll() > 0; i++) {
                // until every queue is empty or a CQ is full (the rest flushes as it is polled)
            }
        } finally {
            duty.release();
        }
    }

    /** In ERR only the flushing parts of the completer and responder run; they touch no packet. */
    private int flushAll() {
        try {
            return completer.doWork() + responder.doWork();
        } catch (final RuntimeException | Error e) {
            if (fatal == null) {
                fatal = e;
            }
            return 0;
        }
    }

    @Override
    public String roleName() {
        return "nic-" + name;
    }

    // ---------------- async events ----------------

    /** A port or device event: every open context sees it (as every ibv_context of the device does). */
    void raise(final AsyncEvent event) {
        for (final SoftVerbsContext c : contexts) {
            c.events.add(event);
        }
    }

    /** An event of a QP, CQ or SRQ: only the context that created it sees it. */
    void raise(final AsyncEvent event, final SoftVerbsContext owner) {
        owner.events.add(event);
    }

    AsyncEvent pollAsyncEvent(final SoftVerbsContext context) {
        return context.events.poll();
    }

    /** Waits for an async event of {@code context}, moving this device meanwhile where the caller drives progress. */
    AsyncEvent getAsyncEvent(final SoftVerbsContext context, final long timeoutNanos) {
        final long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
        while (true) {
            final AsyncEvent e = context.events.poll();
            if (e != null || deadline - System.nanoTime() <= 0) {
                return e;
            }
            final int work = switch (driver.context().progressMode()) {
                case INVOKER -> driver.progress();
                case OWN_DEVICE -> doWork();
                default -> 0;
            };
            if (work == 0) {
                java.util.concurrent.locks.LockSupport.parkNanos(10_000L);
            }
        }
    }

    // ---------------- memory regions ----------------

    MemoryRegion registerMr(final SoftPd pd, final MemorySegment segment, final int access) {
        if (segment == null || !segment.isNative()) {
            throw new VerbsException(Errno.EINVAL, "MR memory must be a native MemorySegment (got "
                + (segment == null ? "null" : "a heap segment") + ")");
        }
        if (segment.byteSize() == 0) {
            throw new VerbsException(Errno.EINVAL, "MR of zero bytes");
        }
        if (!segment.scope().isAlive()) {
            throw new VerbsException(Errno.EINVAL, "MR memory's arena is already closed");
        }
        if (driver.context().progressMode() == SoftNicContext.ProgressMode.DEDICATED
            && !segment.isAccessibleBy(SoftMr.NOBODY)) {
            // only the arena's owner thread may touch it, and the NIC runs on its own thread: every access fails
            throw new VerbsException(Errno.EINVAL, "MR memory of a confined arena cannot be used by a NIC on a "
                + "dedicated thread: allocate it from Arena.ofShared() (or ofAuto/global)");
        }
        checkAccess(access);
        final Runnable unpin = pin(segment);
        boolean published = false;
        duty.acquire(CONTROL_TIMEOUT_NS, "register an MR");
        try {
            final SoftMr mr = new SoftMr(pd, segment, access, mrs.allocateKey(), unpin);
            mrs.publish(mr);
            published = true;
            return mr;
        } finally {
            duty.release();
            if (!published && unpin != null) {
                unpin.run();
            }
        }
    }

    /** The context's {@link io.gdrkit.core.mem.HostPinner} pins host MR memory: what unpins it, or null. */
    private Runnable pin(final MemorySegment segment) {
        final io.gdrkit.core.mem.HostPinner pinner = driver.context().hostPinner();
        return pinner == null ? null : pinner.pin(segment);
    }

    MemoryRegion registerMr(final SoftPd pd, final DmaMemory memory, final int access) {
        if (memory == null || memory.byteSize() <= 0) {
            throw new VerbsException(Errno.EINVAL, "DMA memory to register is null or empty");
        }
        checkAccess(access);
        if (!driver.context().peermem()) {
            // Without a peer-memory client the kernel's get_user_pages cannot pin device memory: ibv_reg_mr fails
            // with EFAULT, whatever the GPU supports.
            throw new VerbsException(Errno.EFAULT, "ibv_reg_mr on " + name + ": no peer-memory client claims "
                + memory.describe() + ": peermem is absent (the software provider's peermem capability is off, "
                + SoftNicContext.PEERMEM_PROP + "=false; nvidia-peermem analogue not loaded)");
        }
        return publishMr(pd, memory, access, null, "register an MR over " + memory.describe());
    }

    /** ibv_reg_dmabuf_mr: the checks in the kernel's order, then the import of the exporter's buffer. */
    MemoryRegion registerDmaBufMr(final SoftPd pd, final long offset, final long length, final long iova,
                                  final int fd, final int access) {
        if (!driver.context().dmaBuf()) {
            throw new VerbsException(Errno.EOPNOTSUPP, "ibv_reg_dmabuf_mr on " + name + ": DMA-BUF registration "
                + "is not supported (the software provider's DMA-BUF capability is off, " + SoftNicContext.DMABUF_PROP
                + "=false)");
        }
        checkAccess(access);
        if (offset < 0 || length < 0 || offset + length < 0 || iova + length < iova) {
            throw new VerbsException(Errno.EINVAL, "ibv_reg_dmabuf_mr: offset " + offset + ", length " + length
                + ", iova 0x" + Long.toHexString(iova) + " overflow");
        }
        final DmaBuf.Exporter exporter;
        try {
            exporter = DmaBuf.get(fd);
        } catch (final ErrnoException e) {
            throw new VerbsException(e.errno(), "ibv_reg_dmabuf_mr: " + e.getMessage().substring(e.getMessage()
                .indexOf(": ") + 2));
        }
        if (length == 0 || offset + length > exporter.size()) {
            throw new VerbsException(Errno.EINVAL, "ibv_reg_dmabuf_mr: [" + offset + ", " + (offset + length)
                + ") is empty or outside the " + exporter.size() + "-byte DMA-BUF of fd " + fd + " ("
                + exporter.describe() + ")");
        }
        final DmaMemory attachment;
        try {
            attachment = exporter.attach();
        } catch (final RuntimeException e) {
            throw new VerbsException(Errno.ENOMEM, "ibv_reg_dmabuf_mr: the exporter of fd " + fd + " refused the "
                + "attachment: " + e.getMessage());
        }
        try {
            return publishMr(pd, attachment.window(offset, length, iova), access,
                () -> exporter.detach(attachment), "register a DMA-BUF MR over " + exporter.describe());
        } catch (final RuntimeException e) {
            exporter.detach(attachment);
            throw e;
        }
    }

    private static void checkAccess(final int access) {
        if (!AccessFlags.isValidForMr(access)) {
            throw new VerbsException(Errno.EINVAL, "invalid MR access flags " + AccessFlags.describe(access)
                + " (REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE)");
        }
    }

    private MemoryRegion publishMr(final SoftPd pd, final DmaMemory memory, final int access, final Runnable release,
                                   final String what) {
        duty.acquire(CONTROL_TIMEOUT_NS, what);
        try {
            final SoftMr mr = new SoftMr(pd, memory, access, mrs.allocateKey(), release);
            mrs.publish(mr);
            return mr;
        } finally {
            duty.release();
        }
    }

    /**
     * A NIC-owned MR over {@code segment} in {@code pd}, with no access but the NIC's own local reads: what a
     * requester's {@link DmaSourceRing} references. Called by the NIC's thread in its duty cycle (the duty is
     * reentrant) or by a control thread.
     */
    SoftMr registerInternalMr(final SoftPd pd, final MemorySegment segment) {
        duty.acquire(CONTROL_TIMEOUT_NS, "register the NIC's source ring");
        try {
            final SoftMr mr = new SoftMr(pd, segment, 0, mrs.allocateKey());
            mr.nicRing = true;
            mrs.publish(mr);
            return mr;
        } finally {
            duty.release();
        }
    }

    /** Takes an MR of {@link #registerInternalMr} out of the table. */
    void removeInternalMr(final SoftMr mr) {
        duty.acquire(CONTROL_TIMEOUT_NS, "remove the NIC's source ring");
        try {
            mr.valid = false;
            mrs.remove(mr);
        } finally {
            duty.release();
        }
    }

    void deregisterMr(final SoftMr mr) {
        duty.acquire(CONTROL_TIMEOUT_NS, "deregister an MR");
        try {
            if (mrs.lookup(mr.key) != mr) {
                throw new VerbsException(Errno.EINVAL, "MR key 0x" + Integer.toHexString(mr.key)
                    + " is not registered (already deregistered?)");
            }
            if (hasBoundWindows(mr)) {
                throw new VerbsException(Errno.EBUSY, "ibv_dereg_mr: memory windows are bound to the MR");
            }
            mr.valid = false;
            mrs.remove(mr);
            if (mr.segment != null) {
                port.detachPayloads(mr.segment); // a record waiting for the socket stops reading it now
            }
        } finally {
            duty.release();
        }
        if (mr.release != null) {
            mr.release.run();
        }
    }

    // ---------------- memory windows ----------------

    private final java.util.concurrent.ConcurrentHashMap<Integer, SoftMw> mws = new java.util.concurrent.ConcurrentHashMap<>();

    /** An entry granting nothing: an unbound or invalidated window's slot. */
    private static SoftMr nothing(final SoftPd pd, final int key) {
        return new SoftMr(pd, MemorySegment.NULL, 0, key, null, null, true);
    }

    SoftMw allocMw(final SoftPd pd, final int type) {
        if (type != io.gdrkit.verbs.MemoryWindow.TYPE_1 && type != io.gdrkit.verbs.MemoryWindow.TYPE_2) {
            throw new VerbsException(Errno.EINVAL, "ibv_alloc_mw: type " + type + " (1 or 2)");
        }
        duty.acquire(CONTROL_TIMEOUT_NS, "allocate a memory window");
        try {
            final int key = mrs.allocateKey();
            mrs.publish(nothing(pd, key));
            final SoftMw mw = new SoftMw(pd, type, key);
            mw.entryKey = key;
            mws.put(key >>> 8, mw);
            return mw;
        } finally {
            duty.release();
        }
    }

    void deallocMw(final SoftMw mw) {
        duty.acquire(CONTROL_TIMEOUT_NS, "deallocate a memory window");
        try {
            if (mw.closed) {
                return;
            }
            final SoftMr entry = mrs.lookup(mw.entryKey);
            if (entry != null) {
                entry.valid = false;
                mrs.remove(entry);
            }
            mrs.retire(mw.entryKey);
            mws.remove(mw.entryKey >>> 8, mw);
            mw.bound = null;
            mw.closed = true;
        } finally {
            duty.release();
        }
    }

    /**
     * Executes a BIND_MW work request (NIC side, under duty): window {@code mwIndex}'s slot gets an entry for
     * {@code [addr, addr + length)} of the MR with lkey {@code mrLkey}, under {@code newRkey}; type 1 with length 0
     * unbinds. Returns SUCCESS or MW_BIND_ERR, as rxe_bind_mw does.
     */
    int bindMw(final SoftQp qp, final int mwIndex, final int newRkey, final long addr, final long length,
               final int mrLkey, final int access) {
        final SoftMw mw = mws.get(mwIndex);
        if (mw == null || mw.closed || mw.pd != qp.pd || newRkey >>> 8 != mwIndex
            || (access & ~AccessFlags.ALL_REMOTE) != 0 || length < 0
            || (mw.type == io.gdrkit.verbs.MemoryWindow.TYPE_2 && (mw.bound != null || length == 0))) {
            return io.gdrkit.verbs.WcStatus.MW_BIND_ERR;
        }
        final SoftMr entry;
        if (length == 0) {
            entry = nothing(mw.pd, newRkey);
        } else {
            final SoftMr mr = mrs.lookup(mrLkey);
            if (mr == null || mr.window || mr.pd != qp.pd || (mr.access & AccessFlags.MW_BIND) == 0
                || !mr.contains(addr, length)
                || ((access & (AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_ATOMIC)) != 0
                && (mr.access & AccessFlags.LOCAL_WRITE) == 0)) {
                return io.gdrkit.verbs.WcStatus.MW_BIND_ERR;
            }
            final SoftQp through = mw.type == io.gdrkit.verbs.MemoryWindow.TYPE_2 ? qp : null;
            entry = mr.segment != null
                ? new SoftMr(mw.pd, mr.segment.asSlice(addr - mr.address, length), access, newRkey, through, mr, true)
                : new SoftMr(mw.pd, mr.dma.window(addr - mr.address, length, addr), access, newRkey, null, through,
                mr);
        }
        final SoftMr old = mrs.lookup(mw.entryKey);
        if (old != null) {
            old.valid = false;
            mrs.remove(old);
        }
        mrs.publish(entry);
        mw.entryKey = newRkey;
        mw.bound = length == 0 ? null : entry;
        return io.gdrkit.verbs.WcStatus.SUCCESS;
    }

    /**
     * Invalidates the type 2 window with {@code rkey} (NIC side, under duty): LOCAL_INV ({@code remote} false: a
     * window of the QP's PD) or a peer's SEND_WITH_INV ({@code remote}: a window bound through this QP). Returns
     * SUCCESS or LOC_QP_OP_ERR (rxe's status for a failed local operation).
     */
    int invalidateMw(final SoftQp qp, final int rkey, final boolean remote) {
        final SoftMw mw = mws.get(rkey >>> 8);
        final SoftMr b = mw != null ? mw.bound : null;
        if (b == null || mw.closed || mw.type != io.gdrkit.verbs.MemoryWindow.TYPE_2 || mw.entryKey != rkey
            || (remote ? b.boundQp != qp : mw.pd != qp.pd)) {
            return io.gdrkit.verbs.WcStatus.LOC_QP_OP_ERR;
        }
        b.valid = false;
        mrs.remove(b);
        mrs.publish(nothing(mw.pd, rkey));
        mw.bound = null;
        return io.gdrkit.verbs.WcStatus.SUCCESS;
    }

    /** Whether a window is bound to {@code mr} (then it may not be deregistered or re-registered: EBUSY). */
    private boolean hasBoundWindows(final SoftMr mr) {
        for (final SoftMw mw : mws.values()) {
            final SoftMr b = mw.bound;
            if (b != null && b.parent == mr) {
                return true;
            }
        }
        return false;
    }

    /** ibv_rereg_mr: a new table entry (new keys) replaces the MR's current one, atomically for the NIC. */
    void reregMr(final SoftMr handle, final int flags, final io.gdrkit.verbs.ProtectionDomain pd,
                 final MemorySegment segment, final int access) {
        final int all = MemoryRegion.REREG_CHANGE_TRANSLATION | MemoryRegion.REREG_CHANGE_PD
            | MemoryRegion.REREG_CHANGE_ACCESS;
        if (flags == 0 || (flags & ~all) != 0) {
            throw new VerbsException(Errno.EINVAL, "ibv_rereg_mr: flags 0x" + Integer.toHexString(flags)
                + " (need one or more of CHANGE_TRANSLATION, CHANGE_PD, CHANGE_ACCESS)");
        }
        final boolean translation = (flags & MemoryRegion.REREG_CHANGE_TRANSLATION) != 0;
        if (translation && (segment == null || !segment.isNative() || segment.byteSize() == 0)) {
            throw new VerbsException(Errno.EINVAL, "ibv_rereg_mr: the new memory must be a non-empty native segment");
        }
        SoftPd newPd = null;
        if ((flags & MemoryRegion.REREG_CHANGE_PD) != 0) {
            if (!(pd instanceof SoftPd sp) || sp.device() != this) {
                throw new VerbsException(Errno.EINVAL, "ibv_rereg_mr: the new PD is not one of device " + name);
            }
            newPd = sp;
        }
        if ((flags & MemoryRegion.REREG_CHANGE_ACCESS) != 0) {
            checkAccess(access);
        }
        // new memory is pinned as a new registration's would be; the old pin goes once nothing reaches it
        final Runnable newPin = translation ? pin(segment) : null;
        Runnable oldPin = null;
        boolean replaced = false;
        duty.acquire(CONTROL_TIMEOUT_NS, "re-register an MR");
        try {
            final SoftMr cur = handle.current();
            if (mrs.lookup(cur.key) != cur) {
                throw new VerbsException(Errno.EINVAL, "ibv_rereg_mr: the MR was deregistered");
            }
            if (hasBoundWindows(cur)) {
                throw new VerbsException(Errno.EBUSY, "ibv_rereg_mr: memory windows are bound to the MR");
            }
            if (translation && cur.dma != null) {
                throw new VerbsException(Errno.EINVAL, "ibv_rereg_mr: CHANGE_TRANSLATION of an MR over "
                    + cur.dma.describe() + " (register the new memory instead)");
            }
            final SoftPd p = newPd != null ? newPd : cur.pd;
            final int acc = (flags & MemoryRegion.REREG_CHANGE_ACCESS) != 0 ? access : cur.access;
            final int key = mrs.allocateKey();
            final SoftMr next = translation ? new SoftMr(p, segment, acc, key, newPin)
                : cur.dma == null ? new SoftMr(p, cur.segment, acc, key, cur.release)
                : new SoftMr(p, cur.dma, acc, key, cur.release);
            cur.valid = false;
            mrs.remove(cur);
            if (translation && cur.segment != null) {
                port.detachPayloads(cur.segment);
            }
            mrs.publish(next);
            cur.replacedBy(next);
            replaced = true;
            oldPin = translation && cur.dma == null ? cur.release : null;
        } finally {
            duty.release();
            if (!replaced && newPin != null) {
                newPin.run();
            }
        }
        if (oldPin != null) {
            oldPin.run();
        }
    }

    /**
     * Poster-side check for inline data: the bytes are readable. An SGE over unregistered memory is checked against
     * that memory and its lkey is ignored (libibverbs: the L_Key is not checked for inline sends); otherwise the
     * lkey names an MR that must hold the range, as that is the only way to reach the bytes. Null when fine, else
     * why not.
     */
    String inlineProblem(final io.gdrkit.verbs.Sge sge) {
        if (sge.memory != null) {
            final long off = sge.addr - sge.memory.address();
            if (!sge.memory.isNative() || off < 0 || off > sge.memory.byteSize() - Integer.toUnsignedLong(sge.length)) {
                return "is not inside its memory segment (" + sge.memory.byteSize() + " bytes at 0x"
                    + Long.toHexString(sge.memory.address()) + ")";
            }
            return null;
        }
        final SoftMr mr = mrs.lookup(sge.lkey);
        return mr != null && mr.contains(sge.addr, sge.length) ? null
            : "has neither its memory segment (Sge.set(MemorySegment, ...)) nor an MR holding it under that lkey";
    }

    /** Copies inline data at post time (the poster checked it with {@link #inlineProblem}). */
    void copyInline(final io.gdrkit.verbs.Sge sge, final MemorySegment dst, final long dstOffset) {
        if (sge.memory != null) {
            MemorySegment.copy(sge.memory, sge.addr - sge.memory.address(), dst, dstOffset, sge.length);
            return;
        }
        final SoftMr mr = mrs.lookup(sge.lkey);
        if (mr == null || !mr.contains(sge.addr, sge.length)) {
            throw new VerbsException(Errno.EINVAL, "inline SGE lkey 0x" + Integer.toHexString(sge.lkey)
                + " was deregistered while posting");
        }
        mr.copyOut(sge.addr, dst, dstOffset, sge.length);
    }

    // ---------------- completion queues ----------------

    SoftCq createCq(final SoftVerbsContext owner, final int cqe, final SoftCompChannel channel,
                    final int compVector) {
        if (cqe < 1 || cqe > MAX_CQE) {
            throw new VerbsException(Errno.EINVAL, "cqe " + cqe + " outside 1.." + MAX_CQE);
        }
        if (compVector < 0 || compVector >= NUM_COMP_VECTORS) {
            throw new VerbsException(Errno.EINVAL, "comp_vector " + compVector + " outside 0.."
                + (NUM_COMP_VECTORS - 1) + " (num_comp_vectors " + NUM_COMP_VECTORS + ")");
        }
        if (channel != null && (channel.context().device() != this || channel.isClosed())) {
            throw new VerbsException(Errno.EINVAL, "the completion channel is destroyed or of another device");
        }
        duty.acquire(CONTROL_TIMEOUT_NS, "create a CQ");
        try {
            if (cqs.size() >= MAX_CQ) {
                throw new VerbsException(Errno.ENOMEM, "device " + name + " already holds " + MAX_CQ + " CQs (max_cq)");
            }
            final SoftCq cq = new SoftCq(this, owner, nextCqHandle++, cqe, channel, compVector);
            cqs.add(cq);
            if (channel != null) {
                channel.cqs.add(cq);
            }
            return cq;
        } finally {
            duty.release();
        }
    }

    void destroyCq(final SoftCq cq) {
        duty.acquire(CONTROL_TIMEOUT_NS, "destroy a CQ");
        try {
            for (final SoftQp qp : activeQps) {
                if (qp.sendCq == cq || qp.recvCq == cq) {
                    throw new VerbsException(Errno.EBUSY, "CQ " + cq.handle + " is still used by QP " + qp.qpn);
                }
            }
            cqs.remove(cq);
        } finally {
            duty.release();
        }
    }

    // ---------------- queue pairs ----------------

    // ---------------- shared receive queues ----------------

    SoftSrq createSrq(final SoftPd pd, final io.gdrkit.verbs.SrqInitAttr init) {
        final io.gdrkit.verbs.SrqAttr a = init.attr;
        check(a.maxWr >= 1 && a.maxWr <= MAX_SRQ_WR, "max_wr", a.maxWr, "1.." + MAX_SRQ_WR);
        check(a.maxSge >= 1 && a.maxSge <= MAX_SGE, "max_sge", a.maxSge, "1.." + MAX_SGE);
        check(a.srqLimit >= 0 && a.srqLimit <= a.maxWr, "srq_limit", a.srqLimit, "0..max_wr " + a.maxWr);
        duty.acquire(CONTROL_TIMEOUT_NS, "create an SRQ");
        try {
            if (srqs.size() >= MAX_SRQ) {
                throw new VerbsException(Errno.ENOMEM, "device " + name + " already holds " + MAX_SRQ + " SRQs");
            }
            final SoftSrq srq = new SoftSrq(this, pd, nextSrqHandle++, a.maxWr, a.maxSge, a.srqLimit);
            srqs.add(srq);
            return srq;
        } finally {
            duty.release();
        }
    }

    void destroySrq(final SoftSrq srq) {
        duty.acquire(CONTROL_TIMEOUT_NS, "destroy an SRQ");
        try {
            for (final SoftQp qp : activeQps) {
                if (qp.srq == srq) {
                    throw new VerbsException(Errno.EBUSY, "SRQ " + srq.handle + " is still used by QP " + qp.qpn);
                }
            }
            srqs.remove(srq);
        } finally {
            duty.release();
        }
    }

    QueuePair createQp(final SoftPd pd, final QpInitAttr init) {
        if (init.qpType != QpType.RC && init.qpType != QpType.UD) {
            throw new VerbsException(Errno.EOPNOTSUPP, "QP type " + QpType.name(init.qpType)
                + " is not supported by the software NIC (RC and UD only)");
        }
        if (!(init.sendCq instanceof SoftCq scq) || !(init.recvCq instanceof SoftCq rcq)
            || scq.device != this || rcq.device != this) {
            throw new VerbsException(Errno.EINVAL, "send and receive CQs must be CQs of device " + name);
        }
        SoftSrq srq = null;
        if (init.srq != null) {
            if (!(init.srq instanceof SoftSrq ss) || ss.device != this || !srqs.contains(ss)) {
                throw new VerbsException(Errno.EINVAL, "the SRQ is destroyed or not one of device " + name);
            }
            if (ss.pd != pd) {
                throw new VerbsException(Errno.EINVAL, "the SRQ belongs to another PD (the software NIC checks SRQ "
                    + "WQEs against the QP's PD, so they must share it)");
            }
            srq = ss;
        }
        final var c = init.cap;
        check(c.maxSendWr >= 1 && c.maxSendWr <= MAX_QP_WR, "max_send_wr", c.maxSendWr, "1.." + MAX_QP_WR);
        check(c.maxRecvWr >= 1 && c.maxRecvWr <= MAX_QP_WR, "max_recv_wr", c.maxRecvWr, "1.." + MAX_QP_WR);
        check(c.maxSendSge >= 1 && c.maxSendSge <= MAX_SGE, "max_send_sge", c.maxSendSge, "1.." + MAX_SGE);
        check(c.maxRecvSge >= 1 && c.maxRecvSge <= MAX_SGE, "max_recv_sge", c.maxRecvSge, "1.." + MAX_SGE);
        check(c.maxInlineData >= 0 && c.maxInlineData <= MAX_INLINE, "max_inline_data", c.maxInlineData,
            "0.." + MAX_INLINE);
        duty.acquire(CONTROL_TIMEOUT_NS, "create a QP");
        try {
            if (activeQps.length >= attr.maxQp()) {
                throw new VerbsException(Errno.ENOMEM, "device " + name + " already holds its maximum of "
                    + attr.maxQp() + " QPs (" + SoftNicContext.MAX_QP_PROP + ")");
            }
            int index = -1;
            for (int n = 0; n < MAX_QP - QPN_BASE; n++) {
                final int i = QPN_BASE + (nextQpIndex + n) % (MAX_QP - QPN_BASE);
                if (qpTable[i] == null) {
                    index = i;
                    break;
                }
            }
            if (index < 0) {
                throw new VerbsException(Errno.ENOMEM, "no free QP number on " + name);
            }
            nextQpIndex = index - QPN_BASE + 1;
            final SoftQp qp = new SoftQp(this, pd, index, scq, rcq, init.sqSigAll, c, srq, init.qpType == QpType.UD);
            QP_SLOT.setRelease(qpTable, index, qp);
            final SoftQp[] a = Arrays.copyOf(activeQps, activeQps.length + 1);
            a[a.length - 1] = qp;
            activeQps = a;
            scan.touch(qp);
            if (qp.ud) {
                final SoftQp[] u = Arrays.copyOf(udQps, udQps.length + 1);
                u[u.length - 1] = qp;
                udQps = u;
            }
            return qp;
        } finally {
            duty.release();
        }
    }

    private static void check(final boolean ok, final String what, final int value, final String range) {
        if (!ok) {
            throw new VerbsException(Errno.EINVAL, what + " = " + value + " is out of range (" + range + ")");
        }
    }

    SoftQp qp(final int qpn) {
        return qpn >= 0 && qpn < MAX_QP ? qpTable[qpn] : null;
    }

    /**
     * {@link #qp} for a thread that does not hold this device's duty (a peer's responder): an acquire load, so the
     * QP is seen fully constructed. Its mutable attributes are still only safe to read after its volatile
     * {@code state}.
     */
    SoftQp publishedQp(final int qpn) {
        return qpn >= 0 && qpn < MAX_QP ? (SoftQp) QP_SLOT.getAcquire(qpTable, qpn) : null;
    }

    /** The QP {@code qpn} of this driver's device at {@code lid} (a connected peer in this process), or null. */
    SoftQp peerQp(final int lid, final int qpn) {
        final SoftDevice d = driver().deviceByLid(lid);
        return d == null ? null : d.publishedQp(qpn);
    }

    void modifyQp(final SoftQp qp, final QpAttr attr, final int mask) {
        duty.acquire(CONTROL_TIMEOUT_NS, "modify QP " + qp.qpn);
        try {
            if (qpTable[qp.qpn] != qp) {
                throw new VerbsException(Errno.EINVAL, "QP " + qp.qpn + " was destroyed");
            }
            final int next = qp.ud ? QpStateTable.validateUd(qp.state, attr, mask)
                : QpStateTable.validate(qp.state, attr, mask, MAX_RD_ATOMIC);
            if ((mask & io.gdrkit.verbs.QpAttrMask.SOFTWARE_MTU) != 0
                && attr.softwareMtu > this.attr.maxSoftwareMtu()) {
                throw new VerbsException(Errno.EINVAL, "software_mtu " + attr.softwareMtu + " exceeds what the "
                    + "fabric's links carry (" + this.attr.maxSoftwareMtu() + ")");
            }
            if ((mask & io.gdrkit.verbs.QpAttrMask.AV) != 0 && attr.isGlobal) {
                // a GRH is kept and reported (IB: optional inside a subnet); the fabrics still route on the LID
                attr.grh.validate("ibv_modify_qp QP " + qp.qpn, GID_TABLE_LENGTH);
            }
            qp.apply(attr, mask, next);
            scan.touch(qp);
        } finally {
            duty.release();
        }
    }

    void destroyQp(final SoftQp qp) {
        duty.acquire(CONTROL_TIMEOUT_NS, "destroy QP " + qp.qpn);
        try {
            if (qpTable[qp.qpn] != qp) {
                return;
            }
            QP_SLOT.setRelease(qpTable, qp.qpn, (SoftQp) null);
            final SoftQp[] cur = activeQps;
            final SoftQp[] a = new SoftQp[cur.length - 1];
            int j = 0;
            for (final SoftQp q : cur) {
                if (q != qp) {
                    a[j++] = q;
                }
            }
            activeQps = a;
            scan.remove(qp);
            if (qp.ud) {
                udQps = Arrays.stream(udQps).filter(q -> q != qp).toArray(SoftQp[]::new);
                UdEngine.giveUpAll(qp); // no receiver may read the sources of its sends after destroy returns
            }
            qp.state = QpState.RESET;
            qp.sourceRing.release(this);
        } finally {
            duty.release();
        }
        qp.arena.close();
    }

    void checkPdUnused(final SoftPd pd) {
        for (final SoftQp qp : activeQps) {
            if (qp.pd == pd) {
                throw new VerbsException(Errno.EBUSY, "PD still has QP " + qp.qpn);
            }
        }
        for (final SoftSrq srq : srqs) {
            if (srq.pd == pd) {
                throw new VerbsException(Errno.EBUSY, "PD still has SRQ " + srq.handle);
            }
        }
    }

    /** Moves a QP to ERR (NIC side, under duty); the completer and responder flush its queues. */
    void toError(final SoftQp qp, final int eventType, final String why) {
        scan.touch(qp); // the engines flush it
        if (qp.state != QpState.ERR) {
            qp.state = QpState.ERR;
            if (eventType >= 0) {
                raise(new AsyncEvent(eventType, qp.qpn, why), qp.pd.owner());
            }
        }
    }

    @Override
    public String toString() {
        return "soft-NIC " + name + " (lid " + port.lid() + ", simulated)";
    }
}
