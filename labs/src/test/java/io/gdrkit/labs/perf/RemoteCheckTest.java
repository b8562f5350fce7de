/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.auth.Token;
import io.gdrkit.softnic.SoftNicContext;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * --check across processes (here a server thread and a client on the tcp fabric): the server's verdict on what the
 * client wrote or sent, and the client's on what it read, each byte-exact when the data matches and a named
 * mismatch when the client's pattern is off by one seed (the test hook {@code clientPatternSkew}).
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RemoteCheckTest {
    @AfterEach
    void noSkew() {
        RemotePerf.clientPatternSkew = 0;
    }

    private static List<DataCheck.Result> run(final PerfKind test, final long skew) throws Exception {
        final StringWriter log = new StringWriter();
        final PrintWriter out = new PrintWriter(log, true);
        final Thread server = Thread.ofPlatform().daemon(true).name("perf-server-check").start(() ->
            RemotePerf.serve("tcp", new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1 << 22, out, 60_000,
                null, false, RemotePerf.DEFAULT_MAX_SERVER_BUFFER, Token.NONE));
        final int port = awaitPort(log);
        final PerfConfig cfg = new PerfConfig(test).size(5000).iters(40).warmup(0).txDepth(16).rxDepth(16).cqMod(4)
            .bufferBytes(1 << 16).progress(SoftNicContext.ProgressMode.INVOKER).check(true).conclude();
        final List<DataCheck.Result> verdicts = new ArrayList<>();
        RemotePerf.clientPatternSkew = skew;
        try {
            RemotePerf.runClient("127.0.0.1", port, "tcp", 1 << 22, cfg, new int[] {5000}, s -> 0,
                new PerfListener() {
                    @Override
                    public void bw(final PerfConfig c, final BwResult r) {
                    }

                    @Override
                    public void lat(final PerfConfig c, final LatResult r) {
                    }

                    @Override
                    public void check(final PerfConfig c, final DataCheck.Result r) {
                        verdicts.add(r);
                    }
                }, true, null, false, false, Token.NONE);
        } finally {
            server.join(30_000);
        }
        return verdicts;
    }

    @Test
    void theServerChecksWritesAndSendsAndTheClientChecksReads() throws Exception {
        for (final PerfKind t : new PerfKind[] {PerfKind.WRITE_BW, PerfKind.SEND_BW, PerfKind.READ_BW}) {
            final List<DataCheck.Result> v = run(t, 0);
            assertEquals(1, v.size(), t.id());
            assertTrue(v.get(0).byteExact(), () -> t.id() + ": " + v.get(0));
            assertTrue(v.get(0).checkBy().startsWith(t == PerfKind.READ_BW ? "the client process"
                : "the server process"), () -> v.get(0).toString());
        }
    }

    @Test
    void aWrongPatternIsCaughtOnTheSideThatReceived() throws Exception {
        for (final PerfKind t : new PerfKind[] {PerfKind.WRITE_BW, PerfKind.SEND_BW, PerfKind.READ_BW}) {
            final IllegalStateException e = assertThrows(IllegalStateException.class, () -> run(t, 1), t.id());
            assertTrue(e.getMessage().startsWith("--check failed: MISMATCH: " + (t == PerfKind.READ_BW
                ? "server -> client" : "client -> server") + " first bad byte "), e::getMessage);
        }
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
