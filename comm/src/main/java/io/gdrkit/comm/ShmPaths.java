/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.bootstrap.Bootstrap;
import java.nio.file.Path;

/**
 * What a communicator's shared memory carries, set up once with every rank: with every rank on this host, the shm
 * path (one {@link ShmDirect} of the world: every collective, and the direct rounds); with ranks on several hosts
 * and as many on each, the hierarchical path (one {@link ShmDirect} per host, {@link HierCollectives}); otherwise
 * none, and why. The tuning table built from it says which collective takes which path.
 *
 * @param shm        the world's shared rounds (null: not every rank on this host, or not open)
 * @param shmColl    every collective over {@code shm} (null with it)
 * @param hostShm    this host's shared rounds on the hierarchical path (null: not open)
 * @param hier       the hierarchical collectives over {@code hostShm} (null with it)
 * @param directPath where direct rounds go, and why
 * @param tuning     the tuning table
 * @param cma        the single-copy rounds over {@code shm} (null: none)
 */
record ShmPaths(ShmDirect shm, ShmCollectives shmColl, ShmDirect hostShm, HierCollectives hier, String directPath,
                CollTuning tuning, CmaPull cma) {

    /**
     * Opens the shared memory every rank can use. Collective: every rank calls it alike, whatever its settings
     * ({@link ShmDirect#open}); {@code hostOf} (rank -> host, the same on every rank; null: not known, every rank
     * tries the world's files, and ranks that cannot map them say so) decides between one world group and one group
     * per host. Group files go under {@code base} (tests give fake hosts different ones).
     */
    static ShmPaths open(final Bootstrap b, final CollContext ctx, final int[] hostOf, final Path base,
                         final int shmDirectBytes, final int netDirect, final Pacer pace, final long timeoutNanos,
                         final ParallelReducer reducer, final int reduceThreads) {
        final int n = b.nranks();
        if (n == 1) {
            return new ShmPaths(null, null, null, null, "none (one rank)",
                new CollTuning(ctx.algo(), ctx.proto(), n, 0, "one rank", 0, 1), null);
        }
        final boolean wanted = ctx.shmDirect().value();
        final HierCollectives.Layout layout = hostOf == null ? null : HierCollectives.Layout.of(hostOf);
        if (hostOf == null || layout.members() == null && layout.why().equals(HierCollectives.Layout.ONE_HOST)) {
            // the slots carry every collective's rounds (ShmCollectives), not only the direct ones
            // the settings whose rounds every rank must take alike: the direct limit and the tree's
            final ShmDirect.Opened o = ShmDirect.open(b, wanted, Math.max(Communicator.SHM_SLOT_BYTES, shmDirectBytes),
                base, shmDirectBytes & 0xffffffffL | (long) ctx.treeBytes() << 32);
            final ShmDirect shm = o.direct();
            // collective, as ShmDirect.open: every rank has the same answer, so all call it or none does
            final CmaPull.Opened c = shm == null ? null : CmaPull.open(b, shm, ctx.cmaBytes());
            final CmaPull cma = c == null ? null : c.cma();
            final CollTuning tuning = new CollTuning(ctx.algo(), ctx.proto(), n, shm == null ? 0 : shm.slotBytes(),
                o.why(), shmDirectBytes, reduceThreads);
            if (c != null) {
                tuning.singleCopy(c.why());
            }
            tuning.treeBytes(ctx.treeBytes());
            return new ShmPaths(shm, shm == null ? null : new ShmCollectives(shm, pace, timeoutNanos, reducer, cma),
                null, null, shm != null ? "shm, up to " + shmDirectBytes + " B (" + o.why() + "; " + c.why() + ")"
                : "nic, up to " + netDirect + " B (" + o.why() + ")", tuning, cma);
        }
        final int hosts = layout.members() == null ? java.util.Arrays.stream(hostOf).max().orElse(0) + 1
            : layout.members().length;
        final String across = "ranks on " + hosts + " hosts";
        String hierWhy = layout.why();
        ShmDirect hostShm = null;
        HierCollectives hier = null;
        if (layout.members() != null) {
            // every rank of the world calls it, each with its own host's ranks: the same answer everywhere
            final int[] group = layout.members()[layoutHost(layout, b.rank())];
            final ShmDirect.Opened o = ShmDirect.open(b, wanted, Communicator.SHM_SLOT_BYTES, base, shmDirectBytes,
                group);
            hostShm = o.direct();
            if (hostShm != null) {
                hier = new HierCollectives(new ShmCollectives(hostShm, pace, timeoutNanos, reducer), layout, b.rank());
            } else {
                hierWhy = "each host's shared memory is not open: " + o.why();
            }
        }
        return new ShmPaths(null, null, hostShm, hier, "nic, up to " + netDirect + " B (" + across + ")",
            new CollTuning(ctx.algo(), ctx.proto(), n, 0, across, shmDirectBytes, reduceThreads,
                hostShm == null ? 0 : hostShm.slotBytes(), hierWhy), null);
    }

    private static int layoutHost(final HierCollectives.Layout l, final int rank) {
        for (int h = 0; h < l.members().length; h++) {
            if (java.util.Arrays.binarySearch(l.members()[h], rank) >= 0) {
                return h;
            }
        }
        throw new IllegalArgumentException("rank " + rank + " is on no host of the layout");
    }

    /** The shared rounds in use, either path's (null: none): what a fault on a mapped file is told by. */
    ShmDirect mapped() {
        return shm != null ? shm : hostShm;
    }

    /** Closes the shared rounds. */
    void close() {
        if (cma != null) {
            cma.close();
        }
        if (shm != null) {
            shm.close();
        }
        if (hostShm != null) {
            hostShm.close();
        }
    }
}
