/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.bootstrap.BootstrapContext;
import io.gdrkit.comm.bootstrap.UniqueId;
import io.gdrkit.core.config.ContextFreeze;
import io.gdrkit.core.config.SettingsReader;
import java.net.InetAddress;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * Everything that shapes one rank's communicator: who it is (the run's {@link UniqueId}, its rank, the number of
 * ranks, the token), where its NICs meet ({@link Fabric}), which transport carries the data, the timeout of every
 * wait, the GPU its buffers may live on, and the tuning ({@link CollContext}, from NCCL_* and gdrkit.coll.*
 * settings by default). Set what you need, then {@link Comm#open(CommConfig)} concludes it: the values are checked
 * once and the config is frozen; a setter after that, or a second {@code conclude()}, is an
 * {@link IllegalStateException}.
 *
 * <pre>{@code
 * CommConfig cfg = new CommConfig().id(id).rank(r).nranks(4).fabric(Fabric.SHM);
 * }</pre>
 */
public final class CommConfig {
    /** The default timeout of a wait: for the ranks to join, for a peer's data, for a NIC completion. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(60);

    private UniqueId id;
    private int rank = -1;
    private int nranks = -1;
    private int localRank = -1;
    private String token = "";
    private Fabric fabric = Fabric.TCP;
    private CollWorld.TransportKind transport = CollWorld.TransportKind.IB;
    private Duration timeout = DEFAULT_TIMEOUT;
    private String gpu;
    private InetAddress bind;
    private CollContext coll;
    private SettingsReader settings;
    private final ContextFreeze freeze = new ContextFreeze("CommConfig");

    /** An empty config: give at least {@link #id}, {@link #rank} and {@link #nranks}. */
    public CommConfig() {
    }

    /**
     * A config whose id, rank, number of ranks, local rank and token come from the variables {@code gdrkit launch}
     * gives each rank ({@code GDRKIT_ID}, {@code GDRKIT_RANK}, {@code GDRKIT_NRANKS}, {@code GDRKIT_LOCAL_RANK},
     * {@code GDRKIT_TOKEN}); the rest stays at its default until set.
     *
     * @param env the environment to read ({@code System.getenv()} for this process)
     * @return the config
     * @throws IllegalArgumentException naming a missing or malformed variable
     */
    public static CommConfig fromLauncherEnvironment(final Map<String, String> env) {
        final BootstrapContext b = BootstrapContext.fromEnvironment(env, Map.of());
        return new CommConfig().id(b.id()).rank(b.rank()).nranks(b.nranks()).localRank(b.localRank())
            .token(b.token());
    }

    /**
     * Whether {@code env} holds the variables of a rank started by {@code gdrkit launch}.
     *
     * @param env the environment to look at
     * @return true when {@code GDRKIT_ID} is set
     */
    public static boolean launched(final Map<String, String> env) {
        return BootstrapContext.launched(env);
    }

    private void open(final String setter) {
        freeze.set(setter);
    }

    /**
     * The run's id, as {@link CommRoot#id()} gives it to every rank.
     *
     * @param id the id
     * @return this
     */
    public CommConfig id(final UniqueId id) {
        open("id");
        this.id = Objects.requireNonNull(id, "id");
        return this;
    }

    /**
     * This rank, {@code 0..nranks-1}.
     *
     * @param rank the rank
     * @return this
     */
    public CommConfig rank(final int rank) {
        open("rank");
        this.rank = rank;
        return this;
    }

    /**
     * The number of ranks of the run.
     *
     * @param nranks at least 1
     * @return this
     */
    public CommConfig nranks(final int nranks) {
        open("nranks");
        this.nranks = nranks;
        return this;
    }

    /**
     * This rank's index among the ranks of its host (unset: the rank itself on {@link Fabric#INJVM} and
     * {@link Fabric#SHM}, else 0).
     *
     * @param localRank the local rank
     * @return this
     */
    public CommConfig localRank(final int localRank) {
        open("localRank");
        this.localRank = localRank;
        return this;
    }

    /**
     * The run's shared secret: the root and every fabric check that each rank knows it (empty: none).
     *
     * @param token the token, never printed
     * @return this
     */
    public CommConfig token(final String token) {
        open("token");
        this.token = token == null ? "" : token;
        return this;
    }

    /**
     * Where the ranks' NICs meet (default {@link Fabric#TCP}, which works on one host and across hosts).
     *
     * @param fabric the fabric
     * @return this
     */
    public CommConfig fabric(final Fabric fabric) {
        open("fabric");
        this.fabric = Objects.requireNonNull(fabric, "fabric");
        return this;
    }

    /**
     * Which transport carries the data: {@link CollWorld.TransportKind#IB} (RDMA verbs over the software NIC, the
     * default) or {@link CollWorld.TransportKind#SOCKET} (plain sockets).
     *
     * @param transport the transport
     * @return this
     */
    public CommConfig transport(final CollWorld.TransportKind transport) {
        open("transport");
        this.transport = Objects.requireNonNull(transport, "transport");
        return this;
    }

    /**
     * How long any one wait may take (joining, a peer's data, a completion) before it fails naming what it waited
     * for.
     *
     * @param timeout positive
     * @return this
     */
    public CommConfig timeout(final Duration timeout) {
        open("timeout");
        this.timeout = Objects.requireNonNull(timeout, "timeout");
        return this;
    }

    /**
     * Puts this rank's collective buffers and reductions on a GPU: {@code sim:<preset>} (a simulated GPU, e.g.
     * {@code sim:h200}), {@code cuda:N}, or {@code cuda:rank} (rank r on {@code cuda:r}). Null (the default): host
     * memory only.
     *
     * @param spec the GPU
     * @return this
     */
    public CommConfig gpu(final String spec) {
        open("gpu");
        this.gpu = spec;
        return this;
    }

    /**
     * The address this rank's tcp fabric listens on (default loopback; give the interface other hosts reach).
     *
     * @param address the address
     * @return this
     */
    public CommConfig bind(final InetAddress address) {
        open("bind");
        this.bind = address;
        return this;
    }

    /**
     * The collectives' tuning (buffer size, channels, algorithm, eager and direct limits ...). Default: a
     * {@link CollContext} read from this config's settings, with this config's timeout and bind address; a context
     * given here keeps its own.
     *
     * @param coll the context, concluded by {@link #conclude()}
     * @return this
     */
    public CommConfig coll(final CollContext coll) {
        open("coll");
        this.coll = coll;
        return this;
    }

    /**
     * Where NCCL_* and gdrkit.* settings come from (default: this process's environment and system properties).
     *
     * @param settings the reader
     * @return this
     */
    public CommConfig settings(final SettingsReader settings) {
        open("settings");
        this.settings = settings;
        return this;
    }

    /**
     * Checks every value once and freezes the config.
     *
     * @return this
     * @throws IllegalArgumentException naming a missing or out-of-range value
     * @throws IllegalStateException    when called a second time
     */
    public CommConfig conclude() {
        freeze.checkConclude();
        if (id == null) {
            throw new IllegalArgumentException("no run id: start a CommRoot and give every rank its id()");
        }
        if (nranks < 1) {
            throw new IllegalArgumentException("nranks " + nranks + " must be at least 1");
        }
        if (rank < 0 || rank >= nranks) {
            throw new IllegalArgumentException("rank " + rank + " outside 0.." + (nranks - 1));
        }
        if (localRank < -1 || localRank >= nranks) {
            throw new IllegalArgumentException("local rank " + localRank + " outside 0.." + (nranks - 1));
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout " + timeout + " must be positive");
        }
        if (gpu != null && !(gpu.startsWith("sim:") || gpu.equals("cuda:rank") || gpu.matches("cuda:[0-9]{1,3}"))) {
            throw new IllegalArgumentException("GPU '" + gpu + "' is not sim:<preset>, cuda:N or cuda:rank");
        }
        if (settings == null) {
            settings = SettingsReader.ofProcess();
        }
        if (coll == null) {
            // the default tuning takes this config's timeout and address; a context given by the caller is theirs
            coll = new CollContext().settings(settings).timeout(timeout);
            if (bind != null) {
                coll.bind(bind);
            }
        }
        coll.concludeOnce();
        if (localRank < 0) {
            localRank = fabric == Fabric.TCP ? 0 : rank;
        }
        freeze.concluded();
        return this;
    }

    /** {@return the address given to {@link #bind}, or null when none was} */
    InetAddress bindAddress() {
        return bind;
    }

    /** {@return the run's id} */
    public UniqueId id() {
        return id;
    }

    /** {@return this rank} */
    public int rank() {
        return rank;
    }

    /** {@return the number of ranks} */
    public int nranks() {
        return nranks;
    }

    /** {@return this rank's index on its host (after {@link #conclude()})} */
    public int localRank() {
        return localRank;
    }

    /** {@return the fabric} */
    public Fabric fabric() {
        return fabric;
    }

    /** {@return the transport} */
    public CollWorld.TransportKind transport() {
        return transport;
    }

    /** {@return the timeout of every wait} */
    public Duration timeout() {
        return timeout;
    }

    /** {@return the GPU spec, or null for host memory only} */
    public String gpu() {
        return gpu;
    }

    /** {@return the collectives' tuning (set after {@link #conclude()})} */
    public CollContext coll() {
        return coll;
    }

    /** {@return where settings come from (set after {@link #conclude()})} */
    public SettingsReader settings() {
        return settings;
    }

    /** {@return whether {@link #conclude()} ran} */
    public boolean concluded() {
        return freeze.isConcluded();
    }

    /** The token, for the bootstrap only: never printed. */
    String token() {
        return token;
    }

    @Override
    public String toString() {
        return "CommConfig[rank " + rank + " of " + nranks + ", " + fabric.wireName() + ", "
            + transport.name().toLowerCase(java.util.Locale.ROOT) + (gpu == null ? "" : ", gpu " + gpu)
            + ", timeout " + timeout.toMillis() + " ms" + (token.isEmpty() ? "" : ", token set") + "]";
    }
}
