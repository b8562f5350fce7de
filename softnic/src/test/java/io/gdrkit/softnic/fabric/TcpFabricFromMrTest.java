package io.gdrkit.softnic.fabric;

import io.gdrkit.core.auth.Token;
import io.gdrkit.softnic.wire.BthOpcode;
import io.gdrkit.softnic.wire.Packet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The TCP fabric's drain sending reference records from the owner's memory (gdrkit.tcp.send.from.mr), at the port
 * level and byte by byte: what the receiver gets is the packet the record stands for (its LRH length the real one,
 * no R bit, the referenced bytes in segment order), mixed with ordinary records in ring order; a record whose
 * memory the owner no longer resolves is dropped alone.
 */
@Timeout(120)
class TcpFabricFromMrTest {
    private static final InetAddress LO = InetAddress.getLoopbackAddress();
    private static final int CAP = 1 << 20;
    private static final int LKEY = 0x1234_5601;
    private static final int DEAD_LKEY = 0x0bad_0001;

    /** The NIC stand-in: one MR, {@link #LKEY}, over {@code mem}. */
    private record Owner(MemorySegment mem) implements PortOwner {
        @Override
        public MemorySegment referencedMemory(final int lkey, final long va, final int length) {
            return lkey == LKEY && va >= mem.address() && va - mem.address() <= mem.byteSize() - length ? mem : null;
        }
    }

    private static TcpFabricContext fromMr(final int sndbuf) {
        return new TcpFabricContext().properties(Map.of()).sendFromMr(true).sendBuffer(sndbuf).conclude();
    }

    @Test
    void referenceRecordsArriveAsThePacketsTheyStandForInRingOrder() throws Exception {
        run(0, 400, 11);
    }

    @Test
    void writesCutInsidePayloadsResumeByteExact() throws Exception {
        final TcpFabric a = run(4096, 300, 12);
        assertTrue(a.partialWrites() > 0, "the 4 KiB socket buffer cut some writes");
    }

