/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.wire;

/** RC transport opcodes of the Base Transport Header (IB spec vol. 1, table 38; RC = 0b000 prefix). */
public final class BthOpcode {
    public static final int SEND_FIRST = 0x00;
    public static final int SEND_MIDDLE = 0x01;
    public static final int SEND_LAST = 0x02;
    public static final int SEND_LAST_WITH_IMM = 0x03;
    public static final int SEND_ONLY = 0x04;
    public static final int SEND_ONLY_WITH_IMM = 0x05;
    public static final int RDMA_WRITE_FIRST = 0x06;
    public static final int RDMA_WRITE_MIDDLE = 0x07;
    public static final int RDMA_WRITE_LAST = 0x08;
    public static final int RDMA_WRITE_LAST_WITH_IMM = 0x09;
    public static final int RDMA_WRITE_ONLY = 0x0A;
    public static final int RDMA_WRITE_ONLY_WITH_IMM = 0x0B;
    public static final int RDMA_READ_REQUEST = 0x0C;
    public static final int RDMA_READ_RESPONSE_FIRST = 0x0D;
    public static final int RDMA_READ_RESPONSE_MIDDLE = 0x0E;
    public static final int RDMA_READ_RESPONSE_LAST = 0x0F;
    public static final int RDMA_READ_RESPONSE_ONLY = 0x10;
    public static final int ACKNOWLEDGE = 0x11;
    public static final int ATOMIC_ACKNOWLEDGE = 0x12;
    public static final int COMPARE_SWAP = 0x13;
    public static final int FETCH_ADD = 0x14;
    public static final int SEND_LAST_WITH_INVALIDATE = 0x16;
    public static final int SEND_ONLY_WITH_INVALIDATE = 0x17;
    /** IBA 1.5 FLUSH: FETH + RETH, answered by a zero-length READ response. */
    public static final int FLUSH = 0x1C;
    /** IBA 1.5 ATOMIC WRITE: RETH + 8 bytes of payload, answered by a zero-length READ response. */
    public static final int ATOMIC_WRITE = 0x1D;
    /** UD (prefix 0b011): SEND only, with DETH (Q_Key, source QP). */
    public static final int UD_SEND_ONLY = 0x64;
    public static final int UD_SEND_ONLY_WITH_IMM = 0x65;

    // per-opcode header mask
    public static final int RETH = 1;
    public static final int IMM = 1 << 1;
    public static final int AETH = 1 << 2;
    public static final int ATOMIC_ETH = 1 << 3;
    public static final int ATOMIC_ACK_ETH = 1 << 4;
    public static final int PAYLOAD = 1 << 5;
    public static final int REQUEST = 1 << 6;
    public static final int FIRST = 1 << 7;
    public static final int LAST = 1 << 8;
    public static final int SEND = 1 << 9;
    public static final int WRITE = 1 << 10;
    public static final int READ = 1 << 11;
    public static final int ATOMIC = 1 << 12;
    /** Consumes a receive WQE when it completes the message. */
    public static final int CONSUMES_RECV = 1 << 13;
    /** Flush extended transport header (4 bytes, before the RETH): placement type and selectivity. */
    public static final int FETH = 1 << 14;
    public static final int FLUSH_OP = 1 << 15;
    public static final int ATOMIC_WRITE_OP = 1 << 16;
    /** Datagram extended transport header (8 bytes): Q_Key, source QP. */
    public static final int DETH = 1 << 17;
    /** An unreliable datagram: no PSN checks, no acknowledgement. */
    public static final int UD = 1 << 18;
    /** Invalidate extended transport header (4 bytes): the rkey a SEND_WITH_INV invalidates. */
    public static final int IETH = 1 << 19;

    private static final int[] MASK = new int[0x66];

