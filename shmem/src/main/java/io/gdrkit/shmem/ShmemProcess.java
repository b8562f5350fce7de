/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.devices.GpuDevices;
import io.gdrkit.gpu.sim.SimGpuConfig;
import io.gdrkit.gpu.sim.SimGpuSystem;
import io.gdrkit.gpu.sim.SimPreset;
import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.softnic.fabric.ShmFabric;
import java.nio.file.Path;
import java.util.function.Function;

/**
 * One PE in this process, as NVSHMEM runs one PE per process: the rank and the root come from a launcher
 * ({@code gdrkit launch}: the transport's bootstrap), the software NIC is this process's own on the shared-memory
 * fabric (LID rank + 1, rings in {@code /dev/shm/gdrkit-shmem-<run>}), the GPU this process's (a simulated GPU of
 * its own, or the CUDA device: several processes may share one, each with its own context).
 */
public final class ShmemProcess {
    /** Ring bytes per fabric link: 4 MiB, as the collectives' ranks use. */
    private static final int LINK_CAPACITY = 1 << 22;
    private static final String DIR_PREFIX = "gdrkit-shmem-";

    private ShmemProcess() {
    }

    /**
     * Runs {@code body} on this process's PE; every rank of {@code boot} must call it. Closes {@code boot}.
     *
     * @param <R>  the type of the result
     * @param ctx  the run's settings: the heap size, the transport and the GPU
     * @param boot this process's bootstrap, joined to every other rank of the run
     * @param body what this PE runs
     * @return what {@code body} returned
     */
    public static <R> R run(final ShmemContext ctx, final Bootstrap boot, final Function<ShmemPe, R> body) {
        synchronized (ctx) {
            if (!ctx.isConcluded()) {
                ctx.nPes(boot.nranks());
            }
            ctx.concludeOnce();
        }
        final int rank = boot.rank();
        // each process's fabric removes its own files when it closes, the last one out the directory: no process
        // removes another's (rank 0 walking the directory at its end raced the peers' own removal, and a file gone
        // mid-walk failed a run that had succeeded: "link-2-2: no such file"). Runs killed -9 are swept here.
        ShmFabric.sweepStaleDirectories(ShmFabric.defaultBase(), DIR_PREFIX);
        final Path dir = ShmFabric.defaultBase().resolve(DIR_PREFIX + Long.toHexString(boot.context().id().runId()));
        SimGpuSystem sims = null;
        GpuDevice gpu = null;
        try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext()
                .progressMode(SoftNicContext.ProgressMode.DEDICATED).idleStrategy(ctx.idle()),
                new ShmFabric(dir, LINK_CAPACITY, boot.nranks(), null, false))) {
            if (ctx.gpu().startsWith("sim:")) {
                sims = SimGpuSystem.create(SimGpuConfig.throughput(ctx.seed() + rank).memBytes(
                    Math.max(ctx.heapBytes() * 2, 64L << 20)), SimPreset.byLabel(ctx.gpu().substring(4)));
                gpu = sims.gpu(0);
            } else {
                gpu = GpuDevices.open(ctx.gpu());
            }
            final SoftDevice nic = driver.addDevice("shmem" + rank, rank + 1);
            try (ShmemPe pe = ShmemPe.init(ctx, boot, gpu, nic)) {
                return body.apply(pe);
            }
        } catch (final RuntimeException e) {
            try {
                boot.abort("PE " + rank + ": " + e.getMessage()); // the peers end with a named remote error
            } catch (final RuntimeException ignored) {
                // closed already (a PE that failed at init aborted the run itself)
            }
            throw e;
        } finally {
            if (sims != null) {
                sims.close();
            } else if (gpu != null) {
                gpu.close();
            }
        }
    }
}
