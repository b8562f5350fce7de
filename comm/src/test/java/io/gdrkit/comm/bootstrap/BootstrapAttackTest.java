/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.host.FileDescriptorLimit;
import io.gdrkit.core.net.AcceptBackoff;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Attacks on the bootstrap root's listener as a hostile local user would make them. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class BootstrapAttackTest {
    private static final Duration T = Duration.ofSeconds(20);

    /**
     * Out of file descriptors, the root's accept fails with EMFILE while a connection waits in the backlog: the
     * root backs off instead of spinning or ending its acceptor, and the ranks join once descriptors are free.
     */
    @Test
    void acceptOutOfDescriptorsBacksOffAndTheRanksJoinAfter() throws Exception {
        Assumptions.assumeTrue(FileDescriptorLimit.unavailable().isEmpty(), "no RLIMIT_NOFILE here");
        try (BootstrapRoot warm = BootstrapRoot.startLoopback(2, Duration.ofSeconds(60))) {
            join(warm); // loads what a join runs: no class file opens while no descriptor is free
        }
        try (BootstrapRoot root = BootstrapRoot.startLoopback(2, Duration.ofSeconds(60))) {
            final AcceptBackoff b = root.acceptBackoff();
            final InetSocketAddress at = new InetSocketAddress(root.id().host(), root.id().port());
            final List<SocketChannel> probes = new ArrayList<>();
            try {
                for (int i = 0; i < 4; i++) {
                    probes.add(SocketChannel.open()); // their descriptors now, connected later
                }
                try (var x = FileDescriptorLimit.exhaust()) {
                    // a descriptor closed late elsewhere in the JVM may still take a probe: then the next one,
                    // once the root has let go of the one it took (its admission ends when the probe closes; a
                    // descriptor it frees after the next refill would be taken by the next accept in turn)
                    for (int i = 0; i < probes.size() && b.failures() < 3; i++) {
                        x.refill();
                        probes.get(i).connect(at);
                        final long refusedBefore = root.refusedConnections();
                        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                        while (b.failures() < 3 && System.nanoTime() < deadline) {
                            Thread.sleep(1);
                        }
                        if (b.failures() < 3) {
                            probes.get(i).close();
                            final long let = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                            while (root.refusedConnections() == refusedBefore && System.nanoTime() < let) {
                                Thread.sleep(1);
                            }
                        }
                    }
                }
            } finally {
                for (final SocketChannel p : probes) {
                    p.close();
                }
            }
            assertTrue(b.failures() >= 3, "accept failed and was retried: " + b.failures());
            assertTrue(b.lastError().contains("Too many open files"), b::lastError);
            join(root);
            assertEquals(0, b.delayNanos(), "the pause ended with the next accept");
        }
    }

    private static final String TOKEN = "fuzz-token-of-the-run";
    private static final int FUZZ_INPUTS = 400;

    /** A frame's bytes as BootstrapWire writes them. */
    private static byte[] frame(final int kind, final int seq, final int rank, final long runId, final byte[] payload)
        throws IOException {
        final ByteArrayOutputStream b = new ByteArrayOutputStream();
        BootstrapWire.write(new DataOutputStream(b), kind, seq, rank, runId, payload);
        return b.toByteArray();
    }

    /** One seeded mutation: bytes flipped, a field set to a boundary value, cut short, or grown. */
    private static byte[] mutate(final byte[] good, final Random rnd) {
        byte[] m = good.clone();
        switch (rnd.nextInt(5)) {
            case 0 -> {
                for (int k = 1 + rnd.nextInt(3); k > 0; k--) {
                    m[rnd.nextInt(m.length)] ^= (byte) (1 << rnd.nextInt(8));
                }
            }
            case 1 -> {
                // a header field (magic 0, version 4, kind 5, seq 6, rank 10, run id 14, length 22) or the rank count
                final int[] at = {0, 6, 10, 22, 26};
                final int[] values = {0, 1, -1, 2, 3, Integer.MAX_VALUE, Integer.MIN_VALUE, 4096, 1 << 20};
                ByteBuffer.wrap(m).putInt(at[rnd.nextInt(at.length)], values[rnd.nextInt(values.length)]);
            }
            case 2 -> m[4 + rnd.nextInt(2)] = (byte) rnd.nextInt(256); // version or kind
            case 3 -> m = java.util.Arrays.copyOf(m, rnd.nextInt(m.length)); // cut short
            default -> {
                m = java.util.Arrays.copyOf(m, m.length + 1 + rnd.nextInt(64)); // trailing bytes
                for (int k = good.length; k < m.length; k++) {
                    m[k] = (byte) rnd.nextInt(256);
                }
            }
        }
        return m;
    }

    /**
     * Rank to root: 400 seeded mutations of a rank's hello, each sent on its own connection and half-closed (so the
     * root meets the end of the stream, not its deadline). The root answers a challenge only to a hello that is
     * well-formed for this run (kind, sequence 0, a rank in range, the run's rank count and id, the exact length),
     * otherwise a named refusal or a close; never anything else. It never hands out a welcome (nobody proved the
     * token), and two real ranks join afterwards.
     */
    @Test
    void fuzzedHellosGetAChallengeOnlyWhenWellFormedAndTheRootStillServes() throws Exception {
        final Random rnd = new Random(0x5eed_b007L);
        try (BootstrapRoot root = BootstrapRoot.start(new InetSocketAddress("127.0.0.1", 0), 2, TOKEN,
            Duration.ofSeconds(120))) {
            final long runId = root.id().runId();
            final InetSocketAddress at = new InetSocketAddress(root.id().host(), root.id().port());
            int challenged = 0;
            int refused = 0;
            for (int i = 0; i < FUZZ_INPUTS; i++) {
                final int rank = rnd.nextInt(2);
                final byte[] hello = ByteBuffer.allocate(4 + BootstrapWire.NONCE).putInt(2)
                    .put(BootstrapWire.nonce()).array();
                final byte[] good = frame(BootstrapWire.HELLO, 0, rank, runId, hello);
                final byte[] m = i == 0 ? good : mutate(good, rnd);
                try (Socket s = new Socket()) {
                    s.connect(at, 5000);
                    s.setSoTimeout(20_000);
                    s.getOutputStream().write(m);
                    s.shutdownOutput();
                    final DataInputStream in = new DataInputStream(s.getInputStream());
                    final BootstrapWire.Frame answer;
                    try {
                        answer = BootstrapWire.read(in, runId, 4096, "the root");
                    } catch (final EOFException closed) {
                        refused++;
                        assertFalse(wellFormed(m, runId), () -> "a well-formed hello got no challenge: " + hex(m));
                        continue;
                    }
                    if (answer.kind() == BootstrapWire.CHALLENGE) {
                        challenged++;
                        assertTrue(wellFormed(m, runId), () -> "a challenge to a malformed hello: " + hex(m));
                        assertEquals(rank(m), answer.rank());
                        assertEquals(0, answer.seq());
                    } else {
                        refused++;
                        assertEquals(BootstrapWire.ABORT, answer.kind(), () -> "answer " + answer.kind());
                        assertTrue(BootstrapWire.text(answer.payload()).startsWith("rejected:"),
                            () -> BootstrapWire.text(answer.payload()));
                        assertFalse(wellFormed(m, runId), () -> "a well-formed hello refused: " + hex(m) + ": "
                            + BootstrapWire.text(answer.payload()));
                    }
                }
            }
            assertTrue(challenged > 0 && refused > FUZZ_INPUTS / 2, challenged + " challenged, " + refused
                + " refused");
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (root.refusedConnections() < FUZZ_INPUTS && System.nanoTime() < deadline) {
                Thread.sleep(5); // every connection ends refused: a challenged one never proved the token
            }
            assertEquals(FUZZ_INPUTS, root.refusedConnections(), root.lastRefusal());
            joinWithToken(root);
        }
    }

    /**
     * What the root must challenge: a whole hello frame of this run with sequence 0, rank 0..1 and 2 ranks (bytes
     * after it are the next frame, read as the proof and refused then).
     */
    private static boolean wellFormed(final byte[] m, final long runId) {
        if (m.length < BootstrapWire.HEADER + 4 + BootstrapWire.NONCE) {
            return false;
        }
        final ByteBuffer b = ByteBuffer.wrap(m);
        return b.getInt(0) == BootstrapWire.MAGIC && (b.get(4) & 0xff) == BootstrapWire.VERSION
            && b.get(5) == BootstrapWire.HELLO && b.getInt(6) == 0 && b.getInt(10) >= 0 && b.getInt(10) < 2
            && b.getLong(14) == runId && b.getInt(22) == 4 + BootstrapWire.NONCE && b.getInt(26) == 2;
    }

    private static int rank(final byte[] m) {
        return ByteBuffer.wrap(m).getInt(10);
    }

    private static String hex(final byte[] m) {
        return java.util.HexFormat.of().formatHex(m);
    }

    /**
     * Root to rank: a listener posing as the root answers 400 ranks' hellos with seeded mutations of a challenge
     * that would prove the token (computed right, then mutated), and closes. Every rank ends in a
     * BootstrapException (a named PROTOCOL, REJECTED or REMOTE error) within its timeout, nothing else; a mutation
     * that leaves the challenge valid gets the rank's proof and then the end of the stream. No rank ever sends the
     * token.
     */
    @Test
    void fuzzedChallengesEndEveryRankInANamedErrorAndTheTokenNeverCrossesTheWire() throws Exception {
        final Random rnd = new Random(0x5eed_0fa7L);
        final long runId = 0x7777L;
        final byte[] tok = TOKEN.getBytes(StandardCharsets.UTF_8);
        try (ServerSocket fake = new ServerSocket(0, 4, java.net.InetAddress.getLoopbackAddress())) {
            final UniqueId id = new UniqueId("127.0.0.1", fake.getLocalPort(), runId);
            final java.util.Map<BootstrapException.Reason, Integer> reasons = new java.util.EnumMap<>(
                BootstrapException.Reason.class);
            for (int i = 0; i < FUZZ_INPUTS; i++) {
                final int rank = rnd.nextInt(2);
                final long seed = rnd.nextLong();
                final ByteArrayOutputStream heard = new ByteArrayOutputStream();
                final Thread impostor = Thread.ofPlatform().daemon(true).start(() -> {
                    try (Socket s = fake.accept()) {
                        s.setSoTimeout(10_000);
                        final DataInputStream in = new DataInputStream(s.getInputStream());
                        final BootstrapWire.Frame hello = BootstrapWire.read(in, runId, 4096, "rank");
                        final byte[] rankNonce = java.util.Arrays.copyOfRange(hello.payload(), 4,
                            4 + BootstrapWire.NONCE);
                        final byte[] rootNonce = BootstrapWire.nonce();
                        final byte[] c = ByteBuffer.allocate(BootstrapWire.NONCE + BootstrapWire.MAC).put(rootNonce)
                            .put(BootstrapWire.proof(tok, "root", runId, hello.rank(), 2, rankNonce, rootNonce))
                            .array();
                        final byte[] m = mutate(frame(BootstrapWire.CHALLENGE, 0, hello.rank(), runId, c),
                            new Random(seed));
                        s.getOutputStream().write(m);
                        s.shutdownOutput();
                        heard.write(in.readAllBytes()); // whatever the rank says after that, until it closes
                    } catch (final IOException | RuntimeException e) {
                        // the rank closed or wrote garbage for us: its side is what is checked
                    }
                });
                final BootstrapException e = org.junit.jupiter.api.Assertions.assertThrows(BootstrapException.class,
                    () -> Bootstrap.init(new BootstrapContext().id(id).rank(rank).nranks(2).token(TOKEN)
                        .timeout(Duration.ofSeconds(10))).close(), "a rank joined a fake root");
                assertNotNull(e.getMessage());
                assertFalse(e.reason() == BootstrapException.Reason.TIMEOUT, () -> "a rank waited for its timeout "
                    + "though the fake root had closed: " + e_(e));
                reasons.merge(e.reason(), 1, Integer::sum);
                impostor.join(20_000);
                assertFalse(impostor.isAlive(), "the fake root's connection ended");
                assertEquals(-1, indexOf(heard.toByteArray(), tok), "the token crossed the wire");
            }
            assertTrue(reasons.getOrDefault(BootstrapException.Reason.PROTOCOL, 0) > 0, reasons::toString);
            assertTrue(reasons.getOrDefault(BootstrapException.Reason.REJECTED, 0) > 0, reasons::toString);
        }
    }

    private static String e_(final BootstrapException e) {
        return e.reason() + ": " + e.getMessage();
    }

    private static int indexOf(final byte[] hay, final byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= hay.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (hay[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    /** Two ranks with the run's token join {@code root}. */
    private static void joinWithToken(final BootstrapRoot root) throws Exception {
        final ExecutorService ex = Executors.newFixedThreadPool(2);
        try {
            final List<Future<Integer>> fs = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                final int rank = r;
                fs.add(ex.submit(() -> {
                    try (Bootstrap bs = Bootstrap.init(new BootstrapContext().id(root.id()).rank(rank).nranks(2)
                        .token(TOKEN).timeout(T))) {
                        return bs.allGather(new byte[] {(byte) rank}).length;
                    }
                }));
            }
            for (final Future<Integer> f : fs) {
                assertEquals(2, f.get(60, TimeUnit.SECONDS));
            }
        } finally {
            ex.shutdownNow();
        }
    }

    /** Two ranks join {@code root} and all-gather a byte each. */
    private static void join(final BootstrapRoot root) throws Exception {
        final ExecutorService ex = Executors.newFixedThreadPool(2);
        try {
            final List<Future<Integer>> fs = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                final int rank = r;
                fs.add(ex.submit(() -> {
                    try (Bootstrap bs = Bootstrap.init(new BootstrapContext().id(root.id()).rank(rank).nranks(2)
                        .timeout(T))) {
                        return bs.allGather(new byte[] {(byte) rank}).length;
                    }
                }));
            }
            for (final Future<Integer> f : fs) {
                assertEquals(2, f.get(60, TimeUnit.SECONDS));
            }
        } finally {
            ex.shutdownNow();
        }
    }
}
