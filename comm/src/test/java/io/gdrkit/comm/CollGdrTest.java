/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.gdr.reg.RegMechanism;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * GDR for collectives on simulated GPUs: the gates decide per rank, the NIC then reads and writes the device
 * buffers (registered through the NetTransport seam) with nothing bounced, or the data bounces through host memory
 * when a gate says no; both byte-exact. The flush READ runs on the GDR path exactly when the flush gate says so.
 */
class CollGdrTest {
    private static final SettingsReader NONE = SettingsReader.ofEnv(Map.of());

    private static CollRun.Config cfg(final CollOp op, final DataType t, final RedOp r, final int root,
                                      final long max) {
        return new CollRun.Config(op, t, r, root, 0, max, 4, 0, 2, 1, true, "ib", "injvm", true);
    }

    /** Runs {@code op} on {@code np} ranks over IbTransport with buffers on {@code gpu}; checks every row exact. */
    private static Result run(final String op, final String type, final String red, final int np,
                              final String gpu, final Map<String, String> env) {
        final SettingsReader settings = SettingsReader.ofEnv(env);
        final AtomicReferenceArray<CollGdr> gdr = new AtomicReferenceArray<>(np);
        final AtomicLongArray flushes = new AtomicLongArray(np);
        final AtomicLongArray bounced = new AtomicLongArray(np);
        final AtomicLongArray launches = new AtomicLongArray(np);
        final AtomicLongArray stagingOnGpu = new AtomicLongArray(np);
        final CollOp o = CollOp.parse(op);
        final List<CollResult> rows = CollLocal.run(np, CollWorld.TransportKind.IB, cfg(o, DataType.parse(type),
            RedOp.parse(red), np - 1, 20_000), new CollContext().buffSize(4096).steps(4).channels(2).settings(NONE),
            settings, Duration.ofSeconds(30), r -> { }, (rank, c) -> {
                gdr.set(rank, c.gdr());
                flushes.set(rank, c.flushes());
                bounced.set(rank, c.deviceReducer().bouncedBytes());
                launches.set(rank, c.deviceReducer().launches());
                // the NIC's registration for reduced receives: over the device staging itself with GDR
                final var dev = c.stagingDevice(0);
                stagingOnGpu.set(rank, dev != null && c.stagingRegistration(0).address() == dev.address()
                    && c.stagingRegistration(0).length() == dev.size() ? 1 : 0);
            }, gpu);
        assertFalse(rows.isEmpty());
        for (final CollResult r : rows) {
            assertEquals(0, r.wrong(), r.toString());
            assertEquals(0, r.inPlaceWrong(), r.toString());
            assertEquals("gpu", r.placement().mem());
            assertEquals("sim-sm-workers", r.placement().reduceOn());
        }
        long totalLaunches = 0;
        for (int i = 0; i < np; i++) {
            totalLaunches += launches.get(i);
        }
        assertEquals(o.reduces(), totalLaunches > 0, "reduction kernels on the device: " + totalLaunches);
        return new Result(rows, gdr, flushes, bounced, stagingOnGpu);
    }

    private record Result(List<CollResult> rows, AtomicReferenceArray<CollGdr> gdr, AtomicLongArray flushes,
                          AtomicLongArray bounced, AtomicLongArray stagingOnGpu) {
    }

    @ParameterizedTest(name = "{0} {1} {2} np={3}: GDR")
    @CsvSource({"allreduce,float,sum,2", "allreduce,int32,max,3", "allgather,int32,sum,3",
        "reduce-scatter,float,sum,2", "broadcast,int8,sum,3"})
    void theNicMovesGpuMemoryWhenTheGatesAllowIt(final String op, final String type, final String red,
                                                final int np) {
        final Result r = run(op, type, red, np, "sim:h200", Map.of());
        for (final CollResult row : r.rows()) {
            assertEquals("gdr", row.placement().dataPath(), row.toString());
            assertEquals("gpu", row.placement().nicMr(), row.toString());
            assertEquals(0, row.placement().bouncedBytes(), "bytes bounced on the GDR path: " + row);
            assertTrue(row.placement().gdr().on());
        }
        for (int i = 0; i < np; i++) {
            final CollGdr g = r.gdr().get(i);
            assertTrue(g.on(), g.reason());
            assertTrue(g.sendOn(), g.reason());
            assertEquals(RegMechanism.DMABUF_FD, g.mechanism(), "H200 with a DMA-BUF provider: " + g.reason());
            assertTrue(g.reason().contains("GPU Direct RDMA Enabled"), g.reason());
            assertFalse(g.flush(), g.flushEvidence()); // cc 9.0: no flush by default
            assertTrue(g.flushEvidence().contains("9.0"), g.flushEvidence());
            assertEquals(0, r.flushes().get(i), "flushes without the flush gate");
            assertEquals(0, r.bounced().get(i), "rank " + i + " bounced");
            assertEquals(1, r.stagingOnGpu().get(i), "rank " + i + "'s staging registration is not its GPU memory");
        }
    }

