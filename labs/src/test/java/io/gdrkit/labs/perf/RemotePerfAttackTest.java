/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.auth.Token;
import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.cm.CmConnection;
import io.gdrkit.verbs.cm.CmException;
import io.gdrkit.verbs.cm.ConnectionManager;
import java.time.Duration;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The perf server against hostile clients (issue 18): requests that used to kill it (QPs = 0, a 2^40-byte buffer,
 * 2^31-1 QPs, a truncated setup) each get a named reject, the server keeps serving, a real client's run then
 * succeeds, and QUIT ends the server normally. Memory stays bounded: nothing is allocated before validation.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RemotePerfAttackTest {
    /** A REQ whose private data is {@code setup}, sent from a raw socket; returns the REJ reason. */
    private static String rawReq(final InetSocketAddress at, final byte[] setup) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(at, 5000);
            s.setSoTimeout(20_000);
            final DataInputStream in = new DataInputStream(s.getInputStream());
            in.readFully(new byte[72]); // CHAL: header, authenticator, nonce
            s.getOutputStream().write(ByteBuffer.allocate(56 + setup.length).putInt(0x4744434D).put((byte) 2)
                .put((byte) 1).putShort((short) setup.length).putInt(100).putInt(1).putShort((short) 5)
                .putShort((short) 0).putInt(4096).put(new byte[32]).put(setup).array());
            final byte[] head = new byte[56];
            in.readFully(head);
            final ByteBuffer h = ByteBuffer.wrap(head);
            assertEquals(0x4744434D, h.getInt());
            h.get();
            assertEquals(4, h.get(), "the answer is a REJ");
            final byte[] reason = new byte[h.getShort() & 0xFFFF];
            in.readFully(reason);
            return new String(reason, StandardCharsets.UTF_8);
        }
    }

    private static byte[] setup(final int qps, final int rxDepth, final int size, final long buf) {
        return new RemotePerf.Setup(PerfKind.WRITE_BW, size, qps, rxDepth, 4096, buf, 0, 0, false).encode();
    }

    @Test
    void hostileSetupsAreRefusedByNameAndTheServerKeepsServing() throws Exception {
        for (final String fabric : new String[] {"tcp", "shm"}) {
            final StringWriter log = new StringWriter();
            final PrintWriter out = new PrintWriter(log, true);
            final Throwable[] failed = {null};
            final Thread server = Thread.ofPlatform().name("perf-server-under-attack").start(() -> {
                try {
                    RemotePerf.serve(fabric, new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1 << 22,
                        out, 60_000, null, false, RemotePerf.DEFAULT_MAX_SERVER_BUFFER, Token.NONE);
                } catch (final Throwable t) {
                    failed[0] = t;
                }
            });
            final int port = awaitPort(log);
            final InetSocketAddress at = new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
            assertTrue(rawReq(at, setup(0, 1, 64, 1 << 20)).contains("-q/--qp 0 must be 1 .. 1024"));
            assertTrue(rawReq(at, setup(Integer.MAX_VALUE, 1, 64, 1 << 20)).contains("-q/--qp 2147483647 must be"));
            assertTrue(rawReq(at, setup(1, 1, 64, 1L << 40)).contains("--buffer 549755813888 must be"));
            assertTrue(rawReq(at, setup(1, 1, 64, 1L << 29)).contains("exceeds this server's --max-buffer"));
            assertTrue(rawReq(at, setup(64, 16384, 64, 1 << 20)).contains("receives exceeds"));
            assertTrue(rawReq(at, setup(1, 1, 1 << 21, 1 << 20)).contains("-s/--size 2097152 exceeds"));
            assertTrue(rawReq(at, new byte[7]).contains("not a gdrkit perf client (private data of 7 bytes"));
            assertTrue(server.isAlive(), "the server survived every attack");
            // a real client's run, then QUIT
            final List<BwResult> rows = new ArrayList<>();
            final PerfConfig cfg = new PerfConfig(PerfKind.WRITE_BW).size(4096).iters(50).warmup(0).txDepth(64)
                .rxDepth(16).cqMod(1).bufferBytes(1 << 16).progress(SoftNicContext.ProgressMode.OWN_DEVICE).conclude();
            RemotePerf.runClient("127.0.0.1", port, fabric, 1 << 22, cfg, new int[] {4096}, s -> 0,
                new PerfListener() {
                    @Override
                    public void bw(final PerfConfig c, final BwResult r) {
                        rows.add(r);
                    }

                    @Override
                    public void lat(final PerfConfig c, final LatResult r) {
                        throw new AssertionError("a bandwidth test gives no latency row");
                    }
                }, true, null, false, false, Token.NONE);
            assertEquals(1, rows.size());
            server.join(30_000);
            assertTrue(!server.isAlive() && failed[0] == null, () -> fabric + ": server ended with " + failed[0]
                + "\n" + log);
            assertTrue(log.toString().contains("# server: refused a client: -q/--qp 0 must be"), log::toString);
            assertTrue(log.toString().contains("# server: done"), log::toString);
            assertTrue(log.toString().contains("127.0.0.1:" + port + " (connection manager)"), log::toString);
        }
    }

    /**
     * A run of two QPs is half set up (its first REQ got the REP with the server's buffer address and rkey); a
     * REQ from another client, and one that copies the run's visible setup but not its nonce, are each refused
     * by name and never see that address or rkey; the run's own second REQ is then served, and so is QUIT.
     */
    @Test
    void anotherClientsReqDuringARunsSetupIsRefusedAndNeverSeesTheRunsBuffer() throws Exception {
        final StringWriter log = new StringWriter();
        final PrintWriter out = new PrintWriter(log, true);
        final Throwable[] failed = {null};
        final Thread server = Thread.ofPlatform().name("perf-server-shared").start(() -> {
            try {
                RemotePerf.serve("tcp", new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1 << 22, out,
                    60_000, null, false, RemotePerf.DEFAULT_MAX_SERVER_BUFFER, Token.NONE);
            } catch (final Throwable t) {
                failed[0] = t;
            }
        });
        final InetSocketAddress at = new InetSocketAddress(InetAddress.getLoopbackAddress(), awaitPort(log));
        final Duration t = Duration.ofSeconds(30);
        try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext())) {
            final SoftDevice victimDev = driver.addDevice("victim");
            final SoftDevice otherDev = driver.addDevice("other");
            final VerbsContext vc = victimDev.open();
            final VerbsContext oc = otherDev.open();
            final CompletionQueue vcq = vc.createCq(16);
            final CompletionQueue ocq = oc.createCq(16);
            final var vpd = vc.allocPd();
            final var opd = oc.allocPd();
            final RemotePerf.Setup run = new RemotePerf.Setup(PerfKind.WRITE_BW, 64, 2, 1, 4096, 1 << 20, 0, 0,
                false, 0x1234_5678_9abc_def0L);
            final CmConnection v0 = ConnectionManager.connect(at, vpd.createQp(new QpInitAttr().cqs(vcq, vcq)),
                victimDev.lid(), QpBringUp.rcDefaults(), run.encode(), t, Token.NONE);
            final byte[] victimRep = v0.remotePrivateData();
            // another client, its own run
            final CmException other = assertThrows(CmException.class, () -> ConnectionManager.connect(at,
                opd.createQp(new QpInitAttr().cqs(ocq, ocq)), otherDev.lid(), QpBringUp.rcDefaults(),
                setup(2, 1, 64, 1 << 20), t, Token.NONE), "another client's REQ must not get the run's REP");
            assertEquals(CmException.Reason.REJECTED, other.reason(), other::toString);
            assertTrue(other.getMessage().contains("busy: another client's run is being set up"),
                other::getMessage);
            // the run's visible fields and LID, but not its nonce
            final RemotePerf.Setup copied = new RemotePerf.Setup(PerfKind.WRITE_BW, 64, 2, 1, 4096, 1 << 20, 0, 0,
                false, 1);
            final CmException copy = assertThrows(CmException.class, () -> ConnectionManager.connect(at,
                vpd.createQp(new QpInitAttr().cqs(vcq, vcq)), victimDev.lid(), QpBringUp.rcDefaults(),
                copied.encode(), t, Token.NONE), "a copied setup without the nonce must not get the run's REP");
            assertTrue(copy.getMessage().contains("setup or run nonce differs"), copy::getMessage);
            // the run's own second REQ is served, with the same buffer
            final CmConnection v1 = ConnectionManager.connect(at, vpd.createQp(new QpInitAttr().cqs(vcq, vcq)),
                victimDev.lid(), QpBringUp.rcDefaults(), run.encode(), t, Token.NONE);
            assertArrayEquals(victimRep, v1.remotePrivateData());
            v0.close(); // as a client ends its run: QP 0's disconnect ends the server's run
            v1.close();
            assertTrue(server.isAlive(), "the server keeps serving");
            final CmException quit = assertThrows(CmException.class, () -> ConnectionManager.connect(at,
                opd.createQp(new QpInitAttr().cqs(ocq, ocq)), otherDev.lid(), QpBringUp.rcDefaults(),
                new RemotePerf.Setup(PerfKind.WRITE_BW, 0, 1, 0, 4096, 0, 0, 0, true).encode(), t, Token.NONE));
            assertTrue(quit.getMessage().endsWith("rejected: server done"), quit::getMessage);
        }
        server.join(30_000);
        assertTrue(!server.isAlive() && failed[0] == null, () -> "server ended with " + failed[0] + "\n" + log);
        assertTrue(log.toString().contains("# server: finished write_bw 64 B with 2 QP(s)"), log::toString);
        assertEquals(2, log.toString().split("another client's run is being set up", -1).length - 1, log::toString);
    }

    private static int awaitPort(final StringWriter log) throws InterruptedException {
        final String marker = "# server: waiting for clients on port ";
        for (int i = 0; i < 3000; i++) {
            final String s = log.toString();
            final int at = s.indexOf(marker);
            if (at >= 0) {
                final int end = s.indexOf('\n', at);
                if (end > 0) {
                    return Integer.parseInt(s.substring(at + marker.length(), end).trim());
                }
            }
            Thread.sleep(10);
        }
        throw new AssertionError("the server did not report its port: " + log);
    }
}
