/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.bootstrap.BootstrapContext;
import io.gdrkit.comm.bootstrap.WorldEnvironment;
import java.util.Map;
import java.util.Objects;

/** {@link Comm}'s factories: joining the run and opening the world, and a world's config derived from the caller's. */
final class CommOpening {
    private CommOpening() {
    }

    /** {@link Comm#open(CommConfig)}: on a failure the bootstrap is aborted and the in-JVM driver released. */
    static Comm open(final CommConfig config) {
        Objects.requireNonNull(config, "config");
        if (!config.concluded()) {
            config.conclude();
        }
        final boolean injvm = config.fabric() == Fabric.INJVM;
        final io.gdrkit.softnic.SoftNicDriver driver = injvm ? InJvmDrivers.acquire(config.id().runId()) : null;
        Bootstrap b = null;
        try {
            b = Bootstrap.init(new BootstrapContext().id(config.id()).rank(config.rank()).nranks(config.nranks())
                .localRank(config.localRank()).token(config.token()).timeout(config.timeout()));
            final CollWorld w = CollWorld.open(b, new WorldContext().fabric(config.fabric()).sharedDriver(driver)
                .transport(config.transport()).coll(config.coll()).settings(config.settings()).timeout(config.timeout())
                .gpu(config.gpu()));
            return new Comm(config, b, w, injvm);
        } catch (final RuntimeException e) {
            if (b != null) {
                b.abort("rank " + config.rank() + " could not open its communicator: " + e.getMessage());
                b.close();
            }
            if (injvm) {
                InJvmDrivers.release(config.id().runId());
            }
            throw e;
        }
    }

    /** {@link Comm#fromEnvironment(CommConfig, Map)}: the root this rank serves is closed when the open fails. */
    static Comm fromEnvironment(final CommConfig base, final Map<String, String> env) {
        Objects.requireNonNull(base, "base");
        final WorldEnvironment.Resolved w = WorldEnvironment.resolve(env, base.timeout());
        try {
            final CommConfig c = derived(base).id(w.id()).rank(w.world().rank()).nranks(w.world().size())
                .localRank(w.world().localRank()).token(w.world().token());
            return Comm.open(c, w.root(), w.world().source().label());
        } catch (final RuntimeException e) {
            if (w.root() != null) {
                w.root().close();
            }
            throw e;
        }
    }

    /**
     * A config with {@code base}'s fabric, transport, timeout, GPU, settings and bind address, for a world's id and
     * rank.
     *
     * @param base the caller's config
     * @return a fresh config
     */
    static CommConfig derived(final CommConfig base) {
        final CommConfig c = new CommConfig().fabric(base.fabric()).transport(base.transport()).timeout(base.timeout())
            .gpu(base.gpu());
        if (base.settings() != null) {
            c.settings(base.settings());
        }
        if (base.bindAddress() != null) {
            c.bind(base.bindAddress()); // ranks on other hosts: the interface the others reach
        }
        return c;
    }
}
