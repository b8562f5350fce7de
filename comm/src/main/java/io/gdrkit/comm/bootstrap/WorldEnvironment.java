/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.bootstrap;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import io.gdrkit.comm.config.CommConfiguration;

/**
 * Finds this process's world from what the launcher that started it put in the environment: a PMIx launcher
 * ({@code mpirun} of OpenMPI, {@code srun --mpi=pmix}, {@code prterun}), the torchrun / Kubernetes convention
 * ({@code RANK}, {@code WORLD_SIZE}, {@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE}, {@code MASTER_ADDR},
 * {@code MASTER_PORT}), Slurm without PMIx ({@code SLURM_PROCID}, {@code SLURM_NTASKS}, {@code SLURM_LOCALID} and
 * an address the user gives), or gdrkit's own launcher ({@code GDRKIT_ID}, ...).
 *
 * <p><b>Order.</b> {@code GDRKIT_ID} first: only {@code gdrkit launch} sets it, for the very process it starts, so
 * it is always the innermost launcher (a {@code gdrkit launch} inside a Slurm batch script or a Kubernetes pod
 * inherits that job's {@code SLURM_*} or {@code RANK} variables, which do not describe its ranks). Then PMIx
 * ({@code PMIX_RANK} and {@code PMIX_NAMESPACE}), then torchrun ({@code RANK} or {@code WORLD_SIZE}), then Slurm
 * ({@code SLURM_PROCID}). The variables of the sources not taken are listed as ignored in
 * {@link World#evidence()}.
 *
 * <p><b>Meeting without a shared id.</b> With torchrun and Slurm variables no launcher hands the ranks a
 * {@link UniqueId}: rank 0 serves the bootstrap root on the fixed address ({@code MASTER_ADDR:MASTER_PORT}), and
 * every rank derives the same run id from what they all know: SHA-256 of the token ({@code GDRKIT_TOKEN}), the port
 * and the job's id ({@code TORCHELASTIC_RUN_ID}, or {@code SLURM_JOB_ID.SLURM_STEP_ID}). With a token, the run id
 * is as secret as the token, and the root also checks the token in every hello. Without a token the run id is not
 * a secret: anyone who can reach the port during the join can take a rank that has not joined yet; the network is
 * then the only protection (as for torch's own TCP store), so set {@code GDRKIT_TOKEN} on every rank (a Kubernetes
 * Secret, or a value the batch script generates) wherever the port is reachable by others.
 */
public final class WorldEnvironment {
    private WorldEnvironment() {
    }

    /** Where a world came from. */
    public enum Source {
        /** A PMIx launcher: mpirun, srun --mpi=pmix, prterun. */
        PMIX,
        /** The torchrun / Kubernetes convention: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT. */
        TORCHRUN,
        /** Slurm without PMIx: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and a root address. */
        SLURM,
        /** gdrkit's own launcher: GDRKIT_ID, GDRKIT_RANK, GDRKIT_NRANKS. */
        GDRKIT,
        /** No launcher's variables: a single process. */
        NONE;

        /** {@return the name as printed: lower case} */
        public String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /** The shared secret (the same variable as {@link BootstrapContext#ENV_TOKEN}). */
    public static final String ENV_TOKEN = BootstrapContext.ENV_TOKEN;
    /** The bootstrap root's host for torchrun and Slurm worlds; wins over {@code MASTER_ADDR} when both are set. */
    public static final String ENV_MASTER_ADDR = CommConfiguration.WORLD_MASTER_ADDR.name();
    /** The bootstrap root's port for torchrun and Slurm worlds; wins over {@code MASTER_PORT} when both are set. */
    public static final String ENV_MASTER_PORT = CommConfiguration.WORLD_MASTER_PORT.name();
    /**
     * The address rank 0 listens on for the bootstrap root (and, under PMIx, the address the other ranks are told);
     * default: {@code MASTER_ADDR} when it is an address of this host, else every interface (torchrun, Slurm), or
     * loopback when all ranks share this host, else this host's name (PMIx).
     */
    public static final String ENV_BIND_ADDR = CommConfiguration.WORLD_BOOTSTRAP_BIND.name();

    private static final List<String> TORCH = List.of("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
        "MASTER_ADDR", "MASTER_PORT");
    private static final List<String> SLURM_VARS = List.of("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID");
    private static final List<String> PMIX_VARS = List.of("PMIX_RANK", "PMIX_NAMESPACE");