    /** Sends {@code count} seeded packets, references and ordinary ones, and checks what B receives. */
    private static TcpFabric run(final int sndbuf, final int count, final long seed) throws Exception {
        try (Arena arena = Arena.ofShared();
             TcpFabric a = new TcpFabric(new InetSocketAddress(LO, 0), CAP, null, false, 1, Token.NONE, fromMr(sndbuf));
             TcpFabric b = new TcpFabric(new InetSocketAddress(LO, 0), CAP, null, false, 1, Token.NONE,
                 TcpFabricContext.defaults())) {
            final MemorySegment mem = arena.allocate(1 << 20, 64);
            final Random r = new Random(seed);
            for (long i = 0; i < mem.byteSize(); i++) {
                mem.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
            }
            final FabricPort pa = a.attach(1);
            final FabricPort pb = b.attach(2);
            assertFalse(pa.carriesReferences(2, 4096), "no owner yet: nothing to resolve a reference");
            pa.owner(new Owner(mem));
            assertTrue(pa.carriesReferences(2, 4096));
            assertFalse(pa.carriesReferences(1, 4096), "not to its own LID (the loopback ring)");
            assertFalse(pa.carriesReferences(2, CAP), "not a packet larger than the link carries");
            a.connect(2, b.localAddress());
            final List<byte[]> expected = new ArrayList<>();
            final List<byte[]> got = new ArrayList<>();
            final SpscRingBuffer.RecordHandler h = (buf, off, len) ->
                got.add(buf.asSlice(off, len).toArray(ValueLayout.JAVA_BYTE));
            final Packet pkt = new Packet();
            int refs = 0;
            int drops = 0;
            for (int i = 0; i < count; i++) {
                final int kind = r.nextInt(8);
                final byte[] want;
                if (kind < 2) { // an ordinary record
                    final int payload = r.nextInt(3000);
                    final int len = Packet.lengthFor(BthOpcode.forPosition(true, true, true, false), payload);
                    final long at = claim(pa, a, b, pb, h, len);
                    final MemorySegment buf = pa.claimBuffer();
                    pkt.init(buf, at, len, 2, 1, BthOpcode.forPosition(true, true, true, false), 7, i, false, false);
                    for (int k = 0; k < payload; k++) {
                        buf.set(ValueLayout.JAVA_BYTE, pkt.payloadOffset() + k, (byte) r.nextInt());
                    }
                    want = buf.asSlice(at, len).toArray(ValueLayout.JAVA_BYTE);
                } else { // a reference: a WRITE_ONLY with RETH and ImmDt, 1..4 segments of the MR
                    final int opcode = BthOpcode.forPosition(false, true, true, true);
                    final int segs = 1 + r.nextInt(4);
                    final long[] off = new long[segs];
                    final int[] lens = new int[segs];
                    int payload = 0;
                    for (int s = 0; s < segs; s++) {
                        lens[s] = 1 + r.nextInt(20_000);
                        off[s] = r.nextInt((int) mem.byteSize() - lens[s]);
                        payload += lens[s];
                    }
                    final boolean dead = kind == 7 && drops < 5;
                    final int len = Packet.lengthFor(opcode, Packet.referenceLength(segs));
                    final long at = claim(pa, a, b, pb, h, len);
                    final MemorySegment buf = pa.claimBuffer();
                    pkt.init(buf, at, len, 2, 1, opcode, 7, i, true, false).reth(0x1000 + i, 99, payload).imm(i);
                    pkt.reference(payload, segs);
                    for (int s = 0; s < segs; s++) {
                        pkt.refEntry(s, mem.address() + off[s], dead && s == segs - 1 ? DEAD_LKEY : LKEY, lens[s]);
                    }
                    // the packet it stands for: the headers, the LRH length of headers + payload, no R bit
                    final int headers = (int) (pkt.payloadOffset() - at);
                    final MemorySegment w = Arena.ofAuto().allocate(headers + payload);
                    MemorySegment.copy(buf, at, w, 0, headers);
                    w.set(ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN), 4, headers + payload);
                    w.set(ValueLayout.JAVA_BYTE, 12, (byte) 0);
                    long p = headers;
                    for (int s = 0; s < segs; s++) {
                        MemorySegment.copy(mem, off[s], w, p, lens[s]);
                        p += lens[s];
                    }
                    want = dead ? null : w.toArray(ValueLayout.JAVA_BYTE);
                    if (dead) {
                        drops++;
                    } else {
                        refs++;
                    }
                }
                pa.commit();
                if (want != null) {
                    expected.add(want);
                }
                if (r.nextInt(4) == 0) {
                    cycle(pa, pb, h);
                }
            }
            for (int i = 0; i < 200_000 && got.size() < expected.size(); i++) {
                cycle(pa, pb, h);
                if (i % 64 == 63) {
                    Thread.sleep(1);
                }
            }
            assertEquals(expected.size(), got.size(), "packets at B");
            for (int i = 0; i < expected.size(); i++) {
                assertArrayEquals(expected.get(i), got.get(i), "packet " + i);
            }
            assertEquals(refs, a.packetsFromMr());
            assertEquals(drops, a.referenceDrops());
            assertTrue(drops > 0 && refs > 0, "both kinds were sent: " + refs + " from the MR, " + drops + " dropped");
            assertEquals(0, b.protocolErrors());
            return a;
        }
    }

    private static long claim(final FabricPort pa, final TcpFabric a, final TcpFabric b, final FabricPort pb,
                              final SpscRingBuffer.RecordHandler h, final int len) {
        long at;
        while ((at = pa.tryClaim(2, len)) < 0) {
            assertEquals(-1, at, "the link is full, never unroutable");
            cycle(pa, pb, h);
        }
        return at;
    }

    private static void cycle(final FabricPort pa, final FabricPort pb, final SpscRingBuffer.RecordHandler h) {
        pa.doWork(System.nanoTime());
        pb.doWork(System.nanoTime());
        pb.poll(h, 1024);
    }
}
