/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

import io.gdrkit.core.agent.Agent;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * The CPU proxy of the IBRC path (one per PE, on its own thread): reads requests from the {@link ProxyRing} in order,
 * posts them as verbs work requests on its QP to the target PE, polls its CQ, and writes per-request completion and
 * the counters back into the ring, where the GPU polls them.
 */
final class Proxy implements Agent {
    private final ProxyRing ring;
    private final QueuePair[] qps;
    private final int[] qpnSorted;
    private final int[] peOfQpn;
    private final CompletionQueue cq;
    private final MemoryRegion heapMr;
    private final MemoryRegion scratchMr;
    private final long[] peerHeap;
    private final int[] peerRkey;
    private final int sqDepth;
    private final int[] outstanding;
    private final long[] postedPerQp;
    /** Per ring slot: the proxy's pick-up stamp and the WQE index of the request's last WQE on its QP. */
    final long[] pickupNanos;
    final long[] wqeIndex;
    private final SendWorkRequest wr1 = new SendWorkRequest(1);
    private final SendWorkRequest wr2 = new SendWorkRequest(1);
    private final WorkCompletion[] wcs = new WorkCompletion[32];
    private long consumed;
    private long completed;
    /**
     * The proxy's part of the PE's host scratch starts here: the first 64 bytes are the host API's own (its signal
     * and fetch words, written by application threads), then one signal word per ring slot, then 16 bytes of an
     * inline put's data. An inline WR's bytes are copied when it is posted, so each word is only needed until then.
     */
    static final long SCRATCH_BASE = 64;

    Proxy(final ProxyRing ring, final QueuePair[] qps, final CompletionQueue cq, final MemoryRegion heapMr,
          final MemoryRegion scratchMr, final long[] peerHeap, final int[] peerRkey, final int sqDepth) {
        this.ring = ring;
        this.qps = qps;
        this.cq = cq;
        this.heapMr = heapMr;
        this.scratchMr = scratchMr;
        this.peerHeap = peerHeap;
        this.peerRkey = peerRkey;
        this.sqDepth = sqDepth;
        this.outstanding = new int[qps.length];
        this.postedPerQp = new long[qps.length];
        this.pickupNanos = new long[ring.depth];
        this.wqeIndex = new long[ring.depth];
        final long[] pairs = new long[qps.length];
        for (int pe = 0; pe < qps.length; pe++) {
            pairs[pe] = ((long) qps[pe].qpNum() << 32) | pe;
        }
        Arrays.sort(pairs);
        qpnSorted = new int[qps.length];
        peOfQpn = new int[qps.length];
        for (int i = 0; i < pairs.length; i++) {
            qpnSorted[i] = (int) (pairs[i] >>> 32);
            peOfQpn[i] = (int) pairs[i];
        }
        for (int i = 0; i < wcs.length; i++) {
            wcs[i] = new WorkCompletion();
        }
    }

    @Override
    public String roleName() {
        return "shmem-proxy";
    }

    @Override
    public int doWork() {
        int work = 0;
        final int n = cq.poll(wcs);
        for (int i = 0; i < n; i++) {
            final WorkCompletion wc = wcs[i];
            final int pe = peOfQpn[Arrays.binarySearch(qpnSorted, wc.qpNum)];
            outstanding[pe]--;
            if (wc.status != WcStatus.SUCCESS && ring.get(ProxyRing.ERROR) == 0) {
                ring.put(ProxyRing.ERROR, (wc.status + 1L) | ((long) pe << 16));
            }
            if ((wc.wrId & 1) != 0) {
                ring.done(wc.wrId >>> 1);
                completed++;
                ring.put(ProxyRing.COMPLETED, completed);
            }
            work++;
        }
        for (int k = 0; k < 16; k++) {
            final long r = ring.record(consumed);
            if (ring.get(r) != consumed + 1) {
                break;
            }
            final long bad = ProxyRing.check(ring.mem, r, qps.length);
            if (bad != 0) {
                refuse(consumed, bad);
            } else if (!post(consumed, r)) {
                break; // its QP's send queue is full: retry after completions
            }
            consumed++;
            ring.put(ProxyRing.CONSUMED, consumed);
            work++;
        }
        return work;
    }