    static {
        MASK[SEND_FIRST] = REQUEST | SEND | PAYLOAD | FIRST;
        MASK[SEND_MIDDLE] = REQUEST | SEND | PAYLOAD;
        MASK[SEND_LAST] = REQUEST | SEND | PAYLOAD | LAST | CONSUMES_RECV;
        MASK[SEND_LAST_WITH_IMM] = REQUEST | SEND | PAYLOAD | LAST | IMM | CONSUMES_RECV;
        MASK[SEND_ONLY] = REQUEST | SEND | PAYLOAD | FIRST | LAST | CONSUMES_RECV;
        MASK[SEND_ONLY_WITH_IMM] = REQUEST | SEND | PAYLOAD | FIRST | LAST | IMM | CONSUMES_RECV;
        MASK[RDMA_WRITE_FIRST] = REQUEST | WRITE | PAYLOAD | FIRST | RETH;
        MASK[RDMA_WRITE_MIDDLE] = REQUEST | WRITE | PAYLOAD;
        MASK[RDMA_WRITE_LAST] = REQUEST | WRITE | PAYLOAD | LAST;
        MASK[RDMA_WRITE_LAST_WITH_IMM] = REQUEST | WRITE | PAYLOAD | LAST | IMM | CONSUMES_RECV;
        MASK[RDMA_WRITE_ONLY] = REQUEST | WRITE | PAYLOAD | FIRST | LAST | RETH;
        MASK[RDMA_WRITE_ONLY_WITH_IMM] = REQUEST | WRITE | PAYLOAD | FIRST | LAST | RETH | IMM | CONSUMES_RECV;
        MASK[RDMA_READ_REQUEST] = REQUEST | READ | FIRST | LAST | RETH;
        MASK[RDMA_READ_RESPONSE_FIRST] = READ | PAYLOAD | FIRST | AETH;
        MASK[RDMA_READ_RESPONSE_MIDDLE] = READ | PAYLOAD;
        MASK[RDMA_READ_RESPONSE_LAST] = READ | PAYLOAD | LAST | AETH;
        MASK[RDMA_READ_RESPONSE_ONLY] = READ | PAYLOAD | FIRST | LAST | AETH;
        MASK[ACKNOWLEDGE] = AETH | FIRST | LAST;
        MASK[ATOMIC_ACKNOWLEDGE] = AETH | ATOMIC_ACK_ETH | ATOMIC | FIRST | LAST;
        MASK[COMPARE_SWAP] = REQUEST | ATOMIC | ATOMIC_ETH | FIRST | LAST;
        MASK[FETCH_ADD] = REQUEST | ATOMIC | ATOMIC_ETH | FIRST | LAST;
        MASK[SEND_LAST_WITH_INVALIDATE] = REQUEST | SEND | PAYLOAD | LAST | IETH | CONSUMES_RECV;
        MASK[SEND_ONLY_WITH_INVALIDATE] = REQUEST | SEND | PAYLOAD | FIRST | LAST | IETH | CONSUMES_RECV;
        MASK[FLUSH] = REQUEST | FLUSH_OP | FETH | RETH | FIRST | LAST;
        MASK[ATOMIC_WRITE] = REQUEST | ATOMIC_WRITE_OP | RETH | PAYLOAD | FIRST | LAST;
        MASK[UD_SEND_ONLY] = UD | DETH | SEND | PAYLOAD | FIRST | LAST | CONSUMES_RECV;
        MASK[UD_SEND_ONLY_WITH_IMM] = UD | DETH | SEND | PAYLOAD | FIRST | LAST | IMM | CONSUMES_RECV;
    }

    private BthOpcode() {
    }

    public static boolean isValid(final int opcode) {
        return opcode >= 0 && opcode < MASK.length;
    }

    public static int mask(final int opcode) {
        return MASK[opcode];
    }

    public static boolean has(final int opcode, final int bits) {
        return (MASK[opcode] & bits) == bits;
    }

    /** Bytes of extended headers between the BTH and the payload. */
    public static int extHeaderLength(final int opcode) {
        return EXT_LENGTH[opcode]; // a table: asked several times per packet (profiled at ~7 % of a 1 MiB WRITE)
    }

    /** {@link #extHeaderLength} per opcode, from {@link #MASK}. */
    private static final int[] EXT_LENGTH = new int[MASK.length];