    /**
     * This process's world as its launcher described it.
     *
     * @param source    where it came from
     * @param evidence  the variables that said so ({@code NAME=value}; the token's value hidden), and notes: the
     *                  variables of other launchers that were ignored, which address won
     * @param rank      this rank, {@code 0..size-1} (-1 under PMIx until PMIx is asked)
     * @param size      the number of ranks (-1 under PMIx until PMIx is asked)
     * @param localRank this rank's index among the ranks of its host
     * @param localSize the number of ranks on this host, -1 when the launcher does not say
     * @param id        the run's id, or null when this rank learns it only when the world is joined (PMIx, or a
     *                  world of one whose rank 0 serves the root on any free port)
     * @param token     the shared secret, empty for none
     */
    public record World(Source source, List<String> evidence, int rank, int size, int localRank, int localSize,
                        UniqueId id, String token) {
        /**
         * Checks the components.
         *
         * @throws NullPointerException if source, evidence or token is null
         */
        public World {
            Objects.requireNonNull(source, "source");
            evidence = List.copyOf(evidence);
            Objects.requireNonNull(token, "token");
        }

        /** {@return true when this rank starts the bootstrap root (rank 0 of a torchrun or Slurm world)} */
        public boolean servesRoot() {
            return (source == Source.TORCHRUN || source == Source.SLURM) && rank == 0;
        }

        /** {@return one line for logs: source, rank of size, local rank, root} */
        public String describe() {
            return source.label() + " (rank " + rank + " of " + size + ", local " + localRank
                + (localSize > 0 ? " of " + localSize : "") + (id == null ? "" : ", root " + id.host() + ":"
                + id.port()) + ")";
        }

        @Override
        public String toString() {
            return describe() + " from " + String.join(", ", evidence);
        }
    }

    /**
     * True when {@code env} carries any launcher's world (PMIx, torchrun, Slurm or gdrkit's).
     *
     * @param env the environment
     * @return true when {@link #detect} would not answer {@link Source#NONE}
     */
    public static boolean present(final Map<String, String> env) {
        return sourceOf(env) != Source.NONE;
    }

    /**
     * Which launcher's variables {@code env} carries, by the order of the class comment, without checking them.
     *
     * @param env the environment
     * @return the source the variables name
     */
    public static Source sourceOf(final Map<String, String> env) {
        if (set(env, BootstrapContext.ENV_ID)) {
            return Source.GDRKIT;
        }
        if (set(env, "PMIX_RANK") && set(env, "PMIX_NAMESPACE")) {
            return Source.PMIX;
        }
        if (set(env, "RANK") || set(env, "WORLD_SIZE")) {
            return Source.TORCHRUN;
        }
        if (set(env, "SLURM_PROCID")) {
            return Source.SLURM;
        }
        return Source.NONE;
    }

    /**
     * Reads and checks this process's world from {@code env}. Under PMIx only the environment's hints are read
     * (rank from {@code PMIX_RANK}); the world itself is asked of PMIx when joined.
     *
     * @param env the environment, such as {@link System#getenv()}
     * @return the world; source {@link Source#NONE} (rank 0 of 1) when no launcher's variables are set
     * @throws IllegalArgumentException naming the variable that is missing, not a number, out of range or in
     *                                  contradiction with another
     */
    public static World detect(final Map<String, String> env) {
        Objects.requireNonNull(env, "env");
        final Source s = sourceOf(env);
        return switch (s) {
            case GDRKIT -> gdrkit(env);
            case PMIX -> pmix(env);
            case TORCHRUN -> torchrun(env);
            case SLURM -> slurm(env);
            case NONE -> new World(Source.NONE, List.of("no launcher variables (" + BootstrapContext.ENV_ID
                + ", PMIX_RANK, RANK/WORLD_SIZE, SLURM_PROCID)"), 0, 1, 0, 1, null, token(env, new ArrayList<>()));
        };
    }

