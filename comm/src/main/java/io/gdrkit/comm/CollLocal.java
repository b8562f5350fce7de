/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.bootstrap.BootstrapContext;
import io.gdrkit.comm.bootstrap.BootstrapRoot;
import io.gdrkit.softnic.SoftNicDriver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * Runs a collective sweep with every rank a thread of this JVM: one bootstrap root, and for IB one software NIC
 * driver on the in-JVM fabric with a device per rank. Returns rank 0's rows (every rank computes the same).
 */
public final class CollLocal {
    private CollLocal() {
    }

    /**
     * Runs a sweep with {@code np} ranks as threads of this JVM, on host memory.
     *
     * @param np       the number of ranks
     * @param kind     the transport the ranks connect through
     * @param cfg      the sweep: operation, type, sizes, iterations
     * @param coll     the collectives' tuning
     * @param settings where settings not in {@code coll} come from
     * @param timeout  the timeout of every wait
     * @param row      called with each result row as rank 0 produces it
     * @return rank 0's result rows
     */
    public static List<CollResult> run(final int np, final CollWorld.TransportKind kind, final CollRun.Config cfg,
                                       final CollContext coll, final SettingsReader settings,
                                       final Duration timeout, final Consumer<CollResult> row) {
        return run(np, kind, cfg, coll, settings, timeout, row, (r, c) -> { }, null);
    }

    /**
     * As above; {@code inspect} sees each rank's communicator after its sweep, on the rank's thread; with
     * {@code gpuSpec} the buffers are on a GPU ({@link CollWorld#open(Bootstrap, WorldContext)}).
     *
     * @param np       the number of ranks
     * @param kind     the transport the ranks connect through
     * @param cfg      the sweep: operation, type, sizes, iterations
     * @param coll     the collectives' tuning
     * @param settings where settings not in {@code coll} come from
     * @param timeout  the timeout of every wait
     * @param row      called with each result row as rank 0 produces it
     * @param inspect  called with each rank and its communicator after its sweep, or null
     * @param gpuSpec  the GPU spec for the buffers, or null for host memory
     * @return rank 0's result rows
     */
    public static List<CollResult> run(final int np, final CollWorld.TransportKind kind, final CollRun.Config cfg,
                                       final CollContext coll, final SettingsReader settings,
                                       final Duration timeout, final Consumer<CollResult> row,
                                       final BiConsumer<Integer, Communicator> inspect, final String gpuSpec) {
        if (np < 1 || np > 64) {
            throw new IllegalArgumentException("--np " + np + " outside 1..64");
        }
        coll.concludeOnce();
        final List<CollResult> rows = new ArrayList<>();
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        // the ranks are threads of this JVM: all np on this host
        final CollWorld.NicProgress progress = CollWorld.nicProgress(np);
        try (BootstrapRoot root = BootstrapRoot.startLoopback(np, timeout);
             SoftNicDriver driver = kind == CollWorld.TransportKind.IB
                 ? SoftNicDriver.launch(progress.context()) : null) {
            final Thread[] threads = new Thread[np];
            for (int r = 0; r < np; r++) {
                final int rank = r;
                threads[r] = Thread.ofPlatform().name("coll-rank-" + r).start(() -> {
                    Bootstrap b = null;
                    try {
                        b = Bootstrap.init(new BootstrapContext().id(root.id()).rank(rank).localRank(rank).nranks(np)
                            .timeout(timeout));
                        final CollContext mine = CollContext.copyOf(coll);
                        try (CollWorld w = CollWorld.open(b, new WorldContext().fabric(Fabric.INJVM)
                            .sharedDriver(driver).transport(kind).coll(mine).settings(settings).timeout(timeout)
                            .gpu(gpuSpec))) {
                            if (kind == CollWorld.TransportKind.IB) {
                                w.communicator().nicProgress(progress.description());
                            }
                            final List<CollResult> got = CollRun.run(w.communicator(), cfg, rank == 0 ? row : x -> { });
                            inspect.accept(rank, w.communicator());
                            if (rank == 0) {
                                synchronized (rows) {
                                    rows.addAll(got);
                                }
                            }
                        }
                        b.close();
                    } catch (final Throwable e) {
                        failure.compareAndSet(null, e);
                        if (b != null) {
                            b.abort(String.valueOf(e.getMessage()));
                        }
                    }
                });
            }
            for (final Thread t : threads) {
                try {
                    t.join();
                } catch (final InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new CollException("interrupted while ranks ran");
                }
            }
        }
        final Throwable f = failure.get();
        if (f != null) {
            throw f instanceof CollException ce ? ce : new CollException(String.valueOf(f.getMessage()), f);
        }
        return rows;
    }
}
