/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.net;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.gdr.gate.GdrSettings;
import io.gdrkit.gdr.reg.BufferKind;
import io.gdrkit.gdr.reg.GpuMrRegistrar;
import io.gdrkit.gdr.reg.MergedNicMr;
import io.gdrkit.gdr.reg.RegMechanism;
import io.gdrkit.gdr.reg.Registrar;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.sim.SimDeviceBuffer;
import io.gdrkit.gpu.sim.SimGpu;
import io.gdrkit.gpu.sim.SimPreset;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.core.Errno;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The connector gate and C6 end to end: for each combination of the provider's capabilities the connector takes the
 * branch the device offers, the MR really works (data moved over the connection lands byte-exact in the receiver's
 * simulated GPU), and when a GDR step fails the connection falls back to host bounce with the reason as evidence.
 */
class NetConnectorTest {
    private static final int SIZE = 1 << 20;
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    /** Three transfers of different lengths and data, each checked byte by byte on the receiver's GPU. */
    private static void assertTransfersExact(final SoftNet net, final NetLink link, final long seed) {
        for (final int len : new int[] {SIZE, 4097, 1}) {
            final MemorySegment sent = net.fill(net.gpu0, link.senderBuffer(), len, seed + len);
            link.transfer(len, TIMEOUT);
            final long mismatch = sent.mismatch(net.read(net.gpu1, link.receiverBuffer(), len));
            assertEquals(-1, mismatch, "transfer of " + len + " bytes: first differing byte");
        }
    }

    @ParameterizedTest(name = "dmabuf {0}, peermem {1} -> {2}")
    @CsvSource({
        "true,  true,  DMABUF_FD",
        "true,  false, DMABUF_FD",
        "false, true,  PEERMEM_POINTER",
        "false, false, NONE",
    })
    void eachCapabilityCombinationTakesItsBranchAndMovesExactBytes(final boolean dmabuf, final boolean peermem,
                                                                   final RegMechanism expected) {
        try (SoftNet net = new SoftNet(new SoftNicContext().dmaBuf(dmabuf).peermem(peermem), SimPreset.H200,
            SimPreset.H200)) {
            try (NetLink link = NetConnector.connect(0, net.sender, net.receiver, SIZE, GdrSettings.DEFAULTS)) {
                final boolean gdr = expected != RegMechanism.NONE;
                for (final ConnectorReport r : List.of(link.sendReport(), link.receiveReport())) {
                    assertEquals(expected, r.gdr().mechanism(), r.evidence()::toString);
                    assertEquals(gdr, r.gdr().enabled());
                    assertEquals(gdr ? BufferKind.DEVMEM : BufferKind.HOSTMEM, r.placement().data());
                }
                assertEquals("Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0" + (gdr ? "/GDRDMA" : ""),
                    link.sendReport().logLine());
                assertEquals("Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/1" + (gdr ? "/GDRDMA" : ""),
                    link.receiveReport().logLine());
                // GDR: both GPU buffers are mapped through BAR1 for the NICs; bounce: neither is
                assertEquals(gdr ? SIZE : 0, net.gpu0.dmaTarget().bar1MappedBytes());
                assertEquals(gdr ? SIZE : 0, net.gpu1.dmaTarget().bar1MappedBytes());
                if (!gdr) {
                    final List<String> ev = link.receiveReport().evidence();
                    assertEquals("NET", link.receiveReport().gdr().failedGate());
                    assertTrue(ev.stream().anyMatch(e -> e.contains("fd -1") && e.contains("EOPNOTSUPP")), ev::toString);
                    assertTrue(ev.stream().anyMatch(e -> e.contains("EFAULT") && e.contains("peermem is absent")),
                        ev::toString);
                    assertTrue(ev.stream().anyMatch(e -> e.contains("host bounce")), ev::toString);
                }
                assertTransfersExact(net, link, 100);
            }
            assertEquals(0, net.gpu0.dmaTarget().bar1MappedBytes(), "closing released the sender's MR");
            assertEquals(0, net.gpu1.dmaTarget().bar1MappedBytes(), "closing released the receiver's MR");
        }
    }

