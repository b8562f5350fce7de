/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.auth.Token;
import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.softnic.fabric.TcpFabric;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.cm.CmConnection;
import io.gdrkit.verbs.cm.CmListener;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The race behind a CI failure of PerfKilledServerTest: a server that acknowledged the client's first ping-pong
 * WRITE and died before it echoed. The client then has nothing outstanding to retry and waits on memory; it must
 * still end with the retry error (its liveness probe, a zero-byte WRITE, runs out of retries against the dead
 * server), not with the 30 s deadline of its echo wait. The "server" here is a bare one that accepts the run, lets
 * its NIC acknowledge, never echoes, and then closes its NIC and fabric as a killed process's would vanish.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RemotePerfMuteServerTest {
    @Test
    void aServerThatAcknowledgedAndDiedBeforeItsEchoEndsTheClientWithTheRetryError() throws Exception {
        final InetAddress lo = InetAddress.getLoopbackAddress();
        final SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext()
            .progressMode(SoftNicContext.ProgressMode.OWN_DEVICE), RemotePerf.serverFabric("tcp", lo, 1 << 22, null,
            false, Token.NONE));
        final CmListener listener = new CmListener(new InetSocketAddress(lo, 0), Token.NONE,
            CmListener.DEFAULT_HANDSHAKE_TIMEOUT, CmListener.DEFAULT_MAX_PENDING);
        final TcpFabric tcp = (TcpFabric) driver.fabric();
        listener.info(() -> {
            tcp.admit(2);
            return new RemotePerf.ServerInfo(2, tcp.localAddress().getPort(), null).encode();
        });
        final SoftDevice dev = driver.addDevice("mute-server", 1);
        final PerfConfig cfg = new PerfConfig(PerfKind.WRITE_LAT).size(64).iters(1_000_000).warmup(0)
            .progress(SoftNicContext.ProgressMode.OWN_DEVICE).conclude();
        final CompletableFuture<Throwable> client = CompletableFuture.supplyAsync(() -> {
            try {
                RemotePerf.runClient("127.0.0.1", listener.localAddress().getPort(), "tcp", 1 << 22, cfg,
                    new int[] {64}, s -> 0, new PerfListener() {
                        @Override
                        public void bw(final PerfConfig c, final BwResult r) {
                            throw new AssertionError("no row may come from a run whose server died");
                        }

                        @Override
                        public void lat(final PerfConfig c, final LatResult r) {
                            throw new AssertionError("no row may come from a run whose server died");
                        }
                    }, false, null, false, false, Token.NONE);
                return null;
            } catch (final Throwable t) {
                return t;
            }
        });
        CmConnection conn = null;
        try (Arena arena = Arena.ofShared()) {
            final CmListener.Request req = listener.accept(Duration.ofSeconds(30));
            final RemotePerf.Setup s = RemotePerf.Setup.decode(req.privateData());
            final Loopback.Side side = new Loopback.Side(dev, 1, 64);
            side.buf = arena.allocate(s.bufBytes(), 4096);
            side.mr = side.pd.registerMr(side.buf, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            side.qps[0] = side.pd.createQp(new QpInitAttr().cqs(side.scq, side.rcq));
            conn = req.accept(side.qps[0], dev.lid(), RemotePerf.attr(s.mtu()), ByteBuffer.allocate(12)
                .putLong(side.mr.address()).putInt(side.mr.rkey()).array());
            // the client's first WRITE lands (and is acknowledged); no echo ever goes back
            final long last = s.size() - 1;
            final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (side.buf.get(ValueLayout.JAVA_BYTE, last) == 0) {
                dev.doWork();
                assertTrue(System.nanoTime() < until, "the client's first WRITE never arrived");
            }
            final long ackFor = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200);
            while (System.nanoTime() < ackFor) {
                dev.doWork(); // the acknowledgement goes out
            }
            assertEquals(1, side.buf.get(ValueLayout.JAVA_BYTE, last), "the first ping-pong value");
        } finally {
            listener.close();
            driver.close(); // as the killed process's NIC and fabric vanish
            if (conn != null) {
                // its CM connection ends too (a DREQ, which the client's own DREQ answers when its run ends)
                final CmConnection c = conn;
                Thread.ofPlatform().daemon(true).start(() -> {
                    try {
                        c.disconnect();
                    } catch (final RuntimeException ignored) {
                        // the QP's NIC is gone; only the CM's end matters here
                    }
                });
            }
        }
        final Throwable failed = client.get(90, TimeUnit.SECONDS);
        assertNotNull(failed, "the client must fail against a dead server");
        assertTrue(String.valueOf(failed.getMessage()).contains("RETRY_EXC_ERR"),
            () -> "the retry error, not the echo's deadline: " + failed);
    }
}
