/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

import io.gdrkit.comm.bootstrap.BootstrapRoot;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.devices.GpuDevices;
import io.gdrkit.gpu.sim.SimGpuConfig;
import io.gdrkit.gpu.sim.SimGpuSystem;
import io.gdrkit.gpu.sim.SimPreset;
import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * N PEs in one JVM, one thread each (as N processes would be): a software NIC per PE on the in-JVM fabric (each on
 * its own NIC thread: {@code DEDICATED} progress, so nobody's polling drives it, which is what lets a GPU ring its
 * doorbell), a GPU per PE (simulated GPUs of one system, or CUDA devices), the transport's bootstrap for rank setup.
 */
public final class ShmemWorld {
    private ShmemWorld() {
    }

    /**
     * Runs {@code body} on every PE and returns the results by PE; the first failure is rethrown.
     *
     * @param <R>  the type of each PE's result
     * @param ctx  the run's settings: the number of PEs, the heap size, the transport and the GPUs
     * @param body what each PE runs, on its own thread
     * @return each PE's result, indexed by PE number
     */
    public static <R> List<R> run(final ShmemContext ctx, final Function<ShmemPe, R> body) {
        ctx.concludeOnce();
        final int n = ctx.nPes();
        SimGpuSystem sims = null;
        final GpuDevice[] gpus = new GpuDevice[n];
        final long waitSeconds = ctx.timeout().toSeconds() * 4 + 30;
        try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext()
                .progressMode(SoftNicContext.ProgressMode.DEDICATED).idleStrategy(ctx.idle()));
             BootstrapRoot root = BootstrapRoot.startLoopback(n, ctx.timeout())) {
            if (ctx.gpu().startsWith("sim:")) {
                final SimPreset p = SimPreset.byLabel(ctx.gpu().substring(4));
                final SimPreset[] ps = new SimPreset[n];
                java.util.Arrays.fill(ps, p);
                sims = SimGpuSystem.create(SimGpuConfig.throughput(ctx.seed()).memBytes(
                    Math.max(ctx.heapBytes() * 2, 64L << 20)), ps);
                for (int i = 0; i < n; i++) {
                    gpus[i] = sims.gpu(i);
                }
            } else {
                for (int i = 0; i < n; i++) {
                    gpus[i] = GpuDevices.open(ctx.gpu()); // every PE on the same CUDA device
                }
            }
            final SoftDevice[] nics = new SoftDevice[n];
            for (int i = 0; i < n; i++) {
                nics[i] = driver.addDevice("shmem" + i);
            }
            final ExecutorService ex = Executors.newFixedThreadPool(n, r -> Thread.ofPlatform().daemon(true)
                .name("shmem-pe").unstarted(r));
            try {
                final List<Future<R>> fs = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    final int rank = i;
                    fs.add(ex.submit(() -> {
                        try (ShmemPe pe = ShmemPe.init(ctx, root.id(), rank, gpus[rank], nics[rank])) {
                            return body.apply(pe);
                        }
                    }));
                }
                final List<R> out = new ArrayList<>();
                RuntimeException first = null;
                for (int i = 0; i < n; i++) {
                    try {
                        out.add(fs.get(i).get(waitSeconds, TimeUnit.SECONDS));
                    } catch (final ExecutionException e) {
                        out.add(null);
                        final Throwable c = e.getCause();
                        final RuntimeException re = c instanceof RuntimeException r ? r
                            : new ShmemException(ShmemException.Reason.PE_DEAD, "PE " + i + " failed: " + c, c);
                        if (first == null || first instanceof ShmemException s
                            && s.reason() == ShmemException.Reason.PE_DEAD && re instanceof ShmemException r2
                            && r2.reason() != ShmemException.Reason.PE_DEAD) {
                            first = re; // the cause, not the peers that saw it die
                        }
                    } catch (final TimeoutException e) {
                        throw new ShmemException(ShmemException.Reason.TIMEOUT, "PE " + i + " did not finish within "
                            + waitSeconds + " s");
                    } catch (final InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new ShmemException(ShmemException.Reason.TIMEOUT, "interrupted waiting for PE " + i);
                    }
                }
                if (first != null) {
                    throw first;
                }
                return out;
            } finally {
                ex.shutdownNow();
            }
        } finally {
            if (sims != null) {
                sims.close();
            } else {
                for (final GpuDevice g : gpus) {
                    if (g != null) {
                        g.close();
                    }
                }
            }
        }
    }
}
