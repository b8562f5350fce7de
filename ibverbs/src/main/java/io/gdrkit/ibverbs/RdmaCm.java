/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.gdrkit.core.Errno;
import io.gdrkit.ibverbs.config.IbverbsConfiguration;
import io.gdrkit.verbs.VerbsException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.net.Inet4Address;
import java.net.InetSocketAddress;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;

/**
 * librdmacm through FFM: an event channel, CM ids, address and route resolution, connect/listen/accept with private
 * data, and events read with a timeout that names what was awaited. The connection flow mirrors
 * {@code io.gdrkit.verbs.cm} (REQ with private data, accept or reject, disconnect), so a command's {@code -R} can
 * pick either. Without an RDMA device the kernel's {@code /dev/infiniband/rdma_cm} is absent and the first call
 * fails with that errno, named.
 */
public final class RdmaCm {
    /** RDMA_PS_TCP: reliable connected, as perftest's -R uses. */
    public static final int PS_TCP = 0x0106;
    /** rdma_cm_event_type names, in the header's order. */
    public static final List<String> EVENTS = List.of("ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR",
        "CONNECT_REQUEST", "CONNECT_RESPONSE", "CONNECT_ERROR", "UNREACHABLE", "REJECTED", "ESTABLISHED",
        "DISCONNECTED", "DEVICE_REMOVAL", "MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE", "TIMEWAIT_EXIT");