    static {
        for (int op = 0; op < MASK.length; op++) {
            final int m = MASK[op];
            int len = 0;
            if ((m & FETH) != 0) len += Packet.FETH_LENGTH;
            if ((m & RETH) != 0) len += Packet.RETH_LENGTH;
            if ((m & DETH) != 0) len += Packet.DETH_LENGTH;
            if ((m & AETH) != 0) len += Packet.AETH_LENGTH;
            if ((m & IMM) != 0) len += Packet.IMM_LENGTH;
            if ((m & IETH) != 0) len += Packet.IETH_LENGTH;
            if ((m & ATOMIC_ETH) != 0) len += Packet.ATOMIC_ETH_LENGTH;
            if ((m & ATOMIC_ACK_ETH) != 0) len += Packet.ATOMIC_ACK_ETH_LENGTH;
            EXT_LENGTH[op] = len;
        }
    }

    /** The SEND_WITH_INV opcode for one packet of a message: FIRST and MIDDLE are plain SEND packets. */
    public static int sendWithInvalidate(final boolean first, final boolean last) {
        if (first && last) return SEND_ONLY_WITH_INVALIDATE;
        if (last) return SEND_LAST_WITH_INVALIDATE;
        return first ? SEND_FIRST : SEND_MIDDLE;
    }

    /** SEND or WRITE opcode for one packet of a message: position is FIRST, MIDDLE, LAST or ONLY. */
    public static int forPosition(final boolean send, final boolean first, final boolean last, final boolean imm) {
        final int base = send ? SEND_FIRST : RDMA_WRITE_FIRST;
        if (first && last) return base + (imm ? 5 : 4);
        if (first) return base;
        if (last) return base + (imm ? 3 : 2);
        return base + 1;
    }

    public static String name(final int op) {
        return switch (op) {
            case SEND_FIRST -> "SEND_FIRST";
            case SEND_MIDDLE -> "SEND_MIDDLE";
            case SEND_LAST -> "SEND_LAST";
            case SEND_LAST_WITH_IMM -> "SEND_LAST_WITH_IMM";
            case SEND_ONLY -> "SEND_ONLY";
            case SEND_ONLY_WITH_IMM -> "SEND_ONLY_WITH_IMM";
            case RDMA_WRITE_FIRST -> "RDMA_WRITE_FIRST";
            case RDMA_WRITE_MIDDLE -> "RDMA_WRITE_MIDDLE";
            case RDMA_WRITE_LAST -> "RDMA_WRITE_LAST";
            case RDMA_WRITE_LAST_WITH_IMM -> "RDMA_WRITE_LAST_WITH_IMM";
            case RDMA_WRITE_ONLY -> "RDMA_WRITE_ONLY";
            case RDMA_WRITE_ONLY_WITH_IMM -> "RDMA_WRITE_ONLY_WITH_IMM";
            case RDMA_READ_REQUEST -> "RDMA_READ_REQUEST";
            case RDMA_READ_RESPONSE_FIRST -> "RDMA_READ_RESPONSE_FIRST";
            case RDMA_READ_RESPONSE_MIDDLE -> "RDMA_READ_RESPONSE_MIDDLE";
            case RDMA_READ_RESPONSE_LAST -> "RDMA_READ_RESPONSE_LAST";
            case RDMA_READ_RESPONSE_ONLY -> "RDMA_READ_RESPONSE_ONLY";
            case ACKNOWLEDGE -> "ACKNOWLEDGE";
            case ATOMIC_ACKNOWLEDGE -> "ATOMIC_ACKNOWLEDGE";
            case COMPARE_SWAP -> "COMPARE_SWAP";
            case FETCH_ADD -> "FETCH_ADD";
            case FLUSH -> "FLUSH";
            case ATOMIC_WRITE -> "ATOMIC_WRITE";
            case SEND_LAST_WITH_INVALIDATE -> "SEND_LAST_WITH_INVALIDATE";
            case SEND_ONLY_WITH_INVALIDATE -> "SEND_ONLY_WITH_INVALIDATE";
            case UD_SEND_ONLY -> "UD_SEND_ONLY";
            case UD_SEND_ONLY_WITH_IMM -> "UD_SEND_ONLY_WITH_IMM";
            default -> "UNKNOWN(0x" + Integer.toHexString(op) + ")";
        };
    }
}
