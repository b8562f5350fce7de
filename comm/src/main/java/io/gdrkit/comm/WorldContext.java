/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.core.config.ContextFreeze;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.softnic.SoftNicDriver;
import java.time.Duration;
import java.util.Objects;

/**
 * What shapes one rank's {@link CollWorld} beside its bootstrap: the fabric, the transport, the collectives'
 * tuning, where settings come from, the timeout of every wait, the GPU the buffers live on, and on the in-JVM fabric
 * the driver the ranks' threads share. {@link #conclude()} checks it once and freezes it: a setter after that, or a
 * second conclude, is an {@link IllegalStateException}.
 */
public final class WorldContext {
    /** An empty context: give at least the fabric. */
    public WorldContext() {
    }

    private Fabric fabric;
    private CollWorld.TransportKind transport = CollWorld.TransportKind.IB;
    private CollContext coll;
    private SettingsReader settings;
    private Duration timeout = CommConfig.DEFAULT_TIMEOUT;
    private String gpu;
    private SoftNicDriver sharedDriver;
    private final ContextFreeze freeze = new ContextFreeze("WorldContext");

    private WorldContext set(final String setter) {
        freeze.set(setter);
        return this;
    }

    /**
     * Where the ranks' NICs meet.
     *
     * @param f the fabric
     * @return this
     */
    public WorldContext fabric(final Fabric f) {
        set("fabric").fabric = Objects.requireNonNull(f, "fabric");
        return this;
    }

    /**
     * The transport behind the NET seam (default {@link CollWorld.TransportKind#IB}).
     *
     * @param t the transport
     * @return this
     */
    public WorldContext transport(final CollWorld.TransportKind t) {
        set("transport").transport = Objects.requireNonNull(t, "transport");
        return this;
    }

    /**
     * The collectives' tuning (default: read from {@link #settings}).
     *
     * @param c the context
     * @return this
     */
    public WorldContext coll(final CollContext c) {
        set("coll").coll = c;
        return this;
    }

    /**
     * Where NCCL_* and gdrkit.* settings come from (default: this process's environment and properties).
     *
     * @param s the reader
     * @return this
     */
    public WorldContext settings(final SettingsReader s) {
        set("settings").settings = s;
        return this;
    }

    /**
     * The timeout of every wait while the world is set up (default 60 s).
     *
     * @param t positive
     * @return this
     */
    public WorldContext timeout(final Duration t) {
        set("timeout").timeout = Objects.requireNonNull(t, "timeout");
        return this;
    }

    /**
     * The GPU the buffers and reductions live on: {@code sim:<preset>}, {@code cuda:N} or {@code cuda:rank}; null
     * (the default) for host memory.
     *
     * @param spec the GPU
     * @return this
     */
    public WorldContext gpu(final String spec) {
        set("gpu").gpu = spec;
        return this;
    }

    /**
     * On {@link Fabric#INJVM}: the driver every rank's thread shares (its NICs are added there and taken off at
     * close); null on the other fabrics.
     *
     * @param d the driver
     * @return this
     */
    public WorldContext sharedDriver(final SoftNicDriver d) {
        set("sharedDriver").sharedDriver = d;
        return this;
    }

    /**
     * Checks the values once and freezes the context.
     *
     * @return this
     * @throws IllegalArgumentException without a fabric, with a non-positive timeout, or an in-JVM world over
     *                                  software NICs without a shared driver
     * @throws IllegalStateException    when called a second time
     */
    public WorldContext conclude() {
        freeze.checkConclude();
        if (fabric == null) {
            throw new IllegalArgumentException("no fabric: injvm, shm or tcp");
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout " + timeout + " must be positive");
        }
        if (fabric == Fabric.INJVM && transport == CollWorld.TransportKind.IB && sharedDriver == null) {
            throw new IllegalArgumentException("an in-JVM world over software NICs needs the driver its ranks share");
        }
        if (settings == null) {
            settings = SettingsReader.ofProcess();
        }
        if (coll == null) {
            coll = new CollContext().settings(settings).timeout(timeout);
        }
        freeze.concluded();
        return this;
    }

    /**

     * Returns the fabric.

     *

     * @return the fabric

     */
    public Fabric fabric() {
        return fabric;
    }

    /**

     * Returns the transport.

     *

     * @return the transport

     */
    public CollWorld.TransportKind transport() {
        return transport;
    }

    /**

     * Returns the collectives' tuning (after {@link #conclude()}).

     *

     * @return the collectives' tuning (after {@link #conclude()})

     */
    public CollContext coll() {
        return coll;
    }

    /**

     * Returns where settings come from (after {@link #conclude()}).

     *

     * @return where settings come from (after {@link #conclude()})

     */
    public SettingsReader settings() {
        return settings;
    }

    /**

     * Returns the timeout of every wait.

     *

     * @return the timeout of every wait

     */
    public Duration timeout() {
        return timeout;
    }

    /**

     * Returns the GPU spec, or null.

     *

     * @return the GPU spec, or null

     */
    public String gpu() {
        return gpu;
    }

    /**

     * Returns the in-JVM driver, or null.

     *

     * @return the in-JVM driver, or null

     */
    public SoftNicDriver sharedDriver() {
        return sharedDriver;
    }

    /**

     * Returns whether {@link #conclude()} ran.

     *

     * @return whether {@link #conclude()} ran

     */
    public boolean concluded() {
        return freeze.isConcluded();
    }
}
