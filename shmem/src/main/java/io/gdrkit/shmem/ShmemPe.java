/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

import io.gdrkit.core.agent.AgentRunner;
import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.bootstrap.BootstrapContext;
import io.gdrkit.comm.bootstrap.BootstrapException;
import io.gdrkit.comm.bootstrap.UniqueId;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.TreeMap;

/**
 * One processing element: its GPU's symmetric heap (registered once with its NIC, the rkeys of every PE exchanged
 * through the bootstrap at init), connected RC QPs to every PE (itself included), the host API, and the
 * {@link ShmemDevice device API} its kernels use over the run's control path (IBRC proxy or IBGDA).
 *
 * <p>Addresses are heap offsets: the same offset names the same object on every PE (what NVSHMEM's symmetric
 * addresses are). Host calls are for the thread that called {@link #init}; collectives (malloc, free, barrierAll)
 * must be called by every PE in the same order.
 */
public final class ShmemPe implements AutoCloseable {
    private static final int BLOB_HEAD = 16;

    private final ShmemContext ctx;
    private final Bootstrap boot;
    private final int me;
    private final int n;
    private final GpuDevice gpu;
    private final Arena arena = Arena.ofShared();
    private final VerbsContext vctx;
    private final ProtectionDomain pd;
    private final DeviceBuffer heapBuf;
    private final GpuDmaMemory heapMem;
    private final MemoryRegion heapMr;
    private final MemorySegment hostScratch;
    private final MemoryRegion hostScratchMr;
    private final CompletionQueue hostCq;
    private final CompletionQueue recvCq;
    private final QueuePair[] hostQp;
    private final QueuePair[] chanQp;
    private final CompletionQueue[] chanCq;
    private final long[] peerHeap;
    private final int[] peerRkey;
    private final SendWorkRequest wr = new SendWorkRequest(1);
    private final SendWorkRequest wr2 = new SendWorkRequest(1);
    private final WorkCompletion[] wcs = new WorkCompletion[16];
    private long hostPosted;
    private long hostDone;
    private String hostError;
    private long bump = ShmemContext.RESERVED;
    private final TreeMap<Long, Long> freeRanges = new TreeMap<>();
    private final TreeMap<Long, Long> live = new TreeMap<>();
    private final ShmemDevice device;
    private Proxy proxy;
    private AgentRunner proxyRunner;
    private ProxyRing proxyRing;
    private GdaQueue[] gda;