    private static World gdrkit(final Map<String, String> env) {
        final BootstrapContext b = BootstrapContext.fromEnvironment(env, Map.of());
        final List<String> ev = new ArrayList<>();
        ev.add(BootstrapContext.ENV_ID + "=" + env.get(BootstrapContext.ENV_ID));
        ev.add(BootstrapContext.ENV_RANK + "=" + env.get(BootstrapContext.ENV_RANK));
        ev.add(BootstrapContext.ENV_NRANKS + "=" + env.get(BootstrapContext.ENV_NRANKS));
        if (set(env, BootstrapContext.ENV_LOCAL_RANK)) {
            ev.add(BootstrapContext.ENV_LOCAL_RANK + "=" + env.get(BootstrapContext.ENV_LOCAL_RANK));
        }
        token(env, ev);
        ignored(env, Source.GDRKIT, ev);
        return new World(Source.GDRKIT, ev, b.rank(), b.nranks(), b.localRank(), -1, b.id(), b.token());
    }

    private static World pmix(final Map<String, String> env) {
        final List<String> ev = new ArrayList<>();
        final int rank = number(env, "PMIX_RANK", 0, BootstrapWire.MAX_RANKS - 1, ev);
        ev.add("PMIX_NAMESPACE=" + env.get("PMIX_NAMESPACE"));
        final String tok = token(env, ev);
        ignored(env, Source.PMIX, ev);
        return new World(Source.PMIX, ev, rank, -1, -1, -1, null, tok);
    }

    private static World torchrun(final Map<String, String> env) {
        final List<String> ev = new ArrayList<>();
        if (!set(env, "RANK") || !set(env, "WORLD_SIZE")) {
            throw new IllegalArgumentException("torchrun-style world: " + (set(env, "RANK") ? "RANK" : "WORLD_SIZE")
                + " is set but " + (set(env, "RANK") ? "WORLD_SIZE" : "RANK") + " is not: set both (and MASTER_ADDR, "
                + "MASTER_PORT)");
        }
        final int size = number(env, "WORLD_SIZE", 1, BootstrapWire.MAX_RANKS, ev);
        final int rank = number(env, "RANK", 0, Integer.MAX_VALUE, ev);
        if (rank >= size) {
            throw new IllegalArgumentException("RANK=" + rank + " is not below WORLD_SIZE=" + size
                + ": ranks are 0.." + (size - 1));
        }
        final int[] local = local(env, "LOCAL_RANK", "LOCAL_WORLD_SIZE", size, ev);
        final String tok = token(env, ev);
        final UniqueId id = meeting(env, Source.TORCHRUN, size, tok, "TORCHELASTIC_RUN_ID", ev);
        ignored(env, Source.TORCHRUN, ev);
        return new World(Source.TORCHRUN, ev, rank, size, local[0], local[1], id, tok);
    }

    private static World slurm(final Map<String, String> env) {
        final List<String> ev = new ArrayList<>();
        final String sizeVar = set(env, "SLURM_NTASKS") ? "SLURM_NTASKS" : "SLURM_NPROCS";
        if (!set(env, sizeVar)) {
            throw new IllegalArgumentException("Slurm world: SLURM_PROCID is set but SLURM_NTASKS is not (run the "
                + "ranks with srun -n N)");
        }
        final int size = number(env, sizeVar, 1, BootstrapWire.MAX_RANKS, ev);
        final int rank = number(env, "SLURM_PROCID", 0, Integer.MAX_VALUE, ev);
        if (rank >= size) {
            throw new IllegalArgumentException("SLURM_PROCID=" + rank + " is not below " + sizeVar + "=" + size);
        }
        int localSize = -1;
        if (set(env, "SLURM_TASKS_PER_NODE") && set(env, "SLURM_NODEID")) {
            final int node = number(env, "SLURM_NODEID", 0, BootstrapWire.MAX_RANKS, ev);
            localSize = tasksOnNode(env.get("SLURM_TASKS_PER_NODE"), node);
            ev.add("SLURM_TASKS_PER_NODE=" + env.get("SLURM_TASKS_PER_NODE"));
        }
        final int localRank = set(env, "SLURM_LOCALID") ? number(env, "SLURM_LOCALID", 0, size - 1, ev) : 0;
        if (localSize > 0 && localRank >= localSize) {
            throw new IllegalArgumentException("SLURM_LOCALID=" + localRank + " is not below the " + localSize
                + " tasks SLURM_TASKS_PER_NODE gives node " + env.get("SLURM_NODEID"));
        }
        final String tok = token(env, ev);
        final String job = set(env, "SLURM_JOB_ID") ? env.get("SLURM_JOB_ID") + "." + env.getOrDefault("SLURM_STEP_ID",
            "") : null;
        final UniqueId id = meetingWithJob(env, Source.SLURM, size, tok, job, "SLURM_JOB_ID.SLURM_STEP_ID", ev);
        ignored(env, Source.SLURM, ev);
        return new World(Source.SLURM, ev, rank, size, localRank, localSize, id, tok);
    }

