/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.bootstrap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.comm.bootstrap.BootstrapException.Reason;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class BootstrapTest {
    private static final Duration T = Duration.ofSeconds(20);

    private static BootstrapContext ctx(final UniqueId id, final int rank, final int n) {
        return new BootstrapContext().id(id).rank(rank).nranks(n).timeout(T);
    }

    /** Runs {@code body} on every rank in its own thread; returns the results by rank. */
    private static <R> List<R> ranks(final BootstrapRoot root, final int n, final Function<Bootstrap, R> body)
        throws Exception {
        final ExecutorService ex = Executors.newFixedThreadPool(n);
        try {
            final List<Future<R>> fs = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                final int rank = r;
                fs.add(ex.submit(() -> {
                    try (Bootstrap b = Bootstrap.init(ctx(root.id(), rank, n))) {
                        return body.apply(b);
                    }
                }));
            }
            final List<R> out = new ArrayList<>();
            for (final Future<R> f : fs) {
                out.add(f.get(60, TimeUnit.SECONDS));
            }
            return out;
        } finally {
            ex.shutdownNow();
        }
    }

    @Test
    void allGatherBarrierBroadcastByteForByte() throws Exception {
        final int n = 4;
        try (BootstrapRoot root = BootstrapRoot.startLoopback(n, T)) {
            final List<byte[][]> got = ranks(root, n, b -> {
                final byte[] mine = new byte[b.rank() * 1000 + 1];
                for (int i = 0; i < mine.length; i++) {
                    mine[i] = (byte) (b.rank() * 31 + i);
                }
                final byte[][] all = b.allGather(mine);
                b.barrier();
                final byte[] bc = b.broadcast(2, b.rank() == 2 ? "from two".getBytes(StandardCharsets.UTF_8)
                    : new byte[7]);
                final byte[][] again = b.allGather(new byte[] {(byte) b.rank()});
                return new byte[][] {all[0], all[1], all[2], all[3], bc, again[0], again[1], again[2], again[3]};
            });
            for (int r = 0; r < n; r++) {
                final byte[][] g = got.get(r);
                for (int src = 0; src < n; src++) {
                    assertEquals(src * 1000 + 1, g[src].length);
                    for (int i = 0; i < g[src].length; i++) {
                        assertEquals((byte) (src * 31 + i), g[src][i], "rank " + r + " blob of " + src + " at " + i);
                    }
                    assertArrayEquals(new byte[] {(byte) src}, g[5 + src]);
                }
                assertEquals("from two", new String(g[4], StandardCharsets.UTF_8));
            }
            assertTrue(root.await(Duration.ofSeconds(10)));
            assertEquals(null, root.failure());
        }
    }

    @Test
    void uniqueIdRoundTripAndBadText() {
        final UniqueId id = new UniqueId("127.0.0.1", 4000, 0x0123456789abcdefL);
        assertEquals("127.0.0.1:4000/0123456789abcdef", id.encode());
        assertEquals(id, UniqueId.parse(id.encode()));
        for (final String bad : new String[] {"", "host", "h:1/12", "h:x/0123456789abcdef", "h:0/0123456789abcdef",
            "h:1/0123456789abcdeg", ":1/0123456789abcdef"}) {
            assertThrows(IllegalArgumentException.class, () -> UniqueId.parse(bad), bad);
        }
    }

    @Test
    void contextFromEnvironmentRecordsSourcesAndNamesBadValues() {
        final Map<String, String> env = Map.of(BootstrapContext.ENV_ID, "127.0.0.1:4000/0123456789abcdef",
            BootstrapContext.ENV_RANK, "1", BootstrapContext.ENV_NRANKS, "2", BootstrapContext.ENV_TOKEN, "s3cret");
        final BootstrapContext c = BootstrapContext.fromEnvironment(env, Map.of(BootstrapContext.TIMEOUT_PROP, "1500"))
            .conclude();
        assertEquals(1, c.rank());
        assertEquals(2, c.nranks());
        assertEquals("s3cret", c.token());
        assertEquals(Duration.ofMillis(1500), c.timeout());
        assertTrue(c.settings().stream().noneMatch(s -> String.valueOf(s.value()).contains("s3cret")));
        assertTrue(c.settings().stream().anyMatch(s -> s.describe().equals("GDRKIT_RANK=1 (environment)")));
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> BootstrapContext.fromEnvironment(Map.of(BootstrapContext.ENV_ID, "127.0.0.1:4000/0123456789abcdef",
                BootstrapContext.ENV_RANK, "2", BootstrapContext.ENV_NRANKS, "2"), Map.of()));
        assertEquals("GDRKIT_RANK=2 is not an integer in [0, 1]", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> BootstrapContext.fromEnvironment(Map.of(), Map.of()));
    }

    @Test
    void rankThatNeverJoinsIsNamedWithinTheJoinTimeout() throws Exception {
        try (BootstrapRoot root = BootstrapRoot.startLoopback(3, Duration.ofMillis(800))) {
            final ExecutorService ex = Executors.newFixedThreadPool(2);
            final List<Future<BootstrapException>> fs = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                final int rank = r;
                fs.add(ex.submit(() -> assertThrows(BootstrapException.class,
                    () -> Bootstrap.init(ctx(root.id(), rank, 3)))));
            }
            for (final Future<BootstrapException> f : fs) {
                final BootstrapException e = f.get(30, TimeUnit.SECONDS);
                assertEquals(Reason.REMOTE, e.reason(), e.getMessage());
                assertTrue(e.getMessage().contains("rank(s) [2] of 3 never joined within 800 ms"), e.getMessage());
            }
            ex.shutdownNow();
            assertTrue(root.await(Duration.ofSeconds(10)));
            assertTrue(root.failure().contains("never joined"), root.failure());
        }
    }

    @Test
    void rootThatDoesNotExistIsATimeoutNamingIt() {
        final UniqueId nowhere = new UniqueId("127.0.0.1", 1, 5);
        final BootstrapException e = assertThrows(BootstrapException.class, () -> Bootstrap.init(
            new BootstrapContext().id(nowhere).rank(0).nranks(1).timeout(Duration.ofMillis(300))));
        assertEquals(Reason.TIMEOUT, e.reason());
        assertTrue(e.getMessage().contains("could not reach the root at 127.0.0.1:1 within 300 ms"), e.getMessage());
    }

    /**
     * A listener that poses as the root, without the token, learns nothing: the rank's hello carries no token, and
     * when the impostor cannot prove the token the rank sends nothing more (no proof to replay elsewhere).
     */
    @Test
    void theTokenNeverCrossesTheWireAndAnImpostorRootGetsNoProof() throws Exception {
        final String token = "s3cret-token-of-the-run";
        try (java.net.ServerSocket fake = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            final UniqueId id = new UniqueId("127.0.0.1", fake.getLocalPort(), 0x77L);
            final java.io.ByteArrayOutputStream heard = new java.io.ByteArrayOutputStream();
            final Thread impostor = Thread.ofPlatform().daemon(true).start(() -> {
                try (Socket s = fake.accept()) {
                    s.setSoTimeout(5_000);
                    final java.io.DataInputStream in = new java.io.DataInputStream(s.getInputStream());
                    final BootstrapWire.Frame hello = BootstrapWire.read(in, 0x77L, 4096, "rank");
                    heard.write(hello.payload());
                    final DataOutputStream out = new DataOutputStream(s.getOutputStream());
                    // a challenge with a made-up proof: it does not know the token
                    BootstrapWire.write(out, BootstrapWire.CHALLENGE, 0, 0, 0x77L, new byte[BootstrapWire.NONCE
                        + BootstrapWire.MAC]);
                    heard.write(in.readAllBytes()); // whatever the rank says after that, until it closes
                } catch (final IOException e) {
                    // the rank closed: expected
                }
            });
            final BootstrapException e = assertThrows(BootstrapException.class, () -> Bootstrap.init(
                new BootstrapContext().id(id).rank(0).nranks(2).token(token).timeout(Duration.ofSeconds(5))));
            assertEquals(Reason.REJECTED, e.reason());
            assertTrue(e.getMessage().contains("did not prove it knows the run's token"), e.getMessage());
            impostor.join(10_000);
            final byte[] got = heard.toByteArray();
            assertEquals(4 + BootstrapWire.NONCE, got.length, "the hello (ranks and a nonce), then nothing");
            assertEquals(-1, indexOf(got, token.getBytes(StandardCharsets.UTF_8)), "the token crossed the wire");
        }
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

    @Test
    void wrongTokenDuplicateRankAndWrongSizeAreRejected() throws Exception {
        try (BootstrapRoot root = BootstrapRoot.start(new java.net.InetSocketAddress(
            java.net.InetAddress.getLoopbackAddress(), 0), 2, "tok", T)) {
            final BootstrapException bad = assertThrows(BootstrapException.class, () -> Bootstrap.init(
                ctx(root.id(), 0, 2).token("nope")));
            assertEquals(Reason.REJECTED, bad.reason());
            // the root proves the token first: this rank finds it cannot, and says nothing more
            assertTrue(bad.getMessage().contains("did not prove it knows the run's token"), bad.getMessage());
            final long deadline = System.nanoTime() + 10_000_000_000L;
            while (root.refusedConnections() == 0 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertTrue(root.lastRefusal().contains("closed the connection instead of proving the token"),
                root.lastRefusal());
            final BootstrapException size = assertThrows(BootstrapException.class, () -> Bootstrap.init(
                ctx(root.id(), 0, 3).token("tok")));
            assertEquals(Reason.REJECTED, size.reason());
            assertTrue(size.getMessage().contains("thinks the run has 3 ranks, the root has 2"), size.getMessage());
            final ExecutorService ex = Executors.newSingleThreadExecutor();
            final Future<Bootstrap> first = ex.submit(() -> Bootstrap.init(ctx(root.id(), 0, 2).token("tok")));
            Thread.sleep(200); // not a timing assertion: lets rank 0 join first so the duplicate is the second
            final BootstrapException dup = assertThrows(BootstrapException.class, () -> Bootstrap.init(
                ctx(root.id(), 0, 2).token("tok")));
            assertEquals(Reason.REJECTED, dup.reason());
            assertTrue(dup.getMessage().contains("joined twice") || dup.getMessage().contains("rank 0"),
                dup.getMessage());
            try (Bootstrap one = Bootstrap.init(ctx(root.id(), 1, 2).token("tok"));
                 Bootstrap zero = first.get(30, TimeUnit.SECONDS)) {
                assertEquals(1, one.rank());
                assertEquals(0, zero.rank());
            }
            ex.shutdownNow();
        }
    }

    @Test
    void handleOfAnotherRunIsRejectedWithoutLearningTheRun() throws Exception {
        try (BootstrapRoot root = BootstrapRoot.startLoopback(1, T)) {
            final UniqueId other = new UniqueId(root.id().host(), root.id().port(), root.id().runId() ^ 1);
            final BootstrapException e = assertThrows(BootstrapException.class, () -> Bootstrap.init(ctx(other, 0, 1)));
            // the root refuses it by name; the run id (the run's secret without a token) is never told back
            assertEquals(Reason.REJECTED, e.reason());
            assertTrue(e.getMessage().contains("not this run"), e.getMessage());
            assertTrue(!e.getMessage().contains(java.util.HexFormat.of().toHexDigits(root.id().runId())),
                e.getMessage());
        }
    }

    @Test
    void garbageFromAPeerIsRejectedAndTheRunGoesOn() throws Exception {
        try (BootstrapRoot root = BootstrapRoot.startLoopback(1, T)) {
            try (Socket s = new Socket(root.id().host(), root.id().port())) {
                s.getOutputStream().write("GET / HTTP/1.0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                final InputStream in = s.getInputStream();
                s.setSoTimeout(10_000);
                final byte[] reply = in.readAllBytes();
                assertTrue(new String(reply, StandardCharsets.UTF_8).contains("not a gdrkit bootstrap frame"));
            }
            try (Bootstrap b = Bootstrap.init(ctx(root.id(), 0, 1))) {
                assertArrayEquals(new byte[] {9}, b.allGather(new byte[] {9})[0]);
            }
        }
    }

    @Test
    void hugeAnnouncedPayloadIsRefusedWithoutAllocating() throws Exception {
        try (BootstrapRoot root = BootstrapRoot.startLoopback(1, T);
             Socket s = new Socket(root.id().host(), root.id().port())) {
            final DataOutputStream out = new DataOutputStream(s.getOutputStream());
            out.writeInt(BootstrapWire.MAGIC);
            out.writeByte(BootstrapWire.VERSION);
            out.writeByte(BootstrapWire.HELLO);
            out.writeInt(0);
            out.writeInt(0);
            out.writeLong(root.id().runId());
            out.writeInt(Integer.MAX_VALUE);
            out.flush();
            s.setSoTimeout(10_000);
            final String reply = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(reply.contains("payload of 2147483647 bytes"), reply);
        }
    }

    /** A frame header as a rank writes it. */
    private static void header(final DataOutputStream out, final int kind, final int seq, final int rank,
                               final long run, final int len) throws IOException {
        out.writeInt(BootstrapWire.MAGIC);
        out.writeByte(BootstrapWire.VERSION);
        out.writeByte(kind);
        out.writeInt(seq);
        out.writeInt(rank);
        out.writeLong(run);
        out.writeInt(len);
    }

    /**
     * A connection that drips its hello one byte at a time, each well inside a per-read timeout, used to hold the
     * root's only thread (and so the join) for minutes. Now it holds only its own admission, which ends at the
     * fixed hello deadline; the real ranks join meanwhile.
     */
    @Test
    void aDrippingHelloHoldsOnlyItsOwnAdmissionNotTheJoin() throws Exception {
        final Duration join = Duration.ofSeconds(15);
        try (BootstrapRoot root = BootstrapRoot.startLoopback(2, join);
             Socket drip = new Socket(root.id().host(), root.id().port())) {
            final java.io.ByteArrayOutputStream hello = new java.io.ByteArrayOutputStream();
            final DataOutputStream h = new DataOutputStream(hello);
            header(h, BootstrapWire.HELLO, 0, 0, root.id().runId(), 4 + BootstrapWire.NONCE);
            h.writeInt(2);
            h.write(new byte[BootstrapWire.NONCE]);
            final byte[] bytes = hello.toByteArray(); // 46 bytes: at 400 ms each, 18 s, past the hello deadline
            final java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
            final Thread dripper = Thread.ofPlatform().daemon(true).name("dripper").start(() -> {
                try {
                    for (int i = 0; i < bytes.length - 1 && !stop.get(); i++) {
                        drip.getOutputStream().write(bytes[i]);
                        drip.getOutputStream().flush();
                        Thread.sleep(400);
                    }
                } catch (final IOException | InterruptedException e) {
                    // the root closed it: what this test expects
                }
            });
            Thread.sleep(100); // not a timing assertion: the drip starts before the ranks
            final List<Integer> sizes = ranks(root, 2, b -> b.allGather(new byte[] {(byte) b.rank()}).length);
            assertEquals(List.of(2, 2), sizes, "both ranks joined and gathered while the drip went on");
            final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!root.lastRefusal().contains("no complete hello within") && System.nanoTime() < until) {
                Thread.sleep(20);
            }
            stop.set(true);
            dripper.join(10_000);
            assertTrue(root.lastRefusal().contains("no complete hello within " + BootstrapRoot.HELLO_TIMEOUT_MS
                + " ms of accept"), root::lastRefusal);
        }
    }

    /**
     * More silent connections than admission slots: each holds a slot until its hello deadline, the rest wait in
     * the backlog, and real ranks arriving meanwhile are admitted once slots free (never refused for the crowd).
     */
    @Test
    void silentConnectionsHoldSlotsOnlyUntilTheirDeadlineThenRanksJoin() throws Exception {
        try (BootstrapRoot root = BootstrapRoot.startLoopback(2, Duration.ofSeconds(60))) {
            final List<Socket> silent = new ArrayList<>();
            try {
                for (int i = 0; i < BootstrapRoot.MAX_PENDING + 8; i++) {
                    silent.add(new Socket(root.id().host(), root.id().port()));
                }
                assertEquals(List.of(2, 2), ranks(root, 2, b -> b.allGather(new byte[] {1}).length));
                awaitRefusal(root, "no complete hello within");
                final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (root.refusedConnections() < BootstrapRoot.MAX_PENDING && System.nanoTime() < until) {
                    Thread.sleep(10);
                }
                assertTrue(root.refusedConnections() >= BootstrapRoot.MAX_PENDING,
                    "every slot-holding silent connection ended at its deadline; refused: "
                        + root.refusedConnections());
            } finally {
                for (final Socket s : silent) {
                    s.close();
                }
            }
        }
    }

    private static void awaitRefusal(final BootstrapRoot root, final String what) throws InterruptedException {
        final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!root.lastRefusal().contains(what)) {
            if (System.nanoTime() > until) {
                throw new AssertionError("timed out waiting for a refusal saying '" + what + "'; last: "
                    + root.lastRefusal());
            }
            Thread.sleep(10);
        }
    }

    /** An admitted rank that sends operations without waiting for results is a flood: the run aborts by name. */
    @Test
    void aRankFloodingOperationsAbortsTheRunByName() throws Exception {
        try (BootstrapRoot root = BootstrapRoot.startLoopback(2, T);
             Socket raw = new Socket(root.id().host(), root.id().port())) {
            final ExecutorService ex = Executors.newSingleThreadExecutor();
            final Future<Bootstrap> zero = ex.submit(() -> Bootstrap.init(ctx(root.id(), 0, 2)));
            final DataOutputStream out = new DataOutputStream(new java.io.BufferedOutputStream(raw.getOutputStream()));
            final byte[] nonce = BootstrapWire.nonce();
            header(out, BootstrapWire.HELLO, 0, 1, root.id().runId(), 4 + BootstrapWire.NONCE);
            out.writeInt(2);
            out.write(nonce);
            out.flush();
            raw.setSoTimeout(20_000);
            final java.io.DataInputStream in = new java.io.DataInputStream(raw.getInputStream());
            final BootstrapWire.Frame chal = BootstrapWire.read(in, root.id().runId(), 4096, "root");
            assertEquals(BootstrapWire.CHALLENGE, chal.kind());
            final byte[] rootNonce = java.util.Arrays.copyOf(chal.payload(), BootstrapWire.NONCE);
            BootstrapWire.write(out, BootstrapWire.PROOF, 0, 1, root.id().runId(), BootstrapWire.proof(new byte[0],
                "rank", root.id().runId(), 1, 2, rootNonce, nonce));
            final BootstrapWire.Frame welcome = BootstrapWire.read(in, root.id().runId(), 4096, "root");
            assertEquals(BootstrapWire.WELCOME, welcome.kind());
            for (int seq = 1; seq <= 3; seq++) {
                header(out, BootstrapWire.ALLGATHER, seq, 1, root.id().runId(), 8);
                out.write(new byte[8]);
            }
            out.flush();
            final BootstrapWire.Frame abort = BootstrapWire.read(in, root.id().runId(), 4096, "root");
            assertEquals(BootstrapWire.ABORT, abort.kind());
            final String why = BootstrapWire.text(abort.payload());
            assertTrue(why.contains("rank 1 sent allGather #3 with 2 operations not yet answered"), why);
            try (Bootstrap b = zero.get(30, TimeUnit.SECONDS)) {
                final BootstrapException e = assertThrows(BootstrapException.class, b::barrier);
                assertTrue(e.getMessage().contains("not yet answered"), e.getMessage());
            }
            ex.shutdownNow();
        }
    }

    /**
     * A peer that announces a large payload and sends little costs what it sent: the payload is read in pieces.
     * Measured as this thread's allocation (deterministic, not timing).
     */
    @Test
    void aLargeAnnouncedPayloadCostsOnlyWhatArrived() throws Exception {
        final java.io.ByteArrayOutputStream wire = new java.io.ByteArrayOutputStream();
        final DataOutputStream out = new DataOutputStream(wire);
        header(out, BootstrapWire.RESULT, 1, -1, 77L, BootstrapWire.MAX_GATHER - 1);
        out.write(new byte[10]);
        final java.io.DataInputStream in = new java.io.DataInputStream(
            new java.io.ByteArrayInputStream(wire.toByteArray()));
        final com.sun.management.ThreadMXBean mx =
            (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        final long before = mx.getCurrentThreadAllocatedBytes();
        final java.io.EOFException e = assertThrows(java.io.EOFException.class,
            () -> BootstrapWire.read(in, 77L, BootstrapWire.MAX_GATHER, "the root"));
        final long allocated = mx.getCurrentThreadAllocatedBytes() - before;
        assertTrue(e.getMessage().contains("after 10 of " + (BootstrapWire.MAX_GATHER - 1)), e.getMessage());
        assertTrue(allocated < (1 << 20), "allocated " + allocated + " bytes for 10 received of "
            + (BootstrapWire.MAX_GATHER - 1) + " announced");
    }

    @Test
    void theAllGatherResultIsCappedAtStartForEveryRankCount() throws Exception {
        for (int n = 1; n <= BootstrapWire.MAX_RANKS; n++) {
            assertTrue((long) BootstrapWire.maxGather(n) <= BootstrapWire.MAX_GATHER, "n = " + n);
            assertTrue(BootstrapWire.maxBlob(n) >= 16_000 && BootstrapWire.maxBlob(n) <= BootstrapWire.MAX_BLOB);
        }
        assertEquals(BootstrapWire.MAX_BLOB, BootstrapWire.maxBlob(4));
        // with 100 ranks each may pass 671084 bytes: more is refused before anything is sent
        final int n = 100;
        try (BootstrapRoot root = BootstrapRoot.startLoopback(n, T)) {
            final List<String> said = ranks(root, n, b -> {
                final IllegalArgumentException big = assertThrows(IllegalArgumentException.class,
                    () -> b.allGather(new byte[b.maxBlob() + 1]));
                b.barrier(); // the run goes on
                return big.getMessage();
            });
            assertTrue(said.get(0).contains("allGather blob of 671085 bytes (at most 671084 with 100 ranks)"),
                said.get(0));
        }
    }

    @Test
    void mismatchedOperationsFailEveryRankNamingBoth() throws Exception {
        try (BootstrapRoot root = BootstrapRoot.startLoopback(2, T)) {
            final List<String> msgs = ranks(root, 2, b -> {
                final BootstrapException e = assertThrows(BootstrapException.class, () -> {
                    if (b.rank() == 0) {
                        b.barrier();
                    } else {
                        b.allGather(new byte[1]);
                    }
                });
                return e.reason() + " " + e.getMessage();
            });
            for (final String m : msgs) {
                assertTrue(m.startsWith("REMOTE"), m);
                assertTrue(m.contains("rank 0 called barrier #1 while rank 1 called allGather #1"), m);
            }
        }
    }

    @Test
    void abortByOneRankReachesTheOthers() throws Exception {
        try (BootstrapRoot root = BootstrapRoot.startLoopback(3, T)) {
            final List<String> msgs = ranks(root, 3, b -> {
                if (b.rank() == 1) {
                    b.abort("out of GPU memory");
                    return "aborted";
                }
                final BootstrapException e = assertThrows(BootstrapException.class, b::barrier);
                return e.reason() + " " + e.getMessage();
            });
            assertEquals("aborted", msgs.get(1));
            for (final int r : new int[] {0, 2}) {
                assertTrue(msgs.get(r).startsWith("REMOTE"), msgs.get(r));
                assertTrue(msgs.get(r).contains("rank 1: out of GPU memory"), msgs.get(r));
            }
        }
    }

    @Test
    void operationTimeoutNamesTheOperation() throws Exception {
        try (BootstrapRoot root = BootstrapRoot.startLoopback(2, T)) {
            final ExecutorService ex = Executors.newSingleThreadExecutor();
            final Future<Bootstrap> other = ex.submit(() -> Bootstrap.init(ctx(root.id(), 1, 2)));
            try (Bootstrap b = Bootstrap.init(ctx(root.id(), 0, 2).timeout(Duration.ofMillis(300)));
                 Bootstrap idle = other.get(30, TimeUnit.SECONDS)) {
                final BootstrapException e = assertThrows(BootstrapException.class, b::barrier);
                assertEquals(Reason.TIMEOUT, e.reason());
                assertTrue(e.getMessage().contains("waited 300 ms in barrier #1 for the other ranks"), e.getMessage());
                assertEquals(1, idle.rank());
            }
            ex.shutdownNow();
        }
    }

    @Test
    void rankProcessThatDiesFailsTheOthersWithARemoteError() throws Exception {
        try (BootstrapRoot root = BootstrapRoot.startLoopback(2, T)) {
            final Process child = new ProcessBuilder(java.nio.file.Path.of(System.getProperty("java.home"), "bin",
                "java").toString(), "-Xmx64m", "-cp", System.getProperty("java.class.path"),
                DyingRank.class.getName(), root.id().encode()).redirectErrorStream(true).start();
            try (Bootstrap b = Bootstrap.init(ctx(root.id(), 0, 2))) {
                final byte[][] all = b.allGather("zero".getBytes(StandardCharsets.UTF_8));
                assertEquals("one", new String(all[1], StandardCharsets.UTF_8));
                assertTrue(child.waitFor(30, TimeUnit.SECONDS), "the child did not exit");
                assertEquals(3, child.exitValue());
                final BootstrapException e = assertThrows(BootstrapException.class, b::barrier);
                assertEquals(Reason.REMOTE, e.reason());
                assertTrue(e.getMessage().contains("rank 1 closed its bootstrap connection"), e.getMessage());
            } finally {
                child.destroyForcibly();
            }
        }
    }

    /** A rank in another process that joins, contributes to one allgather, and dies without closing. */
    public static final class DyingRank {
        public static void main(final String[] args) throws IOException {
            final Bootstrap b = Bootstrap.init(new BootstrapContext().id(UniqueId.parse(args[0])).rank(1).nranks(2)
                .timeout(T));
            b.allGather("one".getBytes(StandardCharsets.UTF_8));
            Runtime.getRuntime().halt(3);
        }
    }
}
