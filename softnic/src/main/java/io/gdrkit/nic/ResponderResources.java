package io.gdrkit.nic;

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
     * Queues an ACK or NAK. A plain ACK coalesces with a plain ACK already at the tail: ACKs are cumulative,
     * so only the newest matters.
     */
    boolean pushAck(final int syn, final int p, final int m) {
        if (tail != head && syn == io.gdrkit.nic.wire.Aeth.ACK_UNLIMITED) {
            final int last = (tail - 1) & (CAPACITY - 1);
            if (type[last] == ACK && syndrome[last] == syn) {
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