    @Test
    void registrationFailureFallsBackToHostBounceForThatSideOnly() {
        // the receiver's GPU has one 64 KiB BAR1 page: enough for the probe, not for a 1 MiB buffer
        try (SoftNet net = new SoftNet(new SoftNicContext(), SimPreset.H200,
            SimPreset.H200.withBar1(SimGpu.BAR1_PAGE))) {
            try (NetLink link = NetConnector.connect(3, net.sender, net.receiver, SIZE, GdrSettings.DEFAULTS)) {
                assertTrue(link.sendReport().gdr().enabled(), "the sender's GPU maps fine");
                assertEquals("Channel 03/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA", link.sendReport().logLine());
                final ConnectorReport recv = link.receiveReport();
                assertFalse(recv.gdr().enabled());
                assertEquals("connector", recv.gdr().failedGate());
                assertEquals(BufferKind.HOSTMEM, recv.placement().data());
                assertEquals("Channel 03/0 : 0[0] -> 1[0] [receive] via NET/IB/1", recv.logLine());
                final String last = recv.gdr().evidence().get(recv.gdr().evidence().size() - 1);
                assertTrue(last.startsWith("connector gate failed: registration (DMA-BUF) of GPU 0 memory on soft1 "
                    + "failed: ENOMEM") && last.contains("BAR1") && last.endsWith("-> host bounce"), last);
                assertTrue(recv.gdr().logLine().startsWith("GPU Direct RDMA Disabled for GPU 0 / HCA 1 (connector: "
                    + "registration"), recv.gdr().logLine());
                assertEquals(0, net.gpu1.dmaTarget().bar1MappedBytes(), "the failed registration left no mapping");
                assertTransfersExact(net, link, 200);
            }
        }
    }

    @Test
    void connectFailureFallsBackToHostBounce() {
        // a V100 receiver needs the flush QP (cc 7.0 < 9.0); with one QP per device only the data QP fits
        try (SoftNet net = new SoftNet(new SoftNicContext().maxQp(1), SimPreset.H200, SimPreset.V100)) {
            try (NetLink link = NetConnector.connect(1, net.sender, net.receiver, SIZE, GdrSettings.DEFAULTS)) {
                assertTrue(link.sendReport().gdr().enabled());
                final ConnectorReport recv = link.receiveReport();
                assertFalse(recv.gdr().enabled());
                assertEquals("connector", recv.gdr().failedGate());
                final String last = recv.gdr().evidence().get(recv.gdr().evidence().size() - 1);
                assertTrue(last.startsWith("connector gate failed: connect: the flush QP (1-byte RDMA READ loopback) "
                    + "on soft1 could not be made: ENOMEM") && last.contains(SoftNicContext.MAX_QP_PROP), last);
                assertFalse(recv.flush().flush(), recv.flush().evidence());
                assertEquals("Channel 01/0 : 0[0] -> 1[0] [receive] via NET/IB/1", recv.logLine());
                assertEquals(0, net.gpu1.dmaTarget().bar1MappedBytes(), "the GPU MR was released again");
                assertTransfersExact(net, link, 300);
            }
        }
    }

    @Test
    void aV100ReceiverIsFlushedBeforeTheGpuIsReleased() {
        try (SoftNet net = new SoftNet(new SoftNicContext(), SimPreset.H200, SimPreset.V100)) {
            try (NetLink link = NetConnector.connect(0, net.sender, net.receiver, SIZE, GdrSettings.DEFAULTS)) {
                final ConnectorReport recv = link.receiveReport();
                assertEquals(RegMechanism.PEERMEM_POINTER, recv.gdr().mechanism(), "V100: attribute 124 = 0");
                assertTrue(recv.flush().flush(), recv.flush().evidence());
                final MemorySegment sent = net.fill(net.gpu0, link.senderBuffer(), SIZE, 7);
                link.transfer(SIZE, TIMEOUT);
                // ordering NONE leaves NIC writes posted at completion; the 1-byte READ landed them all, so the
                // device memory itself (no copy, which would land them too) holds the data
                assertEquals(0, net.gpu1.postedWrites().pendingLanding());
                assertEquals(-1, sent.mismatch(((SimDeviceBuffer) link.receiverBuffer()).memory().asSlice(0, SIZE)));
            }
        }
    }

    @Test
    void settingsNarrowTheConnectorToo() {
        try (SoftNet net = new SoftNet(new SoftNicContext(), SimPreset.H200, SimPreset.H200)) {
            final GdrSettings noRead = GdrSettings.fromEnvironment(Map.of(GdrSettings.GDR_READ, "0",
                GdrSettings.DMABUF_ENABLE, "0"));
            try (NetLink link = NetConnector.connect(0, net.sender, net.receiver, SIZE, noRead)) {
                assertEquals("read policy", link.sendReport().gdr().failedGate());
                assertEquals("Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0", link.sendReport().logLine());
                assertEquals(RegMechanism.PEERMEM_POINTER, link.receiveReport().gdr().mechanism(),
                    "NCCL_DMABUF_ENABLE=0: the pointer branch");
                assertTransfersExact(net, link, 400);
            }
        }
    }

