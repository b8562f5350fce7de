/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import static io.gdrkit.comm.transport.IbTransport.KIND_FIFO;
import static io.gdrkit.comm.transport.IbTransport.KIND_FLUSH;
import static io.gdrkit.comm.transport.IbTransport.KIND_MASK;
import static io.gdrkit.comm.transport.IbTransport.KIND_RECV;
import static io.gdrkit.comm.transport.IbTransport.KIND_SEND;
import static io.gdrkit.comm.transport.IbTransport.MAX_RECVS;
import static io.gdrkit.comm.transport.NetTransport.MAX_REQUESTS;

import io.gdrkit.comm.transport.NetTransportException.Reason;
import io.gdrkit.gdr.net.NetNic;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import java.lang.foreign.Arena;

/** What both ends share: QPs, one CQ, the request pool and the first error. */
abstract class IbComm {
    final NetNic nic;
    /** {@link #nic}'s device index: which MR of a registration this comm's work requests name. */
    final int dev;
    final Arena arena = Arena.ofShared();
    final CompletionQueue cq;
    final QueuePair[] qps;
    final int lid;
    final int psn;
    final WorkCompletion[] wcs = new WorkCompletion[16];
    final IbRequest[] pool;
    /** Free requests in [0, pool.length - inFlight), taken from the top. */
    final IbRequest[] freeList;
    int inFlight;
    long head;
    String error;
    Reason errorReason;
    boolean closed;

    IbComm(final IbTransport owner, final NetNic nic, final int nqps, final int poolSize) {
        this.psn = owner.random.nextInt(0x1000000);
        this.nic = nic;
        this.dev = owner.devOf(nic);
        for (int i = 0; i < wcs.length; i++) {
            wcs[i] = new WorkCompletion();
        }
        pool = new IbRequest[poolSize];
        freeList = new IbRequest[poolSize];
        for (int i = 0; i < poolSize; i++) {
            pool[i] = new IbRequest(this, i);
            freeList[i] = pool[i];
        }
        try {
            this.lid = nic.context().queryPort(1).lid();
            this.cq = nic.context().createCq(nqps * (MAX_REQUESTS * (MAX_RECVS + 3) + MAX_REQUESTS) + 64);
            this.qps = new QueuePair[nqps];
            for (int i = 0; i < nqps; i++) {
                final QpInitAttr init = new QpInitAttr().cqs(cq, cq);
                init.cap.maxSendWr(MAX_REQUESTS * (MAX_RECVS + 3)).maxRecvWr(MAX_REQUESTS).maxSendSge(1)
                    .maxRecvSge(1).maxInlineData(0);
                qps[i] = nic.pd().createQp(init);
            }
        } catch (final VerbsException e) {
            release();
            throw new NetTransportException(Reason.SYSTEM, "creating the connection's CQ/QPs on " + nic + ": "
                + e.getMessage(), e);
        }
    }

    IbRequest take(final int kind) {
        if (inFlight >= pool.length) {
            throw new NetTransportException(Reason.INVALID_USAGE, "more than " + pool.length
                + " requests in flight on one comm");
        }
        // a stack of free requests: O(1), where a scan of the pool grew with the requests in flight
        final IbRequest r = freeList[pool.length - 1 - inFlight];
        if (r.used) {
            throw new NetTransportException(Reason.INTERNAL, "request pool accounting");
        }
        r.reset(kind);
        inFlight++;
        return r;
    }

    void free(final IbRequest r) {
        if (!r.used) {
            throw new NetTransportException(Reason.INTERNAL, "request freed twice");
        }
        r.used = false;
        inFlight--;
        freeList[pool.length - 1 - inFlight] = r;
    }

    void fail(final Reason reason, final String why) {
        if (error == null) {
            error = why;
            errorReason = reason;
        }
    }

    void check() {
        if (closed) {
            throw new NetTransportException(Reason.INVALID_USAGE, "comm is closed");
        }
    }

    /** Polls the CQ once and applies what completed. */
    void progress() {
        final int n;
        try {
            n = cq.poll(wcs);
        } catch (final VerbsException e) {
            fail(Reason.SYSTEM, "polling the CQ: " + e.getMessage());
            return;
        }
        for (int i = 0; i < n; i++) {
            final WorkCompletion wc = wcs[i];
            if (wc.status != WcStatus.SUCCESS) {
                fail(Reason.REMOTE, "QP " + wc.qpNum + ": completion " + WcStatus.name(wc.status)
                    + " (vendor error " + wc.vendorErr + ") for a " + kindName(wc.wrId)
                    + " on the connection to LID " + remoteLid());
                continue;
            }
            completed(wc);
        }
    }

    abstract void completed(WorkCompletion wc);

    abstract int remoteLid();

    void release() {
        if (qps != null) {
            for (final QueuePair q : qps) {
                if (q != null) {
                    closeQuietly(q);
                }
            }
        }
        if (cq != null) {
            closeQuietly(cq);
        }
        arena.close();
    }

    static String kindName(final long wrId) {
        final long k = wrId & KIND_MASK;
        return k == KIND_FIFO ? "CTS FIFO write" : k == KIND_SEND ? "data write" : k == KIND_RECV ? "receive"
            : k == KIND_FLUSH ? "flush read" : "work request";
    }

    static void dereg(final MemoryRegion mr) {
        if (mr != null) {
            closeQuietly(mr::deregister);
        }
    }

    static void closeQuietly(final AutoCloseable c) {
        try {
            c.close();
        } catch (final Exception ignored) {
            // releasing after a failure: the first error is what matters
        }
    }

}
