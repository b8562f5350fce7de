/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.bootstrap.BootstrapRoot;
import io.gdrkit.comm.bootstrap.UniqueId;
import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * The meeting point of a run, as {@code ncclGetUniqueId} makes one: one process starts it, hands {@link #id()} to
 * every rank (any way it likes: an argument, a file, its own launcher), and keeps it open until every rank has
 * joined. Each rank then opens its {@link Comm} with that id. The id carries the root's address and a random run
 * number; with a token, a rank must also know the token to join.
 *
 * <pre>{@code
 * try (CommRoot root = CommRoot.startLoopback(4)) {
 *     UniqueId id = root.id();   // give this to the 4 ranks
 *     ...
 * }
 * }</pre>
 */
public final class CommRoot implements AutoCloseable {
    private final BootstrapRoot root;

    private CommRoot(final BootstrapRoot root) {
        this.root = root;
    }

    /**
     * A root on the loopback interface (ranks on this host), any free port, no token, 60 s for the ranks to join.
     *
     * @param nranks the number of ranks that will join
     * @return the started root
     */
    public static CommRoot startLoopback(final int nranks) {
        return new CommRoot(BootstrapRoot.startLoopback(nranks, CommConfig.DEFAULT_TIMEOUT));
    }

    /**
     * A root listening on {@code bind} (port 0: any free port).
     *
     * @param bind        the address ranks connect to (an interface other hosts reach, for ranks on other hosts)
     * @param nranks      the number of ranks that will join
     * @param token       the run's shared secret, or null for none; give the same to every rank's {@link CommConfig}
     * @param joinTimeout how long the ranks have to join before the root gives up, naming the missing ranks
     * @return the started root
     */
    public static CommRoot start(final InetSocketAddress bind, final int nranks, final String token,
                                 final Duration joinTimeout) {
        return new CommRoot(BootstrapRoot.start(bind, nranks, token, joinTimeout));
    }

    /** {@return the id to hand to every rank} */
    public UniqueId id() {
        return root.id();
    }

    /** {@return why the root gave up (a rank missing, a refused hello), or null while all is well} */
    public String failure() {
        return root.failure();
    }

    /** Stops listening; ranks that already joined keep their communicators. */
    @Override
    public void close() {
        root.close();
    }
}
