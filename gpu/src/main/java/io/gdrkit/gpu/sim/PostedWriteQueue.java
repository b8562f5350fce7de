/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import io.gdrkit.core.agent.NanoClock;
import io.gdrkit.gpu.WritesOrdering;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The mechanism behind GPUDirect RDMA write visibility on one simulated GPU.
 *
 * <p>A NIC write is split into chunks (PCIe posted-write TLPs). Each chunk waits in this queue, its bytes held in a
 * staging ring, and goes through two stages:
 * <ol>
 *   <li><b>landed</b>: the bytes are in device memory and the owner GPU's SMs read them. The old bytes are kept
 *       (swapped into the staging slot) as long as other GPUs may still see them;</li>
 *   <li><b>retired</b>: every GPU sees the new bytes.</li>
 * </ol>
 * Each chunk draws a landing deadline and a retire deadline from a seeded RNG. The device's writes ordering
 * (attribute 118) decides the rest:
 * <ul>
 *   <li>{@link WritesOrdering#NONE}: chunks land in deadline order, so out of order, and a chunk can land after the
 *       NIC reported completion (the completion fence does nothing). Chunks that overlap keep their order, so the
 *       final memory is always the result of the writes in order;</li>
 *   <li>{@link WritesOrdering#OWNER}: deadlines are monotonic, so chunks land in order, and the completion fence
 *       lands them all; other GPUs still see the old bytes until the chunk retires;</li>
 *   <li>{@link WritesOrdering#ALL_DEVICES}: as OWNER, and landing retires at once.</li>
 * </ul>
 * What else lands or retires chunks is decided by {@link SimGpu}: a NIC read on the path, a flush, a kernel launch or
 * stream synchronization. Posting allocates nothing: entries and the staging ring are preallocated; when either is
 * full the oldest chunks are forced to land and retire, which is PCIe flow control back-pressuring the NIC.
 *
 * <p>Thread safety: all state is guarded by one lock. Owner-side reads of device memory do not take it (they race
 * with landing, which is the point); peer-side reads do, to overlay the old bytes.
 */
public final class PostedWriteQueue {
    static final int POSTED = 0;
    static final int LANDED = 1;
    static final int RETIRED = 2;

    private static final class Entry {
        SimDeviceBuffer buffer;
        long offset;
        int len;
        long stagingPos;
        long landAt;
        long retireAt;
        int state = RETIRED;
    }

    private final ReentrantLock lock = new ReentrantLock();
    private final WritesOrdering ordering;
    private final NanoClock clock;
    private final SplittableRandom random;
    private final long minDelay;
    private final long delaySpan;
    private final int chunkBytes;
    private final Entry[] ring;
    private final int mask;
    private final MemorySegment staging;
    private final long stagingBytes;
    private final MemorySegment scratch;
    private long head;
    private long tail;
    private long stagingWrite;
    private long lastLandAt;
    private long posted;
    private long landedCount;
    private long retiredCount;
    private long forced;
    private long landedAtOnce;
    /** {@link SimGpuConfig#landUnobserved}: writes nothing can observe in flight skip the queue. */
    private final boolean landUnobserved;
    /** Stream operations (copies, kernels) running on the owner GPU now: observers of device memory. */
    private final AtomicInteger observers = new AtomicInteger();
    /**
     * No chunk is POSTED (set under the lock, read without it): a NIC read or a fence with nothing to land takes no
     * lock. A post that happens-before the reader is seen; one that does not may be missed, as it may in PCIe.
     */
    private volatile boolean allLanded = true;
    /** Every chunk before this sequence number has landed (none is POSTED): scans for landing start here. */
    private long landCursor;
    /**
     * Whether another GPU can read this GPU's memory (a system of several GPUs). When none can, landing copies the
     * new bytes in and keeps no old bytes for peers: one copy instead of a three-copy swap. States and counters are
     * the same either way.
     */
    private boolean peersCanRead = true;

    PostedWriteQueue(final WritesOrdering ordering, final SimGpuConfig config, final long seed, final Arena arena) {
        this.ordering = ordering;
        this.clock = config.clock();
        this.random = new SplittableRandom(seed);
        this.minDelay = config.minDrainNanos();
        this.delaySpan = config.maxDrainNanos() - config.minDrainNanos() + 1;
        this.chunkBytes = config.chunkBytes();
        this.ring = new Entry[config.maxInFlight()];
        for (int i = 0; i < ring.length; i++) {
            ring[i] = new Entry();
        }
        this.mask = ring.length - 1;
        this.stagingBytes = config.stagingBytes();
        this.staging = arena.allocate(stagingBytes, 64);
        this.scratch = arena.allocate(chunkBytes, 64);
        this.landUnobserved = config.landUnobserved();
    }

    /** A stream operation of the owner GPU starts running: it may read device memory while writes are in flight. */
    void observerStarted() {
        observers.incrementAndGet();
    }

    void observerEnded() {
        observers.decrementAndGet();
    }

    /**
     * The NIC's way in: spin rather than park. The drainer holds the lock for short scans; a NIC engine that parked
     * behind it paid a park and an unpark per packet (the JMH PacketPathBench placed 4 KiB packets into a simulated
     * GPU at 130 k/s, the worker mostly parked).
     */
    private void lockSpinning() {
        while (!lock.tryLock()) {
            Thread.onSpinWait();
        }
    }

    /** Set by the system: false when it has a single GPU, so no peer ever reads this memory. */
    void peersCanRead(final boolean can) {
        lock.lock();
        try {
            peersCanRead = can;
        } finally {
            lock.unlock();
        }
    }

    /** Posts a NIC write: copies the bytes into the staging ring now, lands them later. */
    void post(final SimDeviceBuffer buffer, final long offset, final MemorySegment src, final long srcOffset,
              final long len) {
        lockSpinning();
        try {
            if (landUnobserved && !peersCanRead && observers.get() == 0) {
                landAtOnce(buffer, offset, src, srcOffset, len);
                return;
            }
            allLanded = false;
            long done = 0;
            while (done < len) {
                final int n = (int) Math.min(chunkBytes, len - done);
                final long pos = reserve(n);
                MemorySegment.copy(src, srcOffset + done, staging, pos % stagingBytes, n);
                final Entry e = ring[(int) (tail & mask)];
                e.buffer = buffer;
                e.offset = offset + done;
                e.len = n;
                e.stagingPos = pos;
                final long now = clock.nanoTime();
                long landAt = now + minDelay + random.nextLong(delaySpan);
                if (ordering != WritesOrdering.NONE) {
                    // in-order landing: a chunk never lands before the one posted ahead of it
                    landAt = Math.max(landAt, lastLandAt);
                    lastLandAt = landAt;
                }
                e.landAt = landAt;
                e.retireAt = ordering == WritesOrdering.ALL_DEVICES ? landAt
                    : landAt + minDelay + random.nextLong(delaySpan);
                e.state = POSTED;
                tail++;
                posted++;
                done += n;
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * A write nothing can observe in flight (see {@link SimGpuConfig#landUnobserved}): earlier posted chunks land
     * first, so the same-address order holds, then one copy from the NIC's bytes into device memory. Counted as
     * posted, landed and retired chunks, as the queue would have counted them.
     */
    private void landAtOnce(final SimDeviceBuffer buffer, final long offset, final MemorySegment src,
                            final long srcOffset, final long len) {
        if (!allLanded) {
            landPostedLocked();
        }
        final long chunks = (len + chunkBytes - 1) / chunkBytes;
        posted += chunks;
        if (buffer.isFreed()) {
            retiredCount += chunks; // as land() drops a chunk of a freed buffer
            return;
        }
        VarHandle.releaseFence(); // after everything landed before it, as land() orders a chunk
        MemorySegment.copy(src, srcOffset, buffer.memory(), offset, len);
        landedCount += chunks;
        retiredCount += chunks;
        landedAtOnce += chunks;
    }

    /** Finds contiguous staging space and an entry for a chunk of {@code n} bytes, forcing old chunks out if needed. */
    private long reserve(final int n) {
        while (true) {
            long pos = stagingWrite;
            if (pos % stagingBytes + n > stagingBytes) {
                pos += stagingBytes - pos % stagingBytes; // chunks never wrap around the end of the ring
            }
            final long oldest = head < tail ? ring[(int) (head & mask)].stagingPos : pos;
            if (tail - head < ring.length && pos + n - oldest <= stagingBytes) {
                stagingWrite = pos + n;
                return pos;
            }
            // back-pressure: the oldest chunk is forced all the way through
            final Entry e = ring[(int) (head & mask)];
            landWithPredecessors(head);
            retire(e);
            forced++;
            advanceHead();
        }
    }

    /** Lands and retires chunks whose deadlines have passed on the clock. Returns how many changed state. */
    public int drain() {
        // the background drainer never waits for the lock: a NIC thread posting holds it, and making that thread
        // wake a parked drainer on every unlock cost more than the landing itself (JFR: AQS.signalNext in post)
        if (!lock.tryLock()) {
            return 0;
        }
        try {
            final long now = clock.nanoTime();
            int work = 0;
            if (ordering != WritesOrdering.NONE) {
                // landing deadlines are monotonic: land from the cursor while due, stop at the first that is not
                for (long s = Math.max(head, landCursor); s < tail; s++) {
                    final Entry e = ring[(int) (s & mask)];
                    if (e.state != POSTED) {
                        continue;
                    }
                    if (e.landAt > now) {
                        break;
                    }
                    land(e);
                    work++;
                }
                advanceLandCursor();
                // retire deadlines are not monotonic, but only landed chunks retire: all of them are before the cursor
                for (long s = head; s < landCursor; s++) {
                    final Entry e = ring[(int) (s & mask)];
                    if (e.state == LANDED && e.retireAt <= now) {
                        retire(e);
                        work++;
                    }
                }
            } else {
                for (long s = head; s < tail; s++) {
                    final Entry e = ring[(int) (s & mask)];
                    if (e.state == POSTED && e.landAt <= now) {
                        work += landWithPredecessors(s);
                    }
                    if (e.state == LANDED && e.retireAt <= now) {
                        retire(e);
                        work++;
                    }
                }
            }
            advanceHead();
            publishLanded();
            return work;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Lands the one posted chunk with the earliest landing deadline, whatever the clock says: the step of a
     * deterministic test. Returns false when nothing was posted.
     */
    public boolean stepLanding() {
        lock.lock();
        try {
            long best = -1;
            long bestAt = Long.MAX_VALUE;
            for (long s = head; s < tail; s++) {
                final Entry e = ring[(int) (s & mask)];
                if (e.state == POSTED && e.landAt < bestAt) {
                    best = s;
                    bestAt = e.landAt;
                }
            }
            if (best < 0) {
                return false;
            }
            landWithPredecessors(best);
            advanceHead();
            publishLanded();
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Lands every chunk posted so far (visible to the owner). Returns how many landed. */
    int landAll() {
        if (allLanded) {
            return 0; // nothing posted: no lock (a NIC read and a completion fence ask this per packet)
        }
        lockSpinning();
        try {
            return landPostedLocked();
        } finally {
            lock.unlock();
        }
    }

    private int landPostedLocked() {
        int n = 0;
        for (long s = Math.max(head, landCursor); s < tail; s++) {
            final Entry e = ring[(int) (s & mask)];
            if (e.state == POSTED) {
                land(e);
                n++;
            }
        }
        advanceLandCursor();
        advanceHead();
        publishLanded();
        return n;
    }

    /** Publishes whether any chunk is still POSTED: none at or after the cursor (none before it, by its rule). */
    private void publishLanded() {
        advanceLandCursor();
        allLanded = landCursor >= tail;
    }

    /** Lands and retires every chunk posted so far (visible to every GPU). Returns how many changed state. */
    int retireAll() {
        lockSpinning();
        try {
            int n = 0;
            for (long s = head; s < tail; s++) {
                final Entry e = ring[(int) (s & mask)];
                if (e.state == POSTED) {
                    land(e);
                    n++;
                }
                if (e.state == LANDED) {
                    retire(e);
                    n++;
                }
            }
            advanceLandCursor();
            advanceHead();
            publishLanded();
            return n;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Drops the chunks aimed at a buffer that is being freed: its memory goes away, so there is nothing left for them
     * to land in. Other buffers' chunks are untouched.
     */
    void quiesce(final SimDeviceBuffer buffer) {
        lock.lock();
        try {
            for (long s = head; s < tail; s++) {
                final Entry e = ring[(int) (s & mask)];
                if (e.buffer == buffer && e.state != RETIRED) {
                    e.state = RETIRED;
                }
            }
            advanceHead();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Reads device memory as another GPU sees it: the bytes in memory, with the old bytes of chunks that have landed
     * but not retired laid over them. Newest first, so the oldest old bytes win.
     */
    void peerRead(final SimDeviceBuffer buffer, final long offset, final MemorySegment dst, final long dstOffset,
                  final long len) {
        lock.lock();
        try {
            // a GPU of another system reads this one after all: keep old bytes for peers from now on
            peersCanRead = true;
            MemorySegment.copy(buffer.memory(), offset, dst, dstOffset, len);
            for (long s = tail - 1; s >= head; s--) {
                final Entry e = ring[(int) (s & mask)];
                if (e.state != LANDED || e.buffer != buffer) {
                    continue;
                }
                final long from = Math.max(offset, e.offset);
                final long to = Math.min(offset + len, e.offset + e.len);
                if (from < to) {
                    MemorySegment.copy(staging, e.stagingPos % stagingBytes + (from - e.offset), dst,
                        dstOffset + (from - offset), to - from);
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** Lands entry {@code seq}, first landing earlier posted chunks that overlap it so same-address order holds. */
    private int landWithPredecessors(final long seq) {
        final Entry e = ring[(int) (seq & mask)];
        int n = 0;
        for (long s = Math.max(head, landCursor); s < seq; s++) {
            final Entry p = ring[(int) (s & mask)];
            if (p.state == POSTED && (ordering != WritesOrdering.NONE || overlaps(p, e))) {
                land(p);
                n++;
            }
        }
        if (e.state == POSTED) {
            land(e);
            n++;
        }
        advanceLandCursor();
        return n;
    }

    private void advanceLandCursor() {
        long c = Math.max(head, landCursor);
        while (c < tail && ring[(int) (c & mask)].state != POSTED) {
            c++;
        }
        landCursor = c;
    }

    private static boolean overlaps(final Entry a, final Entry b) {
        return a.buffer == b.buffer && a.offset < b.offset + b.len && b.offset < a.offset + a.len;
    }

    private void land(final Entry e) {
        // a chunk of a freed buffer is dropped: the memory is gone
        if (e.buffer.isFreed()) {
            e.state = RETIRED;
            return;
        }
        final MemorySegment mem = e.buffer.memory();
        final long slot = e.stagingPos % stagingBytes;
        // order this chunk's bytes after everything landed before it, for SM threads polling with acquire loads
        VarHandle.releaseFence();
        if (!peersCanRead) {
            // one GPU: nobody can see old bytes, so none are kept (the chunk still retires on its own schedule)
            MemorySegment.copy(staging, slot, mem, e.offset, e.len);
            if (ordering == WritesOrdering.ALL_DEVICES) {
                e.state = RETIRED;
                landedCount++;
                retiredCount++;
                return;
            }
            e.state = LANDED;
            landedCount++;
            return;
        }
        if (ordering == WritesOrdering.ALL_DEVICES) {
            MemorySegment.copy(staging, slot, mem, e.offset, e.len);
            e.state = RETIRED;
            landedCount++;
            retiredCount++;
            return;
        }
        // swap: memory gets the new bytes, the slot keeps the old ones for peers until the chunk retires
        MemorySegment.copy(mem, e.offset, scratch, 0, e.len);
        MemorySegment.copy(staging, slot, mem, e.offset, e.len);
        MemorySegment.copy(scratch, 0, staging, slot, e.len);
        e.state = LANDED;
        landedCount++;
    }

    private void retire(final Entry e) {
        if (e.state == POSTED) {
            land(e);
        }
        if (e.state == LANDED) {
            e.state = RETIRED;
            retiredCount++;
        }
    }

    private void advanceHead() {
        while (head < tail && ring[(int) (head & mask)].state == RETIRED) {
            ring[(int) (head & mask)].buffer = null;
            head++;
        }
        if (head == tail) {
            stagingWrite = 0;
            head = tail = 0;
            landCursor = 0;
        }
    }

    /** Chunks posted and not yet landed. */
    public int pendingLanding() {
        lock.lock();
        try {
            int n = 0;
            for (long s = head; s < tail; s++) {
                if (ring[(int) (s & mask)].state == POSTED) {
                    n++;
                }
            }
            return n;
        } finally {
            lock.unlock();
        }
    }

    /** Chunks landed for the owner and not yet visible to other GPUs. */
    public int pendingRetire() {
        lock.lock();
        try {
            int n = 0;
            for (long s = head; s < tail; s++) {
                if (ring[(int) (s & mask)].state == LANDED) {
                    n++;
                }
            }
            return n;
        } finally {
            lock.unlock();
        }
    }

    /** Counters: chunks posted, landed, retired, and forced through by back-pressure. */
    public String stats() {
        lock.lock();
        try {
            return "posted=" + posted + " landed=" + landedCount + " retired=" + retiredCount + " forced=" + forced
                + " landedAtOnce=" + landedAtOnce + " (simulated)";
        } finally {
            lock.unlock();
        }
    }

    public WritesOrdering ordering() {
        return ordering;
    }
}
