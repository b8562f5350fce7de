/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.wire;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Flyweight over one packet in a link's buffer. Fields are big-endian (network order) as on the wire.
 *
 * <pre>
 * LRH-lite, gdrkit's link header (8 bytes):
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-------------------------------+-------------------------------+
 *  |          DLID (16)            |           SLID (16)           |  0
 *  +-------------------------------+-------------------------------+
 *  |                  packet length, LRH included (32)             |  4
 *  +-------------------------------+-------------------------------+
 * BTH (12 bytes):
 *  +---------------+-+-+---+-------+-------------------------------+
 *  |    OpCode     |S|M|Pad| TVer  |             P_Key             |  8
 *  +-+-------------+---------------+-------------------------------+
 *  |R|  reserved   |             Destination QP (24)               | 12
 *  +-+-------------+-----------------------------------------------+
 *  |A|  reserved   |                    PSN (24)                   | 16
 *  +-+-------------+-----------------------------------------------+
 * then, as the opcode requires, in this order:
 *  FETH (4):          reserved (26) | selectivity (2) | placement type (4)   (FLUSH, IBA 1.5)
 *  RETH (16):         VA (64) | R_Key (32) | DMA length (32)
 *  DETH (8):          Q_Key (32) | reserved (8) | source QP (24)               (UD)
 *  AETH (4):          syndrome (8) | MSN (24)
 *  ImmDt (4):         immediate data (32)
 *  IETH (4):          the R_Key to invalidate (32)                              (SEND_WITH_INV; no ImmDt then)
 *  AtomicETH (28):    VA (64) | R_Key (32) | swap or add data (64) | compare data (64)
 *  AtomicAckETH (8):  original remote data (64)
 *  payload, or with R set its reference (RefETH below)
 *
 * R (gdrkit, in-JVM fabric only): the payload is not in the packet but referenced in the sender's registered
 * host memory. The receiver copies it from there straight into its own memory (the single-copy path). A
 * reference is valid while its WR is outstanding: RC forbids the requester to touch the source before the
 * completion, a retransmission carries a fresh reference, and the responder reads the source only for the
 * next expected PSN (duplicates are discarded by PSN first). RefETH replaces the payload:
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------------------------------------------------------+
 *  |                 payload length in bytes (32)                  |  +0
 *  +-------------------------------+-------------------------------+
 *  |       segment count (16)      |   extra packets (16), RC      |  +4
 *  +-------------------------------+-------------------------------+
 *  |                                                               |  +8
 *  +            token (64): the sender's claim ticket (UD)         +
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                                                               |  +16, then every 16 bytes, count times:
 *  +                  VA in the sender's MR (64)                   +
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                  L_Key of the sender's MR (32)                |
 *  +---------------------------------------------------------------+
 *  |                     bytes at that VA (32)                     |
 *  +---------------------------------------------------------------+
 * payloadLength() is the referenced length; the segments' lengths add up to it, in payload order. The token is 0
 * on RC (the PSN already names the bytes); a UD datagram, which nothing acknowledges, carries the ticket the
 * receiver must claim in the sending QP before it may read the source (see {@code UdEngine}).
 *
 * Extra packets (gdrkit, segment offload, as a NIC's TSO/LRO): 0 for one packet. k - 1 &gt; 0 makes the record
 * stand for k consecutive MTU-sized packets of one SEND or WRITE, PSNs [PSN, PSN + k), all MTU bytes but a LAST
 * one. The headers are those of one packet whose position bits say whether the span starts the message (FIRST:
 * RETH for a WRITE) and ends it (LAST: ImmDt/IETH); every packet in between is a MIDDLE. On the wire it is k
 * packets: a lost record is k lost packets, a record whose first packets were received before is accepted from
 * the expected PSN on, and the responder acknowledges the span's last PSN when AckReq is set.
 * </pre>
 */
public final class Packet {
    public static final int LRH_LENGTH = 8;
    public static final int BTH_LENGTH = 12;
    public static final int BASE_LENGTH = LRH_LENGTH + BTH_LENGTH;
    public static final int FETH_LENGTH = 4;
    public static final int RETH_LENGTH = 16;
    public static final int DETH_LENGTH = 8;
    public static final int IETH_LENGTH = 4;
    public static final int AETH_LENGTH = 4;
    public static final int IMM_LENGTH = 4;
    public static final int ATOMIC_ETH_LENGTH = 28;
    public static final int ATOMIC_ACK_ETH_LENGTH = 8;
    /** RefETH's fixed part: payload length, segment count and token. */
    public static final int REF_HEADER_LENGTH = 16;
    /** One referenced segment: VA, L_Key, length. */
    public static final int REF_ENTRY_LENGTH = 16;
    /** Most packets one segment-offload record stands for. */
    public static final int MAX_PACKETS = 1 << 16;
    /** Largest header stack: LRH + BTH + RETH + ImmDt. */
    public static final int MAX_HEADER_LENGTH = BASE_LENGTH + ATOMIC_ETH_LENGTH;

    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private static final int SE_BIT = 0x80;
    private static final int ACKREQ_BIT = 0x80000000;
    private static final int REF_BIT = 0x80;

    private MemorySegment buf;
    private long base;
    private int length;
    private int opcode;
    private int mask;
    private boolean ref;

    /** Wraps an existing packet of {@code length} bytes. */
    public Packet wrap(final MemorySegment buffer, final long offset, final int length) {
        this.buf = buffer;
        this.base = offset;
        this.length = length;
        this.opcode = buffer.get(ValueLayout.JAVA_BYTE, offset + LRH_LENGTH) & 0xFF;
        this.mask = BthOpcode.isValid(opcode) ? BthOpcode.mask(opcode) : 0;
        this.ref = (buffer.get(ValueLayout.JAVA_BYTE, offset + 12) & REF_BIT) != 0;
        return this;
    }

    /** Wraps space for a new packet and writes its LRH and BTH. */
    public Packet init(final MemorySegment buffer, final long offset, final int length, final int dlid,
                       final int slid, final int opcode, final int destQpn, final int psn, final boolean ackReq,
                       final boolean solicited) {
        this.buf = buffer;
        this.base = offset;
        this.length = length;
        this.opcode = opcode;
        this.mask = BthOpcode.mask(opcode);
        this.ref = false;
        buffer.set(U16, offset, (short) dlid);
        buffer.set(U16, offset + 2, (short) slid);
        buffer.set(U32, offset + 4, length);
        buffer.set(U32, offset + 8, (opcode << 24) | (solicited ? SE_BIT << 16 : 0) | 0xFFFF);
        buffer.set(U32, offset + 12, destQpn & 0xFFFFFF);
        buffer.set(U32, offset + 16, (ackReq ? ACKREQ_BIT : 0) | (psn & Psn.MASK));
        return this;
    }

    /** Total bytes for a packet of {@code opcode} carrying {@code payload} bytes. */
    public static int lengthFor(final int opcode, final int payload) {
        return BASE_LENGTH + BthOpcode.extHeaderLength(opcode) + payload;
    }

    /** Bytes after the extension headers of a packet whose payload is a reference of {@code segments} segments. */
    public static int referenceLength(final int segments) {
        return REF_HEADER_LENGTH + segments * REF_ENTRY_LENGTH;
    }

    /**
     * Turns the packet just {@link #init initialised} (its length from {@link #referenceLength}) into one whose
     * payload of {@code payload} bytes is referenced by {@code segments} entries, written by {@link #refEntry}.
     */
    public Packet reference(final int payload, final int segments) {
        return reference(payload, segments, 1);
    }

    /**
     * {@link #reference(int, int)} for a record standing for {@code packets} consecutive packets of one message
     * (segment offload, 1 to {@link #MAX_PACKETS}); RC requests only.
     */
    public Packet reference(final int payload, final int segments, final int packets) {
        ref = true;
        buf.set(ValueLayout.JAVA_BYTE, base + 12, (byte) REF_BIT);
        final long at = refOffset();
        buf.set(U32, at, payload);
        buf.set(U32, at + 4, segments << 16 | (packets - 1) & 0xFFFF);
        buf.set(U64, at + 8, 0L);
        return this;
    }

    /** How many packets the record stands for: 1, or a segment-offload span's k. */
    public int packets() {
        return ref ? 1 + (buf.get(U32, refOffset() + 4) & 0xFFFF) : 1;
    }

    /** Sets the RefETH token of a reference packet (UD: the sender's claim ticket). */
    public Packet refToken(final long token) {
        buf.set(U64, refOffset() + 8, token);
        return this;
    }

    /** The RefETH token (0 on RC). */
    public long refToken() {
        return buf.get(U64, refOffset() + 8);
    }

    /** Writes referenced segment {@code i}. */
    public Packet refEntry(final int i, final long va, final int lkey, final int length) {
        final long at = refOffset() + REF_HEADER_LENGTH + (long) i * REF_ENTRY_LENGTH;
        buf.set(U64, at, va);
        buf.set(U32, at + 8, lkey);
        buf.set(U32, at + 12, length);
        return this;
    }

    /** Whether the payload is a reference to the sender's memory (R bit). */
    public boolean isReference() {
        return ref;
    }

    public int refCount() {
        return (buf.get(U32, refOffset() + 4) >>> 16) & 0xFFFF;
    }

    public long refVa(final int i) {
        return buf.get(U64, refOffset() + REF_HEADER_LENGTH + (long) i * REF_ENTRY_LENGTH);
    }

    public int refLkey(final int i) {
        return buf.get(U32, refOffset() + REF_HEADER_LENGTH + (long) i * REF_ENTRY_LENGTH + 8);
    }

    public int refLength(final int i) {
        return buf.get(U32, refOffset() + REF_HEADER_LENGTH + (long) i * REF_ENTRY_LENGTH + 12);
    }

    private long refOffset() {
        return base + BASE_LENGTH + BthOpcode.extHeaderLength(opcode);
    }

    public MemorySegment buffer() {
        return buf;
    }

    public long offset() {
        return base;
    }

    public int length() {
        return length;
    }

    public boolean isWellFormed() {
        if (mask == 0 || length < BASE_LENGTH + BthOpcode.extHeaderLength(opcode) || declaredLength() != length) {
            return false;
        }
        if (!ref) {
            return true;
        }
        // a reference: only on requests (RC) or datagrams (UD) with a payload; the segments fill the packet and
        // add up to the length
        if ((mask & BthOpcode.PAYLOAD) == 0 || (mask & (BthOpcode.REQUEST | BthOpcode.UD)) == 0
            || length - (refOffset() - base) < REF_HEADER_LENGTH) {
            return false;
        }
        final int n = refCount();
        if (length - (refOffset() - base) != referenceLength(n)) {
            return false;
        }
        // a span of several packets: only RC SEND/WRITE requests are cut into packets
        if (packets() > 1 && ((mask & (BthOpcode.SEND | BthOpcode.WRITE)) == 0 || (mask & BthOpcode.UD) != 0)) {
            return false;
        }
        long sum = 0;
        for (int i = 0; i < n; i++) {
            final int l = refLength(i);
            if (l <= 0) {
                return false;
            }
            sum += l;
        }
        return sum == Integer.toUnsignedLong(buf.get(U32, refOffset()));
    }

    public int dlid() {
        return buf.get(U16, base) & 0xFFFF;
    }

    public int slid() {
        return buf.get(U16, base + 2) & 0xFFFF;
    }

    public int declaredLength() {
        return buf.get(U32, base + 4);
    }

    public int opcode() {
        return opcode;
    }

    public int mask() {
        return mask;
    }

    public boolean is(final int bits) {
        return (mask & bits) == bits;
    }

    public boolean solicited() {
        return (buf.get(ValueLayout.JAVA_BYTE, base + 9) & SE_BIT) != 0;
    }

    public int destQpn() {
        return buf.get(U32, base + 12) & 0xFFFFFF;
    }

    public int psn() {
        return buf.get(U32, base + 16) & Psn.MASK;
    }

    public boolean ackReq() {
        return (buf.get(U32, base + 16) & ACKREQ_BIT) != 0;
    }

    private long rethOffset() {
        return base + BASE_LENGTH + ((mask & BthOpcode.FETH) != 0 ? FETH_LENGTH : 0);
    }

    // FETH (FLUSH)
    public Packet feth(final int placementType, final int selectivity) {
        buf.set(U32, base + BASE_LENGTH, (selectivity & 0x3) << 4 | (placementType & 0xF));
        return this;
    }

    public int fethPlacementType() {
        return buf.get(U32, base + BASE_LENGTH) & 0xF;
    }

    public int fethSelectivity() {
        return buf.get(U32, base + BASE_LENGTH) >>> 4 & 0x3;
    }

    private long aethOffset() {
        return base + BASE_LENGTH;
    }

    private long immOffset() {
        return base + BASE_LENGTH + ((mask & BthOpcode.RETH) != 0 ? RETH_LENGTH : 0)
            + ((mask & BthOpcode.DETH) != 0 ? DETH_LENGTH : 0);
    }

    // IETH (SEND_WITH_INV): right after the BTH (sends carry no RETH, and no ImmDt with it)
    public int iethRkey() {
        return buf.get(U32, base + BASE_LENGTH);
    }

    public Packet ieth(final int rkey) {
        buf.set(U32, base + BASE_LENGTH, rkey);
        return this;
    }

    // DETH (UD): right after the BTH
    public Packet deth(final int qkey, final int srcQp) {
        buf.set(U32, base + BASE_LENGTH, qkey);
        buf.set(U32, base + BASE_LENGTH + 4, srcQp & 0xFFFFFF);
        return this;
    }

    public int dethQkey() {
        return buf.get(U32, base + BASE_LENGTH);
    }

    public int dethSrcQp() {
        return buf.get(U32, base + BASE_LENGTH + 4) & 0xFFFFFF;
    }

    private long atomicEthOffset() {
        return base + BASE_LENGTH;
    }

    private long atomicAckEthOffset() {
        return base + BASE_LENGTH + AETH_LENGTH;
    }

    public long payloadOffset() {
        return base + BASE_LENGTH + BthOpcode.extHeaderLength(opcode);
    }

    /** Payload bytes: carried, or with {@link #isReference()} referenced. */
    public int payloadLength() {
        return ref ? buf.get(U32, refOffset()) : (int) (base + length - payloadOffset());
    }

    // RETH
    public long rethVa() {
        return buf.get(U64, rethOffset());
    }

    public int rethRkey() {
        return buf.get(U32, rethOffset() + 8);
    }

    public int rethDmaLength() {
        return buf.get(U32, rethOffset() + 12);
    }

    public Packet reth(final long va, final int rkey, final int dmaLength) {
        buf.set(U64, rethOffset(), va);
        buf.set(U32, rethOffset() + 8, rkey);
        buf.set(U32, rethOffset() + 12, dmaLength);
        return this;
    }

    // AETH
    public int aethSyndrome() {
        return buf.get(U32, aethOffset()) >>> 24;
    }

    public int aethMsn() {
        return buf.get(U32, aethOffset()) & 0xFFFFFF;
    }

    public Packet aeth(final int syndrome, final int msn) {
        buf.set(U32, aethOffset(), (syndrome << 24) | (msn & 0xFFFFFF));
        return this;
    }

    // ImmDt
    public int imm() {
        return buf.get(U32, immOffset());
    }

    public Packet imm(final int imm) {
        buf.set(U32, immOffset(), imm);
        return this;
    }

    // AtomicETH
    public long atomicVa() {
        return buf.get(U64, atomicEthOffset());
    }

    public int atomicRkey() {
        return buf.get(U32, atomicEthOffset() + 8);
    }

    public long atomicSwapAdd() {
        return buf.get(U64, atomicEthOffset() + 12);
    }

    public long atomicCompare() {
        return buf.get(U64, atomicEthOffset() + 20);
    }

    public Packet atomicEth(final long va, final int rkey, final long swapAdd, final long compare) {
        buf.set(U64, atomicEthOffset(), va);
        buf.set(U32, atomicEthOffset() + 8, rkey);
        buf.set(U64, atomicEthOffset() + 12, swapAdd);
        buf.set(U64, atomicEthOffset() + 20, compare);
        return this;
    }

    // AtomicAckETH
    public long atomicOrig() {
        return buf.get(U64, atomicAckEthOffset());
    }

    public Packet atomicOrig(final long orig) {
        buf.set(U64, atomicAckEthOffset(), orig);
        return this;
    }

    @Override
    public String toString() {
        return BthOpcode.name(opcode) + " qpn=" + destQpn() + " psn=" + psn() + (ackReq() ? " A" : "")
            + (ref ? " R" : "") + (packets() > 1 ? " x" + packets() : "") + " len=" + length;
    }
}
