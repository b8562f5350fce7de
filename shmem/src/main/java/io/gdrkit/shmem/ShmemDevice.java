/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

import io.gdrkit.gpu.sim.DeviceView;
import io.gdrkit.gpu.sim.KernelContext;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.WrOpcode;
import java.util.ArrayList;
import java.util.List;

/**
 * The device API of one PE, for simulated kernels (Java {@code SimKernel}s on the SM workers): the operations of
 * NVSHMEM's device API over the run's control path. {@link ShmemMode#IBGDA}: the calling SM thread writes the WQE
 * into the NIC's send queue and rings the doorbell ({@link GdaQueue}). {@link ShmemMode#IBRC}: it writes a request
 * into the proxy ring and the CPU proxy posts the verbs ({@link Proxy}). kernels.cu holds the CUDA twins.
 *
 * <p>Every call takes the block's {@link KernelContext} (what CUDA code gets implicitly). The thread variants are
 * called per thread; the {@code Warp} and {@code Block} variants are collective: one call per warp or block issues
 * one request for the whole range (on the simulator a block runs on one SM worker, so that call is one Java call;
 * on CUDA lane 0 or thread 0 posts after a sync). Blocking calls return once the operation's completion is seen
 * (stronger than NVSHMEM's "source reusable" for put, which the NIC cannot signal earlier). Bad input throws a named
 * {@link ShmemException} that fails the kernel and is kept for the host ({@link #lastError()}).
 */
public final class ShmemDevice {
    private final ShmemPe pe;
    private final ShmemContext ctx;
    private final long heap;
    private final List<long[]> stamps = new ArrayList<>();
    private volatile ShmemException lastError;

    ShmemDevice(final ShmemPe pe) {
        this.pe = pe;
        this.ctx = pe.context();
        this.heap = pe.heapAddress();
    }

    /** {@return this PE's number} */
    public int myPe() {
        return pe.myPe();
    }

    /** {@return the number of PEs} */
    public int nPes() {
        return pe.nPes();
    }

    /** {@return the first error a device call raised on this PE, or null} */
    public ShmemException lastError() {
        return lastError;
    }

    void clearError() {
        lastError = null;
    }

    // ---------------------------------------------------------------- put / get

    /**
     * Blocking put, called per thread: returns once the write's completion is seen.
     *
     * @param k      the calling block's kernel context
     * @param dst    the heap offset on PE {@code target} to write to
     * @param src    the heap offset on this PE to read from
     * @param len    the number of bytes
     * @param target the target PE
     */
    public void put(final KernelContext k, final long dst, final long src, final long len, final int target) {
        await(k, issue(k, Op.PUT, target, dst, src, len, 0, 0, 0, 0), "put");
    }

    /**
     * Non-blocking put, called per thread: issues the write and returns; {@link #quiet} waits for it.
     *
     * @param k      the calling block's kernel context
     * @param dst    the heap offset on PE {@code target} to write to
     * @param src    the heap offset on this PE to read from
     * @param len    the number of bytes
     * @param target the target PE
     * @return a ticket naming the issued operation; {@link #quiet} waits for it with the others
     */
    public long putNbi(final KernelContext k, final long dst, final long src, final long len, final int target) {
        return issue(k, Op.PUT, target, dst, src, len, 0, 0, 0, 0);
    }

    /**
     * Collective over a warp: one request for the warp's whole range.
     *
     * @param k      the calling block's kernel context
     * @param dst    the heap offset on PE {@code target} to write to
     * @param src    the heap offset on this PE to read from
     * @param len    the number of bytes
     * @param target the target PE
     */
    public void putWarp(final KernelContext k, final long dst, final long src, final long len, final int target) {
        put(k, dst, src, len, target);
    }

    /**
     * Collective over a block: one request for the block's whole range.
     *
     * @param k      the calling block's kernel context
     * @param dst    the heap offset on PE {@code target} to write to
     * @param src    the heap offset on this PE to read from
     * @param len    the number of bytes
     * @param target the target PE
     */
    public void putBlock(final KernelContext k, final long dst, final long src, final long len, final int target) {
        put(k, dst, src, len, target);
    }

    /**
     * Blocking get, called per thread: returns once the data has arrived.
     *
     * @param k      the calling block's kernel context
     * @param dst    the heap offset on this PE to write to
     * @param src    the heap offset on PE {@code target} to read from
     * @param len    the number of bytes
     * @param target the source PE
     */
    public void get(final KernelContext k, final long dst, final long src, final long len, final int target) {
        await(k, issue(k, Op.GET, target, dst, src, len, 0, 0, 0, 0), "get");
    }

