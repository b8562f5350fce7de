/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import static io.gdrkit.comm.transport.IbTransport.KIND_MASK;
import static io.gdrkit.comm.transport.IbTransport.KIND_SEND;
import static io.gdrkit.comm.transport.IbTransport.MAX_RECVS;
import static io.gdrkit.comm.transport.IbTransport.SLOT_BYTES;
import static io.gdrkit.comm.transport.NetTransport.MAX_REQUESTS;

import io.gdrkit.comm.transport.NetTransport.SendComm;
import io.gdrkit.comm.transport.NetTransportException.Reason;
import io.gdrkit.gdr.net.NetNic;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WorkCompletion;
import java.lang.foreign.MemorySegment;

/** The sending end: its FIFO (written by the receiver), per-slot matching state and the WR chain. */
final class IbSend extends IbComm implements SendComm {
    final MemorySegment fifo;
    final MemoryRegion fifoMr;
    final MemorySegment sizes;
    final MemoryRegion sizesSrcMr;
    long sizesAddr;
    int sizesRkey;
    int remLid;
    int qpRound;
    /** Per slot: the requests matched so far for entry i (null: not yet). */
    final IbRequest[][] matched = new IbRequest[MAX_REQUESTS][MAX_RECVS];
    final int[] matchedCount = new int[MAX_REQUESTS];
    /** Per slot: the receive count n read at its first match (the peer's later rewrites are not used). */
    final int[] slotN = new int[MAX_REQUESTS];
    final int[] pendingQps = new int[MAX_REQUESTS];
    final SendWorkRequest[] chain = new SendWorkRequest[MAX_RECVS + 2];
    /** Per pending send request: its source address and lkey. */
    final long[] src = new long[MAX_REQUESTS * MAX_RECVS];
    final int[] key = new int[MAX_REQUESTS * MAX_RECVS];

    IbSend(final IbTransport owner, final NetNic nic, final int nqps) {
        super(owner, nic, nqps, MAX_REQUESTS * MAX_RECVS);
        try {
            fifo = arena.allocate((long) MAX_REQUESTS * SLOT_BYTES, 4096);
            fifoMr = nic.pd().registerMr(fifo, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
            sizes = arena.allocate((long) MAX_REQUESTS * MAX_RECVS * 4, 64);
            sizesSrcMr = nic.pd().registerMr(sizes, AccessFlags.LOCAL_WRITE);
        } catch (final VerbsException e) {
            release();
            throw new NetTransportException(Reason.SYSTEM, "registering the CTS FIFO: " + e.getMessage(), e);
        }
        for (int i = 0; i < chain.length; i++) {
            chain[i] = new SendWorkRequest(1);
        }
    }

    @Override
    int remoteLid() {
        return remLid;
    }

    @Override
    void completed(final WorkCompletion wc) {
        if ((wc.wrId & KIND_MASK) != KIND_SEND) {
            return;
        }
        final int slot = (int) (wc.wrId & 0xffff);
        if (--pendingQps[slot] == 0) {
            for (int i = 0; i < MAX_RECVS; i++) {
                final IbRequest r = matched[slot][i];
                if (r != null) {
                    r.done = true;
                    matched[slot][i] = null;
                }
            }
            matchedCount[slot] = 0;
        }
    }

    @Override
    void release() {
        dereg(fifoMr);
        dereg(sizesSrcMr);
        super.release();
    }
}

