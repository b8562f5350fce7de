/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.launch;

import io.gdrkit.gdr.bootstrap.BootstrapContext;
import io.gdrkit.gdr.bootstrap.BootstrapRoot;
import io.gdrkit.gdr.bootstrap.UniqueId;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Starts the rank processes of one run on this host (F6), like mpirun or torchrun: each gets the unique id, its
 * rank, the number of ranks, its local rank and (if set) the shared-secret token in its environment
 * ({@link BootstrapContext#ENV_ID} ...). Ranks 0.. of a run started here get a bootstrap root in this process;
 * ranks on another host join that root with {@link Spec#root}.
 *
 * <p>When a rank exits with an error, the others get {@link Spec#grace} to end on their own (they see a named
 * remote error through the bootstrap or the transport); whatever still runs then is killed with its descendants.
 * A shutdown hook kills every rank if this process is stopped, so no rank outlives its launcher.
 */
public final class Launcher {
    private Launcher() {
    }

    /**
     * @param localRanks ranks to start here
     * @param firstRank  the first of them (0 unless other hosts start the lower ones)
     * @param nranks     ranks of the whole run
     * @param root       null: start the root here; else the id printed by the launcher that started rank 0
     * @param bind       where a root started here listens (loopback unless told)
     * @param command    the rank command and its arguments
     * @param token      shared secret passed to every rank and checked by the root (null: none)
     * @param grace      how long the others may take to end after one rank failed
     * @param joinTimeout how long the root waits for every rank to join
     */
    public record Spec(int localRanks, int firstRank, int nranks, UniqueId root, InetSocketAddress bind,
                       List<String> command, String token, Duration grace, Duration joinTimeout,
                       Map<String, String> extraEnv) {
        public Spec {
            Objects.requireNonNull(command, "command");
            if (command.isEmpty()) {
                throw new IllegalArgumentException("no command to launch (give it after --)");
            }
            if (nranks < 1 || nranks > 4096) {
                throw new IllegalArgumentException("-n/--nranks " + nranks + " outside 1..4096");
            }
            if (localRanks < 1 || firstRank < 0 || firstRank + localRanks > nranks) {
                throw new IllegalArgumentException("ranks " + firstRank + ".." + (firstRank + localRanks - 1)
                    + " do not fit a run of " + nranks);
            }
            if (root == null && firstRank != 0) {
                throw new IllegalArgumentException("ranks from " + firstRank + " join an existing run: give --root "
                    + "(the id the first launcher printed)");
            }
            extraEnv = extraEnv == null ? Map.of() : Map.copyOf(extraEnv);
        }
    }

    /** How each rank ended. */
    public record RankExit(int rank, int exitCode, boolean killed) {
    }

    /** How the run ended: 0 when every rank exited 0; the root's failure if it saw one. */
    public record Result(int exitCode, List<RankExit> ranks, String rootFailure, String firstFailure) {
    }

    /** Notified of the id once the root is up (so a caller can print it for ranks on other hosts). */
    public interface Listener {
        void started(UniqueId id);

        void rankFailed(int rank, int exitCode);
    }

    public static Result run(final Spec spec, final Listener listener) {
        if (spec.token() != null && !spec.token().isEmpty()) {
            // the ranks' CM and fabric hellos read the same token (io.gdrkit.core.auth.Token): refuse one they
            // would refuse, here and by name, instead of every rank failing on start
            io.gdrkit.core.auth.Token.of(spec.token());
        }
        BootstrapRoot root = null;
        final UniqueId id;
        if (spec.root() == null) {
            root = BootstrapRoot.start(spec.bind(), spec.nranks(), spec.token(), spec.joinTimeout());
            id = root.id();
        } else {
            id = spec.root();
        }
        listener.started(id);
        final List<Process> procs = new ArrayList<>();
        final Thread hook = new Thread(() -> procs.forEach(Launcher::kill), "launch-cleanup");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            for (int i = 0; i < spec.localRanks(); i++) {
                final int rank = spec.firstRank() + i;
                final ProcessBuilder pb = new ProcessBuilder(spec.command()).inheritIO();
                final Map<String, String> env = new HashMap<>(spec.extraEnv());
                env.put(BootstrapContext.ENV_ID, id.encode());
                env.put(BootstrapContext.ENV_RANK, Integer.toString(rank));
                env.put(BootstrapContext.ENV_NRANKS, Integer.toString(spec.nranks()));
                env.put(BootstrapContext.ENV_LOCAL_RANK, Integer.toString(i));
                if (spec.token() != null && !spec.token().isEmpty()) {
                    env.put(BootstrapContext.ENV_TOKEN, spec.token());
                }
                pb.environment().putAll(env);
                try {
                    procs.add(pb.start());
                } catch (final IOException e) {
                    procs.forEach(Launcher::kill);
                    throw new IllegalArgumentException("cannot start rank " + rank + " (" + spec.command().get(0)
                        + "): " + e.getMessage(), e);
                }
            }
            return watch(spec, procs, root, listener);
        } finally {
            procs.forEach(Launcher::kill);
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (final IllegalStateException ignored) {
                // shutting down: the hook runs anyway
            }
            if (root != null) {
                root.close();
            }
        }
    }

    private static Result watch(final Spec spec, final List<Process> procs, final BootstrapRoot root,
                                final Listener listener) {
        final int n = procs.size();
        final Integer[] codes = new Integer[n];
        final boolean[] killed = new boolean[n];
        long failedAt = 0;
        String firstFailure = null;
        int done = 0;
        while (done < n) {
            for (int i = 0; i < n; i++) {
                if (codes[i] == null && !procs.get(i).isAlive()) {
                    codes[i] = procs.get(i).exitValue();
                    done++;
                    if (codes[i] != 0 && failedAt == 0) {
                        failedAt = System.nanoTime();
                        firstFailure = "rank " + (spec.firstRank() + i) + " exited with " + codes[i];
                        listener.rankFailed(spec.firstRank() + i, codes[i]);
                    }
                }
            }
            if (failedAt != 0 && System.nanoTime() - failedAt > spec.grace().toNanos()) {
                for (int i = 0; i < n; i++) {
                    if (codes[i] == null) {
                        kill(procs.get(i));
                        killed[i] = true;
                    }
                }
            }
            try {
                Thread.sleep(20);
            } catch (final InterruptedException e) {
                Thread.currentThread().interrupt();
                procs.forEach(Launcher::kill);
                break;
            }
        }
        final List<RankExit> exits = new ArrayList<>();
        int code = 0;
        for (int i = 0; i < n; i++) {
            final int c = codes[i] == null ? 137 : codes[i];
            exits.add(new RankExit(spec.firstRank() + i, c, killed[i]));
            if (c != 0 && code == 0) {
                code = c;
            }
        }
        String rootFailure = null;
        if (root != null) {
            try {
                root.await(Duration.ofSeconds(2));
            } catch (final InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            rootFailure = root.failure();
            if (rootFailure != null && code == 0) {
                code = 1;
            }
        }
        return new Result(code, exits, rootFailure, firstFailure);
    }

    private static void kill(final Process p) {
        if (p.isAlive()) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            try {
                p.waitFor();
            } catch (final InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
