/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertFalse;

import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.bootstrap.BootstrapContext;
import io.gdrkit.comm.bootstrap.BootstrapRoot;
import io.gdrkit.softnic.SoftNicDriver;
import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.IntFunction;

/** Ranks as threads of this JVM over the in-JVM fabric, each with its own collective context: the tests' harness. */
final class ThreadRanks {
    private ThreadRanks() {
    }

    /** What one rank does with its communicator and an arena. */
    interface Body {
        void run(int rank, Communicator c, Arena a) throws Exception;
    }

    /**
     * Runs {@code body} on {@code np} ranks, rank r with the context {@code context.apply(r)} (and {@code settings}
     * for the world's other components); returns each rank's
     * error (null: none). A rank that fails aborts the bootstrap so the others end too; a rank still running after
     * {@code join} fails the test as a hang.
     */
    static Throwable[] run(final int np, final CollWorld.TransportKind kind, final IntFunction<CollContext> context,
                           final SettingsReader settings, final Duration join, final Body body) throws Exception {
        try (SoftNicDriver driver = SoftNicDriver.launch(CollWorld.nicContext())) {
            return worlds(np, (rank, b) -> CollWorld.open(b, new WorldContext().fabric(Fabric.INJVM)
                .sharedDriver(driver).transport(kind).coll(context.apply(rank)).settings(settings)
                .timeout(Duration.ofSeconds(5))), join, (rank, w, a) -> body.run(rank, w.communicator(), a));
        }
    }

    /** How rank {@code rank} opens its world once its bootstrap is up. */
    interface Opener {
        CollWorld open(int rank, Bootstrap b) throws Exception;
    }

    /** What one rank does with its world and an arena. */
    interface WorldBody {
        void run(int rank, CollWorld w, Arena a) throws Exception;
    }

    /**
     * Runs {@code body} on {@code np} ranks, each opening its world with {@code open} (any fabric, driver or host
     * record); returns each rank's error (null: none), as {@link #run}.
     */
    static Throwable[] worlds(final int np, final Opener open, final Duration join, final WorldBody body)
        throws Exception {
        final AtomicReferenceArray<Throwable> errors = new AtomicReferenceArray<>(np);
        try (BootstrapRoot root = BootstrapRoot.startLoopback(np, Duration.ofSeconds(20))) {
            final Thread[] t = new Thread[np];
            for (int r = 0; r < np; r++) {
                final int rank = r;
                t[r] = Thread.ofPlatform().start(() -> {
                    Bootstrap b = null;
                    CollWorld w = null;
                    try (Arena a = Arena.ofShared()) {
                        b = Bootstrap.init(new BootstrapContext().id(root.id()).rank(rank).nranks(np)
                            .timeout(Duration.ofSeconds(20)));
                        w = open.open(rank, b);
                        body.run(rank, w, a);
                    } catch (final Throwable e) {
                        errors.set(rank, e);
                        if (b != null) {
                            b.abort(String.valueOf(e.getMessage()));
                        }
                    } finally {
                        if (w != null) {
                            try {
                                w.close();
                            } catch (final RuntimeException ignored) {
                                // another rank is gone: what matters is the error above
                            }
                        }
                        if (b != null) {
                            b.close();
                        }
                    }
                });
            }
            for (final Thread th : t) {
                th.join(join.toMillis());
                assertFalse(th.isAlive(), "a rank hung");
            }
        }
        final Throwable[] out = new Throwable[np];
        for (int r = 0; r < np; r++) {
            out[r] = errors.get(r);
        }
        return out;
    }

    /** The shm path's run directories in /dev/shm now (gdrkit-colld-*), sorted: a run must leave none behind. */
    static java.util.SortedSet<String> shmRunFiles() throws java.io.IOException {
        final java.util.SortedSet<String> out = new java.util.TreeSet<>();
        final java.nio.file.Path shm = java.nio.file.Path.of("/dev/shm");
        if (java.nio.file.Files.isDirectory(shm)) {
            try (java.util.stream.Stream<java.nio.file.Path> s = java.nio.file.Files.list(shm)) {
                s.map(x -> x.getFileName().toString()).filter(x -> x.startsWith("gdrkit-colld-")).forEach(out::add);
            }
        }
        return out;
    }

    /** Fails with the first rank's error (its rank in the message, the error as the cause) when any rank had one. */
    static void assertNoErrors(final Throwable[] err) {
        for (int r = 0; r < err.length; r++) {
            if (err[r] != null) {
                throw new AssertionError("rank " + r + ": " + err[r], err[r]);
            }
        }
    }
}