    private ShmemPe(final ShmemContext ctx, final Bootstrap boot, final GpuDevice gpu, final SoftDevice nic) {
        this.ctx = ctx;
        this.boot = boot;
        this.me = boot.rank();
        this.n = boot.nranks();
        this.gpu = gpu;
        this.vctx = nic.open();
        this.pd = vctx.allocPd();
        this.heapBuf = gpu.alloc(ctx.heapBytes());
        this.heapMem = new GpuDmaMemory(gpu, heapBuf);
        this.heapMr = pd.registerMr(heapMem, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
        this.hostScratch = arena.allocate(Math.max(4096, Proxy.SCRATCH_BASE + 8L * ctx.proxyDepth() + 16), 64);
        this.hostScratchMr = pd.registerMr(hostScratch, AccessFlags.LOCAL_WRITE);
        toDevice(gpu, heapBuf, 0, MemorySegment.ofArray(new byte[(int) ShmemContext.RESERVED]));
        // one read through the NIC's path now: on CUDA its first access allocates the pinned staging, and the CUDA
        // guide lists a page-locked allocation among the implicit synchronizations (not every driver waits there:
        // docs/SHMEM.md, "H200"); here no kernel runs yet, so none is waited for
        heapMem.dmaRead(0, hostScratch, 0, 8);
        this.hostCq = vctx.createCq(4 * ctx.sqDepth());
        this.recvCq = vctx.createCq(16);
        this.hostQp = new QueuePair[n];
        this.chanQp = new QueuePair[n];
        this.chanCq = new CompletionQueue[n];
        final CompletionQueue proxyCq = ctx.mode() == ShmemMode.IBRC ? vctx.createCq(n * ctx.sqDepth() + 16) : null;
        for (int pe = 0; pe < n; pe++) {
            hostQp[pe] = pd.createQp(attr(hostCq));
            chanCq[pe] = ctx.mode() == ShmemMode.IBRC ? proxyCq : vctx.createCq(2 * ctx.sqDepth());
            chanQp[pe] = pd.createQp(attr(chanCq[pe]).sqSigAll(true));
        }
        for (int i = 0; i < wcs.length; i++) {
            wcs[i] = new WorkCompletion();
        }
        // exchange: lid, heap address, rkey, then per PE the host and channel QP numbers meant for it
        final ByteBuffer blob = ByteBuffer.allocate(BLOB_HEAD + 8 * n);
        blob.putInt(nic.lid()).putLong(heapMr.address()).putInt(heapMr.rkey());
        for (int pe = 0; pe < n; pe++) {
            blob.putInt(hostQp[pe].qpNum()).putInt(chanQp[pe].qpNum());
        }
        final byte[][] all = boot.allGather(blob.array());
        this.peerHeap = new long[n];
        this.peerRkey = new int[n];
        for (int pe = 0; pe < n; pe++) {
            if (all[pe].length != BLOB_HEAD + 8 * n) {
                throw new ShmemException(ShmemException.Reason.NOT_COLLECTIVE, "PE " + pe + " sent a " + all[pe].length
                    + "-byte init blob, expected " + (BLOB_HEAD + 8 * n) + " (different nPes?)");
            }
            final ByteBuffer b = ByteBuffer.wrap(all[pe]);
            final int lid = b.getInt();
            peerHeap[pe] = b.getLong();
            peerRkey[pe] = b.getInt();
            final int hostQpn = b.getInt(BLOB_HEAD + 8 * me);
            final int chanQpn = b.getInt(BLOB_HEAD + 8 * me + 4);
            // retransmit timeout 2^18 x 4.096 us (about 1 s): software NICs on a shared host can be descheduled for
            // longer than the default's 67 ms, and a lost packet never happens on the in-JVM fabric anyway
            final io.gdrkit.verbs.QpAttr rc = QpBringUp.rcDefaults().timeout(18);
            QpBringUp.toRts(hostQp[pe], hostQpn, lid, psn(me, pe, 0), psn(pe, me, 0), rc);
            QpBringUp.toRts(chanQp[pe], chanQpn, lid, psn(me, pe, 1), psn(pe, me, 1), rc);
        }
        if (ctx.mode() == ShmemMode.IBRC) {
            proxyRing = new ProxyRing(allocPinned(ProxyRing.bytes(ctx.proxyDepth())), ctx.proxyDepth());
            proxy = new Proxy(proxyRing, chanQp, proxyCq, heapMr, hostScratchMr, peerHeap, peerRkey, ctx.sqDepth());
        } else {
            gda = new GdaQueue[n];
            for (int pe = 0; pe < n; pe++) {
                chanQp[pe].direct().takeOwnership();
                gda[pe] = new GdaQueue(chanQp[pe].direct(), pe, ctx, ctx.seed() * 31 + me * 64L + pe,
                    heapMr.address() + (long) pe * ctx.sqDepth() * 8, heapMr.lkey());
            }
        }
        for (final QueuePair qp : chanQp) {
            qp.direct().stampPickups(ctx.stamps());
        }
        this.device = new ShmemDevice(this);
        boot.barrier(); // every PE's QPs are in RTS before anyone sends
        if (proxy != null) {
            proxyRunner = new AgentRunner(proxy, io.gdrkit.core.agent.IdleStrategy.parse(ctx.idle()));
            proxyRunner.start();
        }
    }

    private static int psn(final int from, final int to, final int kind) {
        return (from * 131 + to * 7 + kind * 1000 + 1) & 0xFFFFFF;
    }

    private QpInitAttr attr(final CompletionQueue scq) {
        final QpInitAttr a = new QpInitAttr().cqs(scq, recvCq);
        a.cap.maxSendWr(ctx.sqDepth()).maxRecvWr(1).maxSendSge(1).maxRecvSge(1).maxInlineData(MAX_INLINE);
        return a;
    }

    /** Host memory the GPU reaches (the proxy ring): pinned on CUDA ({@code cuMemAllocHost}), plain on the simulator. */
    private MemorySegment allocPinned(final long bytes) {
        return gpu.isSimulated() ? arena.allocate(bytes, 4096) : gpu.allocHost(bytes);
    }

    /**
     * Initialises PE {@code rank} of {@code ctx.nPes()}: joins the bootstrap at {@code id}, then builds the heap and
     * the connections on {@code gpu} and {@code nic}. Collective: every PE must call it.
     *
     * @param ctx  the run's settings; {@code ctx.nPes()} is the number of PEs
     * @param id   the bootstrap root's unique id
     * @param rank this PE's number, {@code 0..nPes-1}
     * @param gpu  the GPU this PE's heap lives on
     * @param nic  the software NIC this PE's connections use
     * @return this PE, ready for puts, gets and kernels; close it when done
     */
    public static ShmemPe init(final ShmemContext ctx, final UniqueId id, final int rank, final GpuDevice gpu,
                               final SoftDevice nic) {
        ctx.concludeOnce();
        final Bootstrap boot;
        try {
            boot = Bootstrap.init(new BootstrapContext().id(id).rank(rank).nranks(ctx.nPes()).timeout(ctx.timeout()));
        } catch (final BootstrapException e) {
            throw new ShmemException(ShmemException.Reason.PE_DEAD, "bootstrap of PE " + rank + " failed", e);
        }
        return init(ctx, boot, gpu, nic);
    }

    /**
     * Initialises this process's PE over a bootstrap already joined (a launched rank: {@code gdrkit launch} put its
     * rank and root in the environment); {@code ctx.nPes()} must be the bootstrap's size. Collective. The PE owns
     * {@code boot} from here: closing the PE closes it.
     *
     * @param ctx  the run's settings
     * @param boot this process's bootstrap, joined to every other rank of the run
     * @param gpu  the GPU this PE's heap lives on
     * @param nic  the software NIC this PE's connections use
     * @return this PE, ready for puts, gets and kernels; close it when done
     */
    public static ShmemPe init(final ShmemContext ctx, final Bootstrap boot, final GpuDevice gpu,
                               final SoftDevice nic) {
        ctx.concludeOnce();
        if (ctx.nPes() != boot.nranks()) {
            boot.close();
            throw new ShmemException(ShmemException.Reason.NOT_COLLECTIVE, "the context says " + ctx.nPes()
                + " PEs, the bootstrap " + boot.nranks() + " ranks");
        }
        try {
            return new ShmemPe(ctx, boot, gpu, nic);
        } catch (final RuntimeException e) {
            boot.abort("PE " + boot.rank() + " failed at init: " + e.getMessage());
            boot.close();
            throw e;
        }
    }

    /** {@return this PE's number, {@code 0..nPes()-1}} */
    public int myPe() {
        return me;
    }

    /** {@return the number of PEs} */
    public int nPes() {
        return n;
    }

    /** {@return the concluded settings of the run} */
    public ShmemContext context() {
        return ctx;
    }

    /** {@return the GPU this PE's heap lives on} */
    public GpuDevice gpu() {
        return gpu;
    }

    /** {@return the device API for this PE's kernels} */
    public ShmemDevice device() {
        return device;
    }

    /** {@return the heap's device address on this PE (heap offset 0)} */
    public long heapAddress() {
        return heapBuf.address();
    }

    /** {@return the device buffer that holds this PE's symmetric heap} */
    public DeviceBuffer heapBuffer() {
        return heapBuf;
    }

    /**
     * Runs a simulated kernel on this PE's GPU ({@code blocks} x {@code threads}; the body runs once per block and
     * loops over its threads itself) and waits for it. A device call's {@link ShmemException} comes back as is.
     *
     * @param name    the kernel's name, for errors and traces
     * @param blocks  the number of thread blocks
     * @param threads the threads per block
     * @param body    the kernel, run once per block
     */
    public void launchSim(final String name, final int blocks, final int threads,
                          final io.gdrkit.gpu.sim.SimKernel body) {
        if (!(gpu instanceof io.gdrkit.gpu.sim.SimGpu sim)) {
            throw new ShmemException(ShmemException.Reason.BAD_ARGUMENT, "launchSim needs a simulated GPU, not "
                + gpu.describe());
        }
        final io.gdrkit.gpu.sim.SimFunction f = new io.gdrkit.gpu.sim.SimFunction(name, body);
        sim.register(f);
        device.clearError();
        final io.gdrkit.gpu.GpuStream s = gpu.createStream();
        try {
            gpu.launch(f, io.gdrkit.gpu.Dim3.of(blocks), io.gdrkit.gpu.Dim3.of(threads), s,
                new io.gdrkit.gpu.KernelArgs(1));
            gpu.synchronize(s, ctx.timeout().multipliedBy(4));
        } catch (final io.gdrkit.gpu.GpuException e) {
            final ShmemException d = device.lastError();
            if (d != null) {
                throw new ShmemException(d.reason(), "kernel " + name + " on PE " + me + ": "
                    + d.getMessage().substring(d.reason().name().length() + 2), e);
            }
            throw e;
        } finally {
            gpu.destroyStream(s);
        }
    }

    // ------------------------------------------------------------------ symmetric heap

    /**
     * Collective allocation: every PE gets the same heap offset (checked through the bootstrap). 256-byte aligned,
     * first fit over freed ranges, then bump.
     *
     * @param bytes the size to allocate
     * @return the heap offset of the allocation, the same on every PE
     */
    public long malloc(final long bytes) {
        if (bytes <= 0) {
            throw new ShmemException(ShmemException.Reason.BAD_ARGUMENT, "malloc(" + bytes + ")");
        }
        final long size = (bytes + 255) & ~255L;
        long off = -1;
        for (final Map.Entry<Long, Long> e : freeRanges.entrySet()) {
            if (e.getValue() >= size) {
                off = e.getKey();
                freeRanges.remove(off);
                if (e.getValue() > size) {
                    freeRanges.put(off + size, e.getValue() - size);
                }
                break;
            }
        }
        if (off < 0) {
            if (bump + size > ctx.heapBytes()) {
                throw new ShmemException(ShmemException.Reason.HEAP_EXHAUSTED, "malloc(" + bytes + ") on PE " + me
                    + ": " + (ctx.heapBytes() - bump) + " bytes left at the end of the heap");
            }
            off = bump;
            bump += size;
        }
        live.put(off, size);
        agree("malloc(" + bytes + ")", off);
        return off;
    }

    /**
     * Collective free of an offset {@link #malloc} returned.
     *
     * @param offset the heap offset to free
     */
    public void free(final long offset) {
        final Long size = live.remove(offset);
        if (size == null) {
            throw new ShmemException(ShmemException.Reason.BAD_ARGUMENT, "free(" + offset + "): not an allocation");
        }
        agree("free", offset);
        freeRanges.put(offset, size);
        final Map.Entry<Long, Long> next = freeRanges.higherEntry(offset);
        if (next != null && next.getKey() == offset + size) {
            freeRanges.remove(next.getKey());
            freeRanges.put(offset, size + next.getValue());
        }
        final Map.Entry<Long, Long> prev = freeRanges.lowerEntry(offset);
        if (prev != null && prev.getKey() + prev.getValue() == offset) {
            freeRanges.put(prev.getKey(), prev.getValue() + freeRanges.remove(offset));
        }
    }

    private void agree(final String what, final long off) {
        final byte[][] all = boot.allGather(ByteBuffer.allocate(8).putLong(off).array());
        for (int pe = 0; pe < n; pe++) {
            final long o = ByteBuffer.wrap(all[pe]).getLong();
            if (o != off) {
                throw new ShmemException(ShmemException.Reason.NOT_COLLECTIVE, what + ": PE " + pe + " got offset "
                    + o + ", PE " + me + " got " + off + " (PEs must allocate and free in the same order)");
            }
        }
    }

    /** Throws ADDRESS_OUT_OF_HEAP unless {@code [off, off + len)} is in the heap's user part. */
    void checkRange(final long off, final long len, final String what) {
        if (off < ShmemContext.RESERVED || len < 0 || off + len > ctx.heapBytes() || off + len < off) {
            throw new ShmemException(ShmemException.Reason.ADDRESS_OUT_OF_HEAP, what + ": [" + off + ", +" + len
                + ") is outside the symmetric heap [" + ShmemContext.RESERVED + ", " + ctx.heapBytes() + ")");
        }
    }

    void checkPe(final int pe, final String what) {
        if (pe < 0 || pe >= n) {
            throw new ShmemException(ShmemException.Reason.PE_OUT_OF_RANGE, what + ": PE " + pe + " is not in [0, "
                + n + ")");
        }
    }

    /**
     * Host copy into this PE's own heap.
     *
     * @param off the heap offset to write at
     * @param src the data to copy
     */
    public void write(final long off, final MemorySegment src) {
        checkRange(off, src.byteSize(), "write");
        toDevice(gpu, heapBuf, off, src);
    }

    /**
     * Host copy out of this PE's own heap.
     *
     * @param off the heap offset to read from
     * @param len the number of bytes
     * @return a copy of the bytes
     */
    public byte[] read(final long off, final int len) {
        checkRange(off, len, "read");
        final byte[] out = new byte[len];
        fromDevice(gpu, MemorySegment.ofArray(out), heapBuf, off);
        return out;
    }

    /**
     * Reads a 64-bit word from this PE's own heap.
     *
     * @param off the word's heap offset
     * @return the word
     */
    public long readLong(final long off) {
        return MemorySegment.ofArray(read(off, 8)).get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
    }

    /** Host-to-device copy from any segment: CUDA takes native memory only, so heap segments are staged. */
    static void toDevice(final GpuDevice gpu, final DeviceBuffer dst, final long off, final MemorySegment src) {
        if (src.isNative()) {
            gpu.copyHtoD(dst, off, src, 0, src.byteSize());
            return;
        }
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment n = a.allocate(Math.max(1, src.byteSize()), 64);
            MemorySegment.copy(src, 0, n, 0, src.byteSize());
            gpu.copyHtoD(dst, off, n, 0, src.byteSize());
        }
    }

