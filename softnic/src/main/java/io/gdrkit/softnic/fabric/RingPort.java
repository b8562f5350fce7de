/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.zip.CRC32C;

/**
 * The sending and receiving logic every ring-based port shares: claim in place, the link hook's verdict
 * (deliver, drop, duplicate, delay), an optional link CRC (CRC32C in the record tag, like an ICRC) checked on
 * receipt, and a hold queue for delayed packets. Subclasses say which ring leads to a LID and which rings come in.
 */
abstract class RingPort implements FabricPort {
    private static final int HELD_HEADER = 16;
    private static final ValueLayout.OfInt BIG_U32 =
        ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfShort BIG_U16 =
        ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);

    private final int lid;
    private final boolean crc;
    private final CRC32C crc32c = new CRC32C();
    private SpscRingBuffer claimed;
    private int claimedDlid;
    private long claimedOffset;
    private int claimedLength;
    private long sent;
    private long referencesSent;
    private long dropped;
    private long crcErrors;
    private long now;
    /** Delayed packets: [dlid u32][pad u32][release time u64][packet], in arrival order. Created on first use. */
    private SpscRingBuffer held;
    private final int heldCapacity;
    private SpscRingBuffer.RecordHandler downstream;
    private final SpscRingBuffer.RecordHandler checking = this::onInbound;
    private final SpscRingBuffer.RecordFilter releasing = this::release;

    RingPort(final int lid, final boolean crc, final int heldCapacity) {
        this.lid = lid;
        this.crc = crc;
        this.heldCapacity = heldCapacity;
    }

    /** The ring towards {@code dlid}, or null when that LID is unknown. */
    abstract SpscRingBuffer outbound(int dlid);

    /**
     * The ring towards {@code dlid} for packets to QP {@code destQpn}; a port with one ring per peer ignores
     * the QP.
     */
    SpscRingBuffer outbound(final int dlid, final int destQpn) {
        return outbound(dlid);
    }

    abstract SpscRingBuffer[] inbound();

    /**
     * Whether the inbound rings lie in memory another process can write (shared memory). Then each record is
     * copied out before it is checked and used: checked in place, it could change between the check and the use.
     * And every packet's DLID must be this port and its SLID {@link #inboundSlid} of its ring.
     */
    boolean sharedInbound() {
        return false;
    }

    /** The SLID every packet on inbound ring {@code index} must carry (shared inbound rings only). */
    int inboundSlid(final int index) {
        return -1;
    }

    abstract LinkHook hook();

    /**
     * Whether this fabric's records carry their bytes in the link where no reference travels (TCP, shm), so that a
     * record may carry a span of packets inline ({@link #carriesInlineBatches()}, {@link #acceptsInlineBatches()}).
     * False on the in-JVM fabric, whose spans are references.
     */
    boolean inlineSpans() {
        return false;
    }

    @Override
    public boolean carriesInlineBatches() {
        return inlineSpans() && hook().passesBatches();
    }

    @Override
    public boolean acceptsInlineBatches() {
        return inlineSpans();
    }

    @Override
    public final int lid() {
        return lid;
    }

    @Override
    public long tryClaim(final int dlid, final int length) {
        return tryClaim(dlid, 0, length);
    }

    @Override
    public long tryClaim(final int dlid, final int destQpn, final int length) {
        final SpscRingBuffer ring = outbound(dlid, destQpn);
        if (ring == null) {
            return -2;
        }
        final long offset = ring.tryClaim(length);
        if (offset >= 0) {
            claimed = ring;
            claimedDlid = dlid;
            claimedOffset = offset;
            claimedLength = length;
        }
        return offset;
    }

    @Override
    public MemorySegment claimBuffer() {
        return claimed.buffer();
    }

    @Override
    public void commit() {
        final SpscRingBuffer ring = claimed;
        claimed = null;
        final MemorySegment buf = ring.buffer();
        if (crc) {
            ring.tag(crcOf(buf, claimedOffset, claimedLength));
        }
        if (claimedLength > 12 && (buf.get(ValueLayout.JAVA_BYTE, claimedOffset + 12) & 0x80) != 0) {
            referencesSent++; // BTH's R bit (Packet): the payload is a reference to this process's memory
        }
        final LinkHook hook = hook();
        // the hook sees the packet "on the wire": after the CRC, so corruption is caught by the receiver
        switch (hook.onPacket(lid, claimedDlid, buf, claimedOffset, claimedLength)) {
            case LinkHook.DROP -> {
                ring.abort();
                dropped++;
            }
            case LinkHook.DELAY -> {
                if (hold(claimedDlid, buf, claimedOffset, claimedLength, ring.tagOf(claimedOffset),
                    hook.delayNanos())) {
                    ring.abort();
                } else {
                    ring.commit(); // hold queue full: deliver now rather than lose it
                    sent++;
                }
            }
            case LinkHook.DUPLICATE -> {
                final int tag = ring.tagOf(claimedOffset);
                ring.commit();
                sent++;
                final long copy = ring.tryClaim(claimedLength);
                if (copy >= 0) {
                    MemorySegment.copy(buf, claimedOffset, buf, copy, claimedLength);
                    ring.tag(tag);
                    ring.commit();
                    sent++;
                }
            }
            default -> {
                ring.commit();
                sent++;
            }
        }
    }

    final boolean crc() {
        return crc;
    }

    /** Checks a received packet against the link CRC in {@code tag}; counts and returns false on a mismatch. */
    final boolean crcOk(final MemorySegment buf, final long offset, final int length, final int tag) {
        if (tag != crcOf(buf, offset, length)) {
            crcErrors++;
            return false;
        }
        return true;
    }

    /**
     * CRC32C of a packet. The ByteBuffer view of a ring is made once and re-windowed per packet: slicing a view
     * per packet would allocate on the hot path.
     */
    private int crcOf(final MemorySegment buf, final long offset, final int length) {
        if (buf != crcSegment) {
            crcSegment = buf;
            crcView = buf.asByteBuffer();
        }
        crcView.clear().position((int) offset).limit((int) (offset + length));
        crc32c.reset();
        crc32c.update(crcView);
        return (int) crc32c.getValue();
    }

    private MemorySegment crcSegment;
    private java.nio.ByteBuffer crcView;

    private boolean hold(final int dlid, final MemorySegment buf, final long offset, final int length, final int tag,
                         final long delay) {
        if (held == null) {
            held = new SpscRingBuffer(Arena.ofAuto().allocate(SpscRingBuffer.segmentSize(heldCapacity), 64));
        }
        if (length + HELD_HEADER > held.maxRecordData()) {
            return false;
        }
        final long at = held.tryClaim(length + HELD_HEADER);
        if (at < 0) {
            return false;
        }
        final MemorySegment h = held.buffer();
        h.set(ValueLayout.JAVA_INT, at, dlid);
        h.set(ValueLayout.JAVA_INT, at + 4, tag);
        h.set(ValueLayout.JAVA_LONG, at + 8, now + delay);
        MemorySegment.copy(buf, offset, h, at + HELD_HEADER, length);
        held.commit();
        return true;
    }

    @Override
    public void abort() {
        claimed.abort();
        claimed = null;
    }

    @Override
    public int doWork(final long nowNanos) {
        now = nowNanos;
        return held == null ? 0 : held.readWhile(releasing);
    }

    /** Releases one held packet if its time has come and its link has room; bypasses the hook. */
    private boolean release(final MemorySegment h, final long at, final int length) {
        if (now - h.get(ValueLayout.JAVA_LONG, at + 8) < 0) {
            return false;
        }
        final int dlid = h.get(ValueLayout.JAVA_INT, at);
        final int packetLength = length - HELD_HEADER;
        // BTH dest QP (packet offset 12, 24 bits, big-endian) picks the link, as tryClaim's destQpn did
        final int destQpn = packetLength >= 16
            ? h.get(BIG_U32, at + HELD_HEADER + 12) & 0xFFFFFF : 0;
        final SpscRingBuffer ring = outbound(dlid, destQpn);
        if (ring == null) {
            return true; // the peer is gone: the packet is lost
        }
        final long off = ring.tryClaim(packetLength);
        if (off < 0) {
            return false;
        }
        MemorySegment.copy(h, at + HELD_HEADER, ring.buffer(), off, packetLength);
        ring.tag(h.get(ValueLayout.JAVA_INT, at + 4));
        ring.commit();
        sent++;
        return true;
    }

    @Override
    public int poll(final SpscRingBuffer.RecordHandler handler, final int limit) {
        downstream = handler;
        int n = 0;
        final SpscRingBuffer[] rings = inbound();
        final boolean shared = sharedInbound();
        for (int i = 0; i < rings.length; i++) {
            final SpscRingBuffer ring = rings[i];
            current = ring;
            try {
                if (shared) {
                    currentSlid = inboundSlid(i);
                    n += ring.read(copying, limit);
                } else {
                    n += ring.read(crc ? checking : handler, limit);
                }
            } catch (final RingCorruptException e) {
                // that link is dead from now on (it reads as empty); the others go on
                corruptRings++;
                lastRingError = e.getMessage();
            } catch (final InternalError e) {
                // the JVM reports a SIGBUS in a mapped segment as InternalError: a same-uid process truncated the
                // link's file under this mapping. That link is dead from now on, as a corrupt one; the others go on
                if (e.getMessage() == null || !e.getMessage().contains("unsafe memory access")) {
                    throw e;
                }
                try {
                    ring.refuse("its file was truncated under the mapping (" + e.getMessage() + ")");
                } catch (final RingCorruptException c) {
                    corruptRings++;
                    lastRingError = c.getMessage();
                }
            }
        }
        return n;
    }

    private long corruptRings;
    private volatile String lastRingError = "";

    /** Inbound rings found corrupt (each is ignored from then on). */
    public long corruptRings() {
        return corruptRings;
    }

    /** What the last corrupt ring held ("" if none). */
    public String lastRingError() {
        return lastRingError;
    }

    private SpscRingBuffer current;
    private int currentSlid;
    private long spoofed;
    /** Where a record of a shared inbound ring is copied before its check and use; made on first use. */
    private MemorySegment scratch;
    private final SpscRingBuffer.RecordHandler copying = this::onShared;

    /** Packets of shared inbound rings whose DLID or SLID did not match their ring (each killed that ring). */
    public long spoofedPackets() {
        return spoofed;
    }

    /**
     * A record of a shared ring: copied out once (the length was validated by the ring), then its LRH and CRC
     * are checked on the copy and the copy is handed on. The producer may rewrite the ring at any time; nothing
     * it writes after the copy can reach the check or the handler.
     */
    private void onShared(final MemorySegment buf, final long offset, final int length) {
        if (scratch == null || scratch.byteSize() < length) {
            scratch = Arena.ofAuto().allocate(Math.max(length, current.maxRecordData()), 64);
        }
        final int tag = current.tagOf(offset);
        MemorySegment.copy(buf, offset, scratch, 0, length);
        final int dlid = length < 4 ? -1 : scratch.get(BIG_U16, 0) & 0xFFFF;
        final int slid = length < 4 ? -1 : scratch.get(BIG_U16, 2) & 0xFFFF;
        if (dlid != lid || slid != currentSlid) {
            spoofed++;
            current.refuse("packet of " + length + " bytes in the link from LID " + currentSlid + " claims DLID "
                + (dlid < 0 ? "?" : dlid) + " SLID " + (slid < 0 ? "?" : slid) + " (this port is LID " + lid + ")");
        }
        if (crc && tag != crcOf(scratch, 0, length)) {
            crcErrors++;
            return;
        }
        downstream.onRecord(scratch, 0, length);
    }

    private void onInbound(final MemorySegment buf, final long offset, final int length) {
        if (current.tagOf(offset) != crcOf(buf, offset, length)) {
            crcErrors++;
            return;
        }
        downstream.onRecord(buf, offset, length);
    }

    /** Packets committed whose payload was a reference (single copy), drops and duplicates included. */
    public long referencesSent() {
        return referencesSent;
    }

    @Override
    public long packetsSent() {
        return sent;
    }

    @Override
    public long packetsDropped() {
        return dropped;
    }

    @Override
    public long crcErrors() {
        return crcErrors;
    }
}
