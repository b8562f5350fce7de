/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * A single-producer single-consumer ring of variable-length records over a {@link MemorySegment}, so the same
 * code serves an in-JVM link and (later) a link in shared memory. The producer claims space, writes the record in
 * place and commits; the consumer reads records in place. No allocation, no locks, no system calls.
 *
 * <pre>
 * Segment layout (capacity C, a power of two, then a trailer of 3 cache lines):
 *   [0, C)            records
 *   [C, C+64)         tail   (u64, written by the producer with release)
 *   [C+64, C+128)     head   (u64, written by the consumer with release)
 *   [C+128, C+192)    reserved
 *
 * Record (8-byte aligned):
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------------------------------------------------------+
 *  |                     length of data (s32)                      |  -1 = padding to the end
 *  +---------------------------------------------------------------+
 *  |                          reserved                             |
 *  +---------------------------------------------------------------+
 *  |                      data ... (length bytes)                  |
 * </pre>
 */
public final class SpscRingBuffer {
    public static final int HEADER = 8;
    public static final int TRAILER = 192;
    private static final int PADDING = -1;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();

    private final MemorySegment buffer;
    private final int capacity;
    private final int mask;
    private final long tailOffset;
    private final long headOffset;

    // producer-local
    private long producerTail;
    private long headCache;
    private long claimIndex = -1;
    private int claimRecordLength;

    // consumer-local
    private long consumerHead;
    private String corruption;

    public SpscRingBuffer(final MemorySegment segment) {
        final long cap = segment.byteSize() - TRAILER;
        if (cap < 1024 || Long.bitCount(cap) != 1 || cap > (1 << 30)) {
            throw new IllegalArgumentException("ring capacity must be a power of two from 1 KiB to 1 GiB plus a "
                + TRAILER + "-byte trailer; segment is " + segment.byteSize() + " bytes");
        }
        this.buffer = segment;
        this.capacity = (int) cap;
        this.mask = capacity - 1;
        this.tailOffset = capacity;
        this.headOffset = capacity + 64L;
        this.producerTail = (long) LONG.getAcquire(buffer, tailOffset);
        this.consumerHead = (long) LONG.getAcquire(buffer, headOffset);
        this.headCache = consumerHead;
    }

    public static long segmentSize(final int capacity) {
        return capacity + (long) TRAILER;
    }

    public MemorySegment buffer() {
        return buffer;
    }

    public int capacity() {
        return capacity;
    }

    /** Largest data length one record may have. */
    public int maxRecordData() {
        return capacity / 2 - HEADER;
    }

    /**
     * Claims room for {@code length} data bytes. Returns the offset in {@link #buffer()} where the data goes,
     * or -1 when the ring is full (the caller retries later: back-pressure, never loss).
     */
    public long tryClaim(final int length) {
        if (length < 0 || length > maxRecordData()) {
            throw new IllegalArgumentException("record of " + length + " bytes exceeds the ring's maximum "
                + maxRecordData());
        }
        final int recordLength = align8(length + HEADER);
        long tail = producerTail;
        final int index = (int) (tail & mask);
        final int toEnd = capacity - index;
        final int needed = recordLength <= toEnd ? recordLength : recordLength + toEnd;
        if (capacity - (tail - headCache) < needed) {
            headCache = (long) LONG.getAcquire(buffer, headOffset);
            if (capacity - (tail - headCache) < needed) {
                return -1;
            }
        }
        if (recordLength > toEnd) {
            INT.set(buffer, (long) index, PADDING);
            INT.set(buffer, (long) index + 4, toEnd);
            tail += toEnd;
            producerTail = tail;
        }
        claimIndex = tail & mask;
        claimRecordLength = recordLength;
        INT.set(buffer, claimIndex, length);
        return claimIndex + HEADER;
    }

    /** The absolute position of the claimed record's header (valid between a claim and its commit). */
    public long claimPosition() {
        return producerTail;
    }

    /** Sets the claimed record's 32-bit tag (the link CRC lives there). */
    public void tag(final int tag) {
        INT.set(buffer, claimIndex + 4, tag);
    }

    /** The tag of the record whose data starts at {@code dataOffset}. */
    public int tagOf(final long dataOffset) {
        return (int) INT.get(buffer, dataOffset - 4);
    }

    /** Publishes the claimed record (with release semantics). */
    public void commit() {
        producerTail += claimRecordLength;
        claimIndex = -1;
        LONG.setRelease(buffer, tailOffset, producerTail);
    }

    /** Drops the claimed record: nothing is published (a padding record written for it stays, harmlessly). */
    public void abort() {
        claimIndex = -1;
        if (producerTail != (long) LONG.get(buffer, tailOffset)) {
            LONG.setRelease(buffer, tailOffset, producerTail);
        }
    }

