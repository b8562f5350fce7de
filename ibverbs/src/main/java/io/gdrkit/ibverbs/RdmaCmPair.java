/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import io.gdrkit.core.Errno;
import io.gdrkit.verbs.VerbsException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Consumer;

/**
 * One RC connection through librdmacm between two QPs the caller created (perftest's {@code -R}, both ends in one
 * process): the passive end binds and listens on {@code addr}; the active end resolves the address and the route,
 * and connects with its {@link Endpoint} as private data; the passive end brings its QP up towards it and accepts
 * with its own; the active end brings its QP up and calls {@code rdma_establish}; the passive end sees ESTABLISHED.
 * The CM ids carry no QP ({@code rdma_create_qp} is not used): the QPs belong to the caller's contexts, so the
 * private data carries what a QP needs (QPN, PSN, LID, GID) and what an RDMA peer needs (buffer address, rkey).
 * Every event is awaited with a timeout that names it; every call made is recorded.
 *
 * <pre>
 * private data (big-endian, 38 bytes): QPN (u32) | PSN (u32) | LID (u16) | GID (16 B) | buffer address (u64) | rkey (u32)
 * </pre>
 */
public final class RdmaCmPair implements AutoCloseable {
    /** What one end tells the other. */
    public record Endpoint(int qpn, int psn, int lid, byte[] gid, long addr, int rkey) {
        public static final int LENGTH = 38;

        public byte[] encode() {
            return ByteBuffer.allocate(LENGTH).putInt(qpn).putInt(psn).putShort((short) lid).put(gid).putLong(addr)
                .putInt(rkey).array();
        }

        /** @throws VerbsException EPROTO-like EINVAL naming the length when it is not an endpoint */
        public static Endpoint decode(final byte[] b, final String from) {
            if (b.length < LENGTH) {
                throw new VerbsException(Errno.EINVAL, from + ": private data of " + b.length + " bytes is not a "
                    + "gdrkit endpoint (" + LENGTH + " bytes)");
            }
            final ByteBuffer bb = ByteBuffer.wrap(b);
            final int qpn = bb.getInt();
            final int psn = bb.getInt();
            final int lid = Short.toUnsignedInt(bb.getShort());
            final byte[] gid = new byte[16];
            bb.get(gid);
            return new Endpoint(qpn, psn, lid, gid, bb.getLong(), bb.getInt());
        }
    }

    private final RdmaCm.EventChannel passiveChannel;
    private final RdmaCm.EventChannel activeChannel;
    private final List<String> calls;
    private final Endpoint seenByPassive;
    private final Endpoint seenByActive;
    /** The active id, the accepted id and the listening id: disconnected and destroyed before their channels. */
    private final MemorySegment[] ids;

    private RdmaCmPair(final RdmaCm.EventChannel p, final RdmaCm.EventChannel a, final List<String> calls,
                       final Endpoint seenByPassive, final Endpoint seenByActive, final MemorySegment... ids) {
        this.passiveChannel = p;
        this.activeChannel = a;
        this.ids = ids;
        this.calls = calls;
        this.seenByPassive = seenByPassive;
        this.seenByActive = seenByActive;
    }

    /**
     * Connects {@code active} to {@code passive} through the connection manager on {@code addr}.
     *
     * @param bringUpPassive moves the passive QP to RTS towards the endpoint the REQ carried
     * @param bringUpActive  moves the active QP to RTS towards the endpoint the REP carried
     * @throws VerbsException with librdmacm's errno, or ETIMEDOUT naming the event that did not come
     */
    public static RdmaCmPair connect(final RdmaCm cm, final InetSocketAddress addr, final Endpoint active,
                                     final Endpoint passive, final Consumer<Endpoint> bringUpPassive,
                                     final Consumer<Endpoint> bringUpActive, final Duration timeout) {
        final List<String> calls = Collections.synchronizedList(new ArrayList<>());
        cm.trace(calls);
        RdmaCm.EventChannel p = null;
        RdmaCm.EventChannel a = null;
        try {
            p = cm.createEventChannel();
            a = cm.createEventChannel();
            final MemorySegment listenId = p.createId();
            p.listen(listenId, addr, 1);
            final MemorySegment id = a.createId();
            a.resolveAddr(id, addr, timeout);
            expect(a.next(timeout, "ADDR_RESOLVED"), "ADDR_RESOLVED");
            a.resolveRoute(id, timeout);
            expect(a.next(timeout, "ROUTE_RESOLVED"), "ROUTE_RESOLVED");
            a.connect(id, active.encode(), 1, 1, active.qpn());
            final RdmaCm.Event req = expect(p.next(timeout, "CONNECT_REQUEST"), "CONNECT_REQUEST");
            final Endpoint fromActive = Endpoint.decode(req.privateData(), "CONNECT_REQUEST");
            bringUpPassive.accept(fromActive);
            p.accept(req.id(), passive.encode(), 1, 1, passive.qpn());
            final RdmaCm.Event rep = expect(a.next(timeout, "CONNECT_RESPONSE"), "CONNECT_RESPONSE");
            final Endpoint fromPassive = Endpoint.decode(rep.privateData(), "CONNECT_RESPONSE");
            bringUpActive.accept(fromPassive);
            a.establish(id);
            expect(p.next(timeout, "ESTABLISHED"), "ESTABLISHED");
            return new RdmaCmPair(p, a, calls, fromActive, fromPassive, id, req.id(), listenId);
        } catch (final RuntimeException e) {
            if (a != null) {
                a.close();
            }
            if (p != null) {
                p.close();
            }
            throw e;
        } finally {
            cm.trace(null);
        }
    }

    private static RdmaCm.Event expect(final RdmaCm.Event e, final String type) {
        if (!e.type().equals(type) || e.status() != 0) {
            throw new VerbsException(Errno.EINVAL, "expected the RDMA CM event " + type + ", got " + e.type()
                + " (status " + e.status() + ")");
        }
        return e;
    }

    /** The librdmacm calls made, in order. */
    public List<String> calls() {
        return List.copyOf(calls);
    }

    public Endpoint seenByPassive() {
        return seenByPassive;
    }

    public Endpoint seenByActive() {
        return seenByActive;
    }

    /** Disconnects, destroys the ids, then the channels; a failing step does not stop the others. */
    @Override
    public void close() {
        RuntimeException first = null;
        for (int i = 0; i < ids.length; i++) {
            try {
                if (i < 2) {
                    (i == 0 ? activeChannel : passiveChannel).disconnect(ids[i]);
                }
            } catch (final RuntimeException e) {
                first = first == null ? e : first; // the peer may have gone first: destroy regardless
            }
            try {
                (i == 0 ? activeChannel : passiveChannel).destroyId(ids[i]);
            } catch (final RuntimeException e) {
                first = first == null ? e : first;
            }
        }
        activeChannel.close();
        passiveChannel.close();
        if (first != null) {
            throw first;
        }
    }
}