    /**
     * Non-blocking get, called per thread: issues the read and returns; {@link #quiet} waits for it.
     *
     * @param k      the calling block's kernel context
     * @param dst    the heap offset on this PE to write to
     * @param src    the heap offset on PE {@code target} to read from
     * @param len    the number of bytes
     * @param target the source PE
     * @return a ticket naming the issued operation; {@link #quiet} waits for it with the others
     */
    public long getNbi(final KernelContext k, final long dst, final long src, final long len, final int target) {
        return issue(k, Op.GET, target, dst, src, len, 0, 0, 0, 0);
    }

    /**
     * Blocking get, collective over a warp: one request for the warp's whole range.
     *
     * @param k      the calling block's kernel context
     * @param dst    the heap offset on this PE to write to
     * @param src    the heap offset on PE {@code target} to read from
     * @param len    the number of bytes
     * @param target the source PE
     */
    public void getWarp(final KernelContext k, final long dst, final long src, final long len, final int target) {
        get(k, dst, src, len, target);
    }

    /**
     * Blocking get, collective over a block: one request for the block's whole range.
     *
     * @param k      the calling block's kernel context
     * @param dst    the heap offset on this PE to write to
     * @param src    the heap offset on PE {@code target} to read from
     * @param len    the number of bytes
     * @param target the source PE
     */
    public void getBlock(final KernelContext k, final long dst, final long src, final long len, final int target) {
        get(k, dst, src, len, target);
    }

    // ---------------------------------------------------------------- put with signal

    /**
     * Blocking put with signal, called per thread: the data, then the signal update on the same connection, so the
     * target sees the data before the signal; returns once both completed.
     *
     * @param k      the calling block's kernel context
     * @param dst    the heap offset on PE {@code target} to write to
     * @param src    the heap offset on this PE to read from
     * @param len    the number of bytes
     * @param sig    the heap offset of the 64-bit signal word on PE {@code target}, 8-byte aligned
     * @param value  the value to set or add
     * @param op     whether the signal is set to {@code value} or has {@code value} added
     * @param target the target PE
     */
    public void putSignal(final KernelContext k, final long dst, final long src, final long len, final long sig,
                          final long value, final SignalOp op, final int target) {
        await(k, issue(k, Op.PUT_SIGNAL, target, dst, src, len, value, 0, sig, op.ordinal()), "putSignal");
    }

    /**
     * Non-blocking put with signal, called per thread: issues the put and the signal update and returns; {@link
     * #quiet} waits for them.
     *
     * @param k      the calling block's kernel context
     * @param dst    the heap offset on PE {@code target} to write to
     * @param src    the heap offset on this PE to read from
     * @param len    the number of bytes
     * @param sig    the heap offset of the 64-bit signal word on PE {@code target}, 8-byte aligned
     * @param value  the value to set or add
     * @param op     whether the signal is set to {@code value} or has {@code value} added
     * @param target the target PE
     * @return a ticket naming the issued operation; {@link #quiet} waits for it with the others
     */
    public long putSignalNbi(final KernelContext k, final long dst, final long src, final long len, final long sig,
                             final long value, final SignalOp op, final int target) {
        return issue(k, Op.PUT_SIGNAL, target, dst, src, len, value, 0, sig, op.ordinal());
    }

    /**
     * Blocking put with signal, collective over a warp: one request for the warp's whole range.
     *
     * @param k      the calling block's kernel context
     * @param dst    the heap offset on PE {@code target} to write to
     * @param src    the heap offset on this PE to read from
     * @param len    the number of bytes
     * @param sig    the heap offset of the 64-bit signal word on PE {@code target}, 8-byte aligned
     * @param value  the value to set or add
     * @param op     whether the signal is set to {@code value} or has {@code value} added
     * @param target the target PE
     */
    public void putSignalWarp(final KernelContext k, final long dst, final long src, final long len, final long sig,
                              final long value, final SignalOp op, final int target) {
        putSignal(k, dst, src, len, sig, value, op, target);
    }