    /**
     * Handles up to {@code limit} records in place; returns how many were handled. Every header is validated
     * before use (the producer may be another, untrusted process): see {@link #check}.
     *
     * @throws RingCorruptException naming what was wrong; the ring then reads as empty for good
     */
    public int read(final RecordHandler handler, final int limit) {
        if (corruption != null) {
            return 0;
        }
        final long tail = (long) LONG.getAcquire(buffer, tailOffset);
        long head = consumerHead;
        checkTail(head, tail);
        int count = 0;
        while (head < tail && count < limit) {
            final int index = (int) (head & mask);
            final int length = (int) INT.get(buffer, (long) index);
            if (length == PADDING) {
                head += padding(index);
                continue;
            }
            final int record = check(head, tail, index, length);
            head += record;
            // the record stays ours until head is published after the loop, so the handler reads it in place
            handler.onRecord(buffer, index + HEADER, length);
            count++;
        }
        if (head != consumerHead) {
            consumerHead = head;
            LONG.setRelease(buffer, headOffset, head);
        }
        return count;
    }

    /**
     * Hands records to {@code handler} in order while it accepts them; the first refused record stays at the
     * head for the next call. Returns how many were accepted. Headers are validated as in {@link #read}.
     */
    public int readWhile(final RecordFilter handler) {
        if (corruption != null) {
            return 0;
        }
        final long tail = (long) LONG.getAcquire(buffer, tailOffset);
        long head = consumerHead;
        checkTail(head, tail);
        int count = 0;
        while (head < tail) {
            final int index = (int) (head & mask);
            final int length = (int) INT.get(buffer, (long) index);
            if (length == PADDING) {
                head += padding(index);
                continue;
            }
            final int record = check(head, tail, index, length);
            if (!handler.accept(buffer, index + HEADER, length)) {
                break;
            }
            head += record;
            count++;
        }
        if (head != consumerHead) {
            consumerHead = head;
            LONG.setRelease(buffer, headOffset, head);
        }
        return count;
    }

    /** Why this ring was found corrupt, or null. */
    public String corruption() {
        return corruption;
    }

    private void checkTail(final long head, final long tail) {
        if (tail - head > capacity || tail - head < 0) {
            corrupt("tail " + tail + " is " + (tail - head) + " bytes from head " + head + " (capacity "
                + capacity + ")");
        }
    }

    /** A padding record must run exactly to the ring's end (that is the only place a producer writes one). */
    private int padding(final int index) {
        final int skip = (int) INT.get(buffer, (long) index + 4);
        if (skip != capacity - index) {
            corrupt("padding record at " + index + " skips " + skip + " bytes; the ring's end is "
                + (capacity - index) + " bytes away");
        }
        return skip;
    }

    /** A data record must fit the record limit, the buffer's end and the committed tail; returns its length. */
    private int check(final long head, final long tail, final int index, final int length) {
        if (length < 0 || length > maxRecordData()) {
            corrupt("record at " + index + " claims " + length + " bytes (limit " + maxRecordData() + ")");
        }
        final int record = align8(length + HEADER);
        if (index + record > capacity || head + record > tail) {
            corrupt("record at " + index + " of " + length + " bytes runs past the "
                + (index + record > capacity ? "ring's end" : "committed tail"));
        }
        return record;
    }

    /**
     * Marks this ring dead because a record's content (checked by the consumer's caller, e.g. a spoofed source)
     * is not acceptable; it reads as empty from then on.
     *
     * @throws RingCorruptException always, naming {@code what}
     */
    public void refuse(final String what) {
        corrupt(what);
    }

    private void corrupt(final String what) {
        corruption = what;
        throw new RingCorruptException("corrupt ring: " + what);
    }

    /** Decides, record by record, whether to consume it. */
    @FunctionalInterface
    public interface RecordFilter {
        boolean accept(MemorySegment buffer, long offset, int length);
    }

    // --- streaming consumer: a socket writer sends the records as laid out, headers and alignment included ---

    /** The consumer's position (absolute, not wrapped): everything before it is free for the producer. */
    public long headPosition() {
        return consumerHead;
    }

    /** The producer's published position (read with acquire): records before it are committed. */
    public long tailPosition() {
        return (long) LONG.getAcquire(buffer, tailOffset);
    }

    /**
     * The end of the run of whole records that starts at {@code from} and lies contiguously in the buffer: it
     * stops at {@code tail}, at a padding record, or at the end of the buffer. If {@code from} itself holds a
     * padding record, returns the negative position just past the padding (where the next run starts).
     */
    public long contiguousRunEnd(final long from, final long tail) {
        long p = from;
        final long bufferEnd = (from & ~(long) mask) + capacity;
        while (p < tail && p < bufferEnd) {
            final int length = (int) INT.get(buffer, p & mask);
            if (length == PADDING) {
                return p == from ? -(p + (int) INT.get(buffer, (p & mask) + 4)) : p;
            }
            p += align8(length + HEADER);
        }
        return p;
    }

    /** Frees the ring up to {@code position} (bytes already copied out), publishing it with release semantics. */
    public void releaseTo(final long position) {
        if (position != consumerHead) {
            consumerHead = position;
            LONG.setRelease(buffer, headOffset, position);
        }
    }

    /** Offset in {@link #buffer()} of absolute position {@code position}. */
    public int indexOf(final long position) {
        return (int) (position & mask);
    }

    public boolean isEmpty() {
        return consumerHead == (long) LONG.getAcquire(buffer, tailOffset);
    }

    private static int align8(final int v) {
        return (v + 7) & ~7;
    }

    /** Receives one record's data, valid only during the call. */
    @FunctionalInterface
    public interface RecordHandler {
        void onRecord(MemorySegment buffer, long offset, int length);
    }
}
