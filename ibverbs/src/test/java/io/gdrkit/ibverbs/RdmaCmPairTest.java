/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.Errno;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.Device;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.VerbsException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * perf -R's native connection ({@link RdmaCmPair}) against a stub librdmacm and the stub libibverbs (test doubles:
 * no CM, no NIC): the calls made in order, the private data each end received equal to what the other sent, the
 * qp_num each CM call carried, both QPs in RTS; a malformed private data is a named error.
 */
class RdmaCmPairTest {
    @Test
    void twoQpsMeetThroughTheConnectionManagerWithTheirEndpointsInThePrivateData() throws Throwable {
        final Path verbs = StubLibrary.build("1.14.0.0");
        final Path cmLib = StubLibrary.buildRdmaCm();
        Assumptions.assumeTrue(verbs != null && cmLib != null, "no gcc or rdma-core headers to build the stubs");
        final IbvLibrary.Loaded l = IbvLibrary.doLoad(verbs.toString(), false);
        assertNotNull(l.library(), l.unavailable());
        final Device dev = NativeProvider.probe(l).devices().getFirst();
        final RdmaCm cm = RdmaCm.load(cmLib.toString());
        final SymbolLookup syms = SymbolLookup.libraryLookup(cmLib, Arena.global());
        final Linker linker = Linker.nativeLinker();
        try (VerbsContext ca = dev.open(); VerbsContext cb = dev.open(); Arena arena = Arena.ofConfined()) {
            final ProtectionDomain pa = ca.allocPd();
            final ProtectionDomain pb = cb.allocPd();
            final CompletionQueue qa = ca.createCq(16);
            final CompletionQueue qb = cb.createCq(16);
            final QueuePair a = pa.createQp(new QpInitAttr().cqs(qa, qa));
            final QueuePair b = pb.createQp(new QpInitAttr().cqs(qb, qb));
            final MemoryRegion ma = pa.registerMr(arena.allocate(4096, 4096), AccessFlags.LOCAL_WRITE
                | AccessFlags.ALL_REMOTE);
            final MemoryRegion mb = pb.registerMr(arena.allocate(4096, 4096), AccessFlags.LOCAL_WRITE
                | AccessFlags.ALL_REMOTE);
            final int lid = ca.queryPort(1).lid();
            final RdmaCmPair.Endpoint ea = new RdmaCmPair.Endpoint(a.qpNum(), 0x111111, lid, ca.queryGid(1, 0),
                ma.address(), ma.rkey());
            final RdmaCmPair.Endpoint eb = new RdmaCmPair.Endpoint(b.qpNum(), 0x222222, lid, cb.queryGid(1, 0),
                mb.address(), mb.rkey());
            try (RdmaCmPair pair = RdmaCmPair.connect(cm, new InetSocketAddress("127.0.0.1", 18515), ea, eb,
                peer -> QpBringUp.toRts(b, peer.qpn(), peer.lid(), eb.psn(), peer.psn(), QpBringUp.rcDefaults()),
                peer -> QpBringUp.toRts(a, peer.qpn(), peer.lid(), ea.psn(), peer.psn(), QpBringUp.rcDefaults()),
                Duration.ofSeconds(5))) {
                assertEquals(List.of("rdma_create_event_channel", "rdma_create_event_channel", "rdma_create_id",
                    "rdma_bind_addr(/127.0.0.1:18515)", "rdma_listen", "rdma_create_id",
                    "rdma_resolve_addr(/127.0.0.1:18515)", "rdma_get_cm_event (awaiting ADDR_RESOLVED)",
                    "rdma_ack_cm_event (ADDR_RESOLVED, 0 bytes of private data)", "rdma_resolve_route",
                    "rdma_get_cm_event (awaiting ROUTE_RESOLVED)",
                    "rdma_ack_cm_event (ROUTE_RESOLVED, 0 bytes of private data)",
                    "rdma_connect(qp_num " + a.qpNum() + ", 38 bytes of private data)",
                    "rdma_get_cm_event (awaiting CONNECT_REQUEST)",
                    "rdma_ack_cm_event (CONNECT_REQUEST, 38 bytes of private data)",
                    "rdma_accept(qp_num " + b.qpNum() + ", 38 bytes of private data)",
                    "rdma_get_cm_event (awaiting CONNECT_RESPONSE)",
                    "rdma_ack_cm_event (CONNECT_RESPONSE, 38 bytes of private data)", "rdma_establish",
                    "rdma_get_cm_event (awaiting ESTABLISHED)",
                    "rdma_ack_cm_event (ESTABLISHED, 0 bytes of private data)"), pair.calls());
                assertArrayEquals(ea.encode(), pair.seenByPassive().encode(), "REQ private data");
                assertArrayEquals(eb.encode(), pair.seenByActive().encode(), "REP private data");
                assertEquals(mb.address(), pair.seenByActive().addr());
                assertEquals(mb.rkey(), pair.seenByActive().rkey());
                assertEquals(a.qpNum(), (int) linker.downcallHandle(syms.find("stub_cm_connect_qpn").orElseThrow(),
                    FunctionDescriptor.of(JAVA_INT)).invokeExact());
                assertEquals(b.qpNum(), (int) linker.downcallHandle(syms.find("stub_cm_accept_qpn").orElseThrow(),
                    FunctionDescriptor.of(JAVA_INT)).invokeExact());
                assertEquals(QpState.RTS, a.state());
                assertEquals(QpState.RTS, b.state());
            }
            a.close();
            b.close();
            ma.deregister();
            mb.deregister();
            qa.close();
            qb.close();
            pa.close();
            pb.close();
        }
        final VerbsException bad = assertThrows(VerbsException.class, () -> RdmaCmPair.Endpoint.decode(new byte[5],
            "CONNECT_REQUEST"));
        assertEquals(Errno.EINVAL, bad.errno());
        assertTrue(bad.getMessage().contains("private data of 5 bytes is not a gdrkit endpoint (38 bytes)"));
        assertEquals(Errno.ENOENT, assertThrows(VerbsException.class, () -> RdmaCm.load("/nonexistent/librdmacm.so"))
            .errno());
    }
}
