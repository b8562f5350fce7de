/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.agent.ManualClock;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.gdr.gate.NetCaps;
import io.gdrkit.gdr.net.NetNic;
import io.gdrkit.comm.transport.NetTransportException.Reason;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.sim.SimGpu;
import io.gdrkit.gpu.sim.SimGpuConfig;
import io.gdrkit.gpu.sim.SimPreset;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.softnic.fabric.LinkHook;
import io.gdrkit.softnic.wire.BthOpcode;
import io.gdrkit.softnic.wire.Packet;
import io.gdrkit.verbs.VerbsContext;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class IbTransportTest {
    private SoftNicDriver driver;
    private VerbsContext c0;
    private VerbsContext c1;
    private NetNic n0;
    private NetNic n1;
    private IbTransport tx;
    private IbTransport rx;
    private TransportPair pair;
    private final Arena arena = Arena.ofShared();
    private SimGpu probeGpu;

    private void open(final Consumer<IbTransportContext> cfg) {
        driver = SoftNicDriver.launch(new SoftNicContext());
        c0 = driver.addDevice("soft0").open();
        c1 = driver.addDevice("soft1").open();
        n0 = new NetNic(0, c0, NetCaps.probe(0, c0, null));
        n1 = new NetNic(1, c1, NetCaps.probe(1, c1, probeGpu));
        final IbTransportContext a = new IbTransportContext().nic(n0).settings(SettingsReader.ofEnv(Map.of()))
            .timeout(Duration.ofSeconds(20));
        final IbTransportContext b = new IbTransportContext().nic(n1).settings(SettingsReader.ofEnv(Map.of()))
            .timeout(Duration.ofSeconds(20));
        cfg.accept(a);
        cfg.accept(b);
        tx = new IbTransport(a);
        rx = new IbTransport(b);
        pair = new TransportPair(tx, rx);
    }

    @AfterEach
    void close() {
        if (pair != null) {
            pair.close();
        }
        if (tx != null) {
            tx.close();
            rx.close();
        }
        if (n0 != null) {
            n0.close();
            n1.close();
            c0.close();
            c1.close();
            driver.close();
        }
        arena.close();
    }

    private MemorySegment random(final int len, final long seed) {
        final MemorySegment m = arena.allocate(Math.max(len, 1), 4096);
        final SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < len; i++) {
            m.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt(256));
        }
        return m;
    }

    @ParameterizedTest(name = "qps={0} split={1} arThreshold={2}")
    @CsvSource({"1,false,8192", "4,true,8192", "4,false,8192", "3,true,0", "2,true,1000000000"})
    void messagesArriveByteForByteAcrossQpsAndArSettings(final int qps, final boolean split, final int ar) {
        open(c -> c.qpsPerConnection(qps).splitDataOnQps(split).arThreshold(ar));
        final int[] nulls = pair.connect();
        assertTrue(nulls[0] + nulls[1] >= 1, "connect/accept returned ready at once: not non-blocking?");
        final int max = 1 << 20;
        final MemorySegment src = random(max, 7);
        final MemorySegment dst = arena.allocate(max, 4096);
        final NetTransport.MrHandle smh = tx.regMr(pair.send, src);
        final NetTransport.MrHandle rmh = rx.regMr(pair.recv, dst);
        int round = 0;
        for (final int size : new int[] {0, 1, 127, 128, 4095, 8192, 8193, 65536, 100_003, max}) {
            dst.fill((byte) 0x5a);
            assertNull(tx.isend(pair.send, src.address(), size, round, smh), "isend before the receive was posted");
            final NetTransport.Request r = rx.irecv(pair.recv, 1, new long[] {dst.address()}, new int[] {max},
                new int[] {round}, new NetTransport.MrHandle[] {rmh});
            NetTransport.Request s = null;
            final long deadline = System.nanoTime() + 20_000_000_000L;
            while (s == null) {
                assertTrue(System.nanoTime() < deadline, "the CTS never reached the sender");
                rx.test(r, null); // progress
                s = tx.isend(pair.send, src.address(), size, round, smh);
            }
            final int[] got = new int[1];
            TransportPair.await(rx, r, got, tx, new NetTransport.Request[] {s});
            assertEquals(size, got[0]);
            for (int i = 0; i < size; i++) {
                if (src.get(ValueLayout.JAVA_BYTE, i) != dst.get(ValueLayout.JAVA_BYTE, i)) {
                    throw new AssertionError("size " + size + ": byte " + i + " differs");
                }
            }
            if (size < max) {
                assertEquals((byte) 0x5a, dst.get(ValueLayout.JAVA_BYTE, size), "wrote past the message");
            }
            round++;
        }
        tx.deregMr(pair.send, smh);
        rx.deregMr(pair.recv, rmh);
        final NetTransportException twice = assertThrows(NetTransportException.class,
            () -> tx.deregMr(pair.send, smh));
        assertEquals(Reason.INVALID_USAGE, twice.reason());
    }

    /**
     * Counts the write packets the sender's NIC puts on the wire, by destination QP, from their headers only (the
     * soft NIC's link hook sees every packet): plain data writes, WRITE_WITH_IMM carrying data, 0-byte
     * WRITE_WITH_IMM, and payload bytes.
     */
    private static final class WireCount implements LinkHook {
        private final int fromLid;
        private final Packet p = new Packet();
        final Map<Integer, long[]> byQp = new TreeMap<>(); // qpn -> {plain, immWithData, imm0, bytes}

        WireCount(final int fromLid) {
            this.fromLid = fromLid;
        }

        @Override
        public synchronized int onPacket(final int srcLid, final int dstLid, final MemorySegment buffer,
                                         final long offset, final int length) {
            if (srcLid != fromLid) {
                return DELIVER;
            }
            p.wrap(buffer, offset, length);
            final int op = p.opcode();
            if (op < BthOpcode.RDMA_WRITE_FIRST || op > BthOpcode.RDMA_WRITE_ONLY_WITH_IMM) {
                return DELIVER; // ACKs of the FIFO writes
            }
            final long[] c = byQp.computeIfAbsent(p.destQpn(), k -> new long[4]);
            final boolean imm = op == BthOpcode.RDMA_WRITE_LAST_WITH_IMM || op == BthOpcode.RDMA_WRITE_ONLY_WITH_IMM;
            final int len = p.payloadLength();
            c[imm ? (len == 0 ? 2 : 1) : 0]++;
            c[3] += len;
            return DELIVER;
        }

        @Override
        public boolean passesReferences() {
            return true; // headers only
        }

        synchronized long sum(final int k) {
            return byQp.values().stream().mapToLong(c -> c[k]).sum();
        }
    }

    private WireCount countWire() {
        final WireCount w = new WireCount(c0.queryPort(1).lid());
        driver.linkHook(w);
        return w;
    }

    /** One message of {@code size} bytes, tag {@code tag}, checked byte for byte. */
    private void sendOne(final MemorySegment src, final NetTransport.MrHandle smh, final MemorySegment dst,
                         final NetTransport.MrHandle rmh, final int size, final int tag) {
        dst.fill((byte) 0);
        final NetTransport.Request r = rx.irecv(pair.recv, 1, new long[] {dst.address()}, new int[] {size},
            new int[] {tag}, new NetTransport.MrHandle[] {rmh});
        NetTransport.Request s = null;
        final long deadline = System.nanoTime() + 20_000_000_000L;
        while (s == null) {
            assertTrue(System.nanoTime() < deadline, "the CTS never reached the sender");
            rx.test(r, null);
            s = tx.isend(pair.send, src.address(), size, tag, smh);
        }
        final int[] got = new int[1];
        TransportPair.await(rx, r, got, tx, new NetTransport.Request[] {s});
        assertEquals(size, got[0]);
        assertEquals(-1L, MemorySegment.mismatch(src, 0, size, dst, 0, size));
    }

    /** Connects with these settings and sends {@code messages} messages of {@code size} bytes, counting the wire. */
    private WireCount sendCounted(final int qps, final boolean split, final int ar, final int size,
                                  final int messages) {
        open(c -> c.qpsPerConnection(qps).splitDataOnQps(split).arThreshold(ar));
        pair.connect();
        final MemorySegment src = random(size, qps * 31L + ar);
        final MemorySegment dst = arena.allocate(size, 4096);
        final NetTransport.MrHandle smh = tx.regMr(pair.send, src);
        final NetTransport.MrHandle rmh = rx.regMr(pair.recv, dst);
        final WireCount w = countWire();
        for (int m = 0; m < messages; m++) {
            sendOne(src, smh, dst, rmh, size, m);
        }
        return w;
    }

    @Test
    void splitDataOnQpsCutsOneMessageOverEveryQpAndTheArThresholdSeparatesTheImm() {
        final WireCount w = sendCounted(4, true, 8192, 100_000, 1);
        // chunks of ceil(100000 / 4) rounded up to 128 bytes, one per QP; above the AR threshold every QP's data
        // goes as plain WRITEs, then its own 0-byte WRITE_WITH_IMM
        assertEquals(4, w.byQp.size(), "QPs that carried data: " + w.byQp.keySet());
        final long[] bytes = w.byQp.values().stream().mapToLong(c -> c[3]).toArray();
        assertArrayEquals(new long[] {25_088, 25_088, 25_088, 24_736}, bytes);
        for (final long[] c : w.byQp.values()) {
            assertEquals(1, c[2], "one 0-byte WRITE_WITH_IMM per QP");
            assertEquals(0, c[1], "no data-carrying WRITE_WITH_IMM above the AR threshold");
            assertTrue(c[0] >= 1, "plain data WRITEs");
        }
    }

    @Test
    void belowTheArThresholdTheLastDataWriteCarriesTheImm() {
        final WireCount w = sendCounted(4, true, 1_000_000, 100_000, 1);
        assertEquals(4, w.byQp.size());
        assertEquals(0, w.sum(2), "no separate 0-byte WRITE_WITH_IMM below the threshold");
        assertEquals(4, w.sum(1), "each QP's last data packet carries the IMM");
        assertEquals(100_000, w.sum(3));
    }

    @Test
    void withoutSplitEachMessageTakesOneQpRoundRobin() {
        final WireCount w = sendCounted(4, false, 8192, 10_000, 8);
        assertEquals(4, w.byQp.size(), "messages spread over " + w.byQp.keySet());
        for (final long[] c : w.byQp.values()) {
            assertEquals(20_000, c[3], "two whole messages per QP");
            assertEquals(2, c[2], "one separate IMM per message (10000 > AR threshold 8192)");
        }
    }

    @Test
    void groupedReceiveMatchesByTagAndReportsEachSize() {
        open(c -> c.qpsPerConnection(2).splitDataOnQps(true));
        pair.connect();
        final MemorySegment src = random(3 * 10_000, 11);
        final MemorySegment dst = arena.allocate(3 * 10_000, 4096);
        final NetTransport.MrHandle smh = tx.regMr(pair.send, src);
        final NetTransport.MrHandle rmh = rx.regMr(pair.recv, dst);
        final long[] addrs = {dst.address(), dst.address() + 10_000, dst.address() + 20_000};
        final NetTransport.Request r = rx.irecv(pair.recv, 3, addrs, new int[] {10_000, 10_000, 10_000},
            new int[] {30, 10, 20}, new NetTransport.MrHandle[] {rmh, rmh, rmh});
        // sends in another order than the receives: tag 10 first (buffer 1), then 20 (buffer 2), then 30 (buffer 0)
        final int[][] sends = {{10, 0, 5000}, {20, 10_000, 0}, {30, 20_000, 9999}};
        final NetTransport.Request[] sr = new NetTransport.Request[3];
        final long deadline = System.nanoTime() + 20_000_000_000L;
        for (int k = 0; k < 3; k++) {
            while (sr[k] == null) {
                assertTrue(System.nanoTime() < deadline);
                rx.test(r, null);
                sr[k] = tx.isend(pair.send, src.address() + sends[k][1], sends[k][2], sends[k][0], smh);
            }
        }
        final int[] got = new int[3];
        TransportPair.await(rx, r, got, tx, sr);
        assertArrayEquals(new int[] {9999, 5000, 0}, got);
        assertEquals(MemorySegment.mismatch(src, 20_000, 29_999, dst, 0, 9999), -1L);
        assertEquals(MemorySegment.mismatch(src, 0, 5000, dst, 10_000, 15_000), -1L);
    }

    @Test
    void gpuMemoryIsWrittenByTheNicWhenGdrWasDecided() {
        final SimGpu gpu = SimGpu.create(SimPreset.H200, SimGpuConfig.deterministic(3, new ManualClock(0)));
        probeGpu = gpu;
        open(c -> c.flush(true, "forced for the test"));
        try {
            pair.connect();
            assertTrue((rx.getProperties(0).ptrSupport() & NetProperties.PTR_CUDA) != 0,
                rx.getProperties(0).ptrSupportText());
            final int len = 300_000;
            final DeviceBuffer buf = gpu.alloc(1 << 20);
            final GpuDmaMemory dma = new GpuDmaMemory(gpu, buf);
            final MemorySegment src = random(len, 3);
            final NetTransport.MrHandle smh = tx.regMr(pair.send, src);
            final NetTransport.MrHandle rmh = rx.regMr(pair.recv, dma);
            final NetTransport.Request r = rx.irecv(pair.recv, 1, new long[] {rmh.address()}, new int[] {len},
                new int[] {1}, new NetTransport.MrHandle[] {rmh});
            NetTransport.Request s = null;
            while (s == null) {
                rx.test(r, null);
                s = tx.isend(pair.send, src.address(), len, 1, smh);
            }
            TransportPair.await(rx, r, null, tx, new NetTransport.Request[] {s});
            final NetTransport.Request f = rx.iflush(pair.recv, 1, new long[] {rmh.address()}, new int[] {len},
                new NetTransport.MrHandle[] {rmh});
            assertNotNull(f, "flush gate on: iflush must post the READ");
            TransportPair.await(rx, f, null, null, null);
            final MemorySegment back = arena.allocate(len);
            gpu.copyDtoH(back, 0, buf, 0, len);
            assertEquals(-1L, MemorySegment.mismatch(src, 0, len, back, 0, len));
            rx.deregMr(pair.recv, rmh);
            dma.close();
            gpu.free(buf);
        } finally {
            gpu.close();
        }
    }

    @Test
    void iflushIsNullWhenTheGateSaysNoFlush() {
        open(c -> { });
        pair.connect();
        final MemorySegment dst = arena.allocate(64);
        final NetTransport.MrHandle rmh = rx.regMr(pair.recv, dst);
        assertNull(rx.iflush(pair.recv, 1, new long[] {dst.address()}, new int[] {64},
            new NetTransport.MrHandle[] {rmh}));
    }

    /**
     * A hostile receiver rewrites the request count n of a posted FIFO slot between the sender's matches (as its
     * RDMA WRITE can at any time): fewer (once an NPE on the unmatched entry), more (once a hang), both REMOTE now.
     */
    @ParameterizedTest(name = "n 3 -> {0}")
    @CsvSource({"2", "4"})
    void aReceiveCountRewrittenMidMatchIsARemoteError(final int rewritten) {
        open(c -> { });
        pair.connect();
        final MemorySegment src = random(3000, 5);
        final MemorySegment dst = arena.allocate(3000, 4096);
        final NetTransport.MrHandle smh = tx.regMr(pair.send, src);
        final NetTransport.MrHandle rmh = rx.regMr(pair.recv, dst);
        final NetTransport.Request r = rx.irecv(pair.recv, 3, new long[] {dst.address(), dst.address() + 1000,
            dst.address() + 2000}, new int[] {1000, 1000, 1000}, new int[] {30, 10, 20},
            new NetTransport.MrHandle[] {rmh, rmh, rmh});
        NetTransport.Request first = null;
        final long deadline = System.nanoTime() + 20_000_000_000L;
        while (first == null) {
            assertTrue(System.nanoTime() < deadline, "the CTS never reached the sender");
            rx.test(r, null);
            first = tx.isend(pair.send, src.address() + 2000, 100, 20, smh); // entry 2 of slot 0
        }
        // slot 0, entry 0's n field (offset 20): the receiver's write lands here
        IbTransport.ctsFifo(pair.send).set(ValueLayout.JAVA_INT_UNALIGNED, 20, rewritten);
        final NetTransportException e = assertThrows(NetTransportException.class,
            () -> tx.isend(pair.send, src.address() + 1000, 100, 10, smh)); // entry 1: n = 2 would post now
        assertEquals(Reason.REMOTE, e.reason());
        assertTrue(e.getMessage().contains("changed request 1's receive count from 3 to " + rewritten),
            e.getMessage());
        // the connection stays failed, by the same name, for every later call
        final NetTransportException again = assertThrows(NetTransportException.class,
            () -> tx.isend(pair.send, src.address(), 100, 30, smh));
        assertEquals(Reason.REMOTE, again.reason());
        assertTrue(again.getMessage().contains("receive count"), again.getMessage());
    }

    /**
     * A receive posted ahead (as a collective keeps its next receives posted) is not timed out while nobody tests
     * it: the timeout runs from the first test. One that is tested and never completes still ends in TIMEOUT.
     */
    @Test
    void aReceivePostedAheadTimesOutOnlyOnceSomeoneWaitsForIt() throws Exception {
        open(c -> c.timeout(Duration.ofMillis(300)));
        pair.connect();
        final MemorySegment src = random(4096, 3);
        final MemorySegment dst = arena.allocate(4096, 4096);
        final NetTransport.MrHandle smh = tx.regMr(pair.send, src);
        final NetTransport.MrHandle rmh = rx.regMr(pair.recv, dst);
        final NetTransport.Request r = rx.irecv(pair.recv, 1, new long[] {dst.address()}, new int[] {4096},
            new int[] {11}, new NetTransport.MrHandle[] {rmh});
        Thread.sleep(900); // three timeouts, untested
        NetTransport.Request s = null;
        final long deadline = System.nanoTime() + 20_000_000_000L;
        while (s == null) {
            assertTrue(System.nanoTime() < deadline, "the CTS never reached the sender");
            s = tx.isend(pair.send, src.address(), 4096, 11, smh);
        }
        final int[] got = new int[1];
        TransportPair.await(rx, r, got, tx, new NetTransport.Request[] {s});
        assertEquals(4096, got[0]);
        assertEquals(-1L, MemorySegment.mismatch(src, 0, 4096, dst, 0, 4096));
        final NetTransport.Request late = rx.irecv(pair.recv, 1, new long[] {dst.address()}, new int[] {4096},
            new int[] {12}, new NetTransport.MrHandle[] {rmh});
        assertFalse(rx.test(late, null), "a receive nobody sent to completed");
        Thread.sleep(600);
        final NetTransportException e = assertThrows(NetTransportException.class, () -> rx.test(late, null));
        assertEquals(Reason.TIMEOUT, e.reason());
        assertTrue(e.getMessage().contains("did not complete within 300 ms"), e.getMessage());
    }

    @Test
    void truncationAndWrongTagAreNamed() {
        open(c -> { });
        pair.connect();
        final MemorySegment src = random(1000, 1);
        final MemorySegment dst = arena.allocate(1000);
        final NetTransport.MrHandle smh = tx.regMr(pair.send, src);
        final NetTransport.MrHandle rmh = rx.regMr(pair.recv, dst);
        final NetTransport.Request r = rx.irecv(pair.recv, 1, new long[] {dst.address()}, new int[] {100},
            new int[] {5}, new NetTransport.MrHandle[] {rmh});
        NetTransportException e = null;
        final long deadline = System.nanoTime() + 20_000_000_000L;
        while (e == null) {
            assertTrue(System.nanoTime() < deadline);
            rx.test(r, null);
            try {
                tx.isend(pair.send, src.address(), 101, 5, smh);
            } catch (final NetTransportException x) {
                e = x;
            }
        }
        assertEquals(Reason.INVALID_USAGE, e.reason());
        assertTrue(e.getMessage().contains("message truncated: isend of 101 bytes (tag 5) into a receive of 100"),
            e.getMessage());
        final NetTransportException tag = assertThrows(NetTransportException.class,
            () -> tx.isend(pair.send, src.address(), 10, 6, smh));
        assertTrue(tag.getMessage().contains("no receive with that tag"), tag.getMessage());
        final NetTransportException outside = assertThrows(NetTransportException.class,
            () -> tx.isend(pair.send, src.address() + 900, 200, 5, smh));
        assertEquals(Reason.INVALID_ARGUMENT, outside.reason());
    }

    @ParameterizedTest(name = "sender {0}, receiver {1}")
    @CsvSource({"65536,0", "0,16384", "16384,65536"})
    void endsWithAnotherSoftwareMtuAreStoppedAtConnectWithANamedErrorOnBothSides(final int txMtu, final int rxMtu) {
        final int[] which = {0};
        open(c -> c.softwareMtu(which[0]++ == 0 ? txMtu : rxMtu)); // tx's context first, then rx's
        final byte[] handle = new byte[NetTransport.HANDLE_MAXSIZE];
        pair.listen = rx.listen(0, handle);
        NetTransportException txErr = null;
        NetTransportException rxErr = null;
        final long deadline = System.nanoTime() + 20_000_000_000L;
        while ((txErr == null || rxErr == null) && System.nanoTime() < deadline) {
            if (txErr == null) {
                try {
                    assertNull(tx.connect(0, handle), "a connection between different MTUs came up");
                } catch (final NetTransportException e) {
                    txErr = e;
                }
            }
            if (rxErr == null) {
                try {
                    assertNull(rx.accept(pair.listen), "a connection between different MTUs came up");
                } catch (final NetTransportException e) {
                    rxErr = e;
                }
            }
        }
        assertNotNull(txErr, "the sender named nothing within 20 s");
        assertNotNull(rxErr, "the receiver named nothing within 20 s");
        final String mtu = txMtu == 0 ? "0 (the path MTU)" : txMtu + " B";
        final String rmtu = rxMtu == 0 ? "0 (the path MTU)" : rxMtu + " B";
        assertEquals(Reason.REMOTE, txErr.reason());
        assertTrue(txErr.getMessage().contains("uses software MTU " + rmtu + ", this end " + mtu
            + ": both ends of a connection need the same gdrkit.ib.software.mtu"), txErr.getMessage());
        assertEquals(Reason.REMOTE, rxErr.reason());
        assertTrue(rxErr.getMessage().contains("the sender uses software MTU " + mtu + ", this end " + rmtu),
            rxErr.getMessage());
    }

    @Test
    void badHandlesAndTooManyRequestsAreNamed() {
        open(c -> { });
        final byte[] junk = new byte[128];
        junk[0] = 1;
        assertEquals(Reason.INVALID_ARGUMENT, assertThrows(NetTransportException.class,
            () -> tx.connect(0, junk)).reason());
        assertEquals(Reason.INVALID_ARGUMENT, assertThrows(NetTransportException.class,
            () -> tx.getProperties(3)).reason());
        assertEquals(Reason.INVALID_ARGUMENT, assertThrows(NetTransportException.class,
            () -> rx.listen(0, new byte[16])).reason());
        // a handle whose listen id is another listener's: the acceptor drops the connection as a stranger (counted,
        // named in lastStrangerRefused) and goes on waiting; the sender sees its connection closed, a named error
        final byte[] handle = new byte[128];
        final NetTransport.ListenComm l = rx.listen(0, handle);
        final java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(handle);
        final int idAt = 7 + handle[5] + 2;
        b.putLong(idAt, b.getLong(idAt) ^ 0x5555);
        final long before = rx.strangersRefused();
        final long deadline = System.nanoTime() + 20_000_000_000L;
        NetTransport.SendComm s = null;
        boolean senderDone = false;
        while (rx.strangersRefused() == before) {
            assertTrue(System.nanoTime() < deadline, "another run's handle was never refused");
            assertNull(rx.accept(l), "another run's handle became a comm");
            if (!senderDone) {
                try {
                    s = tx.connect(0, handle);
                } catch (final NetTransportException x) {
                    assertEquals(Reason.REMOTE, x.reason()); // the refusal seen as a closed connection
                    senderDone = true;
                }
            }
        }
        assertTrue(rx.lastStrangerRefused().contains("handle of another listener"), rx.lastStrangerRefused());
        assertNull(s, "no comm for a refused handle");
        rx.closeListen(l);
        pair.connect();
        final MemorySegment dst = arena.allocate(64);
        final NetTransport.MrHandle rmh = rx.regMr(pair.recv, dst);
        for (int i = 0; i < NetTransport.MAX_REQUESTS; i++) {
            rx.irecv(pair.recv, 1, new long[] {dst.address()}, new int[] {64}, new int[] {i},
                new NetTransport.MrHandle[] {rmh});
        }
        final NetTransportException many = assertThrows(NetTransportException.class, () -> rx.irecv(pair.recv, 1,
            new long[] {dst.address()}, new int[] {64}, new int[] {99}, new NetTransport.MrHandle[] {rmh}));
        assertEquals(Reason.INVALID_USAGE, many.reason());
        assertEquals(Reason.INVALID_ARGUMENT, assertThrows(NetTransportException.class, () -> rx.irecv(pair.recv, 9,
            new long[9], new int[9], new int[9], new NetTransport.MrHandle[9])).reason());
    }

    @Test
    void settingsComeFromNcclVariablesWithTheirSource() {
        driver = SoftNicDriver.launch(new SoftNicContext());
        c0 = driver.addDevice("soft0").open();
        c1 = driver.addDevice("soft1").open();
        n0 = new NetNic(0, c0, NetCaps.probe(0, c0, null));
        n1 = new NetNic(1, c1, NetCaps.probe(1, c1, null));
        final IbTransportContext c = new IbTransportContext().nic(n0).settings(SettingsReader.ofEnv(Map.of(
            "NCCL_IB_QPS_PER_CONNECTION", "4", "NCCL_IB_SPLIT_DATA_ON_QPS", "1"))).conclude();
        assertEquals(4, c.qpsPerConnection());
        assertTrue(c.splitDataOnQps());
        assertEquals(8192, c.arThreshold());
        assertTrue(c.recorded().stream().anyMatch(s -> s.describe().equals(
            "NCCL_IB_QPS_PER_CONNECTION=4 (environment)")), c.recorded().toString());
        assertTrue(c.recorded().stream().anyMatch(s -> s.describe().equals("NCCL_IB_AR_THRESHOLD=8192 (default)")));
        final IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () ->
            new IbTransportContext().nic(n0).settings(SettingsReader.ofEnv(Map.of("NCCL_IB_QPS_PER_CONNECTION",
                "17"))).conclude());
        assertEquals("NCCL_IB_QPS_PER_CONNECTION=17 is not an integer in [1, 16]", bad.getMessage());
    }
}
