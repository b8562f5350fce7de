/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.examples;

import io.gdrkit.comm.Comm;
import io.gdrkit.comm.CommConfig;
import io.gdrkit.comm.Fabric;
import io.gdrkit.comm.RedOp;
import io.gdrkit.comm.bootstrap.BootstrapContext;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * An allreduce among ranks that find their world in the environment their launcher gave them, with
 * {@link Comm#fromEnvironment}: {@code mpirun} or {@code srun --mpi=pmix} (PMIx), torchrun or a Kubernetes job
 * ({@code RANK}, {@code WORLD_SIZE}, {@code MASTER_ADDR}, {@code MASTER_PORT}), or {@code gdrkit launch}.
 *
 * <p>Run without arguments it plays torchrun: it starts 2 copies of itself with {@code RANK}, {@code WORLD_SIZE},
 * {@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE}, {@code MASTER_ADDR=127.0.0.1} and a free {@code MASTER_PORT}; rank
 * 0 serves the bootstrap root on that port, rank 1 connects to it. Each copy ({@code rank} argument) checks the sum
 * and says where its world came from. Under a real launcher, start the copies with the {@code rank} argument:
 * {@code mpirun -np 4 java -cp ... io.gdrkit.examples.AllReduceFromEnvironment rank}.
 */
public final class AllReduceFromEnvironment {
    private AllReduceFromEnvironment() {
    }

    public static void main(final String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("rank")) {
            rank();
            return;
        }
        final int nranks = 2;
        final int port;
        try (ServerSocket probe = new ServerSocket(0)) {
            port = probe.getLocalPort(); // a free port for rank 0's root (torchrun picks one the same way)
        }
        final String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        final List<Process> ranks = new ArrayList<>();
        for (int r = 0; r < nranks; r++) {
            final ProcessBuilder pb = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), AllReduceFromEnvironment.class.getName(), "rank").inheritIO();
            // this example plays the launcher: no other launcher's variables reach the copies
            pb.environment().keySet().removeIf(k -> k.equals(BootstrapContext.ENV_ID) || k.startsWith("PMIX_")
                || k.startsWith("SLURM_"));
            pb.environment().put("RANK", String.valueOf(r));
            pb.environment().put("WORLD_SIZE", String.valueOf(nranks));
            pb.environment().put("LOCAL_RANK", String.valueOf(r));
            pb.environment().put("LOCAL_WORLD_SIZE", String.valueOf(nranks));
            pb.environment().put("MASTER_ADDR", "127.0.0.1");
            pb.environment().put("MASTER_PORT", String.valueOf(port));
            ranks.add(pb.start());
        }
        int failed = 0;
        for (final Process p : ranks) {
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                failed++;
            } else if (p.exitValue() != 0) {
                failed++;
            }
        }
        if (failed > 0) {
            throw new IllegalStateException(failed + " of " + nranks + " ranks failed");
        }
        System.out.println("allreduce over " + nranks + " ranks started with torchrun's variables: every rank "
            + "checked its sum");
    }

    private static void rank() {
        try (Comm comm = Comm.fromEnvironment(new CommConfig().fabric(Fabric.SHM))) {
            final int n = comm.size();
            final float[] x = new float[100_000];
            for (int i = 0; i < x.length; i++) {
                x[i] = comm.rank() * 2 + i % 5;
            }
            comm.allReduce(x, x, RedOp.SUM); // in place
            for (int i = 0; i < x.length; i++) {
                final float want = n * (n - 1) + n * (i % 5);
                if (x[i] != want) {
                    throw new IllegalStateException("rank " + comm.rank() + " element " + i + ": " + x[i]
                        + ", expected " + want);
                }
            }
            System.out.println("rank " + comm.rank() + " of " + n + ": sum right; world from "
                + comm.info().worldSource());
        }
    }
}
