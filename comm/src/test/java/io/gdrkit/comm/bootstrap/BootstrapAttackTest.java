/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.host.FileDescriptorLimit;
import io.gdrkit.core.net.AcceptBackoff;
import java.net.InetSocketAddress;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Attacks on the bootstrap root's listener as a hostile local user would make them. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class BootstrapAttackTest {
    private static final Duration T = Duration.ofSeconds(20);

    /**
     * Out of file descriptors, the root's accept fails with EMFILE while a connection waits in the backlog: the
     * root backs off instead of spinning or ending its acceptor, and the ranks join once descriptors are free.
     */
    @Test
    void acceptOutOfDescriptorsBacksOffAndTheRanksJoinAfter() throws Exception {
        Assumptions.assumeTrue(FileDescriptorLimit.unavailable().isEmpty(), "no RLIMIT_NOFILE here");
        try (BootstrapRoot warm = BootstrapRoot.startLoopback(2, Duration.ofSeconds(60))) {
            join(warm); // loads what a join runs: no class file opens while no descriptor is free
        }
        try (BootstrapRoot root = BootstrapRoot.startLoopback(2, Duration.ofSeconds(60))) {
            final AcceptBackoff b = root.acceptBackoff();
            final InetSocketAddress at = new InetSocketAddress(root.id().host(), root.id().port());
            final List<SocketChannel> probes = new ArrayList<>();
            try {
                for (int i = 0; i < 4; i++) {
                    probes.add(SocketChannel.open()); // their descriptors now, connected later
                }
                try (var x = FileDescriptorLimit.exhaust()) {
                    // a descriptor closed late elsewhere in the JVM may still take a probe: then the next one
                    for (int i = 0; i < probes.size() && b.failures() < 3; i++) {
                        x.refill();
                        probes.get(i).connect(at);
                        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                        while (b.failures() < 3 && System.nanoTime() < deadline) {
                            Thread.sleep(1);
                        }
                    }
                }
            } finally {
                for (final SocketChannel p : probes) {
                    p.close();
                }
            }
            assertTrue(b.failures() >= 3, "accept failed and was retried: " + b.failures());
            assertTrue(b.lastError().contains("Too many open files"), b::lastError);
            join(root);
            assertEquals(0, b.delayNanos(), "the pause ended with the next accept");
        }
    }

    /** Two ranks join {@code root} and all-gather a byte each. */
    private static void join(final BootstrapRoot root) throws Exception {
        final ExecutorService ex = Executors.newFixedThreadPool(2);
        try {
            final List<Future<Integer>> fs = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                final int rank = r;
                fs.add(ex.submit(() -> {
                    try (Bootstrap bs = Bootstrap.init(new BootstrapContext().id(root.id()).rank(rank).nranks(2)
                        .timeout(T))) {
                        return bs.allGather(new byte[] {(byte) rank}).length;
                    }
                }));
            }
            for (final Future<Integer> f : fs) {
                assertEquals(2, f.get(60, TimeUnit.SECONDS));
            }
        } finally {
            ex.shutdownNow();
        }
    }
}
