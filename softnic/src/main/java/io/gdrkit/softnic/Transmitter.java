/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.softnic.wire.Packet;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Builds one outgoing packet at a time in place in the link's buffer. A packet to a LID the fabric does not
 * know is built in a scratch buffer and never leaves: it is lost, as on a real network, and retransmission
 * timeouts deal with it. So is every packet while the device's port is down: it leaves the send queue (the
 * requester, responder and UD engine go on as on hardware) and dies at the port.
 */
final class Transmitter {
    private final SoftDevice dev;
    final Packet pkt = new Packet();
    private MemorySegment scratch;
    private boolean routable;

    Transmitter(final SoftDevice dev) {
        this.dev = dev;
    }

    /** Returns false when the link is full (nothing was claimed). */
    boolean claim(final int dlid, final int destQpn, final int opcode, final int payload, final int psn,
                  final boolean ackReq, final boolean solicited) {
        return claim(dlid, destQpn, opcode, payload, psn, ackReq, solicited, false);
    }

    /**
     * As {@link #claim(int, int, int, int, int, boolean, boolean)}; with {@code deferred} the link holds the packet's
     * headers only (its LRH counts the payload), and the payload follows through {@link #deferPayload}.
     */
    boolean claim(final int dlid, final int destQpn, final int opcode, final int payload, final int psn,
                  final boolean ackReq, final boolean solicited, final boolean deferred) {
        final int length = Packet.lengthFor(opcode, payload);
        final int linkLength = deferred ? Packet.lengthFor(opcode, 0) : length;
        final boolean portDown = !dev.portActive;
        if (portDown) {
            dev.portDownTxLost++;
        }
        final long off = portDown ? -2 : dev.port.tryClaim(dlid, destQpn, linkLength);
        if (off == -1) {
            return false;
        }
        if (off == -2) {
            if (scratch == null || scratch.byteSize() < length) {
                scratch = Arena.ofAuto().allocate(Math.max(length, 4096), 8);
            }
            routable = false;
            pkt.init(scratch, 0, length, dlid, dev.port.lid(), opcode, destQpn, psn, ackReq, solicited);
            return true;
        }
        routable = true;
        pkt.init(dev.port.claimBuffer(), off, length, dlid, dev.port.lid(), opcode, destQpn, psn, ackReq, solicited);
        return true;
    }

    /** The next piece of a deferred payload (nothing where the packet goes nowhere). */
    void deferPayload(final MemorySegment memory, final long offset, final int length) {
        if (routable) {
            dev.port.deferPayload(memory, offset, length);
        }
    }

    void commit() {
        if (routable) {
            dev.port.commit();
        }
    }

    void abort() {
        if (routable) {
            dev.port.abort();
        }
    }
}