    /**
     * Blocking put with signal, collective over a block: one request for the block's whole range.
     *
     * @param k      the calling block's kernel context
     * @param dst    the heap offset on PE {@code target} to write to
     * @param src    the heap offset on this PE to read from
     * @param len    the number of bytes
     * @param sig    the heap offset of the 64-bit signal word on PE {@code target}, 8-byte aligned
     * @param value  the value to set or add
     * @param op     whether the signal is set to {@code value} or has {@code value} added
     * @param target the target PE
     */
    public void putSignalBlock(final KernelContext k, final long dst, final long src, final long len, final long sig,
                               final long value, final SignalOp op, final int target) {
        putSignal(k, dst, src, len, sig, value, op, target);
    }

    // ---------------------------------------------------------------- atomics

    /**
     * Atomically adds {@code value} to the 64-bit word at {@code off} on PE {@code target}, and waits for the old
     * value.
     *
     * @param k      the calling block's kernel context
     * @param off    the word's heap offset on PE {@code target}, 8-byte aligned
     * @param value  the value to add
     * @param target the target PE
     * @return the word's value before the addition
     */
    public long fetchAdd(final KernelContext k, final long off, final long value, final int target) {
        final long t = issue(k, Op.FETCH_ADD, target, off, 0, 8, value, 0, 0, 0);
        await(k, t, "fetchAdd");
        return fetched(k, t);
    }

    /**
     * Atomically replaces the 64-bit word at {@code off} on PE {@code target} with {@code swap} if it equals {@code
     * compare}, and waits for the old value.
     *
     * @param k      the calling block's kernel context
     * @param off     the word's heap offset on PE {@code target}, 8-byte aligned
     * @param compare the value the word must hold
     * @param swap    the value to store
     * @param target  the target PE
     * @return the word's value before the operation (equal to {@code compare} when it swapped)
     */
    public long compareSwap(final KernelContext k, final long off, final long compare, final long swap,
                            final int target) {
        final long t = issue(k, Op.COMPARE_SWAP, target, off, 0, 8, compare, swap, 0, 0);
        await(k, t, "compareSwap");
        return fetched(k, t);
    }

    // ---------------------------------------------------------------- ordering and waiting

    /**
     * Orders earlier operations to a PE before later ones: one in-order RC connection per PE pair does already.
     *
     * @param k      the calling block's kernel context
     */
    public void fence(final KernelContext k) {
        // see the javadoc
    }

    /**
     * Waits until every operation this PE's kernels issued so far has completed.
     *
     * @param k      the calling block's kernel context
     */
    public void quiet(final KernelContext k) {
        try {
            if (ctx.mode() == ShmemMode.IBGDA) {
                for (int p = 0; p < pe.nPes(); p++) {
                    pe.gda(p).quiet();
                }
                return;
            }
            final ProxyRing r = pe.proxyRing();
            final long upTo = r.get(ProxyRing.TAIL);
            final Spin spin = new Spin(ctx.timeout().toNanos());
            while (r.get(ProxyRing.COMPLETED) < upTo) {
                checkProxy(r);
                if (spin.idle()) {
                    throw Spin.timeout("quiet: the proxy's completion counter to reach " + upTo);
                }
            }
            checkProxy(r);
        } catch (final ShmemException e) {
            throw remember(e);
        }
    }

    /**
     * Polls the local heap word at {@code off} until {@code word OP value}; returns the word.
     *
     * @param k      the calling block's kernel context
     * @param off    the word's heap offset on this PE
     * @param cmp    the comparison
     * @param value  the value compared with
     * @return the word that satisfied the comparison
     */
    public long waitUntil(final KernelContext k, final long off, final Cmp cmp, final long value) {
        try {
            pe.checkRange(off, 8, "waitUntil");
            ShmemPe.checkAligned(off, "waitUntil");
            final var view = k.view(heap + off, 8);
            final Spin spin = new Spin(ctx.timeout().toNanos());
            while (true) {
                final long v = view.getLongAcquire(0);
                if (cmp.test(v, value)) {
                    return v;
                }
                if (spin.idle()) {
                    throw Spin.timeout("waitUntil in a kernel of PE " + pe.myPe() + ": heap word " + off + " " + cmp
                        + " " + value + " (now " + v + ")");
                }
            }
        } catch (final ShmemException e) {
            throw remember(e);
        }
    }

