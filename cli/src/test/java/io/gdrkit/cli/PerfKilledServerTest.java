/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A perf server process killed with SIGKILL in the middle of a run (issue 18): the client, another process, must end
 * on its own with the retry error (RETRY_EXC_ERR, named), not "REFUSED: nothing listens" from telling a dead server
 * to quit, and not its 30 s deadline; it exits non-zero and leaves no process behind. The retry timeout is made
 * short through the NIC's settings, so this takes seconds. No timing is asserted: the waits below are generous
 * bounds that only name what did not happen.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class PerfKilledServerTest {
    /** How long the client may take to notice and exit; a generous bound, not a measurement. */
    private static final long CLIENT_EXIT_S = 120;
    /** Retransmit timeout x 0.05 (about 3.4 ms), no backoff: the retry budget is well under a second. */
    private static final List<String> SHORT_RETRY = List.of("-Dgdrkit.nic.retransmit.factor=0.05",
        "-Dgdrkit.nic.retransmit.backoff=0");

    private static ProcessBuilder cli(final List<String> jvm, final String... args) {
        final List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
            .toString(), "--enable-native-access=ALL-UNNAMED", "-Xmx256m"));
        cmd.addAll(jvm);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName()));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd).redirectErrorStream(true);
    }

    /** What {@link #lines} queues once the process's output has ended: every line before it has been appended. */
    private static final String EOF = "\u0000end of output";

    /** Every line {@code p} prints goes to {@code lines} (and the pipe never fills), then {@link #EOF}. */
    private static LinkedBlockingQueue<String> lines(final Process p, final StringBuilder all) {
        final LinkedBlockingQueue<String> q = new LinkedBlockingQueue<>();
        Thread.ofPlatform().daemon(true).start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(),
                StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    synchronized (all) {
                        all.append(line).append('\n');
                    }
                    q.add(line);
                }
            } catch (final IOException ignored) {
                // the process ended
            } finally {
                q.add(EOF);
            }
        });
        return q;
    }

    private static String await(final LinkedBlockingQueue<String> q, final String prefix, final String what,
                                final StringBuilder all) throws InterruptedException {
        final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        while (System.nanoTime() < until) {
            final String line = q.poll(1, TimeUnit.SECONDS);
            if (line != null && line.startsWith(prefix)) {
                return line;
            }
        }
        throw new AssertionError("timed out waiting for " + what + "; the process said:\n" + all);
    }

    @ParameterizedTest(name = "{0} over {1}")
    @CsvSource({"write_lat,tcp", "write_bw,tcp", "write_lat,shm", "write_bw,shm"})
    void aServerKilledMidRunEndsTheClientWithTheRetryError(final String test, final String fabric)
        throws Exception {
        final StringBuilder serverSaid = new StringBuilder();
        final StringBuilder clientSaid = new StringBuilder();
        final Process server = cli(SHORT_RETRY, "perf", test, "--fabric", fabric, "--port", "0",
            "--server-timeout", "120").start();
        Process client = null;
        try {
            final LinkedBlockingQueue<String> sq = lines(server, serverSaid);
            final String listening = await(sq, "# server: waiting for clients on port ", "the server to listen",
                serverSaid);
            final String port = listening.substring(listening.lastIndexOf(' ') + 1).trim();
            // a timed run far longer than the test: it can only end by the server's death
            client = cli(SHORT_RETRY, "perf", test, "127.0.0.1", "--fabric", fabric, "--port", port, "-D", "600",
                "--warmup", "0", "-s", test.endsWith("_lat") ? "64" : "65536").start();
            final LinkedBlockingQueue<String> cq = lines(client, clientSaid);
            await(sq, "# server: running " + test, "the client's run to start", serverSaid);
            server.destroyForcibly(); // SIGKILL: no DREQ, no close, nothing
            assertTrue(server.waitFor(30, TimeUnit.SECONDS), "the killed server process is gone");
            final boolean exited = client.waitFor(CLIENT_EXIT_S, TimeUnit.SECONDS);
            if (exited) {
                // the process may end before the reader thread has taken its last lines (the error among them)
                await(cq, EOF, "the client's output to end", clientSaid);
            }
            final String said;
            synchronized (clientSaid) {
                said = clientSaid.toString();
            }
            assertTrue(exited, "the client did not end by itself within " + CLIENT_EXIT_S + " s:\n" + said);
            assertNotEquals(0, client.exitValue(), said);
            assertTrue(said.contains("RETRY_EXC_ERR"), "the client names the retry error:\n" + said);
            assertFalse(said.contains("REFUSED"), "not the refusal of a quit to a dead server:\n" + said);
            assertFalse(said.contains("deadline") || said.contains("within 30"), "not the 30 s deadline:\n" + said);
            final List<ProcessHandle> left = client.toHandle().descendants().filter(ProcessHandle::isAlive).toList();
            assertTrue(left.isEmpty(), "no orphan process: " + left);
        } finally {
            if (client != null && client.isAlive()) {
                client.destroyForcibly();
            }
            if (server.isAlive()) {
                server.destroyForcibly();
            }
        }
    }
}