    /**
     * A request the GPU wrote with a field out of range: not posted (an unchecked PE would index past the proxy's
     * arrays); the ring's error word names it (the first error stays), and the request counts as done so that
     * nobody waits for it: every waiter checks the error word.
     */
    private void refuse(final long ticket, final long error) {
        if (ring.get(ProxyRing.ERROR) == 0) {
            ring.put(ProxyRing.ERROR, error);
        }
        ring.done(ticket);
        completed++;
        ring.put(ProxyRing.COMPLETED, completed);
    }

    private boolean post(final long ticket, final long r) {
        final MemorySegment m = ring.mem;
        final int op = m.get(ValueLayout.JAVA_BYTE, r + 8);
        final int sigOp = m.get(ValueLayout.JAVA_BYTE, r + 9);
        final int pe = m.get(ValueLayout.JAVA_SHORT, r + 10);
        final int len = m.get(ValueLayout.JAVA_INT, r + 12);
        final long dst = m.get(ValueLayout.JAVA_LONG, r + 16);
        final long src = m.get(ValueLayout.JAVA_LONG, r + 24);
        final long a = m.get(ValueLayout.JAVA_LONG, r + 32);
        final long b = m.get(ValueLayout.JAVA_LONG, r + 40);
        final long sig = m.get(ValueLayout.JAVA_LONG, r + 48);
        final int wqes = op == Op.PUT_SIGNAL ? 2 : 1;
        if (outstanding[pe] + wqes > sqDepth) {
            return false;
        }
        final int slot = (int) (ticket & (ring.depth - 1));
        pickupNanos[slot] = System.nanoTime();
        final long fetchSlot = fetchSlot(ticket);
        wr1.clear();
        wr1.wrId(ticket << 1 | (wqes == 1 ? 1 : 0)).flags(SendFlags.SIGNALED);
        switch (op) {
            case Op.GET -> wr1.opcode(WrOpcode.RDMA_READ).sge(heapMr, dst, len).remote(peerHeap[pe] + src, peerRkey[pe]);
            case Op.FETCH_ADD -> wr1.opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).sge(heapMr, fetchSlot, 8)
                .remote(peerHeap[pe] + dst, peerRkey[pe]).atomic(a, 0);
            case Op.COMPARE_SWAP -> wr1.opcode(WrOpcode.ATOMIC_CMP_AND_SWP).sge(heapMr, fetchSlot, 8)
                .remote(peerHeap[pe] + dst, peerRkey[pe]).atomic(a, b);
            default -> {
                if (sigOp == ProxyRing.INLINE) {
                    // the data came in the request (the GPU read it): posted inline, so the NIC does not read the
                    // GPU's memory; the scratch words past the signal slots are the proxy's own
                    final long at = SCRATCH_BASE + (long) ring.depth * 8;
                    scratchMr.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, at, a);
                    scratchMr.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, at + 8, b);
                    wr1.opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED | SendFlags.INLINE).sge(scratchMr, at, len);
                } else {
                    wr1.opcode(WrOpcode.RDMA_WRITE).sge(heapMr, src, len);
                }
                wr1.remote(peerHeap[pe] + dst, peerRkey[pe]);
            }
        }
        if (op == Op.PUT_SIGNAL) {
            wr2.clear();
            wr2.wrId(ticket << 1 | 1).flags(SendFlags.SIGNALED);
            if (sigOp == SignalOp.SET.ordinal()) {
                final long at = SCRATCH_BASE + (long) slot * 8;
                scratchMr.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, at, a);
                wr2.opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED | SendFlags.INLINE).sge(scratchMr, at, 8);
            } else {
                wr2.opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).sge(heapMr, fetchSlot, 8).atomic(a, 0);
            }
            wr2.remote(peerHeap[pe] + sig, peerRkey[pe]);
            wr1.next(wr2);
        }
        qps[pe].postSend(wr1);
        outstanding[pe] += wqes;
        postedPerQp[pe] += wqes;
        wqeIndex[slot] = postedPerQp[pe] - wqes; // the data WQE
        return true;
    }

    /** Heap offset of the 8-byte slot where a fetched value of {@code ticket} lands. */
    static long fetchSlot(final long ticket) {
        return (ticket & (ShmemContext.RESERVED / 2 / 8 - 1)) * 8;
    }
}
