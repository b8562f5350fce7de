/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import static io.gdrkit.ibverbs.IbvLayouts.CONTEXT;
import static io.gdrkit.ibverbs.IbvLayouts.DEVICE_ATTR;
import static io.gdrkit.ibverbs.IbvLayouts.PORT_ATTR;
import static io.gdrkit.ibverbs.IbvLayouts.offset;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.gdrkit.core.Errno;
import io.gdrkit.verbs.AsyncEvent;
import io.gdrkit.verbs.AsyncEventType;
import io.gdrkit.verbs.CompletionChannel;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.Device;
import io.gdrkit.verbs.DeviceAttr;
import io.gdrkit.verbs.PortAttr;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.VerbsContext;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** An opened native device ({@code struct ibv_context}); its ops table holds the data-path entry points. */
final class NativeContext implements VerbsContext {
    final IbvLibrary lib;
    final MemorySegment ctx;
    final MemorySegment postSendFn;
    final MemorySegment postRecvFn;
    final MemorySegment pollCqFn;
    final MemorySegment reqNotifyFn;
    private final NativeDevice device;
    private boolean closed;
    /** The async-event scratch: an ibv_async_event, a pollfd and errno capture, allocated on the first wait. */
    private final Arena asyncArena = Arena.ofShared();
    private MemorySegment asyncScratch;
    private MemorySegment asyncState;

    NativeContext(final IbvLibrary lib, final NativeDevice device, final MemorySegment ctx) {
        this.lib = lib;
        this.device = device;
        this.ctx = ctx;
        postSendFn = ctx.get(ADDRESS, offset(CONTEXT, "ops", "post_send"));
        postRecvFn = ctx.get(ADDRESS, offset(CONTEXT, "ops", "post_recv"));
        pollCqFn = ctx.get(ADDRESS, offset(CONTEXT, "ops", "poll_cq"));
        reqNotifyFn = ctx.get(ADDRESS, offset(CONTEXT, "ops", "req_notify_cq"));
    }

    @Override
    public Device device() {
        return device;
    }

