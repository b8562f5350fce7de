/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.gate;

import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.core.Errno;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.Mtu;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * NCCL's flush (net_ib.cc ncclIbIflush): a 1-byte RDMA READ of the receive buffer, on a dedicated QP connected to
 * itself (loopback), completed before the buffer is handed to the GPU. A read on the same path is ordered behind
 * the NIC's earlier posted writes into that memory, so when it completes they have landed.
 */
public final class RdmaReadFlush implements AutoCloseable {
    private static final long TIMEOUT_NS = 10_000_000_000L;
    private final CompletionQueue cq;
    private final QueuePair qp;
    private final MemoryRegion scratchMr;
    private final Arena arena = Arena.ofShared();
    private final SendWorkRequest wr = new SendWorkRequest(1);
    private final WorkCompletion[] wc = {new WorkCompletion()};

    /**
     * Creates and connects the flush QP on {@code pd}'s device.
     *
     * @throws VerbsException when the CQ, QP or scratch MR cannot be made (nothing is left behind)
     */
    public RdmaReadFlush(final VerbsContext ctx, final ProtectionDomain pd) {
        this.cq = ctx.createCq(16);
        QueuePair q = null;
        MemoryRegion m = null;
        try {
            final QpInitAttr init = new QpInitAttr().cqs(cq, cq);
            init.cap.maxSendWr(4).maxRecvWr(1).maxInlineData(0);
            q = pd.createQp(init);
            m = pd.registerMr(arena.allocate(64, 64), AccessFlags.LOCAL_WRITE);
            // Connected to itself: the READ leaves this NIC and comes back to it, on the path the writes took.
            QpBringUp.toRts(q, q.qpNum(), ctx.queryPort(1).lid(), 0, 0, new QpAttr()
                .access(AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_READ).pathMtu(Mtu.MTU_4096).timeout(14)
                .retryCnt(7).rnrRetry(7).minRnrTimer(1).maxRdAtomic(1).maxDestRdAtomic(1));
        } catch (final RuntimeException e) {
            if (m != null) {
                m.deregister();
            }
            if (q != null) {
                q.close();
            }
            cq.close();
            arena.close();
            throw e;
        }
        this.qp = q;
        this.scratchMr = m;
    }

    /**
     * Flushes the NIC's writes into {@code received} (an MR registered with REMOTE_READ on this PD): a 1-byte READ
     * of its first byte, waited for.
     *
     * @throws VerbsException ETIMEDOUT naming what it waited for, or EIO with the completion status
     */
    public void flush(final MemoryRegion received) {
        wr.clear().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED).sge(scratchMr, 0, 1)
            .remote(received.address(), received.rkey());
        qp.postSend(wr);
        final long deadline = System.nanoTime() + TIMEOUT_NS;
        while (cq.poll(wc) == 0) {
            if (System.nanoTime() > deadline) {
                throw new VerbsException(Errno.ETIMEDOUT, "the 1-byte flush READ of MR 0x"
                    + Integer.toHexString(received.rkey()) + " did not complete within 10 s");
            }
            Thread.onSpinWait();
        }
        if (wc[0].status != WcStatus.SUCCESS) {
            throw new VerbsException(Errno.EIO, "flush READ failed: " + WcStatus.name(wc[0].status));
        }
    }

    @Override
    public void close() {
        qp.close();
        scratchMr.deregister();
        cq.close();
        arena.close();
    }
}