    /** struct rdma_conn_param (24 bytes on x86-64), checked by AbiCheckTest. */
    public static final StructLayout CONN_PARAM = CLayout.struct("rdma_conn_param", ADDRESS.withName("private_data"),
        JAVA_BYTE.withName("private_data_len"), JAVA_BYTE.withName("responder_resources"),
        JAVA_BYTE.withName("initiator_depth"), JAVA_BYTE.withName("flow_control"), JAVA_BYTE.withName("retry_count"),
        JAVA_BYTE.withName("rnr_retry_count"), JAVA_BYTE.withName("srq"), JAVA_INT.withName("qp_num"));
    /** struct rdma_cm_event; the param union is as large as rdma_ud_param (private data, ah_attr, qp_num, qkey). */
    public static final StructLayout CM_EVENT = CLayout.struct("rdma_cm_event", ADDRESS.withName("id"),
        ADDRESS.withName("listen_id"), JAVA_INT.withName("event"), JAVA_INT.withName("status"),
        CLayout.union("param", CONN_PARAM.withName("conn"), CLayout.struct("ud", ADDRESS.withName("private_data"),
            JAVA_BYTE.withName("private_data_len"), IbvLayouts.AH_ATTR.withName("ah_attr"), JAVA_INT.withName("qp_num"),
            JAVA_INT.withName("qkey"))));
    /** The members of struct rdma_cm_id the binding reads. */
    public static final StructLayout CM_ID_HEAD = CLayout.struct("rdma_cm_id", ADDRESS.withName("verbs"),
        ADDRESS.withName("channel"), ADDRESS.withName("context"), ADDRESS.withName("qp"));

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle POLL = LINKER.downcallHandle(LINKER.defaultLookup().find("poll").orElseThrow(),
        FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT)); // nfds_t: unsigned long

    private final MethodHandle createEventChannel;
    private final MethodHandle destroyEventChannel;
    private final MethodHandle createId;
    private final MethodHandle destroyId;
    private final MethodHandle resolveAddr;
    private final MethodHandle resolveRoute;
    private final MethodHandle bindAddr;
    private final MethodHandle listen;
    private final MethodHandle connect;
    private final MethodHandle accept;
    private final MethodHandle reject;
    private final MethodHandle disconnect;
    private final MethodHandle getCmEvent;
    private final MethodHandle ackCmEvent;
    private final MethodHandle establish;
    /** Every librdmacm call made, in order, when a caller asked for a trace (tests, -R's evidence); else null. */
    private volatile List<String> trace;

    private RdmaCm(final SymbolLookup l) {
        createEventChannel = errno(l, "rdma_create_event_channel", FunctionDescriptor.of(ADDRESS));
        destroyEventChannel = down(l, "rdma_destroy_event_channel", FunctionDescriptor.ofVoid(ADDRESS));
        createId = errno(l, "rdma_create_id", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_INT));
        destroyId = errno(l, "rdma_destroy_id", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        resolveAddr = errno(l, "rdma_resolve_addr", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS,
            JAVA_INT));
        resolveRoute = errno(l, "rdma_resolve_route", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        bindAddr = errno(l, "rdma_bind_addr", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        listen = errno(l, "rdma_listen", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        connect = errno(l, "rdma_connect", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        accept = errno(l, "rdma_accept", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        reject = errno(l, "rdma_reject", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_BYTE));
        disconnect = errno(l, "rdma_disconnect", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        getCmEvent = errno(l, "rdma_get_cm_event", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        ackCmEvent = down(l, "rdma_ack_cm_event", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        establish = errno(l, "rdma_establish", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    }

    /** Records every librdmacm call from now on into {@code calls} (null: stop). */
    public RdmaCm trace(final List<String> calls) {
        this.trace = calls;
        return this;
    }

    private void traced(final String call) {
        final List<String> t = trace;
        if (t != null) {
            t.add(call);
        }
    }

    /** Property naming the librdmacm to load (tests point it at a stub). */
    public static final String LIBRARY_PROPERTY = IbverbsConfiguration.RDMACM_LIBRARY.name();

    /** librdmacm ({@link IbverbsConfiguration#RDMACM_LIBRARY}, default librdmacm.so.1), or a named reason it is absent. */
    public static RdmaCm load() {
        final String name;
        try {
            name = IbverbsConfiguration.RDMACM_LIBRARY.read(io.gdrkit.core.config.SettingsReader.ofProcess()).value();
        } catch (final IllegalArgumentException e) {
            throw new VerbsException(Errno.EINVAL, "librdmacm not loaded: " + e.getMessage());
        }
        return load(name);
    }

    /** The librdmacm at {@code name} (a path or a soname), or a named reason it is absent. */
    public static RdmaCm load(final String name) {
        final SymbolLookup l;
        try {
            l = SymbolLookup.libraryLookup(name, Arena.global());
        } catch (final IllegalArgumentException e) {
            throw new VerbsException(Errno.ENOENT, "librdmacm not loadable: cannot open " + name + " ("
                + e.getMessage() + ")");
        }
        return new RdmaCm(l);
    }

    /** An event channel ({@code rdma_create_event_channel}): the source of every CM event of its ids. */
    public EventChannel createEventChannel() {
        traced("rdma_create_event_channel");
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment st = a.allocate(Linker.Option.captureStateLayout());
            final MemorySegment ch = call(() -> (MemorySegment) createEventChannel.invokeExact(st));
            if (ch.equals(MemorySegment.NULL)) {
                final int errno = IbvLibrary.errnoOf(st);
                throw new VerbsException(errno, "rdma_create_event_channel: " + Errno.name(errno) + " (it opens "
                    + "/dev/infiniband/rdma_cm, which exists only where the kernel has an RDMA device and rdma_ucm)");
            }
            final MemorySegment c = ch.reinterpret(4);
            return new EventChannel(c, c.get(JAVA_INT, 0));
        }
    }

    /** One CM event, copied out before it is acknowledged. */
    public record Event(String type, int status, MemorySegment id, MemorySegment listenId, byte[] privateData) {
    }

    /** An event channel and the ids created on it. */
    public final class EventChannel implements AutoCloseable {
        private final MemorySegment channel;
        private final int fd;
        private final Arena arena = Arena.ofShared();
        private final MemorySegment eventPtr = arena.allocate(ADDRESS);
        private final MemorySegment pollfd = arena.allocate(8, 4);

        EventChannel(final MemorySegment channel, final int fd) {
            this.channel = channel;
            this.fd = fd;
        }

        /** A CM id on this channel ({@code rdma_create_id}, RDMA_PS_TCP). */
        public MemorySegment createId() {
            final MemorySegment idPtr = arena.allocate(ADDRESS);
            check("rdma_create_id", st -> (int) createId.invokeExact(st, channel, idPtr, MemorySegment.NULL, PS_TCP));
            return idPtr.get(ADDRESS, 0).reinterpret(CM_ID_HEAD.byteSize());
        }

        /** Starts resolving {@code dst} to a local RDMA device and port; ADDR_RESOLVED or ADDR_ERROR follows. */
        public void resolveAddr(final MemorySegment id, final InetSocketAddress dst, final Duration timeout) {
            final MemorySegment sa = sockaddr(arena, dst);
            check("rdma_resolve_addr(" + dst + ")", st -> (int) resolveAddr.invokeExact(st, id, MemorySegment.NULL,
                sa, (int) timeout.toMillis()));
        }

        /** Starts resolving the route; ROUTE_RESOLVED or ROUTE_ERROR follows. */
        public void resolveRoute(final MemorySegment id, final Duration timeout) {
            check("rdma_resolve_route", st -> (int) resolveRoute.invokeExact(st, id, (int) timeout.toMillis()));
        }

        /** Binds {@code id} to a local address and listens; CONNECT_REQUEST events follow. */
        public void listen(final MemorySegment id, final InetSocketAddress bind, final int backlog) {
            final MemorySegment sa = sockaddr(arena, bind);
            check("rdma_bind_addr(" + bind + ")", st -> (int) bindAddr.invokeExact(st, id, sa));
            check("rdma_listen", st -> (int) listen.invokeExact(st, id, backlog));
        }

        /** Sends the connect request with {@code privateData} (at most 56 bytes on RC, as the CM REQ carries). */
        public void connect(final MemorySegment id, final byte[] privateData, final int responderResources,
                            final int initiatorDepth) {
            connect(id, privateData, responderResources, initiatorDepth, 0);
        }

        /**
         * As {@link #connect(MemorySegment, byte[], int, int)} for an id without a QP of its own: {@code qpNum} is
         * the QP the caller created and moves through RTR/RTS itself; CONNECT_RESPONSE then asks for
         * {@link #establish}.
         */
        public void connect(final MemorySegment id, final byte[] privateData, final int responderResources,
                            final int initiatorDepth, final int qpNum) {
            final MemorySegment p = connParam(privateData, responderResources, initiatorDepth);
            p.set(JAVA_INT, IbvLayouts.offset(CONN_PARAM, "qp_num"), qpNum);
            check("rdma_connect(qp_num " + qpNum + ", " + privateData.length + " bytes of private data)",
                st -> (int) connect.invokeExact(st, id, p));
        }

        /** Completes an active connection whose QP the caller moved to RTS (rdma_establish). */
        public void establish(final MemorySegment id) {
            check("rdma_establish", st -> (int) establish.invokeExact(st, id));
        }

        /** Accepts a CONNECT_REQUEST's id with {@code privateData}. */
        public void accept(final MemorySegment id, final byte[] privateData, final int responderResources,
                           final int initiatorDepth) {
            accept(id, privateData, responderResources, initiatorDepth, 0);
        }

        /** As {@link #accept(MemorySegment, byte[], int, int)}, naming the caller's own QP ({@code qpNum}). */
        public void accept(final MemorySegment id, final byte[] privateData, final int responderResources,
                           final int initiatorDepth, final int qpNum) {
            final MemorySegment p = connParam(privateData, responderResources, initiatorDepth);
            p.set(JAVA_INT, IbvLayouts.offset(CONN_PARAM, "qp_num"), qpNum);
            check("rdma_accept(qp_num " + qpNum + ", " + privateData.length + " bytes of private data)",
                st -> (int) accept.invokeExact(st, id, p));
        }

        /** Rejects a CONNECT_REQUEST with {@code privateData} as the reason. */
        public void reject(final MemorySegment id, final byte[] privateData) {
            final MemorySegment pd = arena.allocate(Math.max(1, privateData.length));
            pd.copyFrom(MemorySegment.ofArray(privateData));
            check("rdma_reject", st -> (int) reject.invokeExact(st, id, pd, (byte) privateData.length));
        }

        public void disconnect(final MemorySegment id) {
            check("rdma_disconnect", st -> (int) disconnect.invokeExact(st, id));
        }

        public void destroyId(final MemorySegment id) {
            check("rdma_destroy_id", st -> (int) destroyId.invokeExact(st, id));
        }

        /**
         * The next event, waiting at most {@code timeout}.
         *
         * @throws VerbsException ETIMEDOUT naming {@code awaited} when none came in time
         */
        public Event next(final Duration timeout, final String awaited) {
            pollfd.set(JAVA_INT, 0, fd);
            pollfd.set(JAVA_SHORT, 4, (short) 1); // POLLIN
            pollfd.set(JAVA_SHORT, 6, (short) 0);
            final int ready = call(() -> (int) POLL.invokeExact(pollfd, 1L, (int) Math.min(Integer.MAX_VALUE,
                timeout.toMillis())));
            if (ready <= 0) {
                throw new VerbsException(Errno.ETIMEDOUT, "waited " + timeout.toMillis() + " ms for the RDMA CM event "
                    + awaited + " on fd " + fd + "; none came");
            }
            check("rdma_get_cm_event (awaiting " + awaited + ")", st -> (int) getCmEvent.invokeExact(st, channel,
                eventPtr));
            final MemorySegment ev = eventPtr.get(ADDRESS, 0).reinterpret(CM_EVENT.byteSize());
            final int type = ev.get(JAVA_INT, IbvLayouts.offset(CM_EVENT, "event"));
            final int len = Byte.toUnsignedInt(ev.get(JAVA_BYTE, IbvLayouts.offset(CM_EVENT, "param", "conn",
                "private_data_len")));
            final MemorySegment pdata = ev.get(ADDRESS, IbvLayouts.offset(CM_EVENT, "param", "conn", "private_data"));
            final byte[] data = pdata.equals(MemorySegment.NULL) ? new byte[0]
                : pdata.reinterpret(len).toArray(JAVA_BYTE);
            final Event e = new Event(eventName(type), ev.get(JAVA_INT, IbvLayouts.offset(CM_EVENT, "status")),
                ev.get(ADDRESS, 0), ev.get(ADDRESS, ADDRESS.byteSize()), data);
            call(() -> (int) ackCmEvent.invokeExact(ev));
            traced("rdma_ack_cm_event (" + e.type() + ", " + data.length + " bytes of private data)");
            return e;
        }

        private MemorySegment connParam(final byte[] privateData, final int responderResources,
                                        final int initiatorDepth) {
            if (privateData.length > 56) {
                throw new VerbsException(Errno.EINVAL, "private data of " + privateData.length + " bytes; the RC "
                    + "CM REQ carries at most 56");
            }
            final MemorySegment p = arena.allocate(CONN_PARAM);
            final MemorySegment pd = arena.allocate(Math.max(1, privateData.length));
            pd.copyFrom(MemorySegment.ofArray(privateData));
            p.set(ADDRESS, 0, pd);
            p.set(JAVA_BYTE, IbvLayouts.offset(CONN_PARAM, "private_data_len"), (byte) privateData.length);
            p.set(JAVA_BYTE, IbvLayouts.offset(CONN_PARAM, "responder_resources"), (byte) responderResources);
            p.set(JAVA_BYTE, IbvLayouts.offset(CONN_PARAM, "initiator_depth"), (byte) initiatorDepth);
            p.set(JAVA_BYTE, IbvLayouts.offset(CONN_PARAM, "retry_count"), (byte) 7);
            p.set(JAVA_BYTE, IbvLayouts.offset(CONN_PARAM, "rnr_retry_count"), (byte) 7);
            return p;
        }

        @Override
        public void close() {
            if (channel.address() != 0) {
                call(() -> {
                    destroyEventChannel.invokeExact(channel);
                    return null;
                });
            }
            arena.close();
        }
    }

    /** The event type's name, or its number when the header has none (a newer kernel). */
    public static String eventName(final int type) {
        return type >= 0 && type < EVENTS.size() ? EVENTS.get(type) : "event " + type;
    }

    /** A {@code struct sockaddr_in} for an IPv4 address (16 bytes, port and address in network order). */
    static MemorySegment sockaddr(final Arena arena, final InetSocketAddress a) {
        if (!(a.getAddress() instanceof Inet4Address v4)) {
            throw new VerbsException(Errno.EINVAL, "only IPv4 addresses for now, not " + a);
        }
        final MemorySegment s = arena.allocate(16, 4);
        s.set(JAVA_SHORT, 0, (short) 2); // AF_INET, host order
        s.set(JAVA_SHORT.withOrder(ByteOrder.BIG_ENDIAN), 2, (short) a.getPort());
        MemorySegment.copy(MemorySegment.ofArray(v4.getAddress()), 0, s, 4, 4);
        return s;
    }

    @FunctionalInterface
    private interface StCall {
        int call(MemorySegment state) throws Throwable;
    }

    private void check(final String what, final StCall c) {
        traced(what);
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment st = a.allocate(Linker.Option.captureStateLayout());
            final int rc = call(() -> c.call(st));
            if (rc != 0) {
                final int errno = IbvLibrary.errnoOf(st);
                throw new VerbsException(errno, what + ": " + Errno.name(errno));
            }
        }
    }

    private static <T> T call(final Native.Call<T> c) {
        return Native.call(c);
    }

    private static MethodHandle down(final SymbolLookup l, final String name, final FunctionDescriptor fd) {
        return LINKER.downcallHandle(l.find(name).orElseThrow(() -> new IllegalStateException(name)), fd);
    }

    private static MethodHandle errno(final SymbolLookup l, final String name, final FunctionDescriptor fd) {
        return LINKER.downcallHandle(l.find(name).orElseThrow(() -> new IllegalStateException(name)), fd,
            Linker.Option.captureCallState("errno"));
    }

    /** For tests: a channel over any readable fd (no librdmacm channel behind it; only {@link EventChannel#next}). */
    EventChannel channelOverFd(final int fd) {
        return new EventChannel(MemorySegment.NULL, fd);
    }
}
