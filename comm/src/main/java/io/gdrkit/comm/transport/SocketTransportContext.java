/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.core.config.Source;
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
    private boolean concluded;

    /**
     * Sets where the NCCL_* settings are read from (the process's environment and properties by default).
     *
     * @param reader the settings source
     * @return this context
     */
    public SocketTransportContext settings(final SettingsReader reader) {
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
     * Reads the settings not set here from the settings source, checks them, and freezes them; calling it again does
     * nothing.
     *
     *
     * @return this context
     * @throws IllegalArgumentException naming a malformed variable or a product over {@value #MAX_SOCKS}
     */
    public SocketTransportContext conclude() {
        if (concluded) {
            return this;
        }
        nThreads = pick(nThreads, "NCCL_SOCKET_NTHREADS", 16);
        nSocksPerThread = pick(nSocksPerThread, "NCCL_NSOCKS_PERTHREAD", MAX_SOCKS);
        if (nThreads * nSocksPerThread > MAX_SOCKS) {
            throw new IllegalArgumentException("NCCL_SOCKET_NTHREADS (" + nThreads + ") x NCCL_NSOCKS_PERTHREAD ("
                + nSocksPerThread + ") = " + nThreads * nSocksPerThread + " sockets exceeds " + MAX_SOCKS);
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("SocketTransport timeout " + timeout + " must be positive");
        }
        concluded = true;
        return this;
    }

    private int pick(final Integer set, final String name, final int max) {
        if (set != null) {
            if (set < 1 || set > max) {
                throw new IllegalArgumentException(name + "=" + set + " is not an integer in [1, " + max + "]");
            }
            recorded.add(new Setting<>(name, set, Source.FLAG, String.valueOf(set)));
            return set;
        }
        final Setting<Integer> s = settings.integer(name, 1, 1, max);
        recorded.add(s);
        return s.value();
    }
}
