/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

/**
 * What a responder QP still owes its requester, in PSN order: READ responses to stream, ATOMIC results, a
 * (coalesced) ACK and NAKs. Keeping ACKs in the same queue is what stops an ACK from overtaking the responses of
 * an earlier READ. Also keeps the last max_dest_rd_atomic ATOMIC results so a duplicate ATOMIC is answered from
 * memory, never executed twice. Plain arrays: one thread (the duty holder) uses it.
 */
final class ResponderResources {
    static final byte READ = 1;
    static final byte ATOMIC = 2;
    static final byte ACK = 3;

    private static final int CAPACITY = 64;
    final byte[] type = new byte[CAPACITY];
    final int[] psn = new int[CAPACITY];
    final long[] va = new long[CAPACITY];
    final int[] rkey = new int[CAPACITY];
    final int[] length = new int[CAPACITY];
    final int[] sentPackets = new int[CAPACITY];
    final long[] value = new long[CAPACITY];
    /** For ACK entries: the AETH syndrome (ACK, RNR NAK or NAK). */
    final int[] syndrome = new int[CAPACITY];
    final int[] msn = new int[CAPACITY];
    private int head;
    private int tail;

    // atomic replay history
    private final int historySize;
    private final int[] historyPsn;
    private final long[] historyValue;
    private final boolean[] historyValid;
    private int historyNext;

    ResponderResources(final int maxDestRdAtomic) {
        historySize = Math.max(1, maxDestRdAtomic);
        historyPsn = new int[historySize];
        historyValue = new long[historySize];
        historyValid = new boolean[historySize];
    }

    boolean isEmpty() {
        return head == tail;
    }

    boolean isFull() {
        return tail - head == CAPACITY;
    }

    int size() {
        return tail - head;
    }

    int headSlot() {
        return head & (CAPACITY - 1);
    }

    void pop() {
        head++;
    }

    void clear() {
        head = 0;
        tail = 0;
        java.util.Arrays.fill(historyValid, false);
    }

    /** Adds an entry and returns its slot, or -1 when full. */
    int push(final byte t, final int p) {
        if (isFull()) {
            return -1;
        }
        final int slot = tail & (CAPACITY - 1);
        type[slot] = t;
        psn[slot] = p;
        sentPackets[slot] = 0;
        tail++;
        return slot;
    }

    /**
     * Queues an ACK or NAK. A plain ACK or PSN sequence NAK replaces one of those already at the tail: both are
     * cumulative, so only the newest matters.
     */
    boolean pushAck(final int syn, final int p, final int m) {
        if (tail != head && isCumulative(syn)) {
            final int last = (tail - 1) & (CAPACITY - 1);
            if (type[last] == ACK && isCumulative(syndrome[last])) {
                syndrome[last] = syn;
                psn[last] = p;
                msn[last] = m;
                return true;
            }
        }
        final int slot = push(ACK, p);
        if (slot < 0) {
            return false;
        }
        syndrome[slot] = syn;
        msn[slot] = m;
        return true;
    }

    /**
     * A plain ACK and a PSN sequence NAK both acknowledge everything before their PSN and carry no other state,
     * so a newer one of either kind supersedes an older one still queued. Without this, alternating NAKs and
     * ACKs behind a long READ response would fill the queue and refuse new READs.
     */
    private static boolean isCumulative(final int syn) {
        return syn == io.gdrkit.softnic.wire.Aeth.ACK_UNLIMITED
            || syn == io.gdrkit.softnic.wire.Aeth.nak(io.gdrkit.softnic.wire.Aeth.NAK_PSN_SEQ_ERROR);
    }

    /**
     * A duplicate READ request for {@code dupPsn}: when a READ response covering that PSN is still queued (not
     * fully sent), rewinds that response to restart at {@code dupPsn} and returns true. Go-back-N re-requests
     * every outstanding READ on each retry; queueing a new full response each time would pile them up behind one
     * another (and the ACKs behind them) until the requester times out again.
     */
    boolean rewindQueuedRead(final int dupPsn, final int mtu) {
        for (int i = head; i != tail; i++) {
            final int slot = i & (CAPACITY - 1);
            if (type[slot] != READ) {
                continue;
            }
            final int k = io.gdrkit.softnic.wire.Psn.diff(dupPsn, psn[slot]);
            final int packets = length[slot] == 0 ? 1 : (int) ((length[slot] + (long) mtu - 1) / mtu);
            if (k >= 0 && k < packets) {
                if (k < sentPackets[slot]) {
                    sentPackets[slot] = k;
                }
                return true;
            }
        }
        return false;
    }

    /** Is an entry of type {@code t} for {@code p} still queued? */
    boolean hasQueued(final byte t, final int p) {
        for (int i = head; i != tail; i++) {
            final int slot = i & (CAPACITY - 1);
            if (type[slot] == t && psn[slot] == p) {
                return true;
            }
        }
        return false;
    }

    void rememberAtomic(final int p, final long original) {
        final int i = historyNext;
        historyPsn[i] = p;
        historyValue[i] = original;
        historyValid[i] = true;
        historyNext = (i + 1) % historySize;
    }

    /** Index into the history of the ATOMIC with this PSN, or -1. */
    int findAtomic(final int p) {
        for (int i = 0; i < historySize; i++) {
            if (historyValid[i] && historyPsn[i] == p) {
                return i;
            }
        }
        return -1;
    }

    long atomicValue(final int historyIndex) {
        return historyValue[historyIndex];
    }
}
