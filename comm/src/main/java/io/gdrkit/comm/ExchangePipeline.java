/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.transport.NetTransport;
import io.gdrkit.comm.transport.NetTransportException;
import java.lang.foreign.MemorySegment;

/**
 * A communicator's one data primitive, {@link Communicator#exchange}: send a range to one peer while receiving (or
 * receiving and reducing) a range from another. The eager head goes first over the eager connection
 * ({@link EagerPath}); the rest is cut in chunks ({@link Communicator#chunkFor}), STEPS chunks in flight per channel,
 * chunk i on channel i mod channels; a reduced chunk lands in the channel's staging slot and is reduced from there
 * (on the GPU with one attached); with GDR the flush READ goes before the GPU reads what the NIC wrote. Allocates
 * nothing once its request arrays have grown to the largest exchange; one exchange at a time.
 */
final class ExchangePipeline {
    /**
     * Stores into a registration array without an {@code aastore}, whose speculative check C2 gets wrong for arrays
     * of an interface (see {@link Pending}).
     */
    private static final java.lang.invoke.VarHandle MR_SLOT =
        java.lang.invoke.MethodHandles.arrayElementVarHandle(NetTransport.MrHandle[].class);

    private final int rank;
    private final NetTransport net;
    private final NetTransport.SendComm[][] send;
    private final NetTransport.RecvComm[][] recv;
    private final int channels;
    private final int chunk;
    private final int steps;
    private final int eager;
    private final EagerPath eg;
    private final MemorySegment[] staging;
    /** Per channel, where reduced receives land: the host staging, or with GDR device staging. */
    private final long[] stagingAddr;
    /** Per channel, a one-element array: what irecv takes, made once (see {@link Pending} on array stores). */
    private final NetTransport.MrHandle[][] stagingNicMr;
    private final GpuAttachment gpu;
    private final ParallelReducer hostReducer;
    private DeviceReducer deviceReducer;
    private final Pacer pace;
    private final int spins;
    private final long timeoutNanos;
    // the communicator's counters, shared with its direct rounds
    private final int[] sendSeq;
    private final int[] recvSeq;
    private final long[] sentTo;
    private final long[] receivedFrom;
    /** iflush READs posted and completed on the GDR path (before the reduction or the caller read the data). */
    private long flushes;
    private final long[] fAddr = new long[1];
    private final int[] fSize = new int[1];
    private final NetTransport.MrHandle[] fMh = new NetTransport.MrHandle[1];
    // the exchange's working state, reused
    private Pending[] sReq = new Pending[0];
    private Pending[] rReq = new Pending[0];
    private final int[] sOut;
    private final int[] rOut;
    private final int[] sHead;
    private final int[] rHead;
    private final long[] addr = new long[1];
    private final int[] size = new int[1];
    private final int[] tag = new int[1];
    /** The receive's registration when it lands in place (op null); written only when the buffer changes. */
    private final NetTransport.MrHandle[] dstMh = new NetTransport.MrHandle[1];
    private final int[] got = new int[1];

    ExchangePipeline(final int rank, final NetTransport net, final NetTransport.SendComm[][] send,
                     final NetTransport.RecvComm[][] recv, final int channels, final int chunk, final int steps,
                     final EagerPath eg, final MemorySegment[] staging, final long[] stagingAddr,
                     final NetTransport.MrHandle[][] stagingNicMr, final GpuAttachment gpu,
                     final ParallelReducer hostReducer, final Pacer pace, final long timeoutNanos,
                     final int[] sendSeq, final int[] recvSeq, final long[] sentTo, final long[] receivedFrom) {
        this.rank = rank;
        this.net = net;
        this.send = send;
        this.recv = recv;
        this.channels = channels;
        this.chunk = chunk;
        this.steps = steps;
        this.eager = eg.bytes;
        this.eg = eg;
        this.staging = staging;
        this.stagingAddr = stagingAddr;
        this.stagingNicMr = stagingNicMr;
        this.gpu = gpu;
        this.hostReducer = hostReducer;
        this.pace = pace;
        this.spins = pace.spins;
        this.timeoutNanos = timeoutNanos;
        this.sendSeq = sendSeq;
        this.recvSeq = recvSeq;
        this.sentTo = sentTo;
        this.receivedFrom = receivedFrom;
        this.sOut = new int[channels];
        this.rOut = new int[channels];
        this.sHead = new int[channels];
        this.rHead = new int[channels];
    }

