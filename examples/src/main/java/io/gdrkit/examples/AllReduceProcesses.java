/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.examples;

import io.gdrkit.comm.Comm;
import io.gdrkit.comm.CommConfig;
import io.gdrkit.comm.Fabric;
import io.gdrkit.comm.RedOp;
import io.gdrkit.comm.bootstrap.UniqueId;
import io.gdrkit.comm.launch.Launcher;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * An allreduce of a {@code float[]} among rank processes on this host. Run without arguments it is the launcher:
 * it starts 3 copies of itself with gdrkit's {@link Launcher}, which gives each its rank and the run's id in the
 * environment (never on the command line). Each copy ({@code rank} argument) opens its communicator from that
 * environment with {@link Comm#fromLauncher} over the shared-memory fabric and checks the sum. Under
 * {@code gdrkit launch -n 3 -- java ... AllReduceProcesses rank} the ranks run the same way.
 */
public final class AllReduceProcesses {
    private AllReduceProcesses() {
    }

    public static void main(final String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("rank")) {
            rank();
            return;
        }
        final int nranks = 3;
        final String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        final List<String> command = List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp",
            System.getProperty("java.class.path"), AllReduceProcesses.class.getName(), "rank");
        final Launcher.Result result = Launcher.run(new Launcher.Spec(nranks, 0, nranks, null,
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), command, null, Duration.ofSeconds(10),
            Duration.ofSeconds(60), Map.of()), new Launcher.Listener() {
                @Override
                public void started(final UniqueId id) {
                    // the ranks get the id through their environment
                }

                @Override
                public void rankFailed(final int rank, final int exitCode) {
                    System.err.println("rank " + rank + " exited with " + exitCode);
                }
            });
        if (result.exitCode() != 0) {
            throw new IllegalStateException("the ranks failed: " + result);
        }
        System.out.println("allreduce over " + nranks + " rank processes: every rank checked its sum");
    }

    private static void rank() {
        try (Comm comm = Comm.fromLauncher(new CommConfig().fabric(Fabric.SHM))) {
            final int n = comm.size();
            final float[] x = new float[100_000];
            for (int i = 0; i < x.length; i++) {
                x[i] = comm.rank() * 2 + i % 5;
            }
            final float[] sum = new float[x.length];
            comm.allReduce(x, sum, RedOp.SUM);
            for (int i = 0; i < x.length; i++) {
                final float want = n * (n - 1) + n * (i % 5);
                if (sum[i] != want) {
                    throw new IllegalStateException("rank " + comm.rank() + " element " + i + ": " + sum[i]
                        + ", expected " + want);
                }
            }
        }
    }
}
