/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.core.agent.Agent;
import io.gdrkit.softnic.fabric.SpscRingBuffer;
import io.gdrkit.softnic.wire.BthOpcode;
import io.gdrkit.softnic.wire.Packet;
import java.lang.foreign.MemorySegment;

/**
 * Reads packets from the port and hands each, in place, to the responder (requests) or the completer
 * (responses) of its destination QP (rxe_recv.c). Malformed packets and unknown QPs are dropped and counted.
 */
final class Receiver implements Agent, io.gdrkit.softnic.fabric.FabricPort.DirectSink {
    private final SoftDevice dev;
    private final Packet pkt = new Packet();
    private final int burst;
    private long malformed;
    private long unknownQp;
    private long foreign;

    Receiver(final SoftDevice dev) {
        this.dev = dev;
        this.burst = dev.driver().context().burst();
    }

    @Override
    public String roleName() {
        return "receiver";
    }

    @Override
    public int doWork() {
        final int work = dev.port.doWork(dev.now()) + dev.scan.refresh();
        // a port that is down receives nothing: what reaches it is lost, never queued for later
        return work + dev.port.poll(dev.portActive ? this : lost, burst);
    }

    private final SpscRingBuffer.RecordHandler lost = this::onLost;

    private void onLost(final MemorySegment buffer, final long offset, final int length) {
        dev.portDownRxLost++;
        if (length >= Packet.BASE_LENGTH && pkt.wrap(buffer, offset, length).isWellFormed()) {
            dev.ud.dropped(pkt); // a referenced datagram's send completes now, not after the timeout
        }
    }

    @Override
    public void onRecord(final MemorySegment buffer, final long offset, final int length) {
        if (length < Packet.BASE_LENGTH) {
            malformed++;
            return;
        }
        pkt.wrap(buffer, offset, length);
        if (!pkt.isWellFormed()) {
            malformed++;
            return;
        }
        final SoftQp qp = dev.qp(pkt.destQpn());
        if (qp == null) {
            unknownQp++;
            dev.ud.dropped(pkt);
            return;
        }
        if (!qp.scanned) {
            dev.scan.touch(qp); // a packet for a parked QP: it may owe a response or may send again
        }
        if (!qp.ud && pkt.slid() != qp.dlid) {
            // an RC QP answers only the port it is connected to (IBA 9.6.1.5 address checks; rxe's check_addr): a
            // request or response from any other LID, or for a QP not yet connected (no address vector), never
            // touches memory, PSNs or ACK state. RC headers carry no source QP number; the fabrics already hold
            // every packet's SLID to the link it came on.
            foreign++;
            return;
        }
        if (qp.ud || pkt.is(BthOpcode.UD)) {
            if (qp.ud) {
                dev.ud.onPacket(qp, pkt);
            } else {
                unknownQp++; // a datagram for an RC QP
                dev.ud.dropped(pkt);
            }
        } else if (pkt.is(BthOpcode.REQUEST)) {
            dev.responder.onRequest(qp, pkt);
        } else {
            dev.completer.onResponse(qp, pkt);
        }
    }

    @Override
    public MemorySegment directTarget(final MemorySegment buffer, final long offset, final int length,
                                      final long[] at) {
        if (!dev.portActive || length < Packet.BASE_LENGTH) {
            return null;
        }
        pkt.wrap(buffer, offset, length);
        if (!pkt.isWellFormed() || !pkt.is(BthOpcode.REQUEST) || pkt.is(BthOpcode.UD)) {
            return null;
        }
        final SoftQp qp = dev.qp(pkt.destQpn());
        if (qp == null || qp.ud || pkt.slid() != qp.dlid) {
            return null;
        }
        final SoftMr mr = dev.responder.directTarget(qp, pkt, at);
        return mr == null ? null : mr.segment;
    }

    @Override
    public long directEpoch() {
        return dev.mrs.changes();
    }

    @Override
    public void onPlaced(final MemorySegment buffer, final long offset, final int length) {
        dev.responder.placedDirect = true;
        try {
            onRecord(buffer, offset, length);
        } finally {
            dev.responder.placedDirect = false;
        }
    }

    long malformed() {
        return malformed;
    }

    /** RC packets dropped because they came from another port than the QP's connected peer. */
    long foreign() {
        return foreign;
    }

    long unknownQp() {
        return unknownQp;
    }
}