    /**
     * Polls this PE's signal word at {@code sig} until {@code signal OP value}.
     *
     * @param k      the calling block's kernel context
     * @param sig    the signal word's heap offset on this PE
     * @param cmp    the comparison
     * @param value  the value compared with
     * @return the signal's value that satisfied the comparison
     */
    public long signalWaitUntil(final KernelContext k, final long sig, final Cmp cmp, final long value) {
        return waitUntil(k, sig, cmp, value);
    }

    // ---------------------------------------------------------------- stamps

    /**
     * Stamps of blocking operations since the last call (when the context asks for stamps), each
     * {op, issue, proxy pick-up (0 on IBGDA), NIC pick-up, completion seen}; nanoTime, the simulator's shared clock.
     *
     * @return the stamps, oldest first; empty when the context does not ask for stamps
     */
    public synchronized List<long[]> drainStamps() {
        final List<long[]> out = new ArrayList<>(stamps);
        stamps.clear();
        return out;
    }

    // ---------------------------------------------------------------- internals

    /** A ticket: on IBGDA (WQE index << 6 | target PE) of the request's first WQE, on IBRC the proxy ticket. */
    private long issue(final KernelContext k, final int op, final int target, final long dst, final long src,
                       final long len, final long a, final long b, final long sig, final int sigOp) {
        try {
            final long t0 = System.nanoTime();
            pe.checkPe(target, Op.name(op));
            ShmemPe.checkLen(len);
            switch (op) {
                case Op.GET -> {
                    pe.checkRange(dst, len, "get dst");
                    pe.checkRange(src, len, "get src");
                }
                case Op.FETCH_ADD, Op.COMPARE_SWAP -> {
                    pe.checkRange(dst, 8, Op.name(op));
                    ShmemPe.checkAligned(dst, Op.name(op));
                }
                default -> {
                    pe.checkRange(dst, len, Op.name(op) + " dst");
                    pe.checkRange(src, len, Op.name(op) + " src");
                }
            }
            if (op == Op.PUT_SIGNAL) {
                pe.checkRange(sig, 8, "putSignal signal");
                ShmemPe.checkAligned(sig, "putSignal signal");
            }
            final long ticket;
            if (ctx.mode() == ShmemMode.IBGDA) {
                ticket = gdaIssue(k, op, target, dst, src, (int) len, a, b, sig, sigOp) << 6 | target;
            } else {
                ticket = proxyIssue(k, op, target, dst, src, (int) len, a, b, sig, sigOp, t0);
            }
            if (ctx.stamps()) {
                pendingIssue.set(t0);
            }
            return ticket;
        } catch (final ShmemException e) {
            throw remember(e);
        }
    }

    private final ThreadLocal<Long> pendingIssue = new ThreadLocal<>();

    private long gdaIssue(final KernelContext k, final int op, final int target, final long dst, final long src,
                          final int len, final long a, final long b, final long sig, final int sigOp) {
        final GdaQueue q = pe.gda(target);
        final int lkey = pe.heapMr().lkey();
        final long remote = pe.peerHeap(target);
        final int rkey = pe.peerRkey(target);
        // a put of up to MAX_INLINE bytes carries its data in the WQE (shmem_device.cuh's shmem_issue does the same)
        final boolean put = op == Op.PUT || op == Op.PUT_SIGNAL;
        final DeviceView from = put && len > 0 && len <= ShmemPe.MAX_INLINE ? k.view(heap + src, len) : null;
        final int inl = from != null ? SendFlags.INLINE : 0;
        return switch (op) {
            case Op.GET -> q.post(WrOpcode.RDMA_READ, 0, heap + dst, len, lkey, remote + src, rkey, 0, 0, 0, null);
            case Op.FETCH_ADD -> q.post(WrOpcode.ATOMIC_FETCH_AND_ADD, 0, 0, 8, lkey, remote + dst, rkey, a, 0, 0,
                null);
            case Op.COMPARE_SWAP -> q.post(WrOpcode.ATOMIC_CMP_AND_SWP, 0, 0, 8, lkey, remote + dst, rkey, a, b, 0,
                null);
            case Op.PUT_SIGNAL -> {
                q.post(WrOpcode.RDMA_WRITE, inl, heap + src, len, lkey, remote + dst, rkey, 0, 0, 0, from);
                // the ticket is the signal's WQE: its completion covers the data's (one QP completes in order)
                yield sigOp == SignalOp.SET.ordinal()
                    ? q.post(WrOpcode.RDMA_WRITE, SendFlags.INLINE, 0, 8, 0, remote + sig, rkey, 0, 0, a, null)
                    : q.post(WrOpcode.ATOMIC_FETCH_AND_ADD, 0, 0, 8, lkey, remote + sig, rkey, a, 0, 0, null);
            }
            default -> q.post(WrOpcode.RDMA_WRITE, inl, heap + src, len, lkey, remote + dst, rkey, 0, 0, 0, from);
        };
    }

