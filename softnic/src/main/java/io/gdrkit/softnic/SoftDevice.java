package io.gdrkit.softnic;

import io.gdrkit.core.agent.Agent;
import io.gdrkit.softnic.fabric.FabricPort;
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
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

/**
 * A software RDMA NIC: one port on a fabric, and the agents that move packets for its QPs: a
 * {@link Receiver} that demultiplexes incoming packets, a {@link Requester} that turns WQEs into packets, a
 * {@link Responder} that executes requests and answers them, and a {@link Completer} that turns
 * acknowledgements into completions and drives retransmission, split as Linux rxe splits them.
 */
public final class SoftDevice implements Device, Agent {
    static final int QPN_BASE = 16;
    static final int MAX_QP = 1 << 16;
    static final int MAX_MR = 1 << 20;
    static final int MAX_RD_ATOMIC = 16;
    static final int MAX_INLINE = 4096;
    static final int MAX_SGE = 32;
    static final int MAX_QP_WR = 1 << 15;
    static final int MAX_CQE = 1 << 22;
    private static final long CONTROL_TIMEOUT_NS = TimeUnit.SECONDS.toNanos(10);

    private final SoftNicDriver driver;
    private final String name;
    private final long guid;
    final FabricPort port;
    final Duty duty = new Duty();
    final MrTable mrs = new MrTable(MAX_MR);
    private final SoftQp[] qpTable = new SoftQp[MAX_QP];
    /** QPs the agents scan; replaced copy-on-write under duty. */
    volatile SoftQp[] activeQps = new SoftQp[0];
    private final List<SoftCq> cqs = new ArrayList<>();
    private final ConcurrentLinkedQueue<AsyncEvent> events = new ConcurrentLinkedQueue<>();
    private final DeviceAttr attr;
    private int nextQpIndex;
    private int nextCqHandle = 1;
    private int openContexts;

    /** SEND/WRITE packets may reference host memory where the port allows it (SoftNicContext.ONE_COPY_PROP). */
    final boolean oneCopy;
    final Receiver receiver;
    final Requester requester;
    final Responder responder;
    final Completer completer;

    SoftDevice(final SoftNicDriver driver, final String name, final FabricPort port) {
        this.driver = driver;
        this.name = name;
        this.port = port;
        this.guid = 0x0002_c9ff_fe00_0000L | port.lid();
        this.attr = new DeviceAttr(name, guid, driver.context().maxQp(), MAX_QP_WR, MAX_SGE, 1 << 16, MAX_CQE,
            MAX_MR - 1, Long.MAX_VALUE, MAX_RD_ATOMIC, MAX_RD_ATOMIC, MAX_INLINE,
            Math.min(Mtu.MAX_SOFTWARE_BYTES, Integer.highestOneBit(port.maxPacket() - 256)), true);
        this.oneCopy = driver.context().oneCopy();
        port.owner(this);
        this.completer = new Completer(this);
        this.requester = new Requester(this);
        this.responder = new Responder(this);
        this.receiver = new Receiver(this);
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
        return new SoftVerbsContext(this);
    }

    synchronized void closeContext(final SoftVerbsContext context) {
        openContexts--;
    }

    DeviceAttr attr() {
        return attr;
    }

    PortAttr queryPort(final int portNum) {
        if (portNum != 1) {
            throw new VerbsException(Errno.EINVAL, "device " + name + " has one port (1), not " + portNum);
        }
        return new PortAttr(PortAttr.PORT_ACTIVE, Mtu.MTU_4096, Mtu.MTU_4096, port.lid(), "software");
    }

    // ---------------- agents ----------------

