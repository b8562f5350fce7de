/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.bootstrap;

import io.gdrkit.comm.config.CommConfiguration;
import io.gdrkit.core.config.CoreConfiguration;
import io.gdrkit.core.config.ContextFreeze;
import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.SettingDef;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.core.config.Source;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Who this rank is and whom it meets: the unique id, rank, number of ranks, the join/operation timeout and the
 * shared-secret token. Set by hand, or read from the environment the launcher gives each rank
 * ({@link #fromEnvironment}). {@link #conclude()} checks it once and records where each value came from.
 */
public final class BootstrapContext {
    /** Creates an empty context; set the id, rank and number of ranks, or use {@link #fromEnvironment}. */
    public BootstrapContext() {
    }

    /** The unique id ({@code host:port/runIdHex}) in a rank's environment. */
    public static final String ENV_ID = CommConfiguration.BOOTSTRAP_ID.name();
    /** This rank, 0-based. */
    public static final String ENV_RANK = CommConfiguration.BOOTSTRAP_RANK.name();
    /** The number of ranks of the run. */
    public static final String ENV_NRANKS = CommConfiguration.BOOTSTRAP_NRANKS.name();
    /** The rank's index among the ranks of its host (which GPU it takes). */
    public static final String ENV_LOCAL_RANK = CommConfiguration.BOOTSTRAP_LOCAL_RANK.name();
    /**
     * The shared secret the root checks in every hello (the launcher passes it in the environment, never on a
     * command line). Empty: no token.
     */
    public static final String ENV_TOKEN = CoreConfiguration.TOKEN_ENV.name();
    /** The timeout of every bootstrap wait, in milliseconds (property). */
    public static final String TIMEOUT_PROP = CommConfiguration.BOOTSTRAP_TIMEOUT_MS.name();

    private UniqueId id;
    private int rank = -1;
    private int nranks = -1;
    private int localRank;
    private String token = "";
    private Duration timeout;
    private final List<Setting<?>> settings = new ArrayList<>();
    private final ContextFreeze freeze = new ContextFreeze("BootstrapContext");

    /**
     * Sets the run's unique id, from the root.
     *
     * @param id the unique id
     * @return this context
     */
    public BootstrapContext id(final UniqueId id) {
        freeze.set("id");
        this.id = id;
        return this;
    }

    /**
     * Sets this rank.
     *
     * @param rank the rank, {@code 0..nranks-1}
     * @return this context
     */
    public BootstrapContext rank(final int rank) {
        freeze.set("rank");
        this.rank = rank;
        return this;
    }

    /**
     * Sets the number of ranks of the run.
     *
     * @param nranks the number of ranks
     * @return this context
     */
    public BootstrapContext nranks(final int nranks) {
        freeze.set("nranks");
        this.nranks = nranks;
        return this;
    }

    /**
     * Sets this rank's index among the ranks of its host (default 0).
     *
     * @param localRank the local rank
     * @return this context
     */
    public BootstrapContext localRank(final int localRank) {
        freeze.set("localRank");
        this.localRank = localRank;
        return this;
    }

    /**
     * Sets the shared secret the root checks (default empty: none).
     *
     * @param token the token, or null or empty for none
     * @return this context
     */
    public BootstrapContext token(final String token) {
        freeze.set("token");
        this.token = token == null ? "" : token;
        return this;
    }

    /**
     * Sets the timeout of every bootstrap wait; unset, {@code gdrkit.bootstrap.timeout.ms} or a default applies.
     *
     * @param timeout the timeout
     * @return this context
     */
    public BootstrapContext timeout(final Duration timeout) {
        freeze.set("timeout");
        this.timeout = timeout;
        return this;
    }

    /** {@return the run's unique id} */
    public UniqueId id() {
        return id;
    }

    /** {@return this rank} */
    public int rank() {
        return rank;
    }

    /** {@return the number of ranks of the run} */
    public int nranks() {
        return nranks;
    }

    /** {@return this rank's index among the ranks of its host} */
    public int localRank() {
        return localRank;
    }

    /** {@return the shared secret, empty for none} */
    public String token() {
        return token;
    }

    /** {@return the timeout of every bootstrap wait} */
    public Duration timeout() {
        return timeout;
    }

    /** {@return the settings read, with their sources (the token's value is never shown)} */
    public List<Setting<?>> settings() {
        return List.copyOf(settings);
    }

    /**
     * True when {@code env} names a launched rank (it carries {@link #ENV_ID}).
     *
     * @param env the environment to look at
     * @return true for a launched rank's environment
     */
    public static boolean launched(final Map<String, String> env) {
        final String v = env.get(ENV_ID);
        return v != null && !v.isBlank();
    }

    /**
     * The context the launcher described in {@code env} ({@link #ENV_ID}, {@link #ENV_RANK}, {@link #ENV_NRANKS},
     * {@link #ENV_LOCAL_RANK}, {@link #ENV_TOKEN}); the timeout from {@code props}.
     *
     * @param env   the environment, such as {@link System#getenv()}
     * @param props the system properties, read for {@code gdrkit.bootstrap.timeout.ms}
     * @return the rank's context
     * @throws IllegalArgumentException naming a missing or malformed variable
     */
    public static BootstrapContext fromEnvironment(final Map<String, String> env, final Map<String, String> props) {
        final BootstrapContext c = new BootstrapContext();
        final SettingsReader r = new SettingsReader(env, props, Map.of());
        final Setting<String> idText = required(CommConfiguration.BOOTSTRAP_ID.read(r));
        c.id = UniqueId.parse(idText.value());
        c.settings.add(new Setting<>(ENV_ID, c.id.encode(), Source.ENVIRONMENT, idText.raw()));
        c.nranks = number(r, CommConfiguration.BOOTSTRAP_NRANKS, true, 1, BootstrapWire.MAX_RANKS, c.settings);
        c.rank = number(r, CommConfiguration.BOOTSTRAP_RANK, true, 0, c.nranks - 1, c.settings);
        c.localRank = number(r, CommConfiguration.BOOTSTRAP_LOCAL_RANK, false, 0, c.nranks - 1, c.settings);
        final String tok = CoreConfiguration.TOKEN_ENV.read(r).raw();
        if (tok != null && !tok.isEmpty()) {
            c.token = tok;
            c.settings.add(new Setting<>(ENV_TOKEN, "(set, " + tok.length() + " characters)", Source.ENVIRONMENT,
                "(hidden)"));
        }
        final Setting<Long> t = CommConfiguration.BOOTSTRAP_TIMEOUT_MS.read(r);
        c.settings.add(t);
        c.timeout = Duration.ofMillis(t.value());
        return c;
    }

    /** {@return a launched rank's context from this process's environment and properties} */
    public static BootstrapContext fromProcess() {
        return fromEnvironment(System.getenv(), SettingsReader.systemProperties("gdrkit.bootstrap."));
    }

    private static <T> Setting<T> required(final Setting<T> s) {
        if (s.source() == Source.DEFAULT) {
            throw new IllegalArgumentException(s.name() + " is not set: start ranks with `gdrkit launch`, or set "
                + ENV_ID + ", " + ENV_RANK + " and " + ENV_NRANKS);
        }
        return s;
    }

    /** A launcher's integer, in the setting's range and then in {@code [min, max]} (which depends on the run). */
    private static int number(final SettingsReader r, final SettingDef<Integer> def, final boolean required,
                              final int min, final int max, final List<Setting<?>> settings) {
        final Setting<Integer> s;
        try {
            s = def.read(r);
        } catch (final IllegalArgumentException e) {
            throw new IllegalArgumentException(e.getMessage().replaceFirst("\\[-?\\d+, -?\\d+\\]$",
                "[" + min + ", " + max + "]"), e);
        }
        if (s.source() == Source.DEFAULT) {
            if (required) {
                required(s);
            }
            return 0;
        }
        if (s.value() < min || s.value() > max) {
            throw def.bad(s.raw(), "an integer in [" + min + ", " + max + "]");
        }
        settings.add(s);
        return s.value();
    }

    /**
     * Checks the context once.
     *
     * @return this context
     * @throws IllegalArgumentException for a missing id, a rank outside {@code 0..nranks-1} or a bad timeout
     */
    public synchronized BootstrapContext conclude() {
        freeze.checkConclude();
        if (id == null) {
            throw new IllegalArgumentException("bootstrap: no unique id");
        }
        if (nranks < 1 || nranks > BootstrapWire.MAX_RANKS) {
            throw new IllegalArgumentException("bootstrap: nranks " + nranks + " outside 1.." + BootstrapWire.MAX_RANKS);
        }
        if (rank < 0 || rank >= nranks) {
            throw new IllegalArgumentException("bootstrap: rank " + rank + " outside 0.." + (nranks - 1));
        }
        if (token.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > BootstrapWire.MAX_TOKEN) {
            throw new IllegalArgumentException("bootstrap: token longer than " + BootstrapWire.MAX_TOKEN + " bytes");
        }
        if (timeout == null) {
            final long ms = CommConfiguration.BOOTSTRAP_TIMEOUT_MS.defaultValue();
            timeout = Duration.ofMillis(ms);
            settings.add(new Setting<>(TIMEOUT_PROP, ms, Source.DEFAULT, null));
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("bootstrap: timeout " + timeout + " must be positive");
        }
        freeze.concluded();
        return this;
    }

    /** {@return whether {@link #conclude()} ran (then setters and a second conclude() throw)} */
    public boolean isConcluded() {
        return freeze.isConcluded();
    }

    /**
     * {@link #conclude()} unless it ran, atomically: for the code a context is handed to, which may find it concluded
     * by its caller (or by another rank's thread sharing it).
     */
    synchronized BootstrapContext concludeOnce() {
        return isConcluded() ? this : conclude();
    }
}
