/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.bootstrap;

import io.gdrkit.core.config.Setting;
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
    public static final String ENV_ID = "GDRKIT_ID";
    /** This rank, 0-based. */
    public static final String ENV_RANK = "GDRKIT_RANK";
    /** The number of ranks of the run. */
    public static final String ENV_NRANKS = "GDRKIT_NRANKS";
    /** The rank's index among the ranks of its host (which GPU it takes). */
    public static final String ENV_LOCAL_RANK = "GDRKIT_LOCAL_RANK";
    /**
     * The shared secret the root checks in every hello (the launcher passes it in the environment, never on a
     * command line). Empty: no token.
     */
    public static final String ENV_TOKEN = "GDRKIT_TOKEN";
    /** The timeout of every bootstrap wait, in milliseconds (property). */
    public static final String TIMEOUT_PROP = "gdrkit.bootstrap.timeout.ms";

    private UniqueId id;
    private int rank = -1;
    private int nranks = -1;
    private int localRank;
    private String token = "";
    private Duration timeout;
    private final List<Setting<?>> settings = new ArrayList<>();
    private boolean concluded;

    /**
     * Sets the run's unique id, from the root.
     *
     * @param id the unique id
     * @return this context
     */
    public BootstrapContext id(final UniqueId id) {
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
        this.token = token == null ? "" : token;
        return this;
    }

    /**
     * Sets the timeout of every bootstrap wait; unset, {@value #TIMEOUT_PROP} or a default applies.
     *
     * @param timeout the timeout
     * @return this context
     */
    public BootstrapContext timeout(final Duration timeout) {
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
     * @param props the system properties, read for {@value #TIMEOUT_PROP}
     * @return the rank's context
     * @throws IllegalArgumentException naming a missing or malformed variable
     */
    public static BootstrapContext fromEnvironment(final Map<String, String> env, final Map<String, String> props) {
        final BootstrapContext c = new BootstrapContext();
        final String idText = required(env, ENV_ID);
        c.id = UniqueId.parse(idText);
        c.settings.add(new Setting<>(ENV_ID, c.id.encode(), Source.ENVIRONMENT, idText));
        c.nranks = number(env, ENV_NRANKS, required(env, ENV_NRANKS), 1, BootstrapWire.MAX_RANKS, c.settings);
        c.rank = number(env, ENV_RANK, required(env, ENV_RANK), 0, c.nranks - 1, c.settings);
        final String lr = env.get(ENV_LOCAL_RANK);
        c.localRank = lr == null ? 0 : number(env, ENV_LOCAL_RANK, lr, 0, c.nranks - 1, c.settings);
        final String tok = env.get(ENV_TOKEN);
        if (tok != null && !tok.isEmpty()) {
            c.token = tok;
            c.settings.add(new Setting<>(ENV_TOKEN, "(set, " + tok.length() + " characters)", Source.ENVIRONMENT,
                "(hidden)"));
        }
        final Setting<Long> t = new SettingsReader(Map.of(), props, Map.of()).longValue(TIMEOUT_PROP, 60_000, 1,
            86_400_000);
        c.settings.add(t);
        c.timeout = Duration.ofMillis(t.value());
        return c;
    }

    /** {@return a launched rank's context from this process's environment and properties} */
    public static BootstrapContext fromProcess() {
        return fromEnvironment(System.getenv(), SettingsReader.systemProperties("gdrkit.bootstrap."));
    }

    private static String required(final Map<String, String> env, final String name) {
        final String v = env.get(name);
        if (v == null || v.isBlank()) {
            throw new IllegalArgumentException(name + " is not set: start ranks with `gdrkit launch`, or set "
                + ENV_ID + ", " + ENV_RANK + " and " + ENV_NRANKS);
        }
        return v;
    }

    private static int number(final Map<String, String> env, final String name, final String text, final int min,
                              final int max, final List<Setting<?>> settings) {
        final int v;
        try {
            v = Integer.parseInt(text.trim());
        } catch (final NumberFormatException e) {
            throw new IllegalArgumentException(name + "=" + text + " is not an integer in [" + min + ", " + max + "]");
        }
        if (v < min || v > max) {
            throw new IllegalArgumentException(name + "=" + text + " is not an integer in [" + min + ", " + max + "]");
        }
        settings.add(new Setting<>(name, v, Source.ENVIRONMENT, text));
        return v;
    }

    /**
     * Checks the context once.
     *
     * @return this context
     * @throws IllegalArgumentException for a missing id, a rank outside {@code 0..nranks-1} or a bad timeout
     */
    public BootstrapContext conclude() {
        if (concluded) {
            return this;
        }
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
            timeout = Duration.ofSeconds(60);
            settings.add(new Setting<>(TIMEOUT_PROP, 60_000L, Source.DEFAULT, null));
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("bootstrap: timeout " + timeout + " must be positive");
        }
        concluded = true;
        return this;
    }
}