    /** Parses {@code SLURM_TASKS_PER_NODE} ({@code 2(x3),1}) and answers node {@code node}'s count. */
    static int tasksOnNode(final String text, final int node) {
        int at = 0;
        try {
            for (final String part : text.split(",")) {
                final int paren = part.indexOf('(');
                final int count = Integer.parseInt(paren < 0 ? part.trim() : part.substring(0, paren).trim());
                final int times = paren < 0 ? 1 : Integer.parseInt(part.substring(paren + 2, part.indexOf(')')));
                if (node < at + times) {
                    return count;
                }
                at += times;
            }
        } catch (final RuntimeException e) {
            throw new IllegalArgumentException("SLURM_TASKS_PER_NODE=" + text + " is not Slurm's form (e.g. 2(x3),1)");
        }
        throw new IllegalArgumentException("SLURM_TASKS_PER_NODE=" + text + " names " + at + " nodes, SLURM_NODEID is "
            + node);
    }

    private static int[] local(final Map<String, String> env, final String rankVar, final String sizeVar,
                               final int size, final List<String> ev) {
        final int localSize = set(env, sizeVar) ? number(env, sizeVar, 1, size, ev) : -1;
        final int localRank = set(env, rankVar) ? number(env, rankVar, 0, size - 1, ev) : 0;
        if (localSize > 0 && localRank >= localSize) {
            throw new IllegalArgumentException(rankVar + "=" + localRank + " is not below " + sizeVar + "="
                + localSize);
        }
        return new int[] {localRank, localSize};
    }

    private static UniqueId meeting(final Map<String, String> env, final Source s, final int size, final String tok,
                                    final String jobVar, final List<String> ev) {
        return meetingWithJob(env, s, size, tok, set(env, jobVar) ? env.get(jobVar) : null, jobVar, ev);
    }

    private static UniqueId meetingWithJob(final Map<String, String> env, final Source s, final int size,
                                           final String tok, final String job, final String jobName,
                                           final List<String> ev) {
        final String addrVar = set(env, ENV_MASTER_ADDR) ? ENV_MASTER_ADDR : "MASTER_ADDR";
        final String portVar = set(env, ENV_MASTER_PORT) ? ENV_MASTER_PORT : "MASTER_PORT";
        if (size == 1 && !set(env, addrVar) && !set(env, portVar)) {
            ev.add("a world of one: its root on loopback, any free port");
            return null;
        }
        if (!set(env, addrVar)) {
            throw new IllegalArgumentException(s.label() + " world of " + size + " ranks: " + addrVar + " is not set "
                + "(the host of rank 0, where the bootstrap root listens; " + ENV_MASTER_ADDR + " or MASTER_ADDR)");
        }
        if (!set(env, portVar)) {
            throw new IllegalArgumentException(s.label() + " world of " + size + " ranks: " + portVar + " is not set "
                + "(the TCP port rank 0's bootstrap root listens on; " + ENV_MASTER_PORT + " or MASTER_PORT)");
        }
        final String host = env.get(addrVar).trim();
        final int port = number(env, portVar, 1, 65535, ev);
        ev.add(addrVar + "=" + host);
        if (addrVar.equals(ENV_MASTER_ADDR) && set(env, "MASTER_ADDR") && !env.get("MASTER_ADDR").trim().equals(host)) {
            ev.add("MASTER_ADDR=" + env.get("MASTER_ADDR") + " ignored: " + ENV_MASTER_ADDR + " wins");
        }
        if (portVar.equals(ENV_MASTER_PORT) && set(env, "MASTER_PORT")
            && !env.get("MASTER_PORT").trim().equals(env.get(ENV_MASTER_PORT).trim())) {
            ev.add("MASTER_PORT=" + env.get("MASTER_PORT") + " ignored: " + ENV_MASTER_PORT + " wins");
        }
        if (job != null) {
            ev.add(jobName + "=" + job);
        }
        ev.add(tok.isEmpty() ? "no token: the run id is derived from public values, the network protects the join"
            : "run id derived from the token");
        return new UniqueId(host, port, runId(tok, port, job));
    }

