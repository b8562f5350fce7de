/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.net;

import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A listener's connections between accept and the end of their handshake, oldest first, so that at its cap the
 * oldest one that has sent nothing makes room for a newer one: silent connections churn among themselves and never
 * lock a real peer out (a listener refuses a newcomer only when every pending connection has spoken). The listener
 * keeps its own count of pending connections; this holds who they are and which of them spoke.
 */
public final class PendingHandshakes {
    /** One pending connection. */
    public static final class Entry {
        private final AutoCloseable connection;
        private volatile boolean spoke;
        private volatile boolean evicted;

        private Entry(final AutoCloseable connection) {
            this.connection = connection;
        }

        /** The peer sent a byte: from now on it is never evicted as silent. */
        public void spoke() {
            spoke = true;
        }

        /** Whether it was closed to make room (its handshake then fails on the closed connection). */
        public boolean evicted() {
            return evicted;
        }
    }

    private final ConcurrentLinkedDeque<Entry> entries = new ConcurrentLinkedDeque<>();
    private final AtomicLong evictedSilent = new AtomicLong();

    /** Registers a connection that has just been accepted. */
    public Entry add(final AutoCloseable connection) {
        final Entry e = new Entry(connection);
        entries.add(e);
        return e;
    }

    /** Its handshake ended, either way. */
    public void remove(final Entry e) {
        entries.remove(e);
    }

    /** Closes the oldest pending connection that has sent nothing; false when every pending one has spoken. */
    public boolean evictOldestSilent() {
        for (final Entry e : entries) {
            if (!e.spoke && entries.remove(e)) {
                e.evicted = true;
                evictedSilent.incrementAndGet();
                try {
                    e.connection.close();
                } catch (final Exception ignored) {
                    // closed anyway: its handshake thread ends on the closed connection
                }
                return true;
            }
        }
        return false;
    }

    /** Connections closed by {@link #evictOldestSilent}. */
    public long evictedSilent() {
        return evictedSilent.get();
    }
}
