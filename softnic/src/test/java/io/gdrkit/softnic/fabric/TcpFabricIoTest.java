/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.auth.Token;
import io.gdrkit.core.config.Source;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The TCP fabric's socket I/O at the port level, byte by byte: gathering writes that straddle the ring's wrap,
 * writes the socket cuts short (backpressure), frames that arrive in pieces, frame lengths past the limit, idle
 * parking in the selector, and the {@link TcpFabricContext} settings.
 */
@Timeout(120)
class TcpFabricIoTest {
    private static final InetAddress LO = InetAddress.getLoopbackAddress();
    private static final int CAP = 1 << 16;

    /** A packet from {@code slid} to {@code dlid}: the LRH's DLID and SLID (big-endian), then seeded bytes. */
    private static byte[] packet(final Random r, final int dlid, final int slid, final int length) {
        final byte[] p = new byte[length];
        r.nextBytes(p);
        p[0] = (byte) (dlid >>> 8);
        p[1] = (byte) dlid;
        p[2] = (byte) (slid >>> 8);
        p[3] = (byte) slid;
        return p;
    }

    private static boolean send(final FabricPort port, final int dlid, final byte[] p) {
        final long at = port.tryClaim(dlid, p.length);
        if (at < 0) {
            return false;
        }
        MemorySegment.copy(MemorySegment.ofArray(p), 0, port.claimBuffer(), at, p.length);
        port.commit();
        return true;
    }

    private static SpscRingBuffer.RecordHandler into(final List<byte[]> got) {
        return (buf, off, len) -> got.add(buf.asSlice(off, len).toArray(ValueLayout.JAVA_BYTE));
    }

    private static void await(final BooleanSupplier cond, final String what) throws InterruptedException {
        for (int i = 0; i < 20_000; i++) {
            if (cond.getAsBoolean()) {
                return;
            }
            Thread.sleep(1);
        }
        throw new AssertionError("timed out waiting for " + what);
    }

    @Test
    void batchesStraddlingTheRingsWrapGoInOneGatheringWriteByteExact() throws Exception {
        try (TcpFabric a = new TcpFabric(new InetSocketAddress(LO, 0), CAP, null, false, 1, Token.NONE,
                 TcpFabricContext.defaults());
             TcpFabric b = new TcpFabric(new InetSocketAddress(LO, 0), CAP, null, false, 1, Token.NONE,
                 TcpFabricContext.defaults())) {
            final FabricPort pa = a.attach(1);
            final FabricPort pb = b.attach(2);
            a.connect(2, b.localAddress());
            final Random r = new Random(16);
            final List<byte[]> sent = new ArrayList<>();
            final List<byte[]> got = new ArrayList<>();
            final SpscRingBuffer.RecordHandler h = into(got);
            for (int batch = 0; batch < 300; batch++) {
                // several packets committed without a drain between them, then one duty cycle sends the batch
                final int k = 1 + r.nextInt(12);
                for (int i = 0; i < k; i++) {
                    final byte[] p = packet(r, 2, 1, 16 + r.nextInt(3000));
                    while (!send(pa, 2, p)) {
                        pa.doWork(System.nanoTime());
                        pb.doWork(System.nanoTime());
                        pb.poll(h, 1024);
                    }
                    sent.add(p);
                }
                pa.doWork(System.nanoTime());
                pb.doWork(System.nanoTime());
                pb.poll(h, 1024);
            }
            await(() -> {
                pa.doWork(System.nanoTime());
                pb.doWork(System.nanoTime());
                pb.poll(h, 1024);
                return got.size() >= sent.size();
            }, sent.size() + " packets at B");
            assertEquals(sent.size(), got.size());
            for (int i = 0; i < sent.size(); i++) {
                assertArrayEquals(sent.get(i), got.get(i), "packet " + i);
            }
            assertTrue(a.wrappedWrites() > 0, "some batch straddled the ring's end and went in one write");
            assertEquals(0, b.protocolErrors());
        }
    }

