/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Pins and releases run on threads of their own: the test runner's threads keep their masks. */
class CpuAffinityTest {

    private static void onFreshThread(final Runnable r) throws Exception {
        final AtomicReference<Throwable> failed = new AtomicReference<>();
        final Thread t = Thread.ofPlatform().name("affinity-test").start(() -> {
            try {
                r.run();
            } catch (final Throwable e) {
                failed.set(e);
            }
        });
        t.join(30_000);
        assertTrue(!t.isAlive(), "the affinity test thread did not end in 30 s");
        if (failed.get() instanceof Exception e) {
            throw e;
        }
        if (failed.get() instanceof Error e) {
            throw e;
        }
    }

    @Test
    void describesCpuListsAsLinuxDoes() {
        assertEquals("0-3,8,10-11", CpuAffinity.describe(new int[] {11, 0, 1, 2, 3, 8, 10}));
        assertEquals("5", CpuAffinity.describe(new int[] {5}));
        assertEquals("", CpuAffinity.describe(new int[0]));
    }

    @Test
    void pinsTheCallingThreadOnlyAndReleasesIt() throws Exception {
        assumeTrue(CpuAffinity.unavailable().isEmpty(), () -> CpuAffinity.unavailable().orElse(""));
        final int[] all = CpuAffinity.allowed();
        assertTrue(all.length >= 1, "a thread may run on no CPU?");
        final int last = all[all.length - 1];
        onFreshThread(() -> {
            CpuAffinity.set(last);
            assertArrayEquals(new int[] {last}, CpuAffinity.allowed());
            CpuAffinity.release();
            assertArrayEquals(all, CpuAffinity.allowed());
        });
        // this thread was never pinned
        assertArrayEquals(all, CpuAffinity.allowed());
    }

    @Test
    void aThreadStartedByAPinnedOneInheritsItsMaskUntilItReleases() throws Exception {
        assumeTrue(CpuAffinity.unavailable().isEmpty(), () -> CpuAffinity.unavailable().orElse(""));
        final int[] all = CpuAffinity.allowed();
        assumeTrue(all.length >= 2, "one CPU: pinned and unpinned look alike");
        onFreshThread(() -> {
            CpuAffinity.set(all[0]);
            final AtomicReference<int[]> inherited = new AtomicReference<>();
            final AtomicReference<int[]> released = new AtomicReference<>();
            final Thread child = Thread.ofPlatform().start(() -> {
                inherited.set(CpuAffinity.allowed());
                CpuAffinity.release();
                released.set(CpuAffinity.allowed());
            });
            try {
                child.join(30_000);
            } catch (final InterruptedException e) {
                throw new IllegalStateException(e);
            }
            assertArrayEquals(new int[] {all[0]}, inherited.get());
            assertArrayEquals(all, released.get());
        });
    }

    @Test
    void refusesBadSetsWithNamedErrors() throws Exception {
        assumeTrue(CpuAffinity.unavailable().isEmpty(), () -> CpuAffinity.unavailable().orElse(""));
        final int[] all = CpuAffinity.allowed();
        onFreshThread(() -> {
            assertTrue(assertThrows(IllegalArgumentException.class, CpuAffinity::set).getMessage()
                .contains("empty"));
            assertTrue(assertThrows(IllegalArgumentException.class, () -> CpuAffinity.set(-1)).getMessage()
                .contains("CPU -1 outside 0..1023"));
            assertTrue(assertThrows(IllegalArgumentException.class, () -> CpuAffinity.set(1024)).getMessage()
                .contains("CPU 1024"));
            // the highest CPU number a mask holds is not one this process may use (unless it has 1024 CPUs)
            assumeTrue(all[all.length - 1] < CpuAffinity.MAX_CPUS - 1, "this process may use CPU 1023");
            final IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> CpuAffinity.set(CpuAffinity.MAX_CPUS - 1));
            assertTrue(e.getMessage().contains("sched_setaffinity to CPUs 1023 failed: EINVAL"), e.getMessage());
            // the refused call changed nothing
            assertArrayEquals(all, CpuAffinity.allowed());
        });
    }
}