    @Override
    public DeviceAttr queryDevice() {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment attr = a.allocate(DEVICE_ATTR);
            Native.check("ibv_query_device", Native.call(() -> (int) lib.queryDevice.invokeExact(ctx, attr)));
            final long fw = offset(DEVICE_ATTR, "fw_ver");
            final String fwVer = attr.asSlice(fw, 64).getString(0);
            return new DeviceAttr(fwVer, Long.reverseBytes(l(attr, "node_guid")), Long.reverseBytes(l(attr,
                "sys_image_guid")), l(attr, "max_mr_size"), l(attr, "page_size_cap"), i(attr, "vendor_id"),
                i(attr, "vendor_part_id"), i(attr, "hw_ver"), i(attr, "max_qp"), i(attr, "max_qp_wr"),
                i(attr, "device_cap_flags"), i(attr, "max_sge"), i(attr, "max_sge_rd"), i(attr, "max_cq"),
                i(attr, "max_cqe"), i(attr, "max_mr"), i(attr, "max_pd"), i(attr, "max_qp_rd_atom"),
                i(attr, "max_ee_rd_atom"), i(attr, "max_res_rd_atom"), i(attr, "max_qp_init_rd_atom"),
                i(attr, "max_ee_init_rd_atom"), i(attr, "atomic_cap"), i(attr, "max_ee"), i(attr, "max_rdd"),
                i(attr, "max_mw"), i(attr, "max_raw_ipv6_qp"), i(attr, "max_raw_ethy_qp"), i(attr, "max_mcast_grp"),
                i(attr, "max_mcast_qp_attach"), i(attr, "max_total_mcast_qp_attach"), i(attr, "max_ah"),
                i(attr, "max_fmr"), i(attr, "max_map_per_fmr"), i(attr, "max_srq"), i(attr, "max_srq_wr"),
                i(attr, "max_srq_sge"), Short.toUnsignedInt(attr.get(JAVA_SHORT, offset(DEVICE_ATTR, "max_pkeys"))),
                Byte.toUnsignedInt(attr.get(JAVA_BYTE, offset(DEVICE_ATTR, "local_ca_ack_delay"))),
                Byte.toUnsignedInt(attr.get(JAVA_BYTE, offset(DEVICE_ATTR, "phys_port_cnt"))), device.name(), 0, 0,
                false);
        }
    }

    private static long l(final MemorySegment attr, final String field) {
        return attr.get(JAVA_LONG, offset(DEVICE_ATTR, field));
    }

    private static int i(final MemorySegment attr, final String field) {
        return attr.get(JAVA_INT, offset(DEVICE_ATTR, field));
    }

    @Override
    public PortAttr queryPort(final int port) {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment attr = a.allocate(IbvLayouts.PORT_ATTR_ALLOC, 8); // zeroed; room for newer members
            Native.check("ibv_query_port(" + port + ")", Native.call(() -> (int) lib.queryPort.invokeExact(ctx,
                (byte) port, attr)));
            final int linkLayer = attr.get(JAVA_BYTE, offset(PORT_ATTR, "link_layer"));
            return new PortAttr(attr.get(JAVA_INT, offset(PORT_ATTR, "state")), attr.get(JAVA_INT, offset(PORT_ATTR,
                "max_mtu")), attr.get(JAVA_INT, offset(PORT_ATTR, "active_mtu")),
                Short.toUnsignedInt(attr.get(JAVA_SHORT, offset(PORT_ATTR, "lid"))),
                switch (linkLayer) {
                    case 1 -> "InfiniBand";
                    case 2 -> "Ethernet";
                    default -> "unknown (" + linkLayer + ")";
                }, attr.get(JAVA_INT, offset(PORT_ATTR, "gid_tbl_len")),
                attr.get(JAVA_INT, offset(PORT_ATTR, "port_cap_flags")),
                Integer.toUnsignedLong(attr.get(JAVA_INT, offset(PORT_ATTR, "max_msg_sz"))),
                Short.toUnsignedInt(attr.get(JAVA_SHORT, offset(PORT_ATTR, "pkey_tbl_len"))),
                Short.toUnsignedInt(attr.get(JAVA_SHORT, offset(PORT_ATTR, "sm_lid"))),
                Byte.toUnsignedInt(attr.get(JAVA_BYTE, offset(PORT_ATTR, "lmc"))),
                Byte.toUnsignedInt(attr.get(JAVA_BYTE, offset(PORT_ATTR, "phys_state"))));
        }
    }

    /** The GID at {@code index} of {@code port} as 16 raw bytes ({@code ibv_query_gid}). */
    @Override
    public byte[] queryGid(final int port, final int index) {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment gid = a.allocate(16, 8);
            Native.check("ibv_query_gid(" + port + ", " + index + ")", Native.call(() ->
                (int) lib.queryGid.invokeExact(ctx, (byte) port, index, gid)));
            return gid.toArray(JAVA_BYTE);
        }
    }

    @Override
    public ProtectionDomain allocPd() {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment st = lib.captureState(a);
            final MemorySegment pd = Native.call(() -> (MemorySegment) lib.allocPd.invokeExact(st, ctx));
            if (pd.equals(MemorySegment.NULL)) {
                throw IbvLibrary.error("ibv_alloc_pd", IbvLibrary.errnoOf(st));
            }
            return new NativePd(this, pd.reinterpret(IbvLayouts.PD.byteSize()));
        }
    }

    @Override
    public int numCompVectors() {
        return ctx.get(JAVA_INT, offset(CONTEXT, "num_comp_vectors"));
    }

    /** Completion channels are not bound by the native provider yet (the software NIC has them). */
    @Override
    public CompletionChannel createCompChannel() {
        if (closed) {
            throw new VerbsException(Errno.EINVAL, "ibv_create_comp_channel: the context is closed");
        }
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment st = lib.captureState(a);
            final MemorySegment ch = Native.call(() -> (MemorySegment) lib.createCompChannel.invokeExact(st, ctx));
            if (ch.equals(MemorySegment.NULL)) {
                throw IbvLibrary.error("ibv_create_comp_channel", IbvLibrary.errnoOf(st));
            }
            return new NativeCompChannel(this, ch.reinterpret(IbvLayouts.COMP_CHANNEL.byteSize()));
        }
    }

    @Override
    public CompletionQueue createCq(final int cqe, final CompletionChannel channel, final int compVector) {
        final NativeCompChannel ch;
        if (channel == null) {
            ch = null;
        } else if (channel instanceof NativeCompChannel n && n.context() == this) {
            ch = n;
        } else {
            throw new VerbsException(Errno.EINVAL, "ibv_create_cq: the completion channel is not one of this "
                + "context's");
        }
        final MemorySegment chPtr = ch == null ? MemorySegment.NULL : ch.channel;
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment st = lib.captureState(a);
            final MemorySegment cq = Native.call(() -> (MemorySegment) lib.createCq.invokeExact(st, ctx, cqe,
                MemorySegment.NULL, chPtr, compVector));
            if (cq.equals(MemorySegment.NULL)) {
                throw IbvLibrary.error("ibv_create_cq(" + cqe + ")", IbvLibrary.errnoOf(st));
            }
            final NativeCq q = new NativeCq(this, cq.reinterpret(IbvLayouts.CQ.byteSize()), cqe, compVector, ch);
            if (ch != null) {
                ch.attach(q);
            }
            return q;
        }
    }

    /** Returns the next asynchronous event, or null when none is pending (a zero-timeout wait). */
    @Override
    public AsyncEvent pollAsyncEvent() {
        return getAsyncEvent(0);
    }

    /**
     * Waits up to {@code timeoutNanos} for the next asynchronous event: {@code poll(2)} on {@code async_fd} (made
     * O_NONBLOCK on first use, so a spurious wake-up reads EAGAIN instead of blocking), then
     * {@code ibv_get_async_event}, the element read out (QP number, CQ/SRQ handle or port number), and
     * {@code ibv_ack_async_event} before returning: no event stays unacknowledged, so destroying its object never
     * waits. The event types are libibverbs' {@code enum ibv_event_type}, which {@link AsyncEventType} mirrors.
     */
    @Override
    public AsyncEvent getAsyncEvent(final long timeoutNanos) {
        if (closed) {
            throw new VerbsException(Errno.EINVAL, "ibv_get_async_event: the context is closed");
        }
        final int fd = asyncFd();
        synchronized (this) {
            if (asyncScratch == null) {
                Posix.nonBlocking(fd, "async_fd");
                asyncScratch = asyncArena.allocate(IbvLayouts.ASYNC_EVENT);
                asyncState = Posix.state(asyncArena);
            }
        }
        // the wait is outside the lock: a zero-timeout poll never queues behind another thread's long wait; only
        // taking, reading and acknowledging one event is serialised
        final long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
        while (true) {
            if (!Posix.readableBy(fd, deadline, "async_fd")) {
                return null;
            }
            final AsyncEvent e = takeAsyncEvent();
            if (e != null || deadline - System.nanoTime() <= 0) {
                return e; // null: another reader took the event we woke for, and the time is up
            }
        }
    }

    /** ibv_get_async_event on the non-blocking fd, the element read out, ibv_ack_async_event; null on EAGAIN. */
    private synchronized AsyncEvent takeAsyncEvent() {
        final MemorySegment ev = asyncScratch;
        final MemorySegment st = asyncState;
        final int rc = Native.call(() -> (int) lib.getAsyncEvent.invokeExact(st, ctx, ev));
        if (rc != 0) {
            final int errno = IbvLibrary.errnoOf(st);
            if (errno == Errno.EAGAIN) {
                return null; // another reader took it, or the fd woke without an event
            }
            throw IbvLibrary.error("ibv_get_async_event", errno);
        }
        final int type = ev.get(JAVA_INT, offset(IbvLayouts.ASYNC_EVENT, "event_type"));
        final int element;
        final String what;
        switch (type) {
            case AsyncEventType.CQ_ERR -> {
                element = elementField(ev, IbvLayouts.CQ, "handle");
                what = "CQ handle";
            }
            case AsyncEventType.SRQ_ERR, AsyncEventType.SRQ_LIMIT_REACHED -> {
                element = elementField(ev, IbvLayouts.SRQ_HEAD, "handle");
                what = "SRQ handle";
            }
            case AsyncEventType.PORT_ACTIVE, AsyncEventType.PORT_ERR, AsyncEventType.LID_CHANGE,
                 AsyncEventType.PKEY_CHANGE, AsyncEventType.SM_CHANGE, CLIENT_REREGISTER, GID_CHANGE -> {
                element = ev.get(JAVA_INT, offset(IbvLayouts.ASYNC_EVENT, "element", "port_num"));
                what = "port";
            }
            case AsyncEventType.DEVICE_FATAL -> {
                element = 0;
                what = "device";
            }
            case AsyncEventType.QP_FATAL, AsyncEventType.QP_REQ_ERR, AsyncEventType.QP_ACCESS_ERR,
                 AsyncEventType.COMM_EST, AsyncEventType.SQ_DRAINED, AsyncEventType.PATH_MIG,
                 AsyncEventType.PATH_MIG_ERR, AsyncEventType.QP_LAST_WQE_REACHED -> {
                element = elementField(ev, IbvLayouts.QP, "qp_num");
                what = "QP";
            }
            default -> {
                element = 0;
                what = "element not read for this type";
            }
        }
        Native.call(() -> {
            lib.ackAsyncEvent.invokeExact(ev);
            return null;
        });
        return new AsyncEvent(type, element, "ibv_get_async_event on " + device.name() + ": "
            + AsyncEventType.name(type) + " (" + what + " " + element + "), acknowledged");
    }

    /** libibverbs' IBV_EVENT_CLIENT_REREGISTER and IBV_EVENT_GID_CHANGE (no verbs-API constant yet). */
    private static final int CLIENT_REREGISTER = 17;
    private static final int GID_CHANGE = 18;

    /** The async_fd of {@code struct ibv_context}. */
    int asyncFd() {
        return ctx.get(JAVA_INT, offset(CONTEXT, "async_fd"));
    }

    private static int elementField(final MemorySegment ev, final java.lang.foreign.StructLayout layout,
                                    final String field) {
        final MemorySegment p = ev.get(ADDRESS, 0);
        return p.equals(MemorySegment.NULL) ? 0 : p.reinterpret(layout.byteSize()).get(JAVA_INT, offset(layout, field));
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            Native.check("ibv_close_device", Native.call(() -> (int) lib.closeDevice.invokeExact(ctx)));
            asyncArena.close();
        }
    }
}
