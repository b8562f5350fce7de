/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.labs.perf.RemotePerf.Setup;
import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.cm.CmException;
import io.gdrkit.verbs.cm.ConnectionManager;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** A perf client's setup, as the server decodes it: checked through PerfConfig before anything is allocated. */
class RemoteSetupTest {

    private static String refused(final Setup s) {
        return assertThrows(IllegalArgumentException.class, () -> Setup.decode(s.encode())).getMessage();
    }

    @Test
    void aGoodSetupRoundTrips() {
        final Setup s = new Setup(PerfKind.SEND_BW, 4096, 4, 128, 1024, 1L << 21, 0x7f00_0000_1000L, 77, false);
        assertEquals(s, Setup.decode(s.encode()));
        final PerfConfig c = s.config();
        assertEquals(4096, c.size());
        assertEquals(4, c.numQps());
        assertEquals(1L << 20, c.bufferBytes());
        // QUIT carries no run and is not checked as one
        final Setup quit = new Setup(PerfKind.WRITE_BW, 0, 1, 0, 4096, 0, 0, 0, true);
        assertEquals(quit, Setup.decode(quit.encode()));
    }

    /** --check's seed travels in the setup; a latency run cannot ask the server to check. */
    @Test
    void theCheckSeedRoundTripsAndOnlyBandwidthRunsCarryIt() {
        final Setup s = new Setup(PerfKind.READ_BW, 4096, 1, 1, 4096, 1L << 21, 0x1000L, 7, false, 99, 0x5eedL);
        assertEquals(0x5eedL, Setup.decode(s.encode()).checkSeed());
        assertEquals("--check is for write_bw, send_bw and read_bw, not write_lat", refused(new Setup(
            PerfKind.WRITE_LAT, 2, 1, 1, 4096, 1L << 21, 0x1000L, 7, false, 99, 0x5eedL)));
    }

    @Test
    void outOfRangeSetupsAreNamed() {
        assertEquals("-q/--qp 100000 must be 1 .. 1024",
            refused(new Setup(PerfKind.WRITE_BW, 64, 100_000, 1, 4096, 1 << 20, 0, 0, false)));
        assertEquals("-r/--rx-depth 0 must be 1 .. 16384",
            refused(new Setup(PerfKind.SEND_BW, 64, 1, 0, 4096, 1 << 20, 0, 0, false)));
        assertEquals("--buffer 4611686018427387903 must be 64 .. 1073741824 bytes",
            refused(new Setup(PerfKind.WRITE_BW, 64, 1, 1, 4096, Long.MAX_VALUE - 1, 0, 0, false)));
        assertEquals("client buffer of 1025 bytes is not twice a --buffer",
            refused(new Setup(PerfKind.WRITE_BW, 64, 1, 1, 4096, 1025, 0, 0, false)));
        assertEquals("-s/--size 4096 exceeds the registered buffer (512 bytes); raise --buffer",
            refused(new Setup(PerfKind.WRITE_BW, 4096, 1, 1, 4096, 1024, 0, 0, false)));
        assertEquals("--mtu 1000 must be a power of two from 256 to 4096 (IB path MTU) or up to 1048576 "
            + "(software MTU)", refused(new Setup(PerfKind.WRITE_BW, 64, 1, 1, 1000, 1 << 20, 0, 0, false)));
        assertEquals("latency tests use one QP (got -q 2)",
            refused(new Setup(PerfKind.WRITE_LAT, 2, 2, 1, 4096, 1 << 20, 0, 0, false)));
        final byte[] unknown = new Setup(PerfKind.WRITE_BW, 64, 1, 1, 4096, 1 << 20, 0, 0, false).encode();
        unknown[0] = 42;
        assertEquals("unknown perf test 42",
            assertThrows(IllegalArgumentException.class, () -> Setup.decode(unknown)).getMessage());
        assertEquals("not a gdrkit perf client (private data of 3 bytes)",
            assertThrows(IllegalArgumentException.class, () -> Setup.decode(new byte[3])).getMessage());
    }

    /** A server refuses a bad client with the reason, says so, and still serves (here: the QUIT that ends it). */
    @Test
    void theServerRefusesABadClientAndKeepsServing() throws Exception {
        final int port;
        try (ServerSocket probe = new ServerSocket(0)) {
            port = probe.getLocalPort(); // a free port; the shm fabric is named after it
        }
        final StringWriter said = new StringWriter();
        final PrintWriter out = new PrintWriter(said, true);
        final Throwable[] failed = {null};
        final Thread server = Thread.ofPlatform().name("perf-server").start(() -> {
            try {
                RemotePerf.serve("shm", port, 1 << 20, out, 30_000, null);
            } catch (final Throwable t) {
                failed[0] = t;
            }
        });
        final InetSocketAddress at = new InetSocketAddress("127.0.0.1", port);
        try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext())) {
            final SoftDevice dev = driver.addDevice("perf-client");
            final VerbsContext ctx = dev.open();
            final CompletionQueue cq = ctx.createCq(4);
            final QueuePair bad = ctx.allocPd().createQp(new QpInitAttr().cqs(cq, cq));
            final CmException e = connectWhenListening(at, bad, dev,
                new Setup(PerfKind.WRITE_BW, 64, 100_000, 1, 4096, 1 << 20, 0, 0, false));
            assertEquals(CmException.Reason.REJECTED, e.reason(), e::toString);
            assertTrue(e.getMessage().endsWith("rejected: bad perf setup: -q/--qp 100000 must be 1 .. 1024"),
                e.getMessage());
            final QueuePair quit = ctx.allocPd().createQp(new QpInitAttr().cqs(cq, cq));
            final CmException q = connectWhenListening(at, quit, dev,
                new Setup(PerfKind.WRITE_BW, 0, 1, 0, 4096, 0, 0, 0, true));
            assertTrue(q.getMessage().endsWith("rejected: server done"), q.getMessage());
        }
        server.join(30_000);
        // the shm fabric's folder is named after the port; this test's own, so it removes it
        final Path dir = Path.of(Files.isDirectory(Path.of("/dev/shm")) ? "/dev/shm"
            : System.getProperty("java.io.tmpdir"), "gdrkit-perf-" + port);
        if (Files.isDirectory(dir)) {
            try (Stream<Path> files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
        assertEquals(null, failed[0]);
        assertTrue(said.toString().contains("# server: refused a client: -q/--qp 100000 must be 1 .. 1024\n"),
            said::toString);
        assertTrue(said.toString().endsWith("# server: done\n"), said::toString);
    }

    /** Connects with {@code setup}, retrying while the server is not listening yet (up to 30 s); returns the REJ. */
    private static CmException connectWhenListening(final InetSocketAddress at, final QueuePair qp,
                                                    final SoftDevice dev, final Setup setup)
        throws InterruptedException {
        final long deadline = System.nanoTime() + 30_000_000_000L;
        while (true) {
            final CmException e = assertThrows(CmException.class, () -> ConnectionManager.connect(at, qp, dev.lid(),
                QpBringUp.rcDefaults(), setup.encode(), Duration.ofSeconds(30)));
            if (e.reason() != CmException.Reason.REFUSED || System.nanoTime() > deadline) {
                return e;
            }
            Thread.sleep(50);
        }
    }
}