    @ParameterizedTest(name = "{0} {1} {2} np={3}: NCCL_NET_GDR_LEVEL=LOC bounces")
    @CsvSource({"allreduce,float,sum,2", "allreduce,int32,max,3", "allgather,int32,sum,3",
        "reduce-scatter,float,sum,2", "broadcast,int8,sum,3"})
    void aGdrLevelOfLocBouncesThroughHostMemoryAndSaysWhy(final String op, final String type, final String red,
                                                          final int np) {
        final Result r = run(op, type, red, np, "sim:h200", Map.of("NCCL_NET_GDR_LEVEL", "LOC",
            "NCCL_NET_FORCE_FLUSH", "1"));
        for (final CollResult row : r.rows()) {
            assertEquals("host-bounce", row.placement().dataPath(), row.toString());
            assertEquals("host", row.placement().nicMr(), row.toString());
        }
        assertTrue(r.rows().get(r.rows().size() - 1).placement().bouncedBytes() > 0, "nothing bounced");
        for (int i = 0; i < np; i++) {
            final CollGdr g = r.gdr().get(i);
            assertFalse(g.on());
            assertEquals("receive distance", g.gate(), g.reason());
            assertTrue(g.reason().contains("distance PIX > LOC"), g.reason());
            assertTrue(g.reason().contains("cause: NCCL_NET_GDR_LEVEL=LOC (environment)"), g.reason());
            assertTrue(g.settings().contains("NCCL_NET_GDR_LEVEL=LOC (environment)"), g.settings().toString());
            // a forced flush has nothing to flush without GDR
            assertFalse(g.flush());
            assertTrue(g.flushEvidence().contains("nothing to flush"), g.flushEvidence());
            assertEquals(0, r.flushes().get(i));
            assertTrue(r.bounced().get(i) > 0, "rank " + i + " bounced nothing");
            assertEquals(0, r.stagingOnGpu().get(i));
        }
    }

    @Test
    void aForcedFlushReadsBeforeEveryReceivedChunkIsUsedOnTheGdrPath() {
        final Result r = run("allreduce", "float", "sum", 2, "sim:h200", Map.of("NCCL_NET_FORCE_FLUSH", "1"));
        for (int i = 0; i < 2; i++) {
            final CollGdr g = r.gdr().get(i);
            assertTrue(g.on(), g.reason());
            assertTrue(g.flush());
            assertEquals("flush: NCCL_NET_FORCE_FLUSH=1", g.flushEvidence());
            assertTrue(r.flushes().get(i) > 0, "no flush READ on rank " + i);
        }
        final CollResult last = r.rows().get(r.rows().size() - 1);
        assertEquals(r.flushes().get(0), last.placement().flushes());
        assertEquals("gdr", last.placement().dataPath());
    }

    @Test
    void aV100NeedsTheFlushAndRegistersByPeermem() {
        // cc 7.0 without an NVLink peer reads GPU memory only when NCCL_NET_GDR_READ=1 says so; it has no DMA-BUF
        final Result r = run("allreduce", "float", "sum", 2, "sim:v100", Map.of("NCCL_NET_GDR_READ", "1"));
        for (int i = 0; i < 2; i++) {
            final CollGdr g = r.gdr().get(i);
            assertTrue(g.on(), g.reason());
            assertEquals(RegMechanism.PEERMEM_POINTER, g.mechanism());
            assertTrue(g.flush());
            assertTrue(g.flushEvidence().contains("compute capability 70 < 9.0"), g.flushEvidence());
            assertTrue(r.flushes().get(i) > 0, "no flush READ on rank " + i);
            assertEquals(1, r.stagingOnGpu().get(i));
        }
    }

    @ParameterizedTest(name = "{0} on sim:{1} {2}: receives GDR, sends bounce")
    @CsvSource({"allreduce,v100,", "reduce-scatter,v100,", "allgather,h200,NCCL_NET_GDR_READ=0",
        "allreduce,h200,NCCL_NET_GDR_READ=0"})
    void whenOnlyTheReadPolicySaysNoTheNicWritesGpuMemoryAndSendsBounce(final String op, final String gpu,
                                                                       final String setting) {
        // a V100 (cc 7.0, no NVLink peer) by NCCL's default read policy, an H200 by NCCL_NET_GDR_READ=0
        final Map<String, String> env = setting == null ? Map.of() : Map.of(setting.split("=")[0],
            setting.split("=")[1]);
        final Result r = run(op, "float", "sum", 2, "sim:" + gpu, env);
        for (int i = 0; i < 2; i++) {
            final CollGdr g = r.gdr().get(i);
            assertTrue(g.on(), g.reason());
            assertFalse(g.sendOn(), g.reason());
            assertEquals("send read policy", g.gate(), g.reason());
            assertTrue(g.reason().contains("sends bounce through host memory"), g.reason());
            assertEquals(1, r.stagingOnGpu().get(i), "rank " + i + ": receives land in GPU memory");
            assertTrue(r.bounced().get(i) > 0, "rank " + i + ": the sends bounced nothing");
            // a V100 needs the flush (cc < 9.0); an H200 does not
            assertEquals(gpu.equals("v100"), g.flush(), g.flushEvidence());
            assertEquals(gpu.equals("v100"), r.flushes().get(i) > 0, "rank " + i + " flushes");
        }
        if (setting != null) {
            assertTrue(r.gdr().get(0).reason().contains("cause: NCCL_NET_GDR_READ=0 (environment)"),
                r.gdr().get(0).reason());
        }
        for (final CollResult row : r.rows()) {
            assertEquals("gdr-recv", row.placement().dataPath(), row.toString());
            assertEquals("gpu (receives) + host (sends)", row.placement().nicMr(), row.toString());
        }
    }

