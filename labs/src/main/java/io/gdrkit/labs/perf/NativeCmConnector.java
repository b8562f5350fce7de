/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import io.gdrkit.ibverbs.RdmaCm;
import io.gdrkit.ibverbs.RdmaCmPair;
import io.gdrkit.verbs.GlobalRoute;
import io.gdrkit.verbs.PortAttr;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.VerbsContext;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * perf's {@code -R} on a native device: each QP pair of the loopback meets through librdmacm
 * ({@link RdmaCmPair}) on {@code bind}'s address, which must belong to the RDMA device's network interface (an
 * IPoIB or RoCE netdev); each end's QPN, PSN, LID, GID, buffer address and rkey travel in the private data, and
 * each QP is brought up from what the peer sent (with a GRH on a RoCE port).
 */
public final class NativeCmConnector implements Loopback.Connector, AutoCloseable {
    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private final InetAddress bind;
    private final RdmaCm cm;
    private final List<RdmaCmPair> pairs = new ArrayList<>();

    private NativeCmConnector(final InetAddress bind, final RdmaCm cm) {
        this.bind = bind;
        this.cm = cm;
    }

    /**
     * @throws IllegalArgumentException when {@code address} is not an address of this host
     * @throws io.gdrkit.verbs.VerbsException ENOENT when librdmacm cannot be loaded
     */
    public static NativeCmConnector on(final String address) {
        try {
            return new NativeCmConnector(InetAddress.getByName(address), RdmaCm.load());
        } catch (final java.net.UnknownHostException e) {
            throw new IllegalArgumentException("--bind " + address + ": not an address (" + e.getMessage() + ")", e);
        }
    }

    @Override
    public void connect(final Loopback.Side a, final Loopback.Side b, final int index, final QpAttr template) {
        final VerbsContext ca = Loopback.context(a);
        final VerbsContext cb = Loopback.context(b);
        final PortAttr port = ca.queryPort(1);
        final boolean roce = "Ethernet".equals(port.linkLayer());
        final RdmaCmPair.Endpoint ea = new RdmaCmPair.Endpoint(a.qps[index].qpNum(), 1000 + index, port.lid(),
            ca.queryGid(1, 0), a.mr.address(), a.mr.rkey());
        final RdmaCmPair.Endpoint eb = new RdmaCmPair.Endpoint(b.qps[index].qpNum(), 2000 + index,
            cb.queryPort(1).lid(), cb.queryGid(1, 0), b.mr.address(), b.mr.rkey());
        pairs.add(RdmaCmPair.connect(cm, new InetSocketAddress(bind, freePort()), ea, eb,
            peer -> bringUp(b.qps[index], eb, peer, roce, template),
            peer -> bringUp(a.qps[index], ea, peer, roce, template), TIMEOUT));
    }

    private static void bringUp(final QueuePair qp, final RdmaCmPair.Endpoint self, final RdmaCmPair.Endpoint peer,
                                final boolean roce, final QpAttr template) {
        final QpAttr t = roce ? template.copy().grh(new GlobalRoute().dgid(peer.gid()).hopLimit(1)) : template;
        QpBringUp.toRts(qp, peer.qpn(), peer.lid(), self.psn(), peer.psn(), t);
    }

    /** A port number free on {@code bind} now (the RDMA CM's TCP port space mirrors the host's). */
    private int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, bind)) {
            return s.getLocalPort();
        } catch (final IOException e) {
            throw new UncheckedIOException("--bind " + bind + ": no free port (" + e.getMessage() + ")", e);
        }
    }

    /** The librdmacm calls of every pair connected so far. */
    public List<String> calls() {
        final List<String> all = new ArrayList<>();
        for (final RdmaCmPair p : pairs) {
            all.addAll(p.calls());
        }
        return all;
    }

    @Override
    public void close() {
        for (final RdmaCmPair p : pairs) {
            p.close();
        }
    }
}
