/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.comm.bootstrap.WorldEnvironment.Source;
import io.gdrkit.comm.bootstrap.WorldEnvironment.World;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Worlds from launchers' environments: what is read, every refusal by name, and the join through a fixed port. */
class WorldEnvironmentTest {
    private static Map<String, String> torch(final String... kv) {
        final Map<String, String> m = new HashMap<>(Map.of("RANK", "1", "WORLD_SIZE", "4", "LOCAL_RANK", "1",
            "LOCAL_WORLD_SIZE", "2", "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "29500"));
        for (int i = 0; i < kv.length; i += 2) {
            if (kv[i + 1] == null) {
                m.remove(kv[i]);
            } else {
                m.put(kv[i], kv[i + 1]);
            }
        }
        return m;
    }

    private static IllegalArgumentException refused(final Map<String, String> env) {
        return assertThrows(IllegalArgumentException.class, () -> WorldEnvironment.detect(env));
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @Test
    void torchrunVariablesGiveRankSizeLocalRankAndTheRootAddress() {
        final World w = WorldEnvironment.detect(torch());
        assertEquals(Source.TORCHRUN, w.source());
        assertEquals(1, w.rank());
        assertEquals(4, w.size());
        assertEquals(1, w.localRank());
        assertEquals(2, w.localSize());
        assertEquals("127.0.0.1", w.id().host());
        assertEquals(29500, w.id().port());
        assertFalse(w.servesRoot());
        assertTrue(w.evidence().contains("RANK=1"), w.evidence().toString());
        assertTrue(w.evidence().contains("MASTER_PORT=29500"), w.evidence().toString());
        assertTrue(WorldEnvironment.detect(torch("RANK", "0")).servesRoot());
    }

    @Test
    void everyRankDerivesTheSameRunIdAndTheTokenAndJobChangeIt() {
        final long a = WorldEnvironment.detect(torch()).id().runId();
        assertEquals(a, WorldEnvironment.detect(torch("RANK", "3", "LOCAL_RANK", "0")).id().runId());
        assertNotEquals(a, WorldEnvironment.detect(torch("GDRKIT_TOKEN", "s3cret-token")).id().runId());
        assertNotEquals(a, WorldEnvironment.detect(torch("TORCHELASTIC_RUN_ID", "job7")).id().runId());
        assertNotEquals(a, WorldEnvironment.detect(torch("MASTER_PORT", "29501")).id().runId());
        final World t = WorldEnvironment.detect(torch("GDRKIT_TOKEN", "s3cret-token"));
        assertEquals("s3cret-token", t.token());
        assertFalse(t.toString().contains("s3cret-token"), "the token's value is never shown: " + t);
    }

    @ParameterizedTest(name = "{0}={1}")
    @CsvSource({
        "RANK,4,RANK=4 is not below WORLD_SIZE=4",
        "RANK,-1,RANK=-1 is outside",
        "RANK,one,RANK=one is not an integer",
        "WORLD_SIZE,0,WORLD_SIZE=0 is outside 1..",
        "WORLD_SIZE,4x,WORLD_SIZE=4x is not an integer",
        "LOCAL_RANK,2,LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2",
        "LOCAL_WORLD_SIZE,5,LOCAL_WORLD_SIZE=5 is outside 1..4",
        "MASTER_PORT,70000,MASTER_PORT=70000 is outside 1..65535",
        "MASTER_PORT,http,MASTER_PORT=http is not an integer",
    })
    void aBadTorchrunValueIsRefusedByName(final String name, final String value, final String message) {
        final IllegalArgumentException e = refused(torch(name, value));
        assertTrue(e.getMessage().contains(message), e.getMessage());
    }

    @Test
    void aMissingVariableIsNamed() {
        assertTrue(refused(torch("MASTER_PORT", null)).getMessage().contains("MASTER_PORT is not set"));
        assertTrue(refused(torch("MASTER_ADDR", null)).getMessage().contains("MASTER_ADDR is not set"));
        assertTrue(refused(torch("WORLD_SIZE", null)).getMessage().contains("RANK is set but WORLD_SIZE is not"));
        assertTrue(refused(torch("RANK", null)).getMessage().contains("WORLD_SIZE is set but RANK is not"));
    }

    @Test
    void aWorldOfOneNeedsNoAddress() {
        final World w = WorldEnvironment.detect(Map.of("RANK", "0", "WORLD_SIZE", "1"));
        assertEquals(Source.TORCHRUN, w.source());
        assertNull(w.id());
        assertTrue(w.servesRoot());
    }

    @Test
    void gdrkitsAddressVariablesWinAndTheLoserIsNoted() {
        final World w = WorldEnvironment.detect(torch("GDRKIT_MASTER_ADDR", "10.0.0.9", "GDRKIT_MASTER_PORT",
            "31000"));
        assertEquals("10.0.0.9", w.id().host());
        assertEquals(31000, w.id().port());
        assertTrue(w.evidence().stream().anyMatch(e -> e.startsWith("MASTER_ADDR=127.0.0.1 ignored")), w.toString());
        assertTrue(w.evidence().stream().anyMatch(e -> e.startsWith("MASTER_PORT=29500 ignored")), w.toString());
    }

    @Test
    void slurmVariablesWithAnAddressGiveTheWorld() {
        final World w = WorldEnvironment.detect(Map.of("SLURM_PROCID", "3", "SLURM_NTASKS", "4", "SLURM_LOCALID",
            "1", "SLURM_NODEID", "1", "SLURM_TASKS_PER_NODE", "2(x2)", "SLURM_JOB_ID", "77", "SLURM_STEP_ID", "0",
            "GDRKIT_MASTER_ADDR", "node1", "GDRKIT_MASTER_PORT", "29600"));
        assertEquals(Source.SLURM, w.source());
        assertEquals(3, w.rank());
        assertEquals(4, w.size());
        assertEquals(1, w.localRank());
        assertEquals(2, w.localSize());
        assertEquals("node1", w.id().host());
        assertTrue(w.evidence().contains("SLURM_JOB_ID.SLURM_STEP_ID=77.0"), w.toString());
    }

    @Test
    void slurmRefusalsAreNamed() {
        assertTrue(refused(Map.of("SLURM_PROCID", "0", "SLURM_NTASKS", "2")).getMessage()
            .contains("MASTER_ADDR is not set"));
        assertTrue(refused(Map.of("SLURM_PROCID", "2", "SLURM_NTASKS", "2", "MASTER_ADDR", "h", "MASTER_PORT", "1"))
            .getMessage().contains("SLURM_PROCID=2 is not below SLURM_NTASKS=2"));
        assertTrue(refused(Map.of("SLURM_PROCID", "0")).getMessage().contains("SLURM_NTASKS is not"));
        assertTrue(refused(Map.of("SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_LOCALID", "2", "SLURM_NODEID",
            "1", "SLURM_TASKS_PER_NODE", "2,2", "MASTER_ADDR", "h", "MASTER_PORT", "1")).getMessage()
            .contains("SLURM_LOCALID=2 is not below the 2 tasks"));
        assertEquals(3, WorldEnvironment.tasksOnNode("2(x3),3", 3));
        assertEquals(2, WorldEnvironment.tasksOnNode("2(x3),3", 2));
        assertThrows(IllegalArgumentException.class, () -> WorldEnvironment.tasksOnNode("2(x3)", 3));
        assertThrows(IllegalArgumentException.class, () -> WorldEnvironment.tasksOnNode("two", 0));
    }

    @Test
    void theInnermostLauncherWinsAndTheOthersAreListedAsIgnored() {
        final Map<String, String> env = torch(BootstrapContext.ENV_ID, "127.0.0.1:4000/0123456789abcdef",
            BootstrapContext.ENV_RANK, "0", BootstrapContext.ENV_NRANKS, "2", "SLURM_PROCID", "5");
        final World g = WorldEnvironment.detect(env);
        assertEquals(Source.GDRKIT, g.source());
        assertEquals(2, g.size());
        assertTrue(g.evidence().stream().anyMatch(e -> e.startsWith("ignored (gdrkit wins): RANK, WORLD_SIZE")),
            g.toString());
        final World p = WorldEnvironment.detect(torch("PMIX_RANK", "1", "PMIX_NAMESPACE", "prterun-x-1@1"));
        assertEquals(Source.PMIX, p.source());
        assertEquals(1, p.rank());
        assertEquals(Source.TORCHRUN, WorldEnvironment.detect(torch("SLURM_PROCID", "0", "SLURM_NTASKS", "1"))
            .source());
        assertEquals(Source.NONE, WorldEnvironment.detect(Map.of("HOME", "/root")).source());
        assertFalse(WorldEnvironment.present(Map.of("PMIX_RANK", "0"))); // no namespace: not PMIx
    }

    @Test
    void aMasterPortNobodyServesIsANamedTimeoutNotAHang() throws Exception {
        final World w = WorldEnvironment.detect(torch("MASTER_PORT", String.valueOf(freePort())));
        final long t0 = System.nanoTime();
        final BootstrapException e = assertThrows(BootstrapException.class, () -> Bootstrap.init(
            new BootstrapContext().id(w.id()).rank(w.rank()).nranks(w.size()).timeout(Duration.ofSeconds(2))));
        final long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertEquals(BootstrapException.Reason.TIMEOUT, e.reason());
        assertTrue(e.getMessage().contains("could not reach the root at 127.0.0.1:" + w.id().port()), e.getMessage());
        assertTrue(ms < 5_000, ms + " ms");
    }

    @Test
    void twoRanksClaimingOneRankAreRefusedByNameAndTheMissingRankEndsTheRunInTime() throws Exception {
        final int port = freePort();
        final Map<String, String> env0 = torch("RANK", "0", "WORLD_SIZE", "3", "MASTER_PORT", String.valueOf(port),
            "LOCAL_RANK", null, "LOCAL_WORLD_SIZE", null, "GDRKIT_TOKEN", "a-long-token");
        final World w0 = WorldEnvironment.detect(env0);
        final World w1 = WorldEnvironment.detect(torch("RANK", "1", "WORLD_SIZE", "3", "MASTER_PORT",
            String.valueOf(port), "LOCAL_RANK", null, "LOCAL_WORLD_SIZE", null, "GDRKIT_TOKEN", "a-long-token"));
        final Duration t = Duration.ofSeconds(3);
        try (BootstrapRoot root = WorldEnvironment.startRoot(w0, env0, t);
             var ex = java.util.concurrent.Executors.newFixedThreadPool(2)) {
            final CompletableFuture<Bootstrap> r0 = CompletableFuture.supplyAsync(() -> Bootstrap.init(
                new BootstrapContext().id(w0.id()).rank(0).nranks(3).token(w0.token()).timeout(t)), ex);
            final CompletableFuture<Bootstrap> r1 = CompletableFuture.supplyAsync(() -> Bootstrap.init(
                new BootstrapContext().id(w1.id()).rank(1).nranks(3).token(w1.token()).timeout(t)), ex);
            Thread.sleep(500);
            final BootstrapException twice = assertThrows(BootstrapException.class, () -> Bootstrap.init(
                new BootstrapContext().id(w1.id()).rank(1).nranks(3).token(w1.token()).timeout(t)));
            assertEquals(BootstrapException.Reason.REJECTED, twice.reason(), twice.getMessage());
            assertTrue(twice.getMessage().contains("rank 1 joined twice"), twice.getMessage());
            // rank 2 never comes: every rank that joined ends with a named error within the join timeout
            for (final CompletableFuture<Bootstrap> r : java.util.List.of(r0, r1)) {
                final Exception e = assertThrows(Exception.class, () -> r.get(10, TimeUnit.SECONDS));
                assertTrue(e.getCause() instanceof BootstrapException, String.valueOf(e.getCause()));
            }
            assertTrue(root.await(Duration.ofSeconds(10)), "the root did not end"); // its failure is set as it ends
            assertTrue(root.failure() != null && root.failure().contains("rank(s) [2] of 3 never joined"),
                root.failure());
        }
    }

    @Test
    void aRankWithAnotherTokenIsRefusedByName() throws Exception {
        final int port = freePort();
        final Map<String, String> env0 = torch("RANK", "0", "WORLD_SIZE", "2", "MASTER_PORT", String.valueOf(port),
            "GDRKIT_TOKEN", "the-right-token");
        final World w0 = WorldEnvironment.detect(env0);
        final World w1 = WorldEnvironment.detect(torch("RANK", "1", "WORLD_SIZE", "2", "MASTER_PORT",
            String.valueOf(port), "GDRKIT_TOKEN", "a-wrong-token"));
        final Duration t = Duration.ofSeconds(3);
        try (BootstrapRoot root = WorldEnvironment.startRoot(w0, env0, t)) {
            final BootstrapException e = assertThrows(BootstrapException.class, () -> Bootstrap.init(
                new BootstrapContext().id(w1.id()).rank(1).nranks(2).token(w1.token()).timeout(t)));
            assertTrue(e.reason() == BootstrapException.Reason.REJECTED
                || e.reason() == BootstrapException.Reason.PROTOCOL, e.getMessage());
            assertTrue(root.refusedConnections() >= 1);
        }
    }
}