    /** Device-to-host copy into any segment (staged when it is a heap segment). */
    static void fromDevice(final GpuDevice gpu, final MemorySegment dst, final DeviceBuffer src, final long off) {
        if (dst.isNative()) {
            gpu.copyDtoH(dst, 0, src, off, dst.byteSize());
            return;
        }
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment n = a.allocate(Math.max(1, dst.byteSize()), 64);
            gpu.copyDtoH(n, 0, src, off, dst.byteSize());
            MemorySegment.copy(n, 0, dst, 0, dst.byteSize());
        }
    }

    // ------------------------------------------------------------------ host API (CPU-posted verbs)

    /**
     * Blocking put: returns when the data is delivered (the WRITE's completion).
     *
     * @param dst the heap offset on PE {@code pe} to write to
     * @param src the heap offset on this PE to read from
     * @param len the number of bytes
     * @param pe  the target PE
     */
    public void put(final long dst, final long src, final long len, final int pe) {
        putNbi(dst, src, len, pe);
        quiet();
    }

    /**
     * Non-blocking put: posts the write and returns; {@link #quiet()} waits until it is delivered, and {@code src}
     * must not change before then.
     *
     * @param dst the heap offset on PE {@code pe} to write to
     * @param src the heap offset on this PE to read from
     * @param len the number of bytes
     * @param pe  the target PE
     */
    public void putNbi(final long dst, final long src, final long len, final int pe) {
        checkPe(pe, "put");
        checkRange(dst, len, "put dst");
        checkRange(src, len, "put src");
        checkLen(len);
        wr.clear();
        wr.wrId(hostPosted).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).sge(heapMr, src, (int) len)
            .remote(peerHeap[pe] + dst, peerRkey[pe]);
        postHost(pe, wr, 1);
    }

    /**
     * Blocking get: returns when the data has arrived in this PE's heap.
     *
     * @param dst the heap offset on this PE to write to
     * @param src the heap offset on PE {@code pe} to read from
     * @param len the number of bytes
     * @param pe  the source PE
     */
    public void get(final long dst, final long src, final long len, final int pe) {
        getNbi(dst, src, len, pe);
        quiet();
    }

    /**
     * Non-blocking get: posts the read and returns; {@link #quiet()} waits until the data has arrived.
     *
     * @param dst the heap offset on this PE to write to
     * @param src the heap offset on PE {@code pe} to read from
     * @param len the number of bytes
     * @param pe  the source PE
     */
    public void getNbi(final long dst, final long src, final long len, final int pe) {
        checkPe(pe, "get");
        checkRange(dst, len, "get dst");
        checkRange(src, len, "get src");
        checkLen(len);
        wr.clear();
        wr.wrId(hostPosted).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED).sge(heapMr, dst, (int) len)
            .remote(peerHeap[pe] + src, peerRkey[pe]);
        postHost(pe, wr, 1);
    }

    /**
     * put then the signal update, in that order on one RC connection (the target sees the data first).
     *
     * @param dst   the heap offset on PE {@code pe} to write to
     * @param src   the heap offset on this PE to read from
     * @param len   the number of bytes
     * @param sig   the heap offset of the 64-bit signal word on PE {@code pe}, 8-byte aligned
     * @param value the value to set or add
     * @param op    whether the signal is set to {@code value} or has {@code value} added
     * @param pe    the target PE
     */
    public void putSignal(final long dst, final long src, final long len, final long sig, final long value,
                          final SignalOp op, final int pe) {
        putSignalNbi(dst, src, len, sig, value, op, pe);
        quiet();
    }

    /**
     * Non-blocking {@link #putSignal}: posts the put and the signal update and returns; {@link #quiet()} waits until
     * both are delivered.
     *
     * @param dst   the heap offset on PE {@code pe} to write to
     * @param src   the heap offset on this PE to read from
     * @param len   the number of bytes
     * @param sig   the heap offset of the 64-bit signal word on PE {@code pe}, 8-byte aligned
     * @param value the value to set or add
     * @param op    whether the signal is set to {@code value} or has {@code value} added
     * @param pe    the target PE
     */
    public void putSignalNbi(final long dst, final long src, final long len, final long sig, final long value,
                             final SignalOp op, final int pe) {
        checkPe(pe, "putSignal");
        checkRange(dst, len, "putSignal dst");
        checkRange(src, len, "putSignal src");
        checkRange(sig, 8, "putSignal signal");
        checkAligned(sig, "putSignal signal");
        checkLen(len);
        wr.clear();
        wr.wrId(hostPosted).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).sge(heapMr, src, (int) len)
            .remote(peerHeap[pe] + dst, peerRkey[pe]);
        wr2.clear();
        wr2.wrId(hostPosted + 1).remote(peerHeap[pe] + sig, peerRkey[pe]);
        if (op == SignalOp.SET) {
            hostScratch.set(ValueLayout.JAVA_LONG, 0, value);
            wr2.opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED | SendFlags.INLINE).sge(hostScratchMr, 0, 8);
        } else {
            wr2.opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).flags(SendFlags.SIGNALED).sge(hostScratchMr, 8, 8).atomic(value, 0);
        }
        wr.next(wr2);
        postHost(pe, wr, 2);
    }

    /**
     * Atomically adds {@code value} to the 64-bit word at {@code off} on PE {@code pe}.
     *
     * @param off   the word's heap offset on PE {@code pe}, 8-byte aligned
     * @param value the value to add
     * @param pe    the target PE
     * @return the word's value before the addition
     */
    public long fetchAdd(final long off, final long value, final int pe) {
        return atomic(WrOpcode.ATOMIC_FETCH_AND_ADD, off, value, 0, pe);
    }

    /**
     * Atomically replaces the 64-bit word at {@code off} on PE {@code pe} with {@code swap} if it equals {@code
     * compare}.
     *
     * @param off     the word's heap offset on PE {@code pe}, 8-byte aligned
     * @param compare the value the word must hold
     * @param swap    the value to store
     * @param pe      the target PE
     * @return the word's value before the operation (equal to {@code compare} when it swapped)
     */
    public long compareSwap(final long off, final long compare, final long swap, final int pe) {
        return atomic(WrOpcode.ATOMIC_CMP_AND_SWP, off, compare, swap, pe);
    }

    private long atomic(final int opcode, final long off, final long a, final long b, final int pe) {
        checkPe(pe, "atomic");
        checkRange(off, 8, "atomic");
        checkAligned(off, "atomic");
        quiet(); // the fetch slot is reused by every host atomic
        wr.clear();
        wr.wrId(hostPosted).opcode(opcode).flags(SendFlags.SIGNALED).sge(hostScratchMr, 16, 8)
            .remote(peerHeap[pe] + off, peerRkey[pe]).atomic(a, b);
        postHost(pe, wr, 1);
        quiet();
        return hostScratch.get(ValueLayout.JAVA_LONG, 16);
    }

    /** Orders earlier puts to each PE before later ones: one RC connection per PE pair already delivers in order. */
    public void fence() {
        // nothing to do: see the javadoc (NVSHMEM's IBRC fence is the same no-op with one QP per peer)
    }

    /** Waits until every host operation issued so far has completed. */
    public void quiet() {
        final Spin spin = new Spin(ctx.timeout().toNanos());
        while (hostDone < hostPosted) {
            final int got = hostCq.poll(wcs);
            for (int i = 0; i < got; i++) {
                if (wcs[i].status != WcStatus.SUCCESS && hostError == null) {
                    hostError = "host operation " + wcs[i].wrId + " completed with " + WcStatus.name(wcs[i].status);
                }
            }
            hostDone += got;
            if (got == 0) {
                if (spin.idle()) {
                    throw Spin.timeout("quiet: " + (hostPosted - hostDone) + " host operation(s) of PE " + me + " to complete");
                }
            }
        }
        if (hostError != null) {
            throw new ShmemException(ShmemException.Reason.OPERATION_FAILED, hostError);
        }
    }

    /** quiet, then every PE meets (host barrier through the bootstrap). */
    public void barrierAll() {
        quiet();
        try {
            boot.barrier();
        } catch (final BootstrapException e) {
            throw new ShmemException(ShmemException.Reason.PE_DEAD, "barrierAll on PE " + me, e);
        }
    }

    /**
     * Every PE's {@code mine}, by PE, through the bootstrap (no NIC, no GPU): for agreements of the host side, such
     * as whether a benchmark's warm-up goes on.
     */
    byte[][] allGather(final byte[] mine) {
        try {
            return boot.allGather(mine);
        } catch (final BootstrapException e) {
            throw new ShmemException(ShmemException.Reason.PE_DEAD, "allGather on PE " + me, e);
        }
    }

    /**
     * Polls this PE's heap word at {@code off} until {@code word OP value}; returns the word.
     *
     * @param off   the word's heap offset on this PE
     * @param cmp   the comparison
     * @param value the value compared with
     * @return the word that satisfied the comparison
     */
    public long waitUntil(final long off, final Cmp cmp, final long value) {
        checkRange(off, 8, "waitUntil");
        checkAligned(off, "waitUntil");
        final Spin spin = new Spin(ctx.timeout().toNanos());
        while (true) {
            final long v = readLong(off);
            if (cmp.test(v, value)) {
                return v;
            }
            if (spin.idle()) {
                throw Spin.timeout("waitUntil: heap word " + off + " of PE " + me + " " + cmp + " " + value + " (now " + v + ")");
            }
        }
    }

    /**
     * {@link #waitUntil} on a signal word.
     *
     * @param sig   the signal word's heap offset on this PE
     * @param cmp   the comparison
     * @param value the value compared with
     * @return the signal's value that satisfied the comparison
     */
    public long signalWaitUntil(final long sig, final Cmp cmp, final long value) {
        return waitUntil(sig, cmp, value);
    }

    private void postHost(final int pe, final SendWorkRequest first, final int count) {
        if (hostPosted - hostDone + count > ctx.sqDepth()) {
            quiet();
        }
        hostQp[pe].postSend(first);
        hostPosted += count;
    }

    /** The largest operation, bytes (shmem_device.cuh's shd_check says the same). */
    static final int MAX_LEN = 1 << 30;
    /**
     * A put of at most this many bytes carries its data in the WQE on IBGDA (the QPs' max_inline_data): the NIC then
     * never reads GPU memory for it, as NVSHMEM's inline puts.
     */
    static final int MAX_INLINE = 64;

    static void checkLen(final long len) {
        if (len < 0 || len > MAX_LEN) {
            throw new ShmemException(ShmemException.Reason.BAD_ARGUMENT, "length " + len + " is not in 0..2^30");
        }
    }

    static void checkAligned(final long off, final String what) {
        if ((off & 7) != 0) {
            throw new ShmemException(ShmemException.Reason.BAD_ARGUMENT, what + ": offset " + off
                + " is not 8-byte aligned");
        }
    }

    // ------------------------------------------------------------------ for the device API

    MemoryRegion heapMr() {
        return heapMr;
    }

    long peerHeap(final int pe) {
        return peerHeap[pe];
    }

    int peerRkey(final int pe) {
        return peerRkey[pe];
    }

    /** The PE's bootstrap (collectives of the host side: gathering results). */
    Bootstrap bootstrap() {
        return boot;
    }

    ProxyRing proxyRing() {
        return proxyRing;
    }

    Proxy proxy() {
        return proxy;
    }

    GdaQueue gda(final int pe) {
        return gda[pe];
    }

    /**
     * {@return the NIC's per-QP doorbell counters of the channel QPs: [cpu-rung, gpu-rung (direct), stale WQEs
     * refused]}
     */
    public long[] doorbellCounters() {
        final long[] c = new long[3];
        for (final QueuePair qp : chanQp) {
            c[0] += qp.direct().cpuDoorbells();
            c[1] += qp.direct().directDoorbells();
            c[2] += qp.direct().staleWqes();
        }
        return c;
    }

    /** {@return WQEs whose stores the simulated GPU let the doorbell overtake (fence left out)} */
    public long staleInjected() {
        long s = 0;
        if (gda != null) {
            for (final GdaQueue q : gda) {
                s += q.staleInjected.get();
            }
        }
        return s;
    }

    io.gdrkit.verbs.DirectQueue direct(final int pe) {
        return chanQp[pe].direct();
    }

    long nicPickup(final int pe, final long wqeIndex) {
        return chanQp[pe].direct().pickupNanos(wqeIndex);
    }

    /**
     * The NIC's stamps of WQE {@code wqeIndex} on the channel to {@code pe} after its pick-up, host nanoTime, 0 where
     * none, into {@code s} at the breakdown's places ({@link ShmemPerf#breakdown}): [5] CQE written, [6] placed at
     * the target, [7] ACK sent, [8] ACK taken ({@code DirectQueue.completionNanos} and {@code pathNanos}).
     */
    void nicSteps(final int pe, final long wqeIndex, final long[] s) {
        final io.gdrkit.verbs.DirectQueue d = chanQp[pe].direct();
        s[5] = d.completionNanos(wqeIndex);
        s[6] = d.pathNanos(wqeIndex, io.gdrkit.verbs.DirectQueue.PATH_PLACED);
        s[7] = d.pathNanos(wqeIndex, io.gdrkit.verbs.DirectQueue.PATH_ACK_SENT);
        s[8] = d.pathNanos(wqeIndex, io.gdrkit.verbs.DirectQueue.PATH_ACK_TAKEN);
    }

    @Override
    public void close() {
        if (proxyRunner != null) {
            proxyRunner.close();
        }
        for (int pe = 0; pe < n; pe++) {
            if (chanQp[pe] != null) {
                chanQp[pe].close();
            }
            if (hostQp[pe] != null) {
                hostQp[pe].close();
            }
        }
        heapMr.deregister();
        hostScratchMr.deregister();
        heapMem.close();
        gpu.free(heapBuf);
        if (proxyRing != null && !gpu.isSimulated()) {
            gpu.freeHost(proxyRing.mem);
        }
        boot.close();
        arena.close();
    }
}