    @Test
    void aGpuWithoutGpuDirectRdmaBounces() {
        final Result r = run("allgather", "int32", "sum", 2, "sim:no-gdr", Map.of());
        final CollGdr g = r.gdr().get(1);
        assertFalse(g.on());
        assertEquals("receive GPU", g.gate(), g.reason());
        assertTrue(g.reason().contains("attribute 116 = 0"), g.reason());
        assertEquals("host-bounce", r.rows().get(0).placement().dataPath());
        assertEquals(RegMechanism.NONE, r.rows().get(0).placement().gdr().mechanism());
    }

    @Test
    void aRegistrationThatFailsIsTheConnectorGate() {
        final AtomicReferenceArray<String> seen = new AtomicReferenceArray<>(2);
        CollLocal.run(2, CollWorld.TransportKind.IB, cfg(CollOp.ALLREDUCE, DataType.FLOAT32, RedOp.SUM, 0, 4096),
            new CollContext().buffSize(4096).steps(4).settings(NONE), NONE, Duration.ofSeconds(30), x -> { },
            (rank, c) -> {
                final var gpu = c.deviceReducer().gpu();
                try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
                    final var whole = gpu.alloc(8192);
                    final var odd = gpu.alloc(1000); // not whole pages: the DMA-BUF export refuses it
                    final RegisteredBuffer ok = c.register(a.allocate(8192, 4096), whole);
                    assertTrue(ok.direct());
                    assertEquals(whole.address(), ok.mr().address());
                    // with a GPU buffer registered, a failing registration is an error, not a silent switch
                    final CollException e = org.junit.jupiter.api.Assertions.assertThrows(CollException.class,
                        () -> c.register(a.allocate(1000, 4096), odd));
                    assertTrue(e.getMessage().contains("after other GPU buffers were registered"), e.getMessage());
                    assertTrue(c.gdr().on());
                    c.deregister(ok);
                    // none registered: the connector gate turns GDR off for this rank, the buffer bounces
                    final RegisteredBuffer host = c.register(a.allocate(1000, 4096), odd);
                    assertFalse(host.direct());
                    assertFalse(c.gdr().on());
                    assertEquals("connector", c.gdr().gate());
                    assertTrue(c.gdr().evidence().get(c.gdr().evidence().size() - 1).startsWith(
                        "connector gate failed: registration (DMA-BUF)"), c.gdr().evidence().toString());
                    assertNull(c.stagingDevice(0), "the device staging is released");
                    assertEquals(host.seg().address(), host.mr().address());
                    seen.set(rank, c.gdr().reason());
                    c.deregister(host);
                    gpu.free(whole);
                    gpu.free(odd);
                }
            }, "sim:h200");
        for (int i = 0; i < 2; i++) {
            assertNotNull(seen.get(i), "rank " + i + " did not reach the connector gate");
            assertTrue(seen.get(i).contains("GPU Direct RDMA Disabled (connector: registration"), seen.get(i));
        }
    }

    @Test
    void socketTransportHasNoGpuPointerSupport() {
        final AtomicReferenceArray<CollGdr> gdr = new AtomicReferenceArray<>(2);
        final List<CollResult> rows = CollLocal.run(2, CollWorld.TransportKind.SOCKET, new CollRun.Config(
            CollOp.ALLREDUCE, DataType.FLOAT32, RedOp.SUM, 0, 0, 8192, 4, 0, 1, 0, true, "socket", "injvm", false),
            new CollContext().buffSize(4096).steps(4).settings(NONE), NONE, Duration.ofSeconds(30), x -> { },
            (rank, c) -> gdr.set(rank, c.gdr()), "sim:h200");
        for (final CollResult r : rows) {
            assertEquals(0, r.wrong());
            assertEquals("host-bounce", r.placement().dataPath());
        }
        assertNotNull(gdr.get(0));
        assertEquals("NET", gdr.get(0).gate());
        assertTrue(gdr.get(0).reason().contains("NET/Socket"), gdr.get(0).reason());
    }
}
