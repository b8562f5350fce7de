/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import io.gdrkit.softnic.SoftNicContext;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A perftest-style run between two processes on this machine joined by the shared-memory fabric: a server process
 * ({@link PerfServerMain}) and the client in this JVM, which measures. What {@code gdrkit perf TEST --fabric shm
 * --loopback} prints, as records.
 */
public final class ShmLoopbackPerf {
    /** perftest's warm-up floor: the JIT needs tens of thousands of iterations before the loop runs compiled. */
    public static final long MIN_WARMUP = 50_000;

    private ShmLoopbackPerf() {
    }

    /**
     * The results of one run, in order.
     *
     * @param config the first size's configuration
     * @param bw     bandwidth rows (bandwidth tests)
     * @param lat    latency rows (latency tests)
     */
    public record Run(PerfConfig config, List<BwResult> bw, List<LatResult> lat) {
    }

    /**
     * Default warm-up for {@code size}-byte messages and {@code iters} iterations: at least {@link #MIN_WARMUP}
     * (or {@code iters} if larger), but no more than 16 GiB of data.
     */
    public static long defaultWarmup(final int size, final long iters) {
        return Math.max(1, Math.min(Math.max(iters, MIN_WARMUP), (1L << 34) / Math.max(1, size)));
    }

    /** The link capacity both processes' fabric uses for this MTU. */
    public static int linkCapacity(final int mtu) {
        return Integer.highestOneBit(Math.max(4 << 20, mtu * 4 + 4096) * 2 - 1);
    }

    /** perftest's defaults (1 QP, tx depth 128, rx depth 512, cq-mod 64, MTU 4096, 8 MiB buffer) at one size. */
    public static PerfConfig defaults(final PerfKind test, final int size, final long iters) {
        return new PerfConfig(test).size(size).iters(iters).warmup(0).numQps(1).txDepth(128).rxDepth(512).cqMod(64)
            .mtu(4096).inlineSize(test.bandwidth ? 0 : 220).bufferBytes(1L << 23)
            .progress(SoftNicContext.ProgressMode.INVOKER).conclude();
    }

    /**
     * Starts the server process, runs {@code cfg} from this JVM (warm-up {@code cfg.warmup()}, or
     * {@link #defaultWarmup} when 0), tells the server to quit and waits for it.
     *
     * @throws IllegalStateException naming what failed or what it waited for (the server listening, its exit)
     */
    public static Run run(final PerfConfig cfg) {
        final int port = freePort();
        final int capacity = linkCapacity(cfg.mtu());
        final List<BwResult> bw = new ArrayList<>();
        final List<LatResult> lat = new ArrayList<>();
        final Process server = start("shm", port, capacity);
        try {
            RemotePerf.runClient("127.0.0.1", port, "shm", capacity, cfg, new int[] {cfg.size()},
                s -> cfg.warmup() > 0 ? cfg.warmup() : defaultWarmup((int) s, cfg.iters()), new PerfListener() {
                    @Override
                    public void bw(final PerfConfig c, final BwResult r) {
                        bw.add(r);
                    }

                    @Override
                    public void lat(final PerfConfig c, final LatResult r) {
                        lat.add(r);
                    }
                }, true, null, false);
            if (!server.waitFor(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the perf server process did not exit within 30 s after QUIT");
            }
            return new Run(cfg, List.copyOf(bw), List.copyOf(lat));
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for the perf server process", e);
        } finally {
            if (server.isAlive()) {
                server.destroyForcibly();
            }
        }
    }

    private static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (final IOException e) {
            throw new IllegalStateException("no free loopback port for the perf server: " + e.getMessage(), e);
        }
    }

    /** Starts the server as a child JVM and waits (30 s at most) until it says it listens. */
    private static Process start(final String fabric, final int port, final int capacity) {
        final String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        final Process p;
        try {
            p = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), PerfServerMain.class.getName(), "--fabric", fabric, "--port",
                Integer.toString(port), "--link-capacity", Integer.toString(capacity))
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        } catch (final IOException e) {
            throw new IllegalStateException("cannot start the perf server process: " + e.getMessage(), e);
        }
        final BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(),
            StandardCharsets.UTF_8));
        final CompletableFuture<Boolean> ready = CompletableFuture.supplyAsync(() -> {
            try {
                for (String line; (line = r.readLine()) != null; ) {
                    if (line.startsWith("# server: waiting")) {
                        return true;
                    }
                }
                return false;
            } catch (final IOException e) {
                return false;
            }
        });
        try {
            if (!Boolean.TRUE.equals(ready.get(30, TimeUnit.SECONDS))) {
                p.destroyForcibly();
                throw new IllegalStateException("the perf server process ended before listening on port " + port);
            }
        } catch (final TimeoutException e) {
            p.destroyForcibly();
            throw new IllegalStateException("timed out after 30 s waiting for the perf server process to listen on "
                + "port " + port, e);
        } catch (final ExecutionException e) {
            p.destroyForcibly();
            throw new IllegalStateException("waiting for the perf server process: " + e.getMessage(), e);
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
            p.destroyForcibly();
            throw new IllegalStateException("interrupted starting the perf server process", e);
        }
        // keep draining its output so it never blocks on a full pipe
        Thread.ofPlatform().daemon(true).start(() -> {
            try {
                while (r.readLine() != null) {
                    // discard
                }
            } catch (final IOException ignored) {
                // the process ended
            }
        });
        return p;
    }
}