    /** The four engines, for a {@link io.gdrkit.core.agent.DeterministicRunner} to step one by one. */
    public List<Agent> agents() {
        return List.of(guarded(receiver), guarded(requester), guarded(responder), guarded(completer));
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
            fatal = e;
            raise(new AsyncEvent(AsyncEventType.DEVICE_FATAL, 0, "device " + name + " failed: " + e));
            for (final SoftQp qp : activeQps) {
                toError(qp, -1, "");
            }
        }
    }

    /** Driver close: every QP to ERR and flushed, so no poller waits for completions that cannot come. */
    void stop() {
        try {
            duty.acquire(CONTROL_TIMEOUT_NS, "stop device " + name);
        } catch (final RuntimeException e) {
            stopped = true; // a duty holder will see it on its next cycle
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

    void raise(final AsyncEvent event) {
        events.add(event);
    }

    AsyncEvent pollAsyncEvent() {
        return events.poll();
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
        duty.acquire(CONTROL_TIMEOUT_NS, "register an MR");
        try {
            final SoftMr mr = new SoftMr(pd, segment, access, mrs.allocateKey());
            mrs.publish(mr);
            return mr;
        } finally {
            duty.release();
        }
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

    void deregisterMr(final SoftMr mr) {
        duty.acquire(CONTROL_TIMEOUT_NS, "deregister an MR");
        try {
            if (mrs.lookup(mr.key) != mr) {
                throw new VerbsException(Errno.EINVAL, "MR key 0x" + Integer.toHexString(mr.key)
                    + " is not registered (already deregistered?)");
            }
            mr.valid = false;
            mrs.remove(mr);
        } finally {
            duty.release();
        }
        if (mr.release != null) {
            mr.release.run();
        }
    }

    /** Poster-side check for inline data: is [addr, addr+len) inside the MR with this lkey? */
    boolean isReadableLocal(final int lkey, final long addr, final int len) {
        final SoftMr mr = mrs.lookup(lkey);
        return mr != null && mr.contains(addr, len);
    }

    /** Copies inline data at post time (the poster checked the range). */
    void copyInline(final int lkey, final long addr, final MemorySegment dst, final long dstOffset, final int len) {
        final SoftMr mr = mrs.lookup(lkey);
        if (mr == null || !mr.contains(addr, len)) {
            throw new VerbsException(Errno.EINVAL, "inline SGE lkey 0x" + Integer.toHexString(lkey)
                + " was deregistered while posting");
        }
        mr.copyOut(addr, dst, dstOffset, len);
    }

    // ---------------- completion queues ----------------

    SoftCq createCq(final int cqe) {
        if (cqe < 1 || cqe > MAX_CQE) {
            throw new VerbsException(Errno.EINVAL, "cqe " + cqe + " outside 1.." + MAX_CQE);
        }
        duty.acquire(CONTROL_TIMEOUT_NS, "create a CQ");
        try {
            final SoftCq cq = new SoftCq(this, nextCqHandle++, cqe);
            cqs.add(cq);
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

    QueuePair createQp(final SoftPd pd, final QpInitAttr init) {
        if (init.qpType != QpType.RC) {
            throw new VerbsException(Errno.EOPNOTSUPP, "QP type " + QpType.name(init.qpType)
                + " is not supported by the software NIC yet (RC only)");
        }
        if (!(init.sendCq instanceof SoftCq scq) || !(init.recvCq instanceof SoftCq rcq)
            || scq.device != this || rcq.device != this) {
            throw new VerbsException(Errno.EINVAL, "send and receive CQs must be CQs of device " + name);
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
            final SoftQp qp = new SoftQp(this, pd, index, scq, rcq, init.sqSigAll, c);
            qpTable[index] = qp;
            final SoftQp[] a = Arrays.copyOf(activeQps, activeQps.length + 1);
            a[a.length - 1] = qp;
            activeQps = a;
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

    void modifyQp(final SoftQp qp, final QpAttr attr, final int mask) {
        duty.acquire(CONTROL_TIMEOUT_NS, "modify QP " + qp.qpn);
        try {
            if (qpTable[qp.qpn] != qp) {
                throw new VerbsException(Errno.EINVAL, "QP " + qp.qpn + " was destroyed");
            }
            final int next = QpStateTable.validate(qp.state, attr, mask, MAX_RD_ATOMIC);
            if ((mask & io.gdrkit.verbs.QpAttrMask.SOFTWARE_MTU) != 0
                && attr.softwareMtu > this.attr.maxSoftwareMtu()) {
                throw new VerbsException(Errno.EINVAL, "software_mtu " + attr.softwareMtu + " exceeds what the "
                    + "fabric's links carry (" + this.attr.maxSoftwareMtu() + ")");
            }
            qp.apply(attr, mask, next);
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
            qpTable[qp.qpn] = null;
            final SoftQp[] cur = activeQps;
            final SoftQp[] a = new SoftQp[cur.length - 1];
            int j = 0;
            for (final SoftQp q : cur) {
                if (q != qp) {
                    a[j++] = q;
                }
            }
            activeQps = a;
            qp.state = QpState.RESET;
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
    }

    /** Moves a QP to ERR (NIC side, under duty); the completer and responder flush its queues. */
    void toError(final SoftQp qp, final int eventType, final String why) {
        if (qp.state != QpState.ERR) {
            qp.state = QpState.ERR;
            if (eventType >= 0) {
                raise(new AsyncEvent(eventType, qp.qpn, why));
            }
        }
    }

    @Override
    public String toString() {
        return "soft-NIC " + name + " (lid " + port.lid() + ", simulated)";
    }
}
