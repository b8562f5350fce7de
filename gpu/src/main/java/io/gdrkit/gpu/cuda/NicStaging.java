/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.cuda;

import io.gdrkit.gpu.GpuException;
import io.gdrkit.gpu.config.GpuConfiguration;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The stand-in NIC's copy engine path into one CUDA device, batched: the software NIC hands over one packet at a
 * time, and copying each alone would cost a pageable {@code cuMemcpyHtoDAsync} plus a {@code cuStreamSynchronize}.
 * Here a packet is copied into pinned staging (a plain memory copy), packets that land next to each other in device
 * memory are merged into one span, and a span becomes one {@code cuMemcpyHtoDAsync} on the NIC stream when it is
 * large, when the next packet does not continue it, when its staging chunk is full, or at a fence. Nothing waits
 * per packet. A span never crosses from one allocation into the next, even where the two are neighbours in device
 * addresses: one copy may not span two allocations (the driver answers CUDA_ERROR_INVALID_VALUE).
 *
 * <p>Visibility stays what the NIC promises: writes are posted until a completion fence; {@link #fenceStart} issues
 * what is staged and records an event behind it, {@link #fenceDone} asks that event without blocking (the
 * responder holds its ACK back until it answers yes), {@link #fence} waits for it. Reads issue the staged writes
 * first and run on the same stream, so a read never passes an earlier write.
 *
 * <p>Staging is a ring of {@value #CHUNKS} pinned chunks of {@value #CHUNK} bytes, each with an event recorded
 * after the last copy out of it; a chunk is reused only once its event has completed. Allocated on first use, so
 * a device that never serves a NIC pins nothing. Callable from any thread (one lock; NIC threads of several QPs may
 * share the device).
 *
 * <p>With the delivery agent ({@link CudaAgent}, setting {@code gdrkit.cuda.agent}) a span shorter than the crossover
 * is not a copy but a descriptor in the agent's ring: the agent kernel copies it with SM loads and stores and writes a
 * completion word the NIC polls (a span of at most {@link AgentRing#INLINE_MAX} bytes rides in the descriptor itself,
 * so the agent's one read of the descriptor brings the bytes too); longer spans still go to the copy engine, each
 * followed by a stream write of the ring's {@code ce_done} word, and a copy posted after agent deliveries waits (a
 * stream wait on their completion word) until they are complete, so neither path overtakes the other. Fences, chunk
 * reuse and reads then wait on those words instead of events. A span that does not continue the packet before it (another place or another buffer)
 * carries the FENCE flag: it starts only once every earlier delivery is complete, so a flag written after its data
 * never becomes visible before the data, as with the single in-order copy-engine stream. A new span starts at a
 * staging offset congruent to its device address modulo 16, so the agent copies it with 16-byte vectors.
 *
 * <p>Direct writes: a write whose source the caller holds until the fence ({@link #write}'s
 * {@code sourceHeldUntilFence}: the sender's registered memory, referenced by a packet of this process) and that
 * lies in pinned memory this device knows ({@link CudaGpu#isPinned}: {@code cuMemAllocHost} or
 * {@code cuMemHostRegister}ed for the NIC) is not copied by the CPU: the copy engine reads it where it is, as a
 * GPUDirect NIC reads registered memory by DMA. Contiguous writes (in the device and in the source) coalesce into one
 * {@code cuMemcpyHtoDAsync} as staged ones do, on the same stream, so the order between the two kinds is the
 * stream's. Pinned memory leaves the record only under this class's lock and after a fence
 * ({@link #retirePinned}), so a copy is never issued from memory about to be unpinned or freed, and none in flight
 * outlives its pin. A packet's buffer in a link is never such a source: its slot is reused when the packet has been
 * handled, long before the fence.
 */
@SuppressWarnings("restricted")
final class NicStaging {
    /**
     * 256 KiB chunks, 8 of them: 2 MiB of staging stays in the CPU's caches, so the copy into it runs at cache
     * speed; a 16 MiB ring spills to DRAM, and the copy into it, bound by DRAM writes, becomes the
     * path's limit. The copy engine empties a chunk (about 7 us at 35 GB/s) faster than the CPU fills the next.
     */
    static final int CHUNK = 256 << 10;
    static final int CHUNKS = 8;
    /** Reads go through 1 MiB of pinned memory: one copy-engine round trip per MiB (each costs a wait). */
    static final int READ_CHUNK = 1 << 20;
    /** A span this large is issued at once, so the copy engine starts while later packets are still staged. */
    static final int ISSUE_BYTES = 128 << 10;
    /**
     * A direct span (no staging, so no chunk to fill) is issued at 1 MiB: one copy-engine call per MiB costs a few
     * microseconds against the 30 us the MiB takes on PCIe 5, while the engine starts before a long message ends.
     */
    static final long DIRECT_ISSUE_BYTES = 1 << 20;
    /** Fence events in the ring; an older token than this many looks at a later event, which only waits longer. */
    private static final int FENCES = 64;
    /** {@code CU_EVENT_DISABLE_TIMING}: cheaper to record and query. */
    private static final int EVENT_DISABLE_TIMING = 0x2;

    private final CudaDriver d;
    private final CudaGpu gpu;
    private final MemorySegment stream;
    private final ReentrantLock lock = new ReentrantLock();
    /**
     * The stream of {@link #readSourceStart} (a request's source, read by the requester beside the writes' copies on
     * {@link #stream}: a GPU-to-GPU transfer reads device to host while it writes host to device) and its lock.
     */
    private final MemorySegment readStream;
    private final ReentrantLock readLock = new ReentrantLock();
    /** The pinned range the last source read went into (readLock). */
    private final long[] pinnedForSourceRead = new long[2];
    /** Source reads ({@link #readSourceStart}): an event each, reused in turn (readLock). */
    private static final int SOURCE_EVENTS = 8;
    private MemorySegment[] sourceEvents;
    /** Reads started ahead so far, and how many of them (the first ones: one stream) are known to have landed. */
    private long sourceIssued;
    private long sourceLanded;
    /** {@code CU_STREAM_WAIT_VALUE_GEQ}. */
    private static final int WAIT_GEQ = 0;

    private final io.gdrkit.gpu.config.GpuConfiguration.AgentMode agentMode;
    private final long crossover;
    private final int agentBlocks;
    private final long stallMillis;
    /**
     * The agent while it is in use (null: off, not yet started, or auto fell back); why auto fell back. Volatile:
     * another PE's hold reads it without this lock ({@link #pauseForGate}).
     */
    private volatile CudaAgent agent;
    /** This device's agents ({@link AgentGate}). */
    private final AgentGate gate;
    private String agentNote = "";
    /** Staging's device address, and whether stream memory operations order the two paths (else no copy engine). */
    private long stagingDev;
    private boolean memOps;
    /** Large copies issued under the agent (each followed by a ce_done write), the last one's time. */
    private long ceSeq;
    private long ceNanos;
    private long lastAgentSeq;
    private final long[] chunkAgentSeq = new long[CHUNKS];
    private final long[] chunkCeSeq = new long[CHUNKS];
    private final long[] fenceAgentSeq = new long[FENCES];
    private final long[] fenceCeSeq = new long[FENCES];
    /** Whether the staged span continues the packet before it, and where that packet ended. */
    private boolean spanFence;
    private long lastBase;
    private long lastEnd;
    private long agentSpans;
    private long copySpans;

    private MemorySegment staging;
    private MemorySegment readStaging;
    private final MemorySegment[] chunkEvents = new MemorySegment[CHUNKS];
    private final boolean[] chunkPending = new boolean[CHUNKS];
    private final MemorySegment[] fenceEvents = new MemorySegment[FENCES];
    private final long[] fenceTokenOf = new long[FENCES];
    private int chunk;
    private int fill;
    /**
     * The span staged but not yet issued: its allocation's base, device address, staging offset, length; or, when
     * {@link #spanDirect}, a direct span whose source starts at host address {@link #spanSrc}.
     */
    private long spanBase;
    private long spanDev;
    private long spanStage;
    private long spanLen;
    private boolean spanDirect;
    private long spanSrc;
    /** Direct copies issued since the last fence completed: a pin's retirement must wait for them. */
    private boolean directInFlight;
    /** Bytes the CPU copied into staging, bytes the copy engine read straight from the source; direct spans. */
    private long stagedBytes;
    private long directBytes;
    private long directSpans;
    /** Host memory pinned for the NIC ({@link CudaGpu#nicPinHost}), pins refused and the last refusal's reason. */
    private long pins;
    private long pinsRefused;
    private String pinNote = "";
    /** Writes staged so far, and how many of them the last recorded fence event covers. */
    private long writes;
    private long fencedWrites;
    /** Fence tokens: the last one handed out, and the highest known complete. */
    private long fenceIssued;
    private volatile long fenceCompleted;
    /** The pinned range the last direct write came from ({@link CudaGpu#pinnedRange}; empty: none); locked. */
    private final long[] pinnedForWrite = new long[2];
    /** The pinned range the last pinned read went into, as {@link #pinnedForWrite} for writes; locked. */
    private final long[] pinnedForRead = new long[2];
    /** NIC reads straight into pinned memory ({@link CudaGpu#isPinned}), and through the read staging (locked). */
    private long pinnedReads;
    private long stagedReads;

    NicStaging(final CudaGpu gpu, final CudaDriver d, final MemorySegment stream, final MemorySegment readStream) {
        this.gpu = gpu;
        this.d = d;
        this.stream = stream;
        this.readStream = readStream;
        final io.gdrkit.core.config.SettingsReader r = io.gdrkit.core.config.SettingsReader.ofProcess();
        this.agentMode = io.gdrkit.gpu.config.GpuConfiguration.CUDA_AGENT.read(r).value();
        this.crossover = io.gdrkit.gpu.config.GpuConfiguration.CUDA_AGENT_CROSSOVER.read(r).value();
        this.agentBlocks = io.gdrkit.gpu.config.GpuConfiguration.CUDA_AGENT_BLOCKS.read(r).value();
        this.stallMillis = io.gdrkit.gpu.config.GpuConfiguration.CUDA_AGENT_STALL_MS.read(r).value();
        this.gate = AgentGate.of(gpu.ordinal());
    }

    /**
     * A posted write of {@code len} bytes from {@code src} to device address {@code dptr}, inside the allocation that
     * starts at {@code base} (it continues a span only within the same allocation).
     *
     * @param sourceHeldUntilFence the caller keeps {@code src}'s bytes unchanged and its memory alive until a fence
     *                             started after this call has completed ({@link #fenceDone}); then, where the source
     *                             is pinned memory of this device, the copy engine reads it directly. False: the
     *                             source may change once this returns (a link's packet buffer), so it is staged
     */
    void write(final long base, long dptr, final MemorySegment src, long srcOffset, long len,
               final boolean sourceHeldUntilFence) {
        if (len <= 0) {
            return;
        }
        lock.lock();
        try {
            ensureAllocated();
            // the record is asked under this lock: retirePinned removes memory from it (and forgets the remembered
            // range) under the same lock; the range of the last direct write is asked first, without a lookup
            final long from = src.address() + srcOffset;
            if (sourceHeldUntilFence && (agent == null || memOps) && pinnedAt(from, len, pinnedForWrite)) {
                writeDirect(base, dptr, from, len);
                writes++;
                return;
            }
            stagedBytes += len;
            while (len > 0) {
                if (fill == CHUNK) {
                    nextChunk();
                }
                long stage = (long) chunk * CHUNK + fill;
                final boolean continues = spanLen > 0 && !spanDirect && spanBase == base
                    && spanDev + spanLen == dptr && spanStage + spanLen == stage;
                if (!continues && agent != null) {
                    // the agent copies 16-byte vectors where source and destination agree modulo 16
                    final int pad = (int) ((dptr - stage) & 15);
                    if (fill + pad >= CHUNK) {
                        nextChunk();
                    }
                    fill += (int) ((dptr - ((long) chunk * CHUNK + fill)) & 15);
                    stage = (long) chunk * CHUNK + fill;
                }
                final int n = (int) Math.min(len, CHUNK - fill);
                MemorySegment.copy(src, srcOffset, staging, stage, n);
                if (continues) {
                    spanLen += n;
                } else {
                    issueSpan();
                    spanFence = !(base == lastBase && dptr == lastEnd);
                    spanDirect = false;
                    spanBase = base;
                    spanDev = dptr;
                    spanStage = stage;
                    spanLen = n;
                }
                lastBase = base;
                lastEnd = dptr + n;
                if (spanLen >= ISSUE_BYTES) {
                    issueSpan();
                }
                fill += n;
                dptr += n;
                srcOffset += n;
                len -= n;
            }
            writes++;
        } finally {
            lock.unlock();
        }
    }

    /** A direct write (see the class comment): extends the direct span it continues, else starts one. */
    private void writeDirect(final long base, final long dptr, final long srcAddress, final long len) {
        final boolean continues = spanLen > 0 && spanDirect && spanBase == base && spanDev + spanLen == dptr
            && spanSrc + spanLen == srcAddress;
        if (continues) {
            spanLen += len;
        } else {
            issueSpan();
            spanFence = !(base == lastBase && dptr == lastEnd);
            spanDirect = true;
            spanBase = base;
            spanDev = dptr;
            spanSrc = srcAddress;
            spanLen = len;
        }
        lastBase = base;
        lastEnd = dptr + len;
        directBytes += len;
        if (spanLen >= DIRECT_ISSUE_BYTES) {
            issueSpan();
        }
    }

    /**
     * Takes pinned memory out of the record of what the copy engine may read directly: under this lock (no direct
     * copy is issued from it after), and after a fence when direct copies are in flight (none still reads it after
     * this returns). {@code forget} removes it from the record; the caller unpins or frees it afterwards.
     */
    /**
     * Whether [at, at + len) is pinned: inside {@code last} (the range the previous call found), else looked up, and
     * then remembered in {@code last}. Called under the lock, as {@link #retirePinned} empties {@code last}.
     */
    private boolean pinnedAt(final long at, final long len, final long[] last) {
        return at >= last[0] && len <= last[1] - at || gpu.pinnedRange(at, len, last);
    }

    void retirePinned(final Runnable forget) {
        lock.lock();
        try {
            pinnedForWrite[0] = 0;
            pinnedForWrite[1] = 0;
            pinnedForRead[0] = 0;
            pinnedForRead[1] = 0;
            if (spanLen > 0 && spanDirect) {
                issueSpan();
            }
            if (directInFlight) {
                fence();
                directInFlight = false;
            }
            forget.run();
        } finally {
            lock.unlock();
        }
    }

    /** Counts a pin of host memory for the NIC, or a refused one with its reason (shown by {@link #stats}). */
    void notePin(final boolean pinned, final String why) {
        lock.lock();
        try {
            if (pinned) {
                pins++;
            } else {
                pinsRefused++;
                pinNote = why;
            }
        } finally {
            lock.unlock();
        }
    }

    /** NIC write bytes so far: {stagedBytes, directBytes, directSpans, pins, pinsRefused}. */
    long[] counters() {
        lock.lock();
        try {
            return new long[] {stagedBytes, directBytes, directSpans, pins, pinsRefused};
        } finally {
            lock.unlock();
        }
    }

    /** The last refused pin's reason, or "". */
    String pinNote() {
        lock.lock();
        try {
            return pinNote;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Pinned host memory for a NIC's read-ahead ({@code cuMemAllocHost}), freed ({@code cuMemFreeHost}) when it
     * becomes unreachable, unless the device was closed first (its context took the memory with it). A read into
     * it, as into any memory {@link CudaGpu#isPinned} knows, is one device-to-host copy with no staging copy behind
     * it.
     */
    MemorySegment readBuffer(final long bytes) {
        final MemorySegment pinned = gpu.allocHost(bytes);
        return MemorySegment.ofAddress(pinned.address()).reinterpret(bytes, Arena.ofAuto(), unused -> {
            if (!gpu.isClosed()) {
                try {
                    gpu.freeHost(pinned);
                } catch (final RuntimeException e) {
                    // a cleaner has nowhere to report to; the memory goes with the context at the latest
                }
            }
        });
    }

    /** A read of device address {@code sptr}, behind every earlier write; complete when it returns. */
    void read(long sptr, final MemorySegment dst, long dstOffset, long len) {
        lock.lock();
        try {
            ensureAllocated();
            issueSpan();
            if (agent != null && lastAgentSeq > 0) {
                agent.await(lastAgentSeq); // the copy engine reads below: the agent's writes land first
            }
            // the remembered range first: a lookup allocates, and a message's packets land in one buffer
            final long to = dst.address() + dstOffset;
            if (len > 0 && pinnedAt(to, len, pinnedForRead)) {
                // pinned already: the copy engine writes the NIC's buffer itself, one copy and one wait
                d.check((int) d.cuMemcpyDtoHAsync.invokeExact(dst.asSlice(dstOffset, len), sptr, len, stream),
                    "cuMemcpyDtoHAsync_v2 (NIC read, pinned)");
                d.check((int) d.cuStreamSynchronize.invokeExact(stream), "cuStreamSynchronize (NIC read)");
                pinnedReads++;
                return;
            }
            stagedReads++;
            while (len > 0) {
                final int n = (int) Math.min(len, READ_CHUNK);
                d.check((int) d.cuMemcpyDtoHAsync.invokeExact(readStaging, sptr, (long) n, stream),
                    "cuMemcpyDtoHAsync_v2 (NIC read)");
                d.check((int) d.cuStreamSynchronize.invokeExact(stream), "cuStreamSynchronize (NIC read)");
                MemorySegment.copy(readStaging, 0, dst, dstOffset, n);
                sptr += n;
                dstOffset += n;
                len -= n;
            }
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuMemcpyDtoHAsync_v2", t);
        } finally {
            lock.unlock();
        }
    }

    /**
     * A read of a request's source at device address {@code sptr} into pinned memory, started on the read stream with
     * an event behind it: not behind the NIC's writes in flight (what the application posted is there already; what
     * the NIC still writes, no completion has reported), so it overlaps their copies. Returns the read's token (from
     * 1) for {@link #awaitSourceRead}, or 0 when it was read at once through {@link #read} (memory that is not
     * pinned). With {@value #SOURCE_EVENTS} reads in flight, the oldest is waited for first.
     */
    long readSourceStart(final long sptr, final MemorySegment dst, final long dstOffset, final long len) {
        final long to = dst.address() + dstOffset;
        readLock.lock();
        try {
            if (len > 0 && pinnedAt(to, len, pinnedForSourceRead)) {
                if (sourceEvents == null) {
                    sourceEvents = new MemorySegment[SOURCE_EVENTS];
                    try (Arena a = Arena.ofConfined()) {
                        final MemorySegment out = a.allocate(ValueLayout.ADDRESS);
                        for (int i = 0; i < SOURCE_EVENTS; i++) {
                            d.check((int) d.cuEventCreate.invokeExact(out, EVENT_DISABLE_TIMING),
                                "cuEventCreate (NIC source read)");
                            sourceEvents[i] = out.get(ValueLayout.ADDRESS, 0);
                        }
                    }
                }
                if (sourceIssued - sourceLanded >= SOURCE_EVENTS) {
                    awaitLocked(sourceLanded + 1); // its event is about to be recorded again
                }
                d.check((int) d.cuMemcpyDtoHAsync.invokeExact(dst.asSlice(dstOffset, len), sptr, len, readStream),
                    "cuMemcpyDtoHAsync_v2 (NIC source read ahead)");
                d.check((int) d.cuEventRecord.invokeExact(sourceEvents[(int) (sourceIssued % SOURCE_EVENTS)],
                    readStream), "cuEventRecord (NIC source read ahead)");
                return ++sourceIssued;
            }
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuMemcpyDtoHAsync_v2", t);
        } finally {
            readLock.unlock();
        }
        read(sptr, dst, dstOffset, len);
        return 0;
    }

    /** Waits until the read ahead of {@code token} has landed (the reads on one stream land in order). */
    void awaitSourceRead(final long token) {
        readLock.lock();
        try {
            awaitLocked(token);
        } finally {
            readLock.unlock();
        }
    }

    private void awaitLocked(final long token) {
        if (token <= sourceLanded) {
            return;
        }
        if (token > sourceIssued) {
            throw new IllegalArgumentException("source read " + token + " was never started (" + sourceIssued
                + " so far)");
        }
        try {
            d.check((int) d.cuEventSynchronize.invokeExact(sourceEvents[(int) ((token - 1) % SOURCE_EVENTS)]),
                "cuEventSynchronize (NIC source read ahead)");
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuEventSynchronize", t);
        }
        sourceLanded = token;
    }

    /** Counters for reports and tests: NIC reads that landed in pinned memory directly, and staged ones. */
    String stats() {
        lock.lock();
        try {
            return "NIC reads: " + pinnedReads + " into pinned memory, " + stagedReads + " through staging"
                + "; NIC writes: " + stagedBytes + " B staged (a CPU copy into pinned staging first), " + directBytes
                + " B direct (the copy engine from the sender's pinned memory, no CPU copy) in " + directSpans
                + " spans; host memory pinned for the NIC: " + pins + ", refused " + pinsRefused
                + (pinNote.isEmpty() ? "" : " (" + pinNote + ")")
                + (agent != null ? "; agent: " + agentSpans + " spans by the " + agent.describe() + ", "
                    + copySpans + " by the copy engine" : "") + agentNote;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Issues every staged write and records an event behind them; returns a token for {@link #fenceDone}. Writes
     * staged later are not covered. Token 0: nothing was ever written.
     */
    long fenceStart() {
        lock.lock();
        try {
            if (writes == fencedWrites) {
                return fenceIssued;
            }
            issueSpan();
            final long token = fenceIssued + 1;
            final int slot = (int) (token % FENCES);
            if (agent != null) {
                // no event: the agent's completion word and ce_done say when these writes have landed
                fenceAgentSeq[slot] = lastAgentSeq;
                fenceCeSeq[slot] = ceSeq;
                fenceTokenOf[slot] = token;
                fenceIssued = token;
                fencedWrites = writes;
                return token;
            }
            d.check((int) d.cuEventRecord.invokeExact(fenceEvents[slot], stream), "cuEventRecord (NIC fence)");
            fenceTokenOf[slot] = token;
            fenceIssued = token;
            fencedWrites = writes;
            return token;
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuEventRecord", t);
        } finally {
            lock.unlock();
        }
    }

    /** Whether every write covered by {@code token} has landed in device memory; never blocks. */
    boolean fenceDone(final long token) {
        if (token <= fenceCompleted) {
            return true;
        }
        lock.lock();
        try {
            final int slot = (int) (token % FENCES);
            if (agent != null) {
                if (!agent.isDone(fenceAgentSeq[slot]) || !ceLanded(fenceCeSeq[slot])) {
                    return false;
                }
                fenceCompleted = Math.max(fenceCompleted, fenceTokenOf[slot]);
                return true;
            }
            final int rc = (int) d.cuEventQuery.invokeExact(fenceEvents[slot]);
            if (rc == CudaDriver.CUDA_ERROR_NOT_READY) {
                return false;
            }
            d.check(rc, "cuEventQuery (NIC fence)");
            // the slot may since hold a later token: stream order makes that one's completion cover this one
            fenceCompleted = Math.max(fenceCompleted, fenceTokenOf[slot]);
            return true;
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuEventQuery", t);
        } finally {
            lock.unlock();
        }
    }

    /** Waits until every write staged before this call has landed. */
    void fence() {
        final long token = fenceStart();
        if (token <= fenceCompleted) {
            return;
        }
        lock.lock();
        try {
            final int slot = (int) (token % FENCES);
            if (agent != null) {
                agent.await(fenceAgentSeq[slot]);
                agent.awaitCe(fenceCeSeq[slot]);
                fenceCompleted = Math.max(fenceCompleted, fenceTokenOf[slot]);
                return;
            }
            d.check((int) d.cuEventSynchronize.invokeExact(fenceEvents[slot]), "cuEventSynchronize (NIC fence)");
            fenceCompleted = Math.max(fenceCompleted, fenceTokenOf[slot]);
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuEventSynchronize", t);
        } finally {
            lock.unlock();
        }
    }

    /** Lands everything and frees the pinned memory and the events (the device is closing). */
    void close() {
        lock.lock();
        try {
            if (staging == null) {
                return;
            }
            // a span still staged is dropped, not issued: its buffer may be freed already (a NIC reset loses
            // posted writes that no completion covered); free() fences before it frees
            spanLen = 0;
            if (agent != null) {
                agent.close();
                agent = null;
            }
            gate.leave(this);
            final int ignoredSync = (int) d.cuStreamSynchronize.invokeExact(stream);
            directInFlight = false; // synchronized: nothing reads pinned memory any more (the events go next)
            for (final MemorySegment e : chunkEvents) {
                final int ignored = (int) d.cuEventDestroy.invokeExact(e);
            }
            for (final MemorySegment e : fenceEvents) {
                final int ignored = (int) d.cuEventDestroy.invokeExact(e);
            }
            if (sourceEvents != null) {
                for (final MemorySegment e : sourceEvents) {
                    final int ignored = (int) d.cuEventDestroy.invokeExact(e);
                }
            }
            gpu.freeHost(staging);
            gpu.freeHost(readStaging);
            staging = null;
        } catch (final Throwable t) {
            // closing is best effort; the process is usually exiting
        } finally {
            lock.unlock();
        }
    }

    private void issueSpan() {
        if (spanLen == 0) {
            return;
        }
        final int spanChunk = (int) (spanStage / CHUNK);
        if (agent != null && !spanDirect && (spanLen < crossover || !memOps)) {
            int flags = spanFence && lastAgentSeq + ceSeq > 0 ? AgentRing.FENCE : 0;
            long ceWait = 0;
            if (ceSeq > 0 && !agent.ceDone(ceSeq)) {
                flags |= AgentRing.WAIT_CE;
                ceWait = ceSeq;
            }
            final int len = (int) spanLen;
            spanLen = 0; // before posting: a failed post must not leave the span to be posted again
            if (len <= AgentRing.INLINE_MAX) {
                // the payload rides in the descriptor: the agent's one read of it brings the bytes too
                lastAgentSeq = agent.postInline(spanDev, staging, spanStage, len, flags, ceWait);
            } else {
                lastAgentSeq = agent.post(spanDev, stagingDev + spanStage, len, flags, ceWait);
                chunkAgentSeq[spanChunk] = lastAgentSeq;
            }
            agentSpans++;
            return;
        }
        try {
            if (agent != null && lastAgentSeq > 0 && !agent.isDone(lastAgentSeq)) {
                // the copy must not overtake agent deliveries before it: the stream waits for their completion word
                final long word = agent.ringDevice() + AgentRing.HEADER + 8L * agent.ring().slot(lastAgentSeq);
                d.check((int) d.cuStreamWaitValue64.orElseThrow().invokeExact(stream, word, lastAgentSeq, WAIT_GEQ),
                    "cuStreamWaitValue64 (NIC write behind the agent)");
            }
            final long len = spanLen;
            spanLen = 0; // before the call: a failed copy must not leave the span to be issued again
            if (spanDirect) {
                // the source as it is: pinned, and held by the caller until a fence behind this copy completes
                d.check((int) d.cuMemcpyHtoDAsync.invokeExact(spanDev, MemorySegment.ofAddress(spanSrc), len,
                    stream), "cuMemcpyHtoDAsync_v2 (NIC write, direct from pinned memory)");
                directInFlight = true;
                directSpans++;
            } else {
                d.check((int) d.cuMemcpyHtoDAsync.invokeExact(spanDev, staging.asSlice(spanStage, len), len,
                    stream), "cuMemcpyHtoDAsync_v2 (NIC write)");
            }
            if (agent != null) {
                ceSeq++;
                ceNanos = System.nanoTime();
                d.check((int) d.cuStreamWriteValue64.orElseThrow().invokeExact(stream, agent.ringDevice()
                    + agent.ring().ceDoneOffset(), ceSeq, 0), "cuStreamWriteValue64 (NIC write done)");
                if (!spanDirect) {
                    chunkCeSeq[spanChunk] = ceSeq; // a direct copy reads no staging chunk
                }
                copySpans++;
            }
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuMemcpyHtoDAsync_v2", t);
        }
    }

    /** Whether large copy {@code seq} has landed; a copy not signalled within the stall time is a named error. */
    private boolean ceLanded(final long seq) {
        if (agent.ceDone(seq)) {
            return true;
        }
        if (System.nanoTime() - ceNanos > stallMillis * 1_000_000L) {
            agent.awaitCe(seq); // throws GDRKIT_AGENT_STALLED (or returns if it landed meanwhile)
        }
        return agent.ceDone(seq);
    }

    /**
     * Holds every delivery agent of this device stopped (this one first, with everything posted to it complete) for
     * a CUDA call that waits for every running kernel of the context (freeing, loading a module, registering host
     * memory); the next write after the hold is closed starts this one again. Every PE of the process on this device
     * has its own agent, and the call would wait for any of them ({@link AgentGate}).
     */
    AgentGate.Hold holdAgents() {
        return gate.hold(this, stallMillis * 1_000_000L);
    }

    /**
     * Pauses this staging's agent for a hold (any thread): waits out a launch in progress, then pauses the agent
     * under this lock (taken with tryLock, and given up as soon as the agent is seen stopped: the lock's holder may
     * be waiting for the hold to end, not running the agent); bounded by {@code deadline}.
     */
    void pauseForGate(final long deadline) {
        final CudaAgent a = agent; // set before its first start: null here means none can be starting
        if (a == null) {
            return;
        }
        while (a.starting) {
            if (System.nanoTime() - deadline > 0) {
                throw AgentGate.stalled(gate.ordinal(), "an agent kept starting during a hold",
                    stallMillis * 1_000_000L);
            }
            Thread.onSpinWait();
        }
        while (true) {
            if (!a.running()) {
                return;
            }
            if (lock.tryLock()) {
                try {
                    if (agent != null) {
                        agent.pause();
                    }
                } finally {
                    lock.unlock();
                }
                return;
            }
            if (System.nanoTime() - deadline > 0) {
                throw AgentGate.stalled(gate.ordinal(), "the agent of another PE could not be paused for a CUDA call "
                    + "that waits for every kernel", stallMillis * 1_000_000L);
            }
            Thread.onSpinWait();
        }
    }

    /** Closes the current chunk (its copies are issued, an event behind them) and waits until the next is free. */
    private void nextChunk() {
        issueSpan();
        if (agent != null) {
            chunk = (chunk + 1) % CHUNKS;
            // the chunk is reused once the agent and the copy engine are done with what was staged in it
            if (chunkAgentSeq[chunk] > 0) {
                agent.await(chunkAgentSeq[chunk]);
                chunkAgentSeq[chunk] = 0;
            }
            if (chunkCeSeq[chunk] > 0) {
                agent.awaitCe(chunkCeSeq[chunk]);
                chunkCeSeq[chunk] = 0;
            }
            fill = 0;
            return;
        }
        try {
            d.check((int) d.cuEventRecord.invokeExact(chunkEvents[chunk], stream), "cuEventRecord (NIC staging)");
            chunkPending[chunk] = true;
            chunk = (chunk + 1) % CHUNKS;
            if (chunkPending[chunk]) {
                d.check((int) d.cuEventSynchronize.invokeExact(chunkEvents[chunk]), "cuEventSynchronize (NIC staging)");
                chunkPending[chunk] = false;
            }
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuEventRecord", t);
        }
        fill = 0;
    }

    private void ensureAllocated() {
        if (staging != null) {
            return;
        }
        staging = gpu.allocHost((long) CHUNK * CHUNKS);
        readStaging = gpu.allocHost(READ_CHUNK);
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment out = a.allocate(ValueLayout.ADDRESS);
            for (int i = 0; i < CHUNKS; i++) {
                d.check((int) d.cuEventCreate.invokeExact(out, EVENT_DISABLE_TIMING), "cuEventCreate (NIC staging)");
                chunkEvents[i] = out.get(ValueLayout.ADDRESS, 0);
            }
            for (int i = 0; i < FENCES; i++) {
                d.check((int) d.cuEventCreate.invokeExact(out, EVENT_DISABLE_TIMING), "cuEventCreate (NIC fence)");
                fenceEvents[i] = out.get(ValueLayout.ADDRESS, 0);
            }
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuEventCreate", t);
        }
        if (agentMode != io.gdrkit.gpu.config.GpuConfiguration.AgentMode.OFF) {
            final CudaAgent a = new CudaAgent(gpu, d, agentBlocks, stallMillis, gate);
            gate.join(this);
            agent = a;
            stagingDev = gpu.devicePointer(staging);
            memOps = d.cuStreamWriteValue64.isPresent() && d.cuStreamWaitValue64.isPresent();
            try {
                a.start();
                agentNote = memOps ? "" : "; no stream memory operations in this driver: the agent takes every span";
            } catch (final GpuException e) {
                if (agentMode == io.gdrkit.gpu.config.GpuConfiguration.AgentMode.ON) {
                    throw e; // sticky in the agent: every later write fails with it too
                }
                agent = null;
                a.close();
                agentNote = "; " + GpuConfiguration.CUDA_AGENT.name() + "=auto: the copy engine alone (" + e.getMessage() + ")";
            }
        }
    }
}