    /** From now on reductions run on this GPU reducer. */
    void deviceReducer(final DeviceReducer dr) {
        deviceReducer = dr;
    }

    /** iflush READs this rank posted and saw complete. */
    long flushes() {
        return flushes;
    }

    void run(final int to, final RegisteredBuffer src, final long srcOff, final long sendBytes, final int from,
                              final RegisteredBuffer dst, final long dstOff, final long recvBytes, final RedOp op,
                              final DataType type, final RegisteredBuffer acc, final long accOff) {
        if (op != null && deviceReducer != null && (acc != dst || accOff != dstOff)) {
            throw new IllegalArgumentException("a GPU reduction reduces into its destination only");
        }
        final int sSeq = to < 0 ? 0 : (sendSeq[to] = (sendSeq[to] + 1) & 0x7fff);
        final int rSeq = from < 0 ? 0 : (recvSeq[from] = (recvSeq[from] + 1) & 0x7fff);
        if (to >= 0) {
            sentTo[to]++;
        }
        if (from >= 0) {
            receivedFrom[from]++;
        }
        final long deadline = System.nanoTime() + timeoutNanos;
        // the eager heads: every exchange with a peer carries one, possibly empty, so both ends count alike
        // with a GPU attached the heads are empty (the bytes live on the device or go GDR): everything goes in chunks
        final int eagerCap = deviceReducer == null ? eager : 0;
        final int sE = eager > 0 && to >= 0 ? (int) Math.min(eagerCap, sendBytes) : 0;
        final int rE = eager > 0 && from >= 0 ? (int) Math.min(eagerCap, recvBytes) : 0;
        boolean eSend = eager > 0 && to >= 0;
        boolean eRecv = eager > 0 && from >= 0;
        final long sK = eSend ? ++eg.sendCount[to] : 0;
        final long rK = eRecv ? ++eg.recvCount[from] : 0;
        final int sSlot = (int) (sK % EagerPath.DEPTH);
        final int rSlot = (int) (rK % EagerPath.DEPTH);
        try {
            if (eSend) {
                if (eg.sendReq[to][sSlot].req != null) {
                    eg.reapSend(to, sSlot, deadline);
                }
                if (sE > 0) {
                    MemorySegment.copy(src.seg(), srcOff, eg.out, eg.slot(to, sK), sE);
                }
            }
        } catch (final NetTransportException e) {
            throw new CollException("rank " + rank + " " + what(to, sendBytes, from, recvBytes) + ": "
                + e.getMessage(), e);
        }
        final int steps = this.steps;
        final int sCk = Communicator.chunkFor(sendBytes - sE, chunk, channels);
        final int rCk = Communicator.chunkFor(recvBytes - rE, chunk, channels);
        final int nS = to < 0 ? 0 : (int) ((sendBytes - sE + sCk - 1) / sCk);
        final int nR = from < 0 ? 0 : (int) ((recvBytes - rE + rCk - 1) / rCk);
        if (sReq.length < nS) {
            sReq = Pending.row(nS);
        }
        if (rReq.length < nR) {
            rReq = Pending.row(nR);
        }
        final Pending[] sReq = this.sReq;
        final Pending[] rReq = this.rReq;
        final int[] sOut = this.sOut;
        final int[] rOut = this.rOut;
        final int[] rHead = this.rHead;
        final int[] sHead = this.sHead;
        for (int c = 0; c < channels; c++) {
            rHead[c] = c;
            sHead[c] = c;
            sOut[c] = 0;
            rOut[c] = 0;
        }
        int nextS = 0;
        int nextR = 0;
        int doneS = 0;
        int doneR = 0;
        final long[] addr = this.addr;
        final int[] size = this.size;
        final int[] tag = this.tag;
        final int[] got = this.got;
        // receive-side GDR only: what is sent comes up from the device first (the send gate said no)
        final boolean sendBounce = to >= 0 && src.sendBounces();
        if (sendBounce && sendBytes > 0) {
            deviceReducer.bounceSend(src, srcOff, sendBytes);
        }
        final long sBase = sendBounce ? src.seg().address() : src.nicBase();
        final NetTransport.MrHandle sMr = sendBounce ? src.hostMr() : src.mr();
        int idle = 0;
        try {
            while (eSend || eRecv || doneS < nS || doneR < nR) {
                boolean progress = false;
                if (eSend) {
                    // first: the peer waits for it, and its receive is normally posted already
                    final NetTransport.Request r = net.isend(send[to][channels], eg.out.address()
                        + eg.slot(to, sK), sE, EagerPath.tag(sK), eg.outMr);
                    if (r != null) {
                        eg.sendReq[to][sSlot].req = r;
                        eSend = false;
                        progress = true;
                    }
                }
                while (nextR < nR && rOut[nextR % channels] < steps) {
                    final int c = nextR % channels;
                    final int j = nextR / channels;
                    final long off = rE + (long) nextR * rCk;
                    final int len = (int) Math.min(rCk, recvBytes - off);
                    final NetTransport.MrHandle[] mh;
                    if (op != null) {
                        addr[0] = stagingAddr[c] + (long) (j % steps) * chunk;
                        mh = stagingNicMr[c];
                    } else {
                        addr[0] = dst.nicBase() + dstOff + off;
                        mh = dstMh;
                        if (mh[0] != dst.mr()) {
                            MR_SLOT.set(mh, 0, dst.mr()); // once per buffer; no aastore (see Pending)
                        }
                    }
                    size[0] = len;
                    tag[0] = (rSeq << 16) | (j & 0xffff);
                    rReq[nextR].req = net.irecv(recv[from][c], 1, addr, size, tag, mh);
                    rOut[c]++;
                    nextR++;
                    progress = true;
                }
                while (nextS < nS && sOut[nextS % channels] < steps) {
                    final int c = nextS % channels;
                    final int j = nextS / channels;
                    final long off = sE + (long) nextS * sCk;
                    final int len = (int) Math.min(sCk, sendBytes - off);
                    final NetTransport.Request r = net.isend(send[to][c], sBase + srcOff + off, len,
                        (sSeq << 16) | (j & 0xffff), sMr);
                    if (r == null) {
                        break; // the receiver has not posted it yet
                    }
                    sReq[nextS].req = r;
                    sOut[c]++;
                    nextS++;
                    progress = true;
                }
                if (eRecv && net.test(eg.recvReq[from][rSlot].req, got)) {
                    eg.recvReq[from][rSlot].req = null;
                    if (got[0] != rE) {
                        throw new CollException("rank " + rank + " " + what(to, sendBytes, from, recvBytes)
                            + ": the eager head brought " + got[0] + " bytes, expected " + rE
                            + " (mismatched sizes or operations across ranks?)");
                    }
                    if (rE > 0) {
                        final long at = eg.slot(from, rK);
                        if (op == null) {
                            MemorySegment.copy(eg.in, at, dst.seg(), dstOff, rE);
                        } else {
                            reduce(dst, dstOff, acc, accOff, eg.in, at, rE, type, op);
                        }
                    }
                    eg.postRecv(from, rK + EagerPath.DEPTH); // the slot is free again
                    eRecv = false;
                    progress = true;
                }
                for (int c = 0; c < channels; c++) {
                    // oldest first per channel: staging slots are reused in order
                    final int i = rHead[c];
                    if (i < nextR && rReq[i].req != null && net.test(rReq[i].req, got)) {
                        final long off = rE + (long) i * rCk;
                        final int len = (int) Math.min(rCk, recvBytes - off);
                        if (got[0] != len) {
                            throw new CollException("rank " + rank + " " + what(to, sendBytes, from, recvBytes)
                                + ": chunk " + i + " brought " + got[0] + " bytes, expected " + len
                                + " (mismatched sizes across ranks?)");
                        }
                        final long at = (long) (i / channels % steps) * chunk;
                        if (dst.direct() && gpu.gdr.flush()) {
                            flush(recv[from][c], op != null ? stagingAddr[c] + at : dst.nicBase() + dstOff + off,
                                len, op != null ? stagingNicMr[c][0] : dst.mr(), deadline);
                        }
                        if (op != null) {
                            if (dst.direct()) {
                                deviceReducer.reduceOnDevice(dst.dev(), dst.devOff() + dstOff + off, gpu.stagingDev[c],
                                    at, len / type.size(), type, op);
                            } else {
                                reduce(dst, dstOff + off, acc, accOff + off, staging[c], at, len, type, op);
                            }
                        }
                        rReq[i].req = null;
                        rOut[c]--;
                        rHead[c] += channels;
                        doneR++;
                        progress = true;
                    }
                    final int k = sHead[c];
                    if (k < nextS && sReq[k].req != null && net.test(sReq[k].req, null)) {
                        sReq[k].req = null;
                        sOut[c]--;
                        sHead[c] += channels;
                        doneS++;
                        progress = true;
                    }
                }
                if (!progress) {
                    if (++idle > spins) {
                        waitCheck(deadline, to, sendBytes, from, recvBytes);
                    }
                    pace.idle(idle);
                } else {
                    idle = 0;
                }
            }
        } catch (final NetTransportException e) {
            throw new CollException("rank " + rank + " " + what(to, sendBytes, from, recvBytes) + ": "
                + e.getMessage(), e);
        }
    }

