/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.examples;

import io.gdrkit.comm.Comm;
import io.gdrkit.comm.CommConfig;
import io.gdrkit.comm.CommRoot;
import io.gdrkit.comm.Fabric;
import io.gdrkit.comm.RedOp;
import io.gdrkit.comm.bootstrap.UniqueId;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * An allreduce of a {@code float[]} among 4 ranks that are threads of this JVM: a {@link CommRoot} hands out the
 * run's id, each thread opens its {@link Comm} with it and its rank, and every rank ends with the element-wise
 * sum. The same code runs ranks as processes or on other hosts with another {@link Fabric}.
 */
public final class AllReduceThreads {
    private AllReduceThreads() {
    }

    public static void main(final String[] args) throws Exception {
        final int nranks = 4;
        final int len = 1 << 16;
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        try (CommRoot root = CommRoot.startLoopback(nranks)) {
            final UniqueId id = root.id();
            final List<Thread> ranks = new ArrayList<>();
            for (int r = 0; r < nranks; r++) {
                final int rank = r;
                ranks.add(Thread.ofPlatform().name("rank-" + r).start(() -> {
                    try (Comm comm = Comm.open(new CommConfig().id(id).rank(rank).nranks(nranks)
                        .fabric(Fabric.INJVM))) {
                        final float[] grad = new float[len];
                        for (int i = 0; i < len; i++) {
                            grad[i] = rank + i % 10;
                        }
                        comm.allReduce(grad, grad, RedOp.SUM); // in place
                        for (int i = 0; i < len; i++) {
                            final float want = nranks * (nranks - 1) / 2f + nranks * (i % 10);
                            if (grad[i] != want) {
                                throw new IllegalStateException("rank " + rank + " element " + i + ": " + grad[i]
                                    + ", expected " + want);
                            }
                        }
                        if (rank == 0) {
                            System.out.println("allreduce of " + len + " floats over " + nranks + " ranks (threads, "
                                + comm.info().fabric() + " fabric, simulated NICs): every element checked");
                        }
                    } catch (final Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }));
            }
            for (final Thread t : ranks) {
                t.join(120_000);
                if (t.isAlive()) {
                    throw new IllegalStateException(t.getName() + " did not finish within 120 s");
                }
            }
        }
        if (failure.get() != null) {
            throw new IllegalStateException("a rank failed: " + failure.get(), failure.get());
        }
    }
}