    private long proxyIssue(final KernelContext k, final int op, final int target, final long dst, final long src,
                            final int len, long a, long b, final long sig, int sigOp, final long t0) {
        if (op == Op.PUT && len > 0 && len <= ProxyRing.INLINE_MAX) {
            // the data travels in the request (shmem_device.cuh's proxy_post does the same): little-endian in a, b
            final DeviceView from = k.view(heap + src, len);
            a = 0;
            b = 0;
            for (int i = 0; i < len; i++) {
                final long v = (from.getByte(i) & 0xFFL) << (8 * (i % 8));
                if (i < 8) {
                    a |= v;
                } else {
                    b |= v;
                }
            }
            sigOp = ProxyRing.INLINE;
        }
        final ProxyRing r = pe.proxyRing();
        final long ticket = r.take();
        final Spin spin = new Spin(ctx.timeout().toNanos());
        while (ticket - r.get(ProxyRing.CONSUMED) >= r.depth) {
            checkProxy(r);
            if (spin.idle()) {
                throw Spin.timeout("a free proxy-ring slot for request " + ticket);
            }
        }
        r.write(ticket, op, sigOp, target, len, dst, src, a, b, sig, t0);
        return ticket;
    }

    private void await(final KernelContext k, final long ticket, final String what) {
        try {
            if (ctx.mode() == ShmemMode.IBGDA) {
                pe.gda((int) (ticket & 63)).await(ticket >>> 6, what);
            } else {
                final ProxyRing r = pe.proxyRing();
                final Spin spin = new Spin(ctx.timeout().toNanos());
                while (r.doneOf(ticket) < ticket + 1) {
                    checkProxy(r);
                    if (spin.idle()) {
                        throw Spin.timeout(what + ": the proxy's completion of request " + ticket);
                    }
                }
                checkProxy(r);
            }
            if (ctx.stamps()) {
                record(ticket);
            }
        } catch (final ShmemException e) {
            throw remember(e);
        }
    }

    private void record(final long ticket) {
        final long done = System.nanoTime();
        final Long issued = pendingIssue.get();
        final long[] s = new long[9];
        s[1] = issued == null ? 0 : issued;
        s[4] = done;
        final int target;
        final long lastWqe;
        if (ctx.mode() == ShmemMode.IBGDA) {
            target = (int) (ticket & 63);
            lastWqe = ticket >>> 6;
            s[3] = pe.nicPickup(target, lastWqe);
        } else {
            final int slot = (int) (ticket & (pe.proxyRing().depth - 1));
            s[2] = pe.proxy().pickupNanos[slot];
            target = pe.proxyRing().mem.get(java.lang.foreign.ValueLayout.JAVA_SHORT,
                pe.proxyRing().record(ticket) + 10);
            s[3] = pe.nicPickup(target, pe.proxy().wqeIndex[slot]);
            // the request's last WQE (put-with-signal: the signal's) is the one whose CQE the proxy waits for
            lastWqe = pe.proxy().wqeIndex[slot] + (pe.proxyRing().mem.get(
                java.lang.foreign.ValueLayout.JAVA_BYTE, pe.proxyRing().record(ticket) + 8) == Op.PUT_SIGNAL ? 1 : 0);
        }
        pe.nicSteps(target, lastWqe, s);
        synchronized (this) {
            stamps.add(s);
        }
    }

    private long fetched(final KernelContext k, final long ticket) {
        final long off;
        if (ctx.mode() == ShmemMode.IBGDA) {
            off = pe.gda((int) (ticket & 63)).fetchOffset(ticket >>> 6, heap);
        } else {
            off = Proxy.fetchSlot(ticket);
        }
        return k.view(heap + off, 8).getLongAcquire(0);
    }

    private static void checkProxy(final ProxyRing r) {
        final long e = r.get(ProxyRing.ERROR);
        if (e != 0) {
            throw ProxyRing.error(e);
        }
    }

    private ShmemException remember(final ShmemException e) {
        if (lastError == null) {
            lastError = e;
        }
        return e;
    }

}