    @Test
    void badArgumentsAndAStalledTransferAreNamed() {
        try (SoftNet net = new SoftNet(new SoftNicContext().progressMode(SoftNicContext.ProgressMode.DETERMINISTIC),
            SimPreset.H200, SimPreset.H200)) {
            assertTrue(assertThrows(IllegalArgumentException.class, () -> NetConnector.connect(0, net.sender,
                net.receiver, 1000, GdrSettings.DEFAULTS)).getMessage().contains("multiple of 4096"));
            assertThrows(IllegalArgumentException.class, () -> NetConnector.connect(100, net.sender, net.receiver,
                SIZE, GdrSettings.DEFAULTS));
            try (NetLink link = NetConnector.connect(0, net.sender, net.receiver, SIZE, GdrSettings.DEFAULTS)) {
                assertThrows(IllegalArgumentException.class, () -> link.transfer(0, TIMEOUT));
                assertThrows(IllegalArgumentException.class, () -> link.transfer(SIZE + 1, TIMEOUT));
                // nobody steps the NICs in deterministic mode: the wait gives up and names what it waited for
                final VerbsException e = assertThrows(VerbsException.class,
                    () -> link.transfer(64, Duration.ofMillis(50)));
                assertEquals(Errno.ETIMEDOUT, e.errno());
                assertTrue(e.getMessage().contains("the sender's completion and the receiver's WRITE_WITH_IMM"),
                    e.getMessage());
            }
        }
    }

    @Test
    void aMergedNicRegistersOneWorkingMrPerPhysicalNic() {
        for (final RegMechanism m : new RegMechanism[] {RegMechanism.DMABUF_FD, RegMechanism.PEERMEM_POINTER}) {
            try (SoftNet net = new SoftNet(new SoftNicContext(), SimPreset.H200, SimPreset.H200)) {
                final DeviceBuffer buf = net.gpu1.alloc(SIZE);
                final List<NetNic> nics = List.of(net.nic0, net.nic1);
                final List<Registrar> caches = List.of(net.nic0.cache(net.gpu1, m), net.nic1.cache(net.gpu1, m));
                for (final NetNic n : nics) {
                    n.registrar(net.gpu1, m).track(buf);
                }
                final MergedNicMr merged = MergedNicMr.register(caches, buf.address(), SIZE);
                assertEquals(2, merged.nicCount());
                assertNotEquals(mr(merged, 0).pd(), mr(merged, 1).pd(), "one MR per physical NIC's PD");
                // each MR really works: a peer writes through each, to its own half of the buffer
                for (int i = 0; i < 2; i++) {
                    writeThrough(net, nics.get(i), mr(merged, i), buf, i * (SIZE / 2), 500 + i);
                }
                merged.deregister();
                assertEquals(0, net.gpu1.dmaTarget().bar1MappedBytes(), m + ": every MR released");
            }
        }
    }

    private static MemoryRegion mr(final MergedNicMr merged, final int i) {
        return ((GpuMrRegistrar.GpuMr) merged.mrs().get(i)).mr();
    }

    /** A third NIC WRITEs half a buffer of seeded bytes through {@code mr} of {@code target}; checked on the GPU. */
    private static void writeThrough(final SoftNet net, final NetNic target, final MemoryRegion mr,
                                     final DeviceBuffer buf, final int offset, final long seed) {
        final int half = SIZE / 2;
        final var ctx = net.driver.addDevice("peer" + seed).open();
        final var pd = ctx.allocPd();
        final CompletionQueue cq = ctx.createCq(4);
        final CompletionQueue tcq = target.context().createCq(4);
        final QueuePair qp = pd.createQp(new QpInitAttr().cqs(cq, cq));
        final QueuePair tqp = target.pd().createQp(new QpInitAttr().cqs(tcq, tcq));
        QpBringUp.toRts(qp, tqp.qpNum(), target.context().queryPort(1).lid(), 1, 2, QpBringUp.rcDefaults());
        QpBringUp.toRts(tqp, qp.qpNum(), ctx.queryPort(1).lid(), 2, 1, QpBringUp.rcDefaults());
        final MemorySegment data = net.random(half, seed);
        final MemoryRegion src = pd.registerMr(data, AccessFlags.LOCAL_WRITE);
        qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
            .sge(src, 0, half).remote(mr.address() + offset, mr.rkey()));
        final WorkCompletion[] wc = {new WorkCompletion()};
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (cq.poll(wc) == 0) {
            assertTrue(System.nanoTime() < deadline, "timed out waiting for the WRITE through " + mr);
        }
        assertTrue(wc[0].isSuccess(), wc[0]::toString);
        final MemorySegment landed = net.read(net.gpu1, buf, SIZE).asSlice(offset, half);
        assertEquals(-1, data.mismatch(landed), "bytes written through " + mr);
        src.deregister();
        qp.close();
        tqp.close();
        cq.close();
        tcq.close();
        pd.close();
        ctx.close();
    }
}