    /**
     * The run id every rank of a torchrun or Slurm world derives alike: the first 8 bytes of SHA-256 of the token,
     * the port and the job's id.
     *
     * @param token the shared secret, empty for none
     * @param port  the root's port
     * @param job   the job's id, or null
     * @return the run id
     */
    static long runId(final String token, final int port, final String job) {
        try {
            final MessageDigest md = MessageDigest.getInstance("SHA-256");
            md.update("gdrkit-world-run-id\0".getBytes(StandardCharsets.UTF_8));
            md.update(token.getBytes(StandardCharsets.UTF_8));
            md.update(("\0" + port + "\0" + (job == null ? "" : job)).getBytes(StandardCharsets.UTF_8));
            return ByteBuffer.wrap(md.digest()).getLong();
        } catch (final NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String token(final Map<String, String> env, final List<String> ev) {
        final String t = env.get(ENV_TOKEN);
        if (t == null || t.isEmpty()) {
            return "";
        }
        if (t.getBytes(StandardCharsets.UTF_8).length > BootstrapWire.MAX_TOKEN) {
            throw new IllegalArgumentException(ENV_TOKEN + " is longer than " + BootstrapWire.MAX_TOKEN + " bytes");
        }
        ev.add(ENV_TOKEN + "=(set, " + t.length() + " characters)");
        return t;
    }

    private static void ignored(final Map<String, String> env, final Source taken, final List<String> ev) {
        final List<String> names = new ArrayList<>();
        if (taken != Source.PMIX) {
            PMIX_VARS.stream().filter(n -> set(env, n)).forEach(names::add);
        }
        if (taken != Source.TORCHRUN && taken != Source.SLURM) {
            TORCH.stream().filter(n -> set(env, n)).forEach(names::add);
        }
        if (taken != Source.SLURM) {
            SLURM_VARS.stream().filter(n -> set(env, n)).forEach(names::add);
        }
        if (!names.isEmpty()) {
            ev.add("ignored (" + taken.label() + " wins): " + String.join(", ", names));
        }
    }

    private static boolean set(final Map<String, String> env, final String name) {
        final String v = env.get(name);
        return v != null && !v.isBlank();
    }

    private static int number(final Map<String, String> env, final String name, final int min, final int max,
                              final List<String> ev) {
        final String text = env.get(name);
        final int v;
        try {
            v = Integer.parseInt(text.trim());
        } catch (final NumberFormatException e) {
            throw new IllegalArgumentException(name + "=" + text + " is not an integer");
        }
        if (v < min || v > max) {
            throw new IllegalArgumentException(name + "=" + text + " is outside " + min + ".." + max);
        }
        ev.add(name + "=" + v);
        return v;
    }

    /**
     * A world ready to join: its rank and size known, the root's id known, and the root this rank serves.
     *
     * @param world the world (under PMIx: with the rank, size and local values PMIx gave)
     * @param id    the run's id every rank joins with
     * @param root  the root this rank serves, or null
     */
    public record Resolved(World world, UniqueId id, BootstrapRoot root) {
        /**
         * Checks the components.
         *
         * @throws NullPointerException if world or id is null
         */
        public Resolved {
            Objects.requireNonNull(world, "world");
            Objects.requireNonNull(id, "id");
        }

        /**
         * This rank's bootstrap context.
         *
         * @param timeout the timeout of every bootstrap wait
         * @return the context, for {@link Bootstrap#init}
         */
        public BootstrapContext context(final Duration timeout) {
            return new BootstrapContext().id(id).rank(world.rank()).nranks(world.size())
                .localRank(Math.max(0, world.localRank())).token(world.token()).timeout(timeout);
        }

        /**
         * After this rank's bootstrap closed: waits (bounded) for the other ranks to leave the root this rank
         * serves, then stops it. Nothing when this rank serves none.
         *
         * @param wait how long to wait for the others' goodbyes
         */
        public void finish(final Duration wait) {
            if (root == null) {
                return;
            }
            try {
                root.await(wait);
            } catch (final InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                root.close();
            }
        }
    }

    /**
     * Reads this process's world ({@link #detect}) and makes it ready to join: rank 0 of a torchrun or Slurm world,
     * and of a world of one, starts the root; under PMIx the rank, size and local values are asked of PMIx and rank
     * 0's root id is exchanged through PMIx's key-value store ({@link Pmix}).
     *
     * @param env     the environment
     * @param timeout how long the ranks have to join (the root's join timeout; PMIx's fence)
     * @return the world ready to join
     * @throws IllegalArgumentException naming a missing, malformed or contradictory variable, or PMIx unusable
     * @throws BootstrapException       IO when the root's port cannot be listened on, TIMEOUT when PMIx's exchange
     *                                  does not complete in time
     */
    public static Resolved resolve(final Map<String, String> env, final Duration timeout) {
        World w = detect(env);
        if (w.source() == Source.PMIX) {
            try {
                return Pmix.resolve(w, env, timeout);
            } catch (final Pmix.Unavailable e) {
                // PMIx cannot be used here: fall back to the next launcher's variables, saying why
                final Map<String, String> rest = new java.util.HashMap<>(env);
                PMIX_VARS.forEach(rest::remove);
                final World next = detect(rest);
                if (next.source() == Source.NONE || next.source() == Source.PMIX) {
                    throw new IllegalArgumentException("started by a PMIx launcher (" + String.join(", ",
                        w.evidence()) + ") but " + e.getMessage() + "; no other launcher's variables to fall back "
                        + "on (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, or SLURM_* with " + ENV_MASTER_ADDR + "/"
                        + ENV_MASTER_PORT + ")");
                }
                final List<String> ev = new ArrayList<>(next.evidence());
                ev.add("PMIx not used: " + e.getMessage());
                w = new World(next.source(), ev, next.rank(), next.size(), next.localRank(), next.localSize(),
                    next.id(), next.token());
            }
        }
        if (w.source() == Source.NONE) {
            final BootstrapRoot r = BootstrapRoot.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1,
                w.token(), timeout);
            return new Resolved(w, r.id(), r);
        }
        if (w.servesRoot()) {
            final BootstrapRoot r = startRoot(w, env, timeout);
            return new Resolved(w, w.id() == null ? r.id() : w.id(), r);
        }
        return new Resolved(w, w.id(), null);
    }

    /**
     * Starts the bootstrap root of a world whose rank 0 serves it ({@link World#servesRoot()}): on
     * {@code GDRKIT_BOOTSTRAP_BIND} when set, else on the world's root address when it is an address of this host, else on
     * every interface, at the world's port, with the world's derived run id; a world of one on loopback.
     *
     * @param world       the world, {@link World#servesRoot()} true
     * @param env         the environment, read for {@code GDRKIT_BOOTSTRAP_BIND}
     * @param joinTimeout how long the ranks have to join before the root aborts the run naming the missing ranks
     * @return the running root; the caller closes it after its own bootstrap
     * @throws IllegalArgumentException when this rank does not serve the root, or the bind address is unknown
     * @throws BootstrapException       IO when the port cannot be listened on (taken, not this host's)
     */
    public static BootstrapRoot startRoot(final World world, final Map<String, String> env,
                                          final Duration joinTimeout) {
        if (!world.servesRoot()) {
            throw new IllegalArgumentException("rank " + world.rank() + " of a " + world.source().label()
                + " world does not serve the bootstrap root (rank 0 of a torchrun or Slurm world does)");
        }
        if (world.id() == null) {
            return BootstrapRoot.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), world.size(),
                world.token(), joinTimeout);
        }
        final InetAddress bind = bindAddress(world.id().host(), env);
        return BootstrapRoot.start(new InetSocketAddress(bind, world.id().port()), world.size(), world.token(),
            joinTimeout, world.id().runId());
    }

    private static InetAddress bindAddress(final String host, final Map<String, String> env) {
        final String given = env.get(ENV_BIND_ADDR);
        try {
            if (given != null && !given.isBlank()) {
                return InetAddress.getByName(given.trim());
            }
            final InetAddress a = InetAddress.getByName(host);
            if (a.isLoopbackAddress() || a.isAnyLocalAddress() || NetworkInterface.getByInetAddress(a) != null) {
                return a;
            }
            // a name that is not this host's own address (a Kubernetes service, a NAT): listen everywhere, as torch's
            // store does; the token (when set) decides who joins
            return new InetSocketAddress(0).getAddress();
        } catch (final UnknownHostException e) {
            throw new IllegalArgumentException("bootstrap root address '" + (given != null && !given.isBlank() ? given
                : host) + "' does not resolve: " + e.getMessage());
        } catch (final SocketException e) {
            throw new BootstrapException(BootstrapException.Reason.IO, "cannot list this host's interfaces: "
                + e.getMessage(), e);
        }
    }
}