    /**
     * NCCL's iflush on the GDR path: the 1-byte RDMA READ on the loopback flush QP (posted by the transport only when
     * the flush gate said so), waited for before the GPU reads the chunk the NIC wrote.
     */
    private void flush(final NetTransport.RecvComm rc, final long at, final int len, final NetTransport.MrHandle m,
                       final long deadline) {
        if (len == 0) {
            return;
        }
        fAddr[0] = at;
        fSize[0] = len;
        if (fMh[0] != m) {
            MR_SLOT.set(fMh, 0, m); // no aastore (see Pending)
        }
        final NetTransport.Request f = net.iflush(rc, 1, fAddr, fSize, fMh);
        if (f == null) {
            return;
        }
        int idle = 0;
        while (!net.test(f, null)) {
            if (++idle > spins && pace.due(deadline)) {
                pace.check(deadline, "the flush READ of " + len + " received bytes at 0x" + Long.toHexString(at));
            }
            pace.idle(idle);
        }
        flushes++;
    }

    /**
     * {@code dst[dstOff..] = op(acc[accOff..], from[at..])} over {@code len} bytes, on the GPU when one is attached
     * (then acc is dst: checked on entry to the exchange).
     */
    private void reduce(final RegisteredBuffer dst, final long dstOff, final RegisteredBuffer acc, final long accOff,
                        final MemorySegment from, final long at, final int len, final DataType type, final RedOp op) {
        if (deviceReducer != null) {
            if (dst.dev() == null) {
                throw new IllegalStateException("a reduction into a buffer without a device half while a GPU is "
                    + "attached");
            }
            deviceReducer.reduce(dst, dstOff, from, at, len / type.size(), type, op);
        } else {
            hostReducer.reduce(dst.seg(), dstOff, acc.seg(), accOff, from, at, len / type.size(), type, op);
        }
    }

    private static String what(final int to, final long sendBytes, final int from, final long recvBytes) {
        return "exchange (send " + sendBytes + " B to rank " + to + ", receive " + recvBytes + " B from rank "
            + from + ")";
    }

    private void waitCheck(final long deadline, final int to, final long sendBytes, final int from,
                           final long recvBytes) {
        if (pace.due(deadline)) {
            pace.check(deadline, what(to, sendBytes, from, recvBytes));
        }
    }
}
