/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import io.gdrkit.core.config.ContextFreeze;
import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.SettingDef;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.gdr.config.GdrConfiguration;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * {@link SocketTransport}'s settings, read in {@link #conclude()} through one {@link SettingsReader}:
 * {@code NCCL_SOCKET_NTHREADS} (1, 1..16) helper threads per connection, each owning
 * {@code NCCL_NSOCKS_PERTHREAD} (1, 1..64) data sockets; their product is at most 64, as in NCCL.
 */
public final class SocketTransportContext {
    /** NCCL's MIN_CHUNKSIZE: a message is cut into chunks of at least this size, one socket each. */
    public static final int MIN_CHUNK = 64 * 1024;
    /** The most data sockets a connection may have: threads times sockets per thread. */
    public static final int MAX_SOCKS = 64;

    /**
     * Creates a context with every setting unset: {@link #conclude()} fills them in from the environment or the
     * defaults.
     */
    public SocketTransportContext() {
    }

    private SettingsReader settings = SettingsReader.ofProcess();
    private Integer nThreads;
    private Integer nSocksPerThread;
    private Duration timeout = Duration.ofSeconds(30);
    private InetAddress bind = InetAddress.getLoopbackAddress();
    private final List<Setting<?>> recorded = new ArrayList<>();
    private final ContextFreeze freeze = new ContextFreeze("SocketTransportContext");

    /**
     * Sets where the NCCL_* settings are read from (the process's environment and properties by default).
     *
     * @param reader the settings source
     * @return this context
     */
    public SocketTransportContext settings(final SettingsReader reader) {
        freeze.set("settings");
        this.settings = Objects.requireNonNull(reader, "reader");
        return this;
    }

    /**
     * Sets the helper threads per connection, overriding NCCL_SOCKET_NTHREADS.
     *
     * @param n the number of threads, 1..16
     * @return this context
     */
    public SocketTransportContext nThreads(final int n) {
        freeze.set("nThreads");
        this.nThreads = n;
        return this;
    }

    /**
     * Sets the data sockets per helper thread, overriding NCCL_NSOCKS_PERTHREAD.
     *
     * @param n the number of sockets, 1..64
     * @return this context
     */
    public SocketTransportContext nSocksPerThread(final int n) {
        freeze.set("nSocksPerThread");
        this.nSocksPerThread = n;
        return this;
    }

    /**
     * Sets the timeout of every wait (30 seconds by default).
     *
     * @param t the timeout
     * @return this context
     */
    public SocketTransportContext timeout(final Duration t) {
        freeze.set("timeout");
        this.timeout = Objects.requireNonNull(t, "timeout");
        return this;
    }

    /**
     * Sets the local address to listen on and connect from (loopback by default).
     *
     * @param a the address
     * @return this context
     */
    public SocketTransportContext bind(final InetAddress a) {
        freeze.set("bind");
        this.bind = Objects.requireNonNull(a, "bind");
        return this;
    }

    /** {@return the helper threads per connection (after {@link #conclude()})} */
    public int nThreads() {
        return nThreads;
    }

    /** {@return the data sockets per helper thread (after {@link #conclude()})} */
    public int nSocksPerThread() {
        return nSocksPerThread;
    }

    /** {@return the timeout of every wait} */
    public Duration timeout() {
        return timeout;
    }

    /** {@return the local address the transport listens on} */
    public InetAddress bind() {
        return bind;
    }

    /** {@return each setting in effect with its source} */
    public List<Setting<?>> recorded() {
        return List.copyOf(recorded);
    }

    /**
     * Reads what no setter gave, checks everything once and freezes the context: afterwards a setter and a second
     * {@code conclude()} throw {@link IllegalStateException}.
     *
     * @return this context
     * @throws IllegalArgumentException naming a malformed variable or a product over {@value #MAX_SOCKS}
     */
    public synchronized SocketTransportContext conclude() {
        freeze.checkConclude();
        nThreads = pick(nThreads, GdrConfiguration.SOCKET_NTHREADS);
        nSocksPerThread = pick(nSocksPerThread, GdrConfiguration.NSOCKS_PERTHREAD);
        if (nThreads * nSocksPerThread > MAX_SOCKS) {
            throw new IllegalArgumentException(GdrConfiguration.SOCKET_NTHREADS.name() + " (" + nThreads + ") x "
                + GdrConfiguration.NSOCKS_PERTHREAD.name() + " (" + nSocksPerThread + ") = "
                + nThreads * nSocksPerThread + " sockets exceeds " + MAX_SOCKS);
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("SocketTransport timeout " + timeout + " must be positive");
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
    synchronized SocketTransportContext concludeOnce() {
        return isConcluded() ? this : conclude();
    }

    private int pick(final Integer set, final SettingDef<Integer> def) {
        final Setting<Integer> s = set != null ? def.given(set) : def.read(settings);
        recorded.add(s);
        return s.value();
    }
}