    /** The accepting side of the handshake, by hand: challenge, hello (read, not checked), accepted verdict. */
    private static Socket rawAccept(final ServerSocket ss) throws IOException {
        final Socket s = ss.accept();
        s.setSoTimeout(20_000);
        final ByteBuffer chal = ByteBuffer.allocate(TcpFabric.Challenge.LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        TcpFabric.Challenge.write(chal, new byte[16]);
        s.getOutputStream().write(chal.array());
        new DataInputStream(s.getInputStream()).readFully(new byte[TcpFabric.Hello.LENGTH + Token.MAC_LENGTH]);
        final ByteBuffer verdict = ByteBuffer.allocate(TcpFabric.Verdict.LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        TcpFabric.Verdict.write(verdict, null);
        s.getOutputStream().write(verdict.array());
        return s;
    }

    /** The connecting side of the handshake, by hand, as LID {@code lid} (no token: the MAC is zeros). */
    private static Socket rawConnect(final InetSocketAddress to, final int lid) throws IOException {
        final Socket s = new Socket();
        s.connect(to, 5000);
        s.setSoTimeout(20_000);
        final DataInputStream in = new DataInputStream(s.getInputStream());
        in.readFully(new byte[TcpFabric.Challenge.LENGTH]);
        final ByteBuffer hello = ByteBuffer.allocate(TcpFabric.Hello.LENGTH + Token.MAC_LENGTH)
            .order(ByteOrder.LITTLE_ENDIAN);
        TcpFabric.Hello.write(hello, lid, 77, 0, 1, CAP, false);
        s.getOutputStream().write(hello.array());
        final byte[] v = new byte[TcpFabric.Verdict.LENGTH];
        in.readFully(v);
        assertEquals(0, ByteBuffer.wrap(v).order(ByteOrder.LITTLE_ENDIAN).getInt(4), "hello accepted");
        return s;
    }

    /** A frame as the fabric puts it on the wire: length (LE), tag, packet, zero pad to 8 bytes. */
    private static byte[] frame(final byte[] p, final int claimedLength) {
        final ByteBuffer f = ByteBuffer.allocate((8 + p.length + 7) & ~7).order(ByteOrder.LITTLE_ENDIAN);
        f.putInt(claimedLength).putInt(0).put(p);
        return f.array();
    }

    @Test
    void writesTheSocketCutsShortResumeMidFrameAndTheStreamIsByteExact() throws Exception {
        final TcpFabricContext small = new TcpFabricContext().properties(Map.of()).sendBuffer(4096).conclude();
        try (ServerSocket ss = new ServerSocket()) {
            ss.setReceiveBufferSize(4096);
            ss.bind(new InetSocketAddress(LO, 0));
            final CompletableFuture<Socket> accepted = CompletableFuture.supplyAsync(() -> {
                try {
                    return rawAccept(ss);
                } catch (final IOException e) {
                    throw new IllegalStateException(e);
                }
            });
            try (TcpFabric a = new TcpFabric(new InetSocketAddress(LO, 0), CAP, null, false, 1, Token.NONE, small)) {
                final FabricPort pa = a.attach(1);
                a.connect(2, (InetSocketAddress) ss.getLocalSocketAddress());
                try (Socket peer = accepted.get(20, TimeUnit.SECONDS)) {
                    final Random r = new Random(3);
                    final List<byte[]> sent = new ArrayList<>();
                    // the peer reads nothing yet: the socket buffers fill, then the ring (backpressure, never loss)
                    boolean full = false;
                    for (int i = 0; i < 10_000 && !full; i++) {
                        final byte[] p = packet(r, 2, 1, 8 + r.nextInt(2000));
                        if (send(pa, 2, p)) {
                            sent.add(p);
                        } else {
                            full = true;
                        }
                        pa.doWork(System.nanoTime());
                    }
                    assertTrue(full, "a peer that reads nothing fills the ring: tryClaim says -1");
                    final int total = sent.stream().mapToInt(p -> (8 + p.length + 7) & ~7).sum();
                    final CompletableFuture<byte[]> stream = CompletableFuture.supplyAsync(() -> {
                        try {
                            return new DataInputStream(peer.getInputStream()).readNBytes(total);
                        } catch (final IOException e) {
                            throw new IllegalStateException(e);
                        }
                    });
                    await(() -> {
                        pa.doWork(System.nanoTime());
                        return stream.isDone();
                    }, total + " bytes at the raw peer");
                    final ByteBuffer in = ByteBuffer.wrap(stream.get()).order(ByteOrder.LITTLE_ENDIAN);
                    assertEquals(total, in.remaining());
                    for (int i = 0; i < sent.size(); i++) {
                        final byte[] p = sent.get(i);
                        final int at = in.position();
                        assertEquals(p.length, in.getInt(), "length of frame " + i);
                        in.getInt(); // tag (no CRC on this link)
                        final byte[] body = new byte[p.length];
                        in.get(body);
                        assertArrayEquals(p, body, "frame " + i);
                        in.position((at + 8 + p.length + 7) & ~7);
                    }
                    assertTrue(a.partialWrites() > 0, "the socket took only part of some write");
                }
            }
        }
    }

    @Test
    void framesArrivingInPiecesAreReassembledAndALengthPastTheLimitIsNamed() throws Exception {
        try (TcpFabric b = new TcpFabric(new InetSocketAddress(LO, 0), CAP, null, false, 1, Token.NONE,
                 TcpFabricContext.defaults())) {
            final FabricPort pb = b.attach(2);
            final List<byte[]> got = new ArrayList<>();
            final SpscRingBuffer.RecordHandler h = into(got);
            final Random r = new Random(5);
            try (Socket s = rawConnect(b.localAddress(), 9)) {
                final OutputStream out = s.getOutputStream();
                final List<byte[]> sent = new ArrayList<>();
                final java.io.ByteArrayOutputStream all = new java.io.ByteArrayOutputStream();
                for (final int len : new int[] {4, 5, 100, 4093, CAP / 2 - 8}) { // the last: the largest allowed
                    final byte[] p = packet(r, 2, 9, len);
                    sent.add(p);
                    all.write(frame(p, len));
                }
                final byte[] bytes = all.toByteArray();
                // 1 to 7 bytes at a time at first (header cut at every point), then larger pieces
                int at = 0;
                int step = 1;
                while (at < bytes.length) {
                    final int n = Math.min(bytes.length - at, at < 64 ? step : 997 + step * 131);
                    out.write(bytes, at, n);
                    out.flush();
                    at += n;
                    step = step % 7 + 1;
                    for (int i = 0; i < 3; i++) {
                        pb.doWork(System.nanoTime());
                        pb.poll(h, 64);
                    }
                }
                await(() -> {
                    pb.doWork(System.nanoTime());
                    pb.poll(h, 64);
                    return got.size() >= sent.size();
                }, sent.size() + " frames reassembled");
                assertEquals(sent.size(), got.size());
                for (int i = 0; i < sent.size(); i++) {
                    assertArrayEquals(sent.get(i), got.get(i), "frame " + i);
                }
                assertEquals(0, b.protocolErrors());
            }
            // a length past the largest packet, and a negative one: each closes that connection, by name
            long errors = 0;
            for (final int bad : new int[] {CAP / 2 - 7, -8}) {
                try (Socket s = rawConnect(b.localAddress(), 10 + (int) errors)) {
                    final ByteBuffer f = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
                    f.putInt(bad).putInt(0).putInt(0x00020000 | (10 + (int) errors)).putInt(0);
                    s.getOutputStream().write(f.array());
                    final long before = errors;
                    await(() -> {
                        pb.doWork(System.nanoTime());
                        pb.poll(h, 64);
                        return b.protocolErrors() > before;
                    }, "the protocol error");
                    errors++;
                    assertEquals(errors, b.protocolErrors());
                    assertTrue(b.lastError().contains("frame of " + bad + " bytes from LID " + (9 + errors)),
                        b::lastError);
                    final InputStream in = s.getInputStream();
                    assertEquals(-1, in.read(), "the connection is closed");
                }
            }
            assertEquals(5, got.size(), "nothing of the bad frames reached the handler");
        }
    }

    @Test
    void anIdlePortParksInItsSelectorAndTrafficStillArrivesByteExact() throws Exception {
        final TcpFabricContext park = new TcpFabricContext().properties(Map.of()).parkMillis(50).spinMicros(0)
            .conclude();
        try (TcpFabric a = new TcpFabric(new InetSocketAddress(LO, 0), CAP, null, false, 1, Token.NONE,
                 TcpFabricContext.defaults());
             TcpFabric b = new TcpFabric(new InetSocketAddress(LO, 0), CAP, null, false, 1, Token.NONE, park)) {
            final FabricPort pa = a.attach(1);
            final FabricPort pb = b.attach(2);
            // default settings never park
            pa.idle(System.nanoTime());
            pa.idle(System.nanoTime());
            assertEquals(0, a.idleParks());
            a.connect(2, b.localAddress());
            final List<byte[]> got = new ArrayList<>();
            final SpscRingBuffer.RecordHandler h = into(got);
            final CompletableFuture<Void> duty = CompletableFuture.runAsync(() -> {
                // B's duty thread: work, else park (spin 0), until a packet came
                for (int i = 0; i < 200_000 && got.isEmpty(); i++) {
                    final int w = pb.doWork(System.nanoTime()) + pb.poll(h, 64);
                    if (w == 0) {
                        pb.idle(System.nanoTime());
                    }
                }
            });
            await(() -> b.idleParks() > 2, "B to park");
            final byte[] p = packet(new Random(9), 2, 1, 1234);
            assertTrue(send(pa, 2, p));
            await(() -> {
                pa.doWork(System.nanoTime());
                return duty.isDone();
            }, "B's duty thread to receive");
            duty.get(20, TimeUnit.SECONDS);
            assertEquals(1, got.size());
            assertArrayEquals(p, got.get(0));
            // parking turned off at run time (perf's latency runs): idle cycles busy-poll
            b.idleParking(false);
            final long before = b.idleParks();
            for (int i = 0; i < 5; i++) {
                pb.idle(System.nanoTime());
            }
            assertEquals(before, b.idleParks());
            b.idleParking(true);
            // with a link hook (delayed packets are released by time) the port never parks
            b.hook((src, dst, buf, off, len) -> LinkHook.DELIVER);
            final long parks = b.idleParks();
            for (int i = 0; i < 5; i++) {
                pb.idle(System.nanoTime());
            }
            assertEquals(parks, b.idleParks());
        }
    }

    @Test
    void socketBuffersDefaultTo4MiBWhereTheKernelAllowsItElseToAutotuning(@TempDir final Path dir) throws Exception {
        final Path big = Files.createDirectories(dir.resolve("big"));
        Files.writeString(big.resolve("wmem_max"), "4194304\n");
        Files.writeString(big.resolve("rmem_max"), "33554432\n");
        final TcpFabricContext b = new TcpFabricContext().properties(Map.of()).kernelLimits(big).conclude();
        assertEquals(TcpFabricContext.AUTO_BUFFER, b.sendBuffer());
        assertEquals(TcpFabricContext.AUTO_BUFFER, b.receiveBuffer());
        assertEquals(List.of("gdrkit.tcp.sndbuf=4194304 (default)", "gdrkit.tcp.rcvbuf=4194304 (default)"),
            b.describe().subList(0, 2));
        // a kernel that grants less: a fixed buffer below what autotuning reaches would slow it, so 0 (autotuned)
        final Path small = Files.createDirectories(dir.resolve("small"));
        Files.writeString(small.resolve("wmem_max"), "212992\n");
        Files.writeString(small.resolve("rmem_max"), "4194303");
        final TcpFabricContext s = new TcpFabricContext().properties(Map.of()).kernelLimits(small).conclude();
        assertEquals(0, s.sendBuffer());
        assertEquals(0, s.receiveBuffer());
        // missing or unreadable limits: autotuning
        Files.writeString(small.resolve("wmem_max"), "lots");
        assertEquals(0, TcpFabricContext.autoBuffer(small.resolve("wmem_max")));
        assertEquals(0, TcpFabricContext.autoBuffer(dir.resolve("none")));
        // a property wins over the default, 0 included
        final TcpFabricContext p = new TcpFabricContext().properties(Map.of(TcpFabricContext.SEND_BUFFER_PROP, "0",
            TcpFabricContext.RECEIVE_BUFFER_PROP, "65536")).kernelLimits(big).conclude();
        assertEquals(0, p.sendBuffer());
        assertEquals(65536, p.receiveBuffer());
        assertThrows(IllegalStateException.class, () -> b.kernelLimits(big), "frozen after conclude()");
    }

    /**
     * This machine's own limits, read as the kernel serves them: a sysctl file answers a read at a non-zero offset
     * with end-of-file, so a reader that takes the first byte alone saw "4" of 4194304 and the 4 MiB default never
     * applied. Compared with the limit read line by line; skipped where /proc/sys/net/core cannot be read.
     */
    @Test
    void theKernelsOwnLimitFilesAreReadWhole() throws Exception {
        for (final String f : List.of("wmem_max", "rmem_max")) {
            final Path limit = TcpFabricContext.KERNEL_LIMITS.resolve(f);
            Assumptions.assumeTrue(Files.isReadable(limit), () -> limit + " cannot be read here");
            final long want = Long.parseLong(Files.readAllLines(limit).get(0).trim());
            assertEquals(want >= TcpFabricContext.AUTO_BUFFER ? TcpFabricContext.AUTO_BUFFER : 0,
                TcpFabricContext.autoBuffer(limit), limit + " holds " + want);
        }
    }

    @Test
    void contextReadsPropertiesRecordsSourcesAndNamesBadValues() {
        final TcpFabricContext d = TcpFabricContext.defaults();
        assertEquals(TcpFabricContext.autoBuffer(TcpFabricContext.KERNEL_LIMITS.resolve("wmem_max")), d.sendBuffer());
        assertEquals(TcpFabricContext.autoBuffer(TcpFabricContext.KERNEL_LIMITS.resolve("rmem_max")),
            d.receiveBuffer());
        assertEquals(0, d.parkMillis());
        assertEquals(50, d.spinMicros());
        assertEquals(16 * 1024, d.directMin());
        assertTrue(d.settings().stream().allMatch(s -> s.source() == Source.DEFAULT));
        final TcpFabricContext c = new TcpFabricContext().properties(Map.of(TcpFabricContext.SEND_BUFFER_PROP,
            "1048576", TcpFabricContext.PARK_PROP, "0", TcpFabricContext.SPIN_PROP, "7",
            TcpFabricContext.DIRECT_MIN_PROP, "0"))
            .kernelLimits(Path.of("/nonexistent")).defaultParkMillis(1).spinMicros(9).conclude();
        assertEquals(0, c.directMin(), "gdrkit.tcp.direct.min=0: no payload read straight into memory");
        assertEquals(1 << 20, c.sendBuffer());
        assertEquals(0, c.parkMillis(), "the property wins over a lab's default");
        assertEquals(9, c.spinMicros(), "a setter wins over the property");
        assertEquals(Source.PROPERTY, c.settings().stream()
            .filter(s -> s.name().equals(TcpFabricContext.PARK_PROP)).findFirst().orElseThrow().source());
        assertEquals(Source.FLAG, c.settings().stream()
            .filter(s -> s.name().equals(TcpFabricContext.SPIN_PROP)).findFirst().orElseThrow().source());
        assertEquals(List.of("gdrkit.tcp.sndbuf=1048576 (property)", "gdrkit.tcp.rcvbuf=0 (default)",
            "gdrkit.tcp.park.ms=0 (property)", "gdrkit.tcp.spin.us=9 (flag)", "gdrkit.tcp.direct.min=0 (property)"),
            c.describe());
        assertEquals(1, new TcpFabricContext().properties(Map.of()).defaultParkMillis(1).conclude().parkMillis());
        // without a map: the JVM's gdrkit.tcp.* properties, and only those
        System.setProperty(TcpFabricContext.RECEIVE_BUFFER_PROP, "65536");
        System.setProperty("gdrkit.tcpx.rcvbuf", "1");
        try {
            final TcpFabricContext sys = new TcpFabricContext().conclude();
            assertEquals(65536, sys.receiveBuffer());
            assertEquals("gdrkit.tcp.rcvbuf=65536 (property)", sys.describe().get(1));
            assertEquals(5, sys.settings().size(), String.valueOf(sys.settings()));
        } finally {
            System.clearProperty(TcpFabricContext.RECEIVE_BUFFER_PROP);
            System.clearProperty("gdrkit.tcpx.rcvbuf");
        }
        final IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
            () -> new TcpFabricContext().properties(Map.of(TcpFabricContext.PARK_PROP, "soon")).conclude());
        assertTrue(bad.getMessage().contains("gdrkit.tcp.park.ms") && bad.getMessage().contains("soon"),
            bad::getMessage);
        assertThrows(IllegalArgumentException.class,
            () -> new TcpFabricContext().properties(Map.of(TcpFabricContext.RECEIVE_BUFFER_PROP, "-1")).conclude());
        assertThrows(IllegalArgumentException.class,
            () -> new TcpFabricContext().properties(Map.of(TcpFabricContext.DIRECT_MIN_PROP, "-1")).conclude());
        assertThrows(IllegalStateException.class, () -> new TcpFabricContext().parkMillis(),
            "getters answer only after conclude()");
        assertThrows(IllegalStateException.class, () -> new TcpFabric(new InetSocketAddress(LO, 0), CAP, null,
            false, 1, Token.NONE, new TcpFabricContext()), "an unconcluded context is refused");
    }
}
