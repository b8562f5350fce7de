/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.launch;

import io.gdrkit.comm.bootstrap.BootstrapContext;
import io.gdrkit.comm.bootstrap.BootstrapRoot;
import io.gdrkit.comm.bootstrap.UniqueId;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Starts the rank processes of one run on this host, like mpirun or torchrun: each gets the unique id, its
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
     * What to launch: which ranks, the command each runs, where the root is, and how failures end the run.
     *
     * @param localRanks ranks to start here
     * @param firstRank  the first of them (0 unless other hosts start the lower ones)
     * @param nranks     ranks of the whole run
     * @param root       null: start the root here; else the id printed by the launcher that started rank 0
     * @param bind       where a root started here listens (loopback unless told)
     * @param command    the rank command and its arguments
     * @param token      shared secret passed to every rank and checked by the root (null: none)
     * @param grace      how long the others may take to end after one rank failed
     * @param joinTimeout how long the root waits for every rank to join
     * @param extraEnv   further environment variables for every rank (null: none)
     * @param hosts      the hosts to start the ranks on through {@code ssh}, their ranks adding up to {@code
     *     localRanks}; empty: all on this host
     * @param ssh        the ssh command and its options, needed with {@code hosts}
     */
    public record Spec(int localRanks, int firstRank, int nranks, UniqueId root, InetSocketAddress bind,
                       List<String> command, String token, Duration grace, Duration joinTimeout,
                       Map<String, String> extraEnv, List<Host> hosts, List<String> ssh) {
        /**
         * Every rank on this host: no hosts, no ssh command.
         *
         * @param localRanks  ranks to start here
         * @param firstRank   the first of them (0 unless other hosts start the lower ones)
         * @param nranks      ranks of the whole run
         * @param root        null: start the root here; else the id printed by the launcher that started rank 0
         * @param bind        where a root started here listens (loopback unless told)
         * @param command     the rank command and its arguments
         * @param token       shared secret passed to every rank and checked by the root (null: none)
         * @param grace       how long the others may take to end after one rank failed
         * @param joinTimeout how long the root waits for every rank to join
         * @param extraEnv    further environment variables for every rank (null: none)
         */
        public Spec(final int localRanks, final int firstRank, final int nranks, final UniqueId root,
                    final InetSocketAddress bind, final List<String> command, final String token,
                    final Duration grace, final Duration joinTimeout, final Map<String, String> extraEnv) {
            this(localRanks, firstRank, nranks, root, bind, command, token, grace, joinTimeout, extraEnv, List.of(),
                List.of());
        }

        /**
         * Checks the spec and copies its lists and map.
         *
         * @throws IllegalArgumentException naming the inconsistent value: no command, a rank range that does not fit
         *     the run, a later rank range without {@code root}, or hosts without an ssh command or whose ranks do not
         *     add up to {@code localRanks}
         */
        public Spec {
            hosts = hosts == null ? List.of() : List.copyOf(hosts);
            ssh = ssh == null ? List.of() : List.copyOf(ssh);
            if (!hosts.isEmpty()) {
                if (ssh.isEmpty()) {
                    throw new IllegalArgumentException("--hosts needs an ssh command (--ssh)");
                }
                int sum = 0;
                for (final Host h : hosts) {
                    sum += h.ranks();
                }
                if (sum != localRanks) {
                    throw new IllegalArgumentException("the hosts hold " + sum + " ranks, not " + localRanks);
                }
            }
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
                throw new IllegalArgumentException("ranks from " + firstRank + " join an existing run: give the root "
                    + "(the id the first launcher printed)");
            }
            extraEnv = extraEnv == null ? Map.of() : Map.copyOf(extraEnv);
        }
    }

    /**
     * A host that runs {@code ranks} ranks, started through the ssh command. Its name goes to ssh as one argument
     * and must look like a host name (letters, digits, '.', '-', '_', ':' for IPv6, an optional user@).
     *
     * @param name  the host name, as ssh takes it (optionally {@code user@host})
     * @param ranks the number of ranks to start there, 1..4096
     */
    public record Host(String name, int ranks) {
        /**
         * Checks the name and the number of ranks.
         *
         * @throws IllegalArgumentException if the name does not look like a host name or the ranks are outside
         *     1..4096
         */
        public Host {
            Objects.requireNonNull(name, "host");
            if (!name.matches("([A-Za-z0-9._-]+@)?[A-Za-z0-9._:\\[\\]-]+") || name.startsWith("-")) {
                throw new IllegalArgumentException("host '" + name + "' is not a host name");
            }
            if (ranks < 1 || ranks > 4096) {
                throw new IllegalArgumentException("host " + name + ": " + ranks + " ranks (1..4096)");
            }
        }

        /**
         * Parses a comma-separated host list: each entry {@code host} or {@code host:K} (K ranks; else {@code
         * defaultRanks}); IPv6 in brackets: {@code [::1]:2}.
         *
         * @param list         the comma-separated list
         * @param defaultRanks the ranks of an entry that gives none
         * @return the hosts, in the list's order
         * @throws IllegalArgumentException for an empty entry or a bad host
         */
        public static List<Host> parseList(final String list, final int defaultRanks) {
            final List<Host> out = new ArrayList<>();
            for (final String part : list.split(",")) {
                final String t = part.trim();
                if (t.isEmpty()) {
                    throw new IllegalArgumentException("--hosts '" + list + "' has an empty entry");
                }
                final int colon = t.lastIndexOf(':');
                final boolean counted = colon > 0 && t.substring(colon + 1).matches("[0-9]{1,4}")
                    && (t.indexOf(':') == colon || t.charAt(colon - 1) == ']');
                out.add(counted ? new Host(t.substring(0, colon), Integer.parseInt(t.substring(colon + 1)))
                    : new Host(t, defaultRanks));
            }
            return out;
        }
    }

    /**
     * How each rank ended.
     *
     * @param rank     the rank
     * @param exitCode its exit status
     * @param killed   true when the launcher killed it after another rank failed
     */
    public record RankExit(int rank, int exitCode, boolean killed) {
    }

    /**
     * How the run ended: 0 when every rank exited 0; the root's failure if it saw one.
     *
     * @param exitCode    the run's exit status: 0 when every rank exited 0
     * @param ranks       how each rank ended, in rank order
     * @param rootFailure why the root gave up, or null
     * @param firstFailure the first rank failure seen (which rank, its status and where), or null
     */
    public record Result(int exitCode, List<RankExit> ranks, String rootFailure, String firstFailure) {
    }

    /** Notified of the id once the root is up (so a caller can print it for ranks on other hosts). */
    public interface Listener {
        /**
         * Called once the root is up, with the id the ranks join.
         *
         * @param id the run's unique id
         */
        void started(UniqueId id);

        /**
         * Called when a rank exits with an error, before the others are given their grace period.
         *
         * @param rank     the rank that failed
         * @param exitCode its exit status
         */
        void rankFailed(int rank, int exitCode);
    }

    /**
     * Runs the ranks and waits for all of them to end: starts the root here (unless {@link Spec#root} names one),
     * starts each rank with its environment, and, when a rank fails, gives the others {@link Spec#grace} before
     * killing them.
     *
     * @param spec     what to launch
     * @param listener told of the root's id and of rank failures
     * @return how the run ended
     * @throws IllegalArgumentException for a token the ranks would refuse, or a rank process that cannot be started
     */
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
        final List<String> where = new ArrayList<>();
        final Thread hook = new Thread(() -> procs.forEach(Launcher::kill), "launch-cleanup");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            final List<Host> hosts = spec.hosts().isEmpty() ? List.of(new Host("localhost", spec.localRanks()))
                : spec.hosts();
            int rank = spec.firstRank();
            for (final Host host : hosts) {
                for (int i = 0; i < host.ranks(); i++, rank++) {
                    final Map<String, String> env = new java.util.TreeMap<>(spec.extraEnv());
                    env.put(BootstrapContext.ENV_ID, id.encode());
                    env.put(BootstrapContext.ENV_RANK, Integer.toString(rank));
                    env.put(BootstrapContext.ENV_NRANKS, Integer.toString(spec.nranks()));
                    env.put(BootstrapContext.ENV_LOCAL_RANK, Integer.toString(i));
                    if (spec.token() != null && !spec.token().isEmpty()) {
                        env.put(BootstrapContext.ENV_TOKEN, spec.token());
                    }
                    try {
                        procs.add(spec.hosts().isEmpty() ? startLocal(spec, env) : startRemote(spec, host, env));
                        where.add(spec.hosts().isEmpty() ? null : host.name());
                    } catch (final IOException e) {
                        procs.forEach(Launcher::kill);
                        throw new IllegalArgumentException("cannot start rank " + rank + " ("
                            + (spec.hosts().isEmpty() ? spec.command().get(0) : spec.ssh().get(0) + " to "
                            + host.name()) + "): " + e.getMessage(), e);
                    }
                }
            }
            return watch(spec, procs, where, root, listener);
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

    private static Process startLocal(final Spec spec, final Map<String, String> env) throws IOException {
        final ProcessBuilder pb = new ProcessBuilder(spec.command()).inheritIO();
        pb.environment().putAll(env);
        return pb.start();
    }

    /**
     * What the remote shell runs: read KEY=VALUE lines from stdin up to an empty line, export them, then exec the
     * rank command. The environment (the token, and the unique id whose run id is a tokenless run's only secret)
     * thus travels inside ssh's encrypted stdin and never on a command line that {@code ps} shows on either host.
     */
    static final String REMOTE_PRELUDE = "while IFS= read -r l && [ -n \"$l\" ]; do export \"$l\"; done; exec \"$@\"";

    /** How long an ssh that refused the rank's environment may take to exit with its own status. */
    private static final long REMOTE_EXIT_GRACE_S = 10;

    /** The ssh process for one rank: {@code ssh... host sh -c PRELUDE gdrkit-rank 'cmd' 'args'...}. */
    private static Process startRemote(final Spec spec, final Host host, final Map<String, String> env)
        throws IOException {
        final StringBuilder remote = new StringBuilder("sh -c ").append(shellQuote(REMOTE_PRELUDE))
            .append(" gdrkit-rank");
        for (final String a : spec.command()) {
            remote.append(' ').append(shellQuote(a));
        }
        final List<String> argv = new ArrayList<>(spec.ssh());
        argv.add(host.name());
        argv.add(remote.toString());
        final ProcessBuilder pb = new ProcessBuilder(argv).redirectOutput(ProcessBuilder.Redirect.INHERIT)
            .redirectError(ProcessBuilder.Redirect.INHERIT);
        final StringBuilder lines = new StringBuilder();
        for (final Map.Entry<String, String> e : env.entrySet()) {
            if (!e.getKey().matches("[A-Za-z_][A-Za-z0-9_]*") || e.getValue().indexOf('\n') >= 0
                || e.getValue().indexOf('\r') >= 0 || e.getValue().indexOf(0) >= 0) {
                throw new IllegalArgumentException("environment entry " + e.getKey() + " cannot travel to a remote "
                    + "rank (a name must be an identifier, a value one line)");
            }
            lines.append(e.getKey()).append('=').append(e.getValue()).append('\n');
        }
        lines.append('\n');
        final Process p = pb.start();
        try (java.io.OutputStream in = p.getOutputStream()) {
            in.write(lines.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        } catch (final IOException e) {
            // an ssh that fails at once (an unreachable host: exit 255) may be gone before the environment is
            // written: then its exit status, not the broken pipe, says what happened, and watch() names it
            try {
                if (p.waitFor(REMOTE_EXIT_GRACE_S, java.util.concurrent.TimeUnit.SECONDS)) {
                    return p;
                }
            } catch (final InterruptedException ie) {
                Thread.currentThread().interrupt();
            }
            kill(p);
            throw new IOException("ssh to " + host.name() + " ended before it took the rank's environment ("
                + e.getMessage() + ")", e);
        }
        return p;
    }

    /** One POSIX shell word: single quotes, with each ' as '\''. */
    static String shellQuote(final String s) {
        return "'" + s.replace("'", "'\\''") + "'";
    }

    private static Result watch(final Spec spec, final List<Process> procs, final List<String> where,
                                final BootstrapRoot root, final Listener listener) {
        final int n = procs.size();
        final Integer[] codes = new Integer[n];
        final boolean[] killed = new boolean[n];
        // when each process ended, as the JDK's process reaper saw it: several ranks may be found dead in one
        // polling sweep (the one that failed first and those ended by the abort it caused), and the first failure
        // is the earliest of them, not the lowest index
        final java.util.concurrent.atomic.AtomicLongArray endedAt = new java.util.concurrent.atomic.AtomicLongArray(n);
        final List<java.util.concurrent.CompletableFuture<Void>> stamped = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            final int r = i;
            stamped.add(procs.get(i).onExit().thenRun(() -> endedAt.compareAndSet(r, 0, System.nanoTime())));
        }
        long failedAt = 0;
        String firstFailure = null;
        int done = 0;
        while (done < n) {
            int first = -1;
            for (int i = 0; i < n; i++) {
                if (codes[i] == null && !procs.get(i).isAlive()) {
                    codes[i] = procs.get(i).exitValue();
                    done++;
                    // dead, so onExit has completed or is completing: wait for its stamp (a bounded wait)
                    try {
                        stamped.get(i).get(1, java.util.concurrent.TimeUnit.SECONDS);
                    } catch (final java.util.concurrent.ExecutionException
                        | java.util.concurrent.TimeoutException ignored) {
                        // no stamp: ended() counts it as now
                    } catch (final InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    if (codes[i] != 0 && failedAt == 0 && (first < 0 || ended(endedAt, i) < ended(endedAt, first))) {
                        first = i;
                    }
                }
            }
            if (first >= 0) {
                failedAt = System.nanoTime();
                firstFailure = "rank " + (spec.firstRank() + first) + (where.get(first) == null ? ""
                    : " on " + where.get(first)) + " exited with " + codes[first] + (where.get(first) != null
                    && codes[first] == 255 ? " (ssh's own failure code: the host unreachable or refused?)" : "");
                listener.rankFailed(spec.firstRank() + first, codes[first]);
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

    /** When rank index {@code i} ended; a reaper that has not yet run counts as now (it ended no earlier). */
    private static long ended(final java.util.concurrent.atomic.AtomicLongArray endedAt, final int i) {
        final long t = endedAt.get(i);
        return t != 0 ? t : System.nanoTime();
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
