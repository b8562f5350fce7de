/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.core.config.Source;
import io.gdrkit.core.cpu.CpuAffinity;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * gdrkit.coll.bind: a rank's collectives thread pinned to its local rank's CPU, what the result says, and the
 * helpers a pinned thread starts running where the process may.
 */
class CollBindTest {
    private static final SettingsReader NONE = new SettingsReader(Map.of(), Map.of(), Map.of());

    private static void onFreshThread(final Runnable r) throws Exception {
        final AtomicReference<Throwable> failed = new AtomicReference<>();
        final Thread t = Thread.ofPlatform().name("bind-test").start(() -> {
            try {
                r.run();
            } catch (final Throwable e) {
                failed.set(e);
            }
        });
        t.join(60_000);
        assertTrue(!t.isAlive(), "the bind test thread did not end in 60 s");
        if (failed.get() instanceof Exception e) {
            throw e;
        }
        if (failed.get() instanceof Error e) {
            throw e;
        }
    }

    @Test
    void theSettingIsReadOnceWithItsSourceAndABadValueIsNamed() {
        final CollContext byDefault = new CollContext().settings(NONE).conclude();
        assertEquals(CollContext.Bind.AUTO, byDefault.bindTo().value());
        assertEquals(Source.DEFAULT, byDefault.bindTo().source());
        final CollContext prop = new CollContext().settings(new SettingsReader(Map.of(),
            Map.of("gdrkit.coll.bind", "Core"), Map.of())).conclude();
        assertEquals(CollContext.Bind.CORE, prop.bindTo().value());
        assertEquals(Source.PROPERTY, prop.bindTo().source());
        assertEquals(CollContext.Bind.CORE, CollContext.copyOf(prop).bindTo().value());
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new CollContext()
            .settings(new SettingsReader(Map.of(), Map.of("gdrkit.coll.bind", "socket"), Map.of())).conclude());
        assertTrue(e.getMessage().contains("gdrkit.coll.bind=socket is not auto, none or core"), e.getMessage());
        final CollContext flag = new CollContext().settings(NONE).bindTo(CollContext.Bind.CORE).conclude();
        assertEquals(Source.FLAG, flag.bindTo().source());
    }

    @Test
    void noneLeavesTheThreadAloneAndSaysSo() throws Exception {
        final Setting<CollContext.Bind> none = new Setting<>("gdrkit.coll.bind", CollContext.Bind.NONE,
            Source.DEFAULT, "none");
        assumeTrue(CpuAffinity.unavailable().isEmpty(), () -> CpuAffinity.unavailable().orElse(""));
        final int[] all = CpuAffinity.allowed();
        onFreshThread(() -> {
            assertEquals("none (gdrkit.coll.bind=none (default))", Communicator.bind(none, 1));
            // a context left at its default (auto, no raw text) pins nothing outside a launcher
            assertTrue(ThreadBinding.bind(new CollContext().settings(NONE).conclude().bindTo(), 0, 1, null)
                .startsWith("none (auto: not a rank process of a launcher"));
            assertArrayEquals(all, CpuAffinity.allowed());
        });
    }

    @Test
    void autoPinsALaunchedRankWhenEveryRankOfTheHostHasACpuAndSaysWhyNotOtherwise() throws Exception {
        assumeTrue(CpuAffinity.unavailable().isEmpty(), () -> CpuAffinity.unavailable().orElse(""));
        final Setting<CollContext.Bind> auto = new Setting<>("gdrkit.coll.bind", CollContext.Bind.AUTO,
            Source.DEFAULT, null);
        final int[] all = CpuAffinity.allowed();
        // not started by a launcher: ranks may be threads of one JVM, nothing is pinned
        onFreshThread(() -> {
            final String b = ThreadBinding.bind(auto, 0, 1, null);
            assertTrue(b.startsWith("none (auto: not a rank process of a launcher (none of GDRKIT_ID, "
                + "OMPI_COMM_WORLD_RANK, PMIX_RANK, SLURM_PROCID, LOCAL_RANK set)"), b);
            assertTrue(b.endsWith("gdrkit.coll.bind=auto (default))"), b);
            assertArrayEquals(all, CpuAffinity.allowed());
        });
        // more ranks on the host than CPUs: two would share one, nothing is pinned
        onFreshThread(() -> {
            assertEquals("none (auto: " + (all.length + 1) + " ranks on this host, " + all.length + " CPUs this "
                + "process may use: some would share one; gdrkit.coll.bind=auto (default))",
                ThreadBinding.bind(auto, 0, all.length + 1, "GDRKIT_ID"));
            assertArrayEquals(all, CpuAffinity.allowed());
        });
        // a launched rank with a CPU of its own: pinned to its local rank's
        final int local = all.length - 1;
        onFreshThread(() -> {
            assertEquals("cpu " + all[local] + " (local rank " + local + " of CPUs " + CpuAffinity.describe(all)
                + ", auto: SLURM_PROCID set, " + all.length + " ranks on this host, " + all.length + " CPUs; "
                + "gdrkit.coll.bind=auto (default))", ThreadBinding.bind(auto, local, all.length, "SLURM_PROCID"));
            assertArrayEquals(new int[] {all[local]}, CpuAffinity.allowed());
        });
        assertEquals("PMIX_RANK", ThreadBinding.launcherVariable(Map.of("PMIX_RANK", "3", "LOCAL_RANK", "1")));
        assertEquals("LOCAL_RANK", ThreadBinding.launcherVariable(Map.of("LOCAL_RANK", "1", "GDRKIT_ID", " ")));
        assertEquals(null, ThreadBinding.launcherVariable(Map.of("RANK", "1")));
    }

    @Test
    void corePinsToTheLocalRanksCpuWrappingOverTheAllowedList() throws Exception {
        assumeTrue(CpuAffinity.unavailable().isEmpty(), () -> CpuAffinity.unavailable().orElse(""));
        final Setting<CollContext.Bind> core = new Setting<>("gdrkit.coll.bind", CollContext.Bind.CORE,
            Source.PROPERTY, "core");
        final int[] all = CpuAffinity.allowed();
        for (final int local : new int[] {0, 1, all.length, all.length + 1}) {
            onFreshThread(() -> {
                final int cpu = all[local % all.length];
                assertEquals("cpu " + cpu + " (local rank " + local + " of CPUs " + CpuAffinity.describe(all)
                    + ", gdrkit.coll.bind=core (property))", Communicator.bind(core, local));
                assertArrayEquals(new int[] {cpu}, CpuAffinity.allowed());
            });
        }
    }

    @Test
    void ranksRunPinnedRightAndSayWhere() {
        assumeTrue(CpuAffinity.unavailable().isEmpty(), () -> CpuAffinity.unavailable().orElse(""));
        final int[] all = CpuAffinity.allowed();
        final Map<Integer, int[]> seen = new ConcurrentHashMap<>();
        final CollRun.Config cfg = new CollRun.Config(CollOp.ALLREDUCE, DataType.FLOAT32, RedOp.SUM, 0, 8, 65536, 8,
            0, 2, 1, true, "ib", "injvm", true);
        final List<CollResult> rows = CollLocal.run(2, CollWorld.TransportKind.IB, cfg, new CollContext()
            .buffSize(65536).steps(4).channels(1).bindTo(CollContext.Bind.CORE).settings(NONE), NONE,
            Duration.ofSeconds(30), r -> { }, (rank, c) -> seen.put(rank, CpuAffinity.allowed()), null);
        assertEquals(CollRun.sizes(cfg, 2).size(), rows.size());
        for (final CollResult r : rows) {
            assertEquals(0, r.wrong(), r.toString());
            assertEquals(0, r.inPlaceWrong(), r.toString());
            assertTrue(r.binding().startsWith("cpu " + all[0] + " (local rank 0 of CPUs "), r.binding());
        }
        assertArrayEquals(new int[] {all[0]}, seen.get(0));
        assertArrayEquals(new int[] {all[1 % all.length]}, seen.get(1));
    }

    /** Linux names a thread by its first 15 characters; /proc/self/task/TID/status has its mask. */
    private static String allowedListOf(final String threadName) throws IOException {
        try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            for (final Path t : tasks.toList()) {
                final String comm;
                try {
                    comm = Files.readString(t.resolve("comm")).trim();
                } catch (final IOException gone) {
                    continue; // the thread ended between the listing and the read
                }
                if (comm.equals(threadName)) {
                    for (final String line : Files.readAllLines(t.resolve("status"))) {
                        if (line.startsWith("Cpus_allowed_list:")) {
                            return line.substring("Cpus_allowed_list:".length()).trim();
                        }
                    }
                }
            }
        }
        return null;
    }

    @Test
    void reduceThreadsStartedByAPinnedRankRunWhereTheProcessMay() throws Exception {
        assumeTrue(CpuAffinity.unavailable().isEmpty(), () -> CpuAffinity.unavailable().orElse(""));
        assumeTrue(Files.isDirectory(Path.of("/proc/self/task")), "no /proc/self/task to read a thread's mask from");
        final int[] all = CpuAffinity.allowed();
        assumeTrue(all.length >= 2, "one CPU: pinned and unpinned look alike");
        onFreshThread(() -> {
            CpuAffinity.set(all[0]);
            try (Arena a = Arena.ofConfined();
                 ParallelReducer pr = new ParallelReducer(2, 1024, Duration.ofSeconds(20).toNanos(), "bindred")) {
                final long n = 1 << 16;
                final MemorySegment x = a.allocate(n * 4, 64);
                final MemorySegment y = a.allocate(n * 4, 64);
                for (long i = 0; i < n; i++) {
                    x.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, i);
                    y.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, 2 * i);
                }
                pr.reduce(x, 0, x, 0, y, 0, n, DataType.FLOAT32, RedOp.SUM); // starts the worker
                assertEquals(3f * (n - 1), x.getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, n - 1));
                // the worker releases as its first step; give it a moment to have run that far
                String mask = null;
                for (int i = 0; i < 2000 && !CpuAffinity.describe(all).equals(mask); i++) {
                    mask = allowedListOf("bindred-1");
                    Thread.sleep(5);
                }
                assertEquals(CpuAffinity.describe(all), mask, "the reduce worker's mask");
                assertArrayEquals(new int[] {all[0]}, CpuAffinity.allowed());
            } catch (final IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
    }
}
