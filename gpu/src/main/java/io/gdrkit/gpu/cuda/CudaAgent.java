/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.cuda;

import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.GpuException;
import io.gdrkit.gpu.GpuFunction;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The software NIC's delivery agent on one CUDA GPU: the persistent kernel {@code nic_agent} ({@code agent.cu}) and
 * its descriptor ring ({@link AgentRing}) in pinned, device-mapped host memory. The NIC posts a descriptor (device
 * destination, staged source, length, flags) and later reads the slot's completion word; neither side makes a CUDA
 * call on that path. The kernel runs on its own non-blocking stream and is started on first use.
 *
 * <p>CUDA calls that wait for every running kernel (allocating or freeing memory, loading a module, registering host
 * memory) would wait for the agent forever, so {@link CudaGpu} {@link #pause pauses} it around them: a STOP
 * descriptor, the kernel ends once everything before it is complete, and the next post starts it again, continuing
 * the sequence.
 *
 * <p>Faults are named {@link GpuException}s and sticky (every later call throws the same): a descriptor not complete
 * within the stall time is {@code GDRKIT_AGENT_STALLED}; a fault word written by the agent, or its kernel ending or
 * failing while deliveries are pending, {@code GDRKIT_AGENT_FAULT}; a completion word the agent cannot have written
 * {@code GDRKIT_AGENT_CORRUPT}. The software NIC turns any of them into DEVICE_FATAL with its QPs in ERR.
 *
 * <p>Single writer: the caller ({@link NicStaging}) holds its lock around every call. No allocation per message.
 */
@SuppressWarnings("restricted")
final class CudaAgent {
    /** Threads per block: the kernel's granule (4 KiB) divided by 16 bytes. */
    static final int THREADS = 256;
    /** Descriptors in the ring. */
    static final int SLOTS = 1024;
    /**
     * Device-memory state: done_seq (u64) at 0, mirror_seq (u64) at 8, one u32 counter per slot from 64, then a
     * 32-byte mirror of each copied descriptor (block 0 reads the ring and mirrors it for the other blocks).
     */
    private static final long STATE_BYTES = 64 + 4L * SLOTS + 32L * SLOTS;
    /** How often a waiting NIC asks the driver whether the kernel still runs. */
    private static final long HEALTH_NANOS = 1_000_000;
    /** {@code CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP}. */
    private static final int HOST_ALLOC_FLAGS = 0x3;

    private final CudaGpu gpu;
    private final CudaDriver d;
    private final int blocks;
    private final long stallNanos;
    private final long[] postNanos = new long[SLOTS];

    private MemorySegment ringMemory;
    private boolean ringFromHostAlloc;
    private AgentRing ring;
    private long ringDev;
    private CudaBuffer state;
    private GpuStream stream;
    private GpuFunction kernel;
    /** Volatile: another PE's hold ({@link AgentGate}) reads it without this agent's lock. */
    private volatile boolean running;
    /** Between {@link AgentGate#enterStart} and the launch (the gate's flag; read by other PEs' holds). */
    volatile boolean starting;
    private GpuException failure;
    /** The last seq posted, and the highest seen complete. */
    private long posted;
    /** Descriptors posted that the blocks copy (every one but inline ones): the kernel's second numbering. */
    private long copied;
    private long completed;
    private long lastHealth;
    /** When {@link #completed} last advanced. */
    private long progressNanos;
    private long starts;

    /** The device's gate: a hold keeps the kernel from starting. */
    private final AgentGate gate;

    CudaAgent(final CudaGpu gpu, final CudaDriver d, final int blocks, final long stallMillis, final AgentGate gate) {
        this.gate = gate;
        this.gpu = gpu;
        this.d = d;
        this.blocks = blocks;
        this.stallNanos = stallMillis * 1_000_000L;
    }

    /** The ring (allocated by the first {@link #start}). */
    AgentRing ring() {
        return ring;
    }

    /** The device address of the ring's first byte (the copy engine writes {@code ce_done} through it). */
    long ringDevice() {
        return ringDev;
    }

    boolean running() {
        return running;
    }

    long posted() {
        return posted;
    }

    /** How often the kernel was launched (a pause and the next post launch it again). */
    long starts() {
        return starts;
    }

    /** Starts the kernel unless it runs; allocates the ring and the state on the first call. */
    void start() {
        throwIfFailed();
        if (running) {
            return;
        }
        try {
            if (ring == null) {
                allocate();
            }
            // not while a CUDA call that waits for every kernel of the context is in progress (any PE's)
            final long t0 = System.nanoTime();
            while (!gate.enterStart(this)) {
                if (System.nanoTime() - t0 > stallNanos) {
                    throw fail(AgentGate.stalled(gpu.ordinal(), "the delivery agent could not start: a CUDA call that "
                        + "waits for every kernel (another PE's allocation, free or module load) did not end",
                        stallNanos));
                }
                Thread.onSpinWait();
            }
            try {
                gpu.launch(kernel, Dim3.of(blocks), Dim3.of(THREADS), stream, new KernelArgs(5).u64(ringDev)
                    .u64(state.address()).u32(SLOTS).u64(posted + 1).u64(copied + 1));
                running = true;
            } finally {
                gate.leaveStart(this);
            }
            starts++;
            lastHealth = System.nanoTime();
        } catch (final GpuException e) {
            throw fail(new GpuException("GDRKIT_AGENT_FAULT", -1, "the delivery agent did not start on CUDA device "
                + gpu.ordinal() + ": " + e.getMessage()));
        }
    }

    private void allocate() {
        kernel = gpu.function("agent", "nic_agent");
        final long bytes = AgentRing.bytes(SLOTS);
        if (d.cuMemHostAlloc.isPresent()) {
            try (Arena a = Arena.ofConfined()) {
                final MemorySegment out = a.allocate(ValueLayout.ADDRESS);
                d.check((int) d.cuMemHostAlloc.get().invokeExact(out, bytes, HOST_ALLOC_FLAGS),
                    "cuMemHostAlloc(" + bytes + ", PORTABLE|DEVICEMAP)");
                ringMemory = out.get(ValueLayout.ADDRESS, 0).reinterpret(bytes);
                ringFromHostAlloc = true;
            } catch (final Throwable t) {
                throw CudaDriver.linkage("cuMemHostAlloc", t);
            }
        } else {
            ringMemory = gpu.allocHost(bytes);
        }
        ring = new AgentRing(ringMemory, SLOTS, blocks);
        ringDev = gpu.devicePointer(ringMemory);
        state = (CudaBuffer) gpu.alloc(STATE_BYTES);
        try (Arena a = Arena.ofConfined()) {
            gpu.copyHtoD(state, 0, a.allocate(STATE_BYTES), 0, STATE_BYTES); // zero: done_seq and the counters
        }
        stream = gpu.createNonBlockingStream();
    }

    /**
     * Posts one delivery: {@code len} bytes from device address {@code src} (staging) to {@code dst}. Waits (up to
     * the stall time) while the ring is full.
     *
     * @return its seq, for {@link #isDone} and {@link #await}
     */
    long post(final long dst, final long src, final int len, final int flags, final long ceWait) {
        final long seq = nextSeq();
        ring.post(seq, dst, src, len, flags, ceWait);
        posted = seq;
        copied++;
        return seq;
    }

    /**
     * Posts one small delivery with its payload in the descriptor: {@code len} (1 to {@link AgentRing#INLINE_MAX})
     * bytes of {@code data} from {@code offset} to {@code dst}. The agent reads no staging for it, and delivers it
     * with one warp once everything before it is complete.
     *
     * @return its seq, for {@link #isDone} and {@link #await}
     */
    long postInline(final long dst, final MemorySegment data, final long offset, final int len, final int flags,
                    final long ceWait) {
        final long seq = nextSeq();
        ring.postInline(seq, dst, data, offset, len, flags, ceWait);
        posted = seq;
        return seq;
    }

    /** The next descriptor's seq, its slot free (the kernel started, the slot's previous descriptor complete). */
    private long nextSeq() {
        start();
        final long seq = posted + 1;
        if (seq > SLOTS) {
            await(seq - SLOTS); // the slot's previous descriptor must be complete before it is rewritten
        }
        postNanos[ring.slot(seq)] = System.nanoTime();
        return seq;
    }

    /** Whether descriptor {@code seq} (and every earlier one) is complete; never blocks, throws a named fault. */
    boolean isDone(final long seq) {
        if (seq <= completed) {
            return true;
        }
        throwIfFailed();
        final int slot = ring.slot(seq);
        final long word = ring.done(slot);
        if (!ring.plausible(slot, word, posted)) {
            throw fail(new GpuException("GDRKIT_AGENT_CORRUPT", -1, "completion word of slot " + slot + " reads "
                + word + " (0x" + Long.toHexString(word) + "): not a seq of that slot posted so far (last posted "
                + posted + ") on CUDA device " + gpu.ordinal()));
        }
        if (word >= seq) {
            completed = Math.max(completed, word);
            progressNanos = System.nanoTime();
            return true;
        }
        final long fault = ring.fault();
        if (fault != 0) {
            throw fail(faultOf(fault));
        }
        final long now = System.nanoTime();
        // a stall is no progress: the oldest pending delivery has waited the stall time since it was posted or since
        // the one before it completed (a long backlog behind a working agent is not a stall)
        final long next = completed + 1;
        final long nextWord = ring.done(ring.slot(next));
        if (nextWord >= next && ring.plausible(ring.slot(next), nextWord, posted)) {
            completed = nextWord;
            progressNanos = now;
            return nextWord >= seq;
        }
        if (now - Math.max(progressNanos, postNanos[ring.slot(next)]) > stallNanos) {
            throw fail(new GpuException("GDRKIT_AGENT_STALLED", -1, "delivery " + next + " not complete after "
                + stallNanos / 1_000_000 + " ms (" + io.gdrkit.gpu.config.GpuConfiguration.CUDA_AGENT_STALL_MS.name()
                + "); last complete " + completed + ", " + (posted - completed) + " pending on CUDA device "
                + gpu.ordinal()));
        }
        if (now - lastHealth > HEALTH_NANOS) {
            lastHealth = now;
            checkKernel(seq);
        }
        return false;
    }

    /** Waits until descriptor {@code seq} is complete: at most the stall time, never longer. */
    void await(final long seq) {
        long spins = 0;
        while (!isDone(seq)) {
            if (++spins > 20_000) {
                java.util.concurrent.locks.LockSupport.parkNanos(10_000);
            } else {
                Thread.onSpinWait();
            }
        }
    }

    /** Whether the copy engine has completed large copy {@code ceSeq} (its stream wrote {@code ce_done}). */
    boolean ceDone(final long ceSeq) {
        return ring.ceDone() >= ceSeq;
    }

    /** Waits up to the stall time for large copy {@code ceSeq}. */
    void awaitCe(final long ceSeq) {
        final long t0 = System.nanoTime();
        long spins = 0;
        while (!ceDone(ceSeq)) {
            throwIfFailed();
            if (System.nanoTime() - t0 > stallNanos) {
                throw fail(new GpuException("GDRKIT_AGENT_STALLED", -1, "copy-engine copy " + ceSeq + " not "
                    + "signalled after " + stallNanos / 1_000_000 + " ms (ce_done " + ring.ceDone() + ") on CUDA "
                    + "device " + gpu.ordinal()));
            }
            if (++spins > 20_000) {
                java.util.concurrent.locks.LockSupport.parkNanos(10_000);
            } else {
                Thread.onSpinWait();
            }
        }
    }

    /**
     * Ends the kernel once everything posted is complete (a STOP descriptor), so that a CUDA call that waits for
     * every kernel can run; the next {@link #post} starts it again.
     */
    void pause() {
        if (!running || failure != null) {
            return;
        }
        final long seq = post(0, 0, 0, AgentRing.STOP, 0);
        await(seq);
        // the kernel returns right after the STOP's completion word: wait for the stream, bounded
        final long t0 = System.nanoTime();
        try {
            while (true) {
                final int rc = (int) d.cuStreamQuery.invokeExact(((CudaStream) stream).handle());
                if (rc == CudaDriver.CUDA_SUCCESS) {
                    break;
                }
                if (rc != CudaDriver.CUDA_ERROR_NOT_READY) {
                    throw fail(new GpuException("GDRKIT_AGENT_FAULT", rc, "the agent kernel failed while stopping: "
                        + d.errorName(rc)));
                }
                if (System.nanoTime() - t0 > stallNanos) {
                    throw fail(new GpuException("GDRKIT_AGENT_STALLED", -1, "the agent kernel completed STOP " + seq
                        + " but did not end within " + stallNanos / 1_000_000 + " ms"));
                }
                Thread.onSpinWait();
            }
        } catch (final GpuException e) {
            throw e;
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuStreamQuery", t);
        }
        running = false;
    }

    /** Stops the kernel (best effort) and frees the ring and the state. */
    void close() {
        try {
            pause();
        } catch (final GpuException e) {
            // closing: the context goes with the device; the failure was reported where it happened
        }
        if (ring == null) {
            return;
        }
        try {
            if (!running && failure == null) {
                final int ignoredFree = (int) d.cuMemFree.invokeExact(state.address());
                if (ringFromHostAlloc) {
                    final int ignored = (int) d.cuMemFreeHost.invokeExact(ringMemory);
                } else {
                    gpu.freeHost(ringMemory);
                }
                gpu.destroyStream(stream);
            }
        } catch (final Throwable t) {
            // best effort; a kernel that never ended keeps its memory until the context is released
        }
        ring = null;
    }

    /** The sticky failure, or null. */
    GpuException failure() {
        return failure;
    }

    String describe() {
        return "agent " + (failure != null ? "failed (" + failure.errorName() + ")" : running ? "running" : "stopped")
            + ", " + blocks + " blocks x " + THREADS + " threads, " + SLOTS + " slots, " + posted + " descriptors ("
            + (posted - copied) + " inline), " + starts + " launches";
    }

    private void checkKernel(final long seq) {
        try {
            final int rc = (int) d.cuStreamQuery.invokeExact(((CudaStream) stream).handle());
            if (rc == CudaDriver.CUDA_ERROR_NOT_READY) {
                return;
            }
            final long word = ring.done(ring.slot(seq));
            if (word >= seq) {
                return; // it completed between the two reads
            }
            // a kernel that refused a descriptor writes its fault word and then ends: read it again now that it has
            // ended (the caller's read may have come just before the write), so the fault is named, not "ended"
            final long fault = ring.fault();
            if (fault != 0) {
                throw fail(faultOf(fault));
            }
            throw fail(new GpuException("GDRKIT_AGENT_FAULT", rc, rc == CudaDriver.CUDA_SUCCESS
                ? "the agent kernel ended with delivery " + seq + " pending (" + (posted - completed) + " pending)"
                : "the agent kernel failed: " + d.errorName(rc) + " with delivery " + seq + " pending"));
        } catch (final GpuException e) {
            throw e;
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuStreamQuery", t);
        }
    }

    private GpuException faultOf(final long fault) {
        final int code = (int) (fault >>> 56);
        final long seq = fault & 0x00ff_ffff_ffff_ffffL;
        final String what = switch (code) {
            case AgentRing.FAULT_BAD_SEQ -> "found a descriptor seq out of place where it expected " + seq;
            case AgentRing.FAULT_BAD_DESC -> "refused descriptor " + seq + " (flags, length or addresses invalid)";
            default -> "wrote fault word 0x" + Long.toHexString(fault);
        };
        return new GpuException("GDRKIT_AGENT_FAULT", -1, "the delivery agent " + what + " on CUDA device "
            + gpu.ordinal());
    }

    private GpuException fail(final GpuException e) {
        if (failure == null) {
            failure = e;
        }
        running = false;
        return failure;
    }

    private void throwIfFailed() {
        if (failure != null) {
            throw failure;
        }
    }
}
