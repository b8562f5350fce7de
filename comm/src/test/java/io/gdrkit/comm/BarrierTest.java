/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static io.gdrkit.comm.ThreadRanks.assertNoErrors;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link Communicator#barrier()}: no rank leaves a barrier before every rank has entered it, round after round,
 * through shared memory and over the NICs (the shm path off); a barrier mixed with collectives keeps their rounds
 * in step; a rank that never comes ends the others with a named error at the timeout. And the sizes the
 * collectives' benchmark warms the JIT with before it times them.
 */
class BarrierTest {
    @org.junit.jupiter.api.Test
    void theJitWarmUpVisitsEverySizeOfTheSweepOrAtMostSixtyFourSpreadOverIt() {
        // the 0-byte row too: its zero-count branch must be in the profile C2 compiles from
        assertEquals(java.util.List.of(0L, 8L, 64L, 512L), CollRun.warmSizes(java.util.List.of(0L, 8L, 64L, 64L,
            512L)));
        final java.util.List<Long> many = new java.util.ArrayList<>();
        for (long b = 4; b <= 4 * 1000; b += 4) {
            many.add(b);
        }
        final java.util.List<Long> w = CollRun.warmSizes(many);
        assertEquals(CollRun.WARM_SIZES, w.size());
        assertEquals(4L, w.get(0));
        assertEquals(4000L, w.get(w.size() - 1));
        for (int i = 1; i < w.size(); i++) {
            assertTrue(w.get(i) > w.get(i - 1), w.toString());
        }
    }

    private static final SettingsReader NONE = SettingsReader.ofEnv(Map.of());
    private static final int ROUNDS = 40;

    private static CollContext ctx(final boolean shm) {
        return new CollContext().channels(1).shmDirect(shm).timeout(Duration.ofSeconds(5)).settings(NONE);
    }

    @ParameterizedTest(name = "shm path {0}")
    @ValueSource(booleans = {true, false})
    void noRankLeavesBeforeEveryRankHasEntered(final boolean shm) throws Exception {
        final int np = 3;
        final AtomicInteger[] entered = new AtomicInteger[ROUNDS];
        for (int i = 0; i < ROUNDS; i++) {
            entered[i] = new AtomicInteger();
        }
        final int[] seen = new int[np * ROUNDS];
        final Throwable[] err = ThreadRanks.run(np, CollWorld.TransportKind.IB, r -> ctx(shm), NONE,
            Duration.ofSeconds(120), (rank, c, a) -> {
                assertEquals(shm, c.shmPathOpen(), c.directPath());
                final RegisteredBuffer b = c.register(a.allocate(64, 64));
                for (int i = 0; i < ROUNDS; i++) {
                    // a different rank comes last each round, late enough that a barrier that let anyone through
                    // early would be seen: every rank counts itself in before it enters
                    if (rank == i % np) {
                        Thread.sleep(i % 4 == 0 ? 20 : 1);
                    }
                    entered[i].incrementAndGet();
                    c.barrier();
                    seen[rank * ROUNDS + i] = entered[i].get();
                    if (i % 5 == 4) {
                        // a collective between barriers stays in step with them
                        b.seg().set(java.lang.foreign.ValueLayout.JAVA_INT, 0, rank + i);
                        Collectives.allReduce(c, b, b, 1, DataType.INT32, RedOp.SUM);
                        assertEquals(3 * i + 3, b.seg().get(java.lang.foreign.ValueLayout.JAVA_INT, 0));
                    }
                }
            });
        assertNoErrors(err);
        for (int i = 0; i < np * ROUNDS; i++) {
            assertEquals(np, seen[i], "rank " + i / ROUNDS + " left barrier " + i % ROUNDS + " early");
        }
    }

    @ParameterizedTest(name = "shm path {0}")
    @ValueSource(booleans = {true, false})
    void aRankThatNeverComesEndsTheOthersWithANamedError(final boolean shm) throws Exception {
        final Throwable[] err = ThreadRanks.run(2, CollWorld.TransportKind.IB, r -> ctx(shm).timeout(
            Duration.ofMillis(800)), NONE, Duration.ofSeconds(60), (rank, c, a) -> {
                if (rank == 0) {
                    c.barrier();
                } else {
                    Thread.sleep(3000); // never enters; stays alive past rank 0's timeout
                }
            });
        assertNotNull(err[0], "rank 0 returned from a barrier rank 1 never entered");
        final CollException e = assertInstanceOf(CollException.class, err[0]);
        assertTrue(e.getMessage().contains("rank 0") && e.getMessage().contains("800 ms"), e.getMessage());
    }
}
