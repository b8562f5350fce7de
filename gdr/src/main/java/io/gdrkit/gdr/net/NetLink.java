/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.net;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.core.Errno;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.time.Duration;

/**
 * A connected NET connection from a sender's GPU buffer to a receiver's, made by {@link NetConnector}. Each
 * {@link #transfer} moves bytes the way the two sides were set up: the NIC reads the sender's GPU memory directly
 * (GDR) or a pinned copy the GPU staged (bounce); one RDMA WRITE_WITH_IMM; the NIC writes the receiver's GPU memory
 * directly, flushed when the policy says so (GDR), or pinned host memory the GPU then copies in (bounce).
 * Not thread-safe: one thread drives a connection, as one NCCL proxy thread does.
 */
public final class NetLink implements AutoCloseable {
    private final int channel;
    private final ConnectorSide send;
    private final ConnectorSide recv;
    private final CompletionQueue sendCq;
    private final CompletionQueue recvCq;
    private final QueuePair sendQp;
    private final QueuePair recvQp;
    private final ConnectorReport sendReport;
    private final ConnectorReport recvReport;
    // reused for every transfer: nothing is allocated per message
    private final SendWorkRequest wr = new SendWorkRequest(1);
    private final RecvWorkRequest recvWr = new RecvWorkRequest(1);
    private final WorkCompletion[] wc = {new WorkCompletion()};
    private int sequence;

    NetLink(final int channel, final ConnectorSide send, final ConnectorSide recv, final CompletionQueue sendCq,
            final CompletionQueue recvCq, final QueuePair sendQp, final QueuePair recvQp) {
        this.channel = channel;
        this.send = send;
        this.recv = recv;
        this.sendCq = sendCq;
        this.recvCq = recvCq;
        this.sendQp = sendQp;
        this.recvQp = recvQp;
        this.sendReport = report(send, recv, true);
        this.recvReport = report(recv, send, false);
        recvQp.postRecv(recvWr.numSge(0));
    }

    private ConnectorReport report(final ConnectorSide me, final ConnectorSide peer, final boolean isSend) {
        final NetEndpoint from = isSend ? me.end : peer.end;
        final NetEndpoint to = isSend ? peer.end : me.end;
        final String line = String.format("Channel %02d/%d : %d[%d] -> %d[%d] [%s] via NET/IB/%d%s", channel, 0,
            from.rank(), from.gpu().ordinal(), to.rank(), to.gpu().ordinal(), isSend ? "send" : "receive",
            me.end.nic().netDev(), me.gdr.connectorSuffix());
        return new ConnectorReport(isSend, me.gdr, me.placement, me.flush, line);
    }

    /** The sender's side: the NIC reads its GPU (GDR) or a host staging copy. */
    public ConnectorReport sendReport() {
        return sendReport;
    }

    /** The receiver's side: the NIC writes its GPU (GDR) or a host staging buffer. */
    public ConnectorReport receiveReport() {
        return recvReport;
    }

    /** The sender's data on its GPU: what {@link #transfer} sends from. */
    public DeviceBuffer senderBuffer() {
        return send.gpuBuffer;
    }

    /** The receiver's data on its GPU: where {@link #transfer} delivers. */
    public DeviceBuffer receiverBuffer() {
        return recv.gpuBuffer;
    }

    /**
     * Moves the first {@code length} bytes of {@link #senderBuffer()} into {@link #receiverBuffer()}; when it
     * returns the receiver's GPU may consume them.
     *
     * @throws IllegalArgumentException when {@code length} is not within 1 and the buffer size
     * @throws VerbsException ETIMEDOUT naming the completion it waited for, or EIO with a completion's status
     */
    public void transfer(final int length, final Duration timeout) {
        if (length <= 0 || length > send.gpuBuffer.size()) {
            throw new IllegalArgumentException("transfer length " + length + " outside 1.."
                + send.gpuBuffer.size());
        }
        if (send.staging != null) {
            // host bounce, send side: the GPU stages the data where the NIC may read it
            send.end.gpu().copyDtoH(send.staging, 0, send.gpuBuffer, 0, length);
        }
        final int imm = ++sequence;
        wr.clear().wrId(imm).opcode(WrOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED).sge(send.mr, 0, length)
            .remote(recv.mr.address(), recv.mr.rkey()).imm(imm);
        sendQp.postSend(wr);
        await(imm, timeout.toNanos());
        if (recv.flusher != null) {
            // GDR receive below compute capability 9.0 (or forced): land the NIC's posted writes first
            recv.flusher.flush(recv.mr);
        }
        if (recv.staging != null) {
            // host bounce, receive side: the GPU copies what the NIC wrote to host memory into its own
            recv.end.gpu().copyHtoD(recv.gpuBuffer, 0, recv.staging, 0, length);
        }
        recvQp.postRecv(recvWr.numSge(0));
    }

    /** Waits for the sender's completion and the receiver's WRITE_WITH_IMM, polling both CQs (either may progress). */
    private void await(final int imm, final long timeoutNs) {
        final long deadline = System.nanoTime() + timeoutNs;
        boolean sent = false;
        boolean received = false;
        while (!sent || !received) {
            if (!sent && sendCq.poll(wc) == 1) {
                check(wc[0], "the sender's RDMA WRITE_WITH_IMM");
                sent = true;
            }
            if (!received && recvCq.poll(wc) == 1) {
                check(wc[0], "the receiver's completion");
                if (wc[0].opcode != WcOpcode.RECV_RDMA_WITH_IMM || wc[0].immData != imm) {
                    throw new VerbsException(Errno.EIO, "channel " + channel + ": expected the WRITE_WITH_IMM of "
                        + "transfer " + imm + ", got " + wc[0]);
                }
                received = true;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new VerbsException(Errno.ETIMEDOUT, "channel " + channel + ", transfer " + imm + ": "
                    + (sent ? "" : "the sender's completion") + (sent || received ? "" : " and ")
                    + (received ? "" : "the receiver's WRITE_WITH_IMM") + " did not arrive within "
                    + timeoutNs / 1_000_000 + " ms");
            }
        }
    }

    private void check(final WorkCompletion c, final String what) {
        if (c.status != WcStatus.SUCCESS) {
            throw new VerbsException(Errno.EIO, "channel " + channel + ": " + what + " completed with "
                + WcStatus.name(c.status) + " (" + c + ")");
        }
    }

    @Override
    public void close() {
        sendQp.close();
        recvQp.close();
        sendCq.close();
        recvCq.close();
        send.close();
        recv.close();
    }
}
