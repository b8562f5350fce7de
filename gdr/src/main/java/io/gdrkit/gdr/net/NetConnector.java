/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.net;

import io.gdrkit.gdr.gate.GdrDecision;
import io.gdrkit.gdr.gate.GdrGate;
import io.gdrkit.gdr.gate.GdrSettings;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;

/**
 * Sets up one NET connection the way NCCL's net transport does (netSendSetup / netRecvSetup, then the proxy's
 * connect): each direction decides GDR through the gates on its own (send: the NIC reads the sender's GPU, receive:
 * it writes the receiver's), places its buffers (DEVMEM with GDR, HOSTMEM otherwise), and registers them through
 * the NIC's MR cache by the mechanism the device offers (DMA-BUF fd or peermem pointer).
 *
 * <p>Order: the data QPs are made and connected first, because the host bounce needs them too, so their failure is
 * an error. Then the GDR-only steps: registering GPU memory and, for a receive side that must flush, the flush QP.
 * If one fails, the connector gate turns GDR off for that side only; it bounces through host memory and its
 * evidence names the failed step. NCCL fails the connection instead; gdrkit keeps it and says why.
 */
public final class NetConnector {
    private static final int QP_DEPTH = 16;

    private NetConnector() {
    }

    /**
     * Connects {@code sender} to {@code receiver} on channel {@code channel}.
     *
     * @param bytes the connection's buffer size, a positive multiple of 4096 (DMA-BUF export works on pages)
     * @throws IllegalArgumentException for a bad size or channel
     * @throws io.gdrkit.verbs.VerbsException when the data QPs cannot be made or connected
     */
    public static NetLink connect(final int channel, final NetEndpoint sender, final NetEndpoint receiver,
                                  final long bytes, final GdrSettings settings) {
        if (bytes <= 0 || bytes % 4096 != 0) {
            throw new IllegalArgumentException("connection buffer of " + bytes + " bytes: must be a positive "
                + "multiple of 4096");
        }
        if (channel < 0 || channel > 99) {
            throw new IllegalArgumentException("channel " + channel + " outside 0..99");
        }
        final GdrDecision sendGates = GdrGate.decide(sender.caps(), sender.nic().caps(), sender.distance(), false,
            true, settings);
        final GdrDecision recvGates = GdrGate.decide(receiver.caps(), receiver.nic().caps(), receiver.distance(),
            false, false, settings);
        final CompletionQueue sendCq = sender.nic().context().createCq(QP_DEPTH);
        final CompletionQueue recvCq = receiver.nic().context().createCq(QP_DEPTH);
        QueuePair sendQp = null;
        QueuePair recvQp = null;
        ConnectorSide send = null;
        try {
            sendQp = sender.nic().pd().createQp(new QpInitAttr().cqs(sendCq, sendCq));
            recvQp = receiver.nic().pd().createQp(new QpInitAttr().cqs(recvCq, recvCq));
            final int sendLid = sender.nic().context().queryPort(1).lid();
            final int recvLid = receiver.nic().context().queryPort(1).lid();
            // PSNs differ per channel and direction, so a stray packet of another connection is never in window
            final int sendPsn = 0x100 + channel;
            final int recvPsn = 0x200 + channel;
            QpBringUp.toRts(sendQp, recvQp.qpNum(), recvLid, sendPsn, recvPsn, QpBringUp.rcDefaults());
            QpBringUp.toRts(recvQp, sendQp.qpNum(), sendLid, recvPsn, sendPsn, QpBringUp.rcDefaults());
            send = ConnectorSide.open(sender, true, sendGates, bytes, settings);
            final ConnectorSide recv = ConnectorSide.open(receiver, false, recvGates, bytes, settings);
            return new NetLink(channel, send, recv, sendCq, recvCq, sendQp, recvQp);
        } catch (final RuntimeException e) {
            if (send != null) {
                send.close();
            }
            if (recvQp != null) {
                recvQp.close();
            }
            if (sendQp != null) {
                sendQp.close();
            }
            recvCq.close();
            sendCq.close();
            throw e;
        }
    }
}
