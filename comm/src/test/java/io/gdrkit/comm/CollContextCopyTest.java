/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.core.config.Source;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * {@link CollLocal}'s ranks (threads of one JVM) each run on a copy of the launcher's concluded context: every value
 * and every value's source arrive unchanged (a default stays DEFAULT, an environment variable ENVIRONMENT, a property
 * PROPERTY, a setter FLAG), where the ranks used to report everything but gdrkit.coll.cuda.gdr as FLAG.
 */
class CollContextCopyTest {
    private static final SettingsReader READER = new SettingsReader(
        Map.of("NCCL_STEPS", "4", "NCCL_MAX_NCHANNELS", "2"),
        Map.of("gdrkit.coll.eager.bytes", "1024", "gdrkit.coll.cuda.gdr", "false",
            "gdrkit.coll.reduce.parallel.bytes", "65536"), Map.of());

    private static CollContext launcher() {
        return new CollContext().settings(READER).buffSize(65536).spinRounds(100).timeout(Duration.ofSeconds(20));
    }

    private static Source source(final List<Setting<?>> recorded, final String name) {
        final List<Setting<?>> s = recorded.stream().filter(x -> x.name().equals(name)).toList();
        assertEquals(1, s.size(), name + " recorded once in " + recorded);
        return s.get(0).source();
    }

    private static void assertSources(final List<Setting<?>> recorded) {
        assertEquals(Source.FLAG, source(recorded, "NCCL_BUFFSIZE"));
        assertEquals(Source.ENVIRONMENT, source(recorded, "NCCL_STEPS"));
        assertEquals(Source.DEFAULT, source(recorded, "NCCL_MIN_NCHANNELS"));
        assertEquals(Source.ENVIRONMENT, source(recorded, "NCCL_MAX_NCHANNELS"));
        assertEquals(Source.DEFAULT, source(recorded, "NCCL_ALGO"));
        assertEquals(Source.PROPERTY, source(recorded, "gdrkit.coll.eager.bytes"));
        assertEquals(Source.DEFAULT, source(recorded, "gdrkit.coll.direct.bytes"));
        assertEquals(Source.FLAG, source(recorded, "gdrkit.coll.spin.rounds"));
        assertEquals(Source.PROPERTY, source(recorded, "gdrkit.coll.cuda.gdr"));
        assertEquals(Source.FLAG, source(recorded, "gdrkit.coll.timeout.ms"));
        assertEquals(Source.DEFAULT, source(recorded, "gdrkit.coll.reduce.threads"));
        assertEquals(Source.PROPERTY, source(recorded, "gdrkit.coll.reduce.parallel.bytes"));
    }

    @Test
    void eachRanksContextReportsTheLaunchersValuesWithTheirSources() {
        final CollContext launcher = launcher();
        final Map<Integer, CollContext> seen = new ConcurrentHashMap<>();
        final CollRun.Config cfg = new CollRun.Config(CollOp.ALLREDUCE, DataType.FLOAT32, RedOp.SUM, 0, 8, 4096, 8,
            0, 2, 1, true, "ib", "injvm", true);
        final List<CollResult> rows = CollLocal.run(2, CollWorld.TransportKind.IB, cfg, launcher, READER,
            Duration.ofSeconds(60), x -> { }, (rank, comm) -> seen.put(rank, comm.context()), null);
        for (final CollResult r : rows) {
            assertEquals(0, r.wrong() + r.inPlaceWrong(), r.toString());
        }
        assertSources(launcher.recorded());
        assertEquals(2, seen.size(), String.valueOf(seen.keySet()));
        for (final Map.Entry<Integer, CollContext> e : seen.entrySet()) {
            final CollContext mine = e.getValue();
            assertNotSame(launcher, mine, "rank " + e.getKey() + " has a context of its own");
            assertEquals(launcher.recorded(), mine.recorded(), "rank " + e.getKey());
            assertSources(mine.recorded());
            assertEquals(4, mine.steps());
            assertEquals(1024, mine.eagerBytes());
            assertEquals(1024 - CollContext.DIRECT_HEADER, mine.directBytes(), "capped at the eager slot");
            assertEquals(100, mine.spinRounds());
            assertEquals(false, mine.cudaGdr().value());
            assertEquals(Duration.ofSeconds(20), mine.timeout());
            assertEquals(65536, mine.parallelBytes());
            assertEquals(launcher.chooseReduceThreads(2, 16, 1), mine.chooseReduceThreads(2, 16, 1));
        }
    }

    @Test
    void aCopyIsConcludedAndKeepsTheLimitsTheLauncherConcludedWith() {
        // NCCL_MAX_NCHANNELS above its default: a copy that re-read it from nothing would refuse MIN=20
        final CollContext c = new CollContext().settings(SettingsReader.ofEnv(Map.of("NCCL_MIN_NCHANNELS", "20",
            "NCCL_MAX_NCHANNELS", "32"))).conclude();
        final CollContext k = CollContext.copyOf(c);
        assertEquals(20, k.channels());
        assertEquals(c.recorded(), k.recorded());
        assertTrue(k.isConcluded());
        assertEquals("CollContext is already concluded: conclude() runs once per context",
            assertThrows(IllegalStateException.class, k::conclude).getMessage());
        assertSame(k, k.concludeOnce());
        assertEquals(c.recorded(), k.recorded(), "the code a copy is handed to reads and records nothing again");
        final IllegalStateException e = assertThrows(IllegalStateException.class,
            () -> CollContext.copyOf(new CollContext()));
        assertEquals("CollContext is not concluded: conclude() it before copying it to the ranks",
            e.getMessage());
    }
}
