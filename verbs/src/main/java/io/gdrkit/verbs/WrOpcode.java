/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/** Work request opcodes; values equal libibverbs' {@code enum ibv_wr_opcode}. */
public final class WrOpcode {
    public static final int RDMA_WRITE = 0;
    public static final int RDMA_WRITE_WITH_IMM = 1;
    public static final int SEND = 2;
    public static final int SEND_WITH_IMM = 3;
    public static final int RDMA_READ = 4;
    public static final int ATOMIC_CMP_AND_SWP = 5;
    public static final int ATOMIC_FETCH_AND_ADD = 6;
    /** Invalidates the type 2 memory window of {@link SendWorkRequest#invalidateRkey} (no packet). */
    public static final int LOCAL_INV = 7;
    /** Binds a type 2 memory window (no packet); see {@link SendWorkRequest#bindMw}. */
    public static final int BIND_MW = 8;
    /** A SEND whose arrival invalidates the responder's type 2 window {@link SendWorkRequest#invalidateRkey}. */
    public static final int SEND_WITH_INV = 9;
    /** TSO, DRIVER1: libibverbs' values; the software NIC refuses them (EINVAL). */
    public static final int TSO = 10;
    public static final int DRIVER1 = 11;
    /**
     * IBA 1.5 FLUSH (IBV_WR_FLUSH; ibv_wr_flush in libibverbs' extended API): makes earlier writes to
     * {@code [remoteAddr, remoteAddr + flushLength)} (or the whole MR) globally visible or persistent at the
     * responder. No SGE; see {@link SendWorkRequest#flush}.
     */
    public static final int FLUSH = 14;
    /**
     * IBA 1.5 ATOMIC WRITE (IBV_WR_ATOMIC_WRITE; ibv_wr_atomic_write): the 8 bytes of the one 8-byte SGE are placed
     * at the 8-byte aligned {@code remoteAddr} in one piece, never torn.
     */
    public static final int ATOMIC_WRITE = 15;

    private WrOpcode() {
    }

    /** @return true for the opcodes the RC software NIC implements. */
    public static boolean isSupported(final int opcode) {
        return opcode >= RDMA_WRITE && opcode <= SEND_WITH_INV || opcode == FLUSH || opcode == ATOMIC_WRITE;
    }

    public static boolean isAtomic(final int opcode) {
        return opcode == ATOMIC_CMP_AND_SWP || opcode == ATOMIC_FETCH_AND_ADD;
    }

    /**
     * The operations the responder answers with a response (not a plain ACK), which a FENCE waits for and
     * max_rd_atomic limits: READ, the atomics, and IBA 1.5's ATOMIC_WRITE and FLUSH (answered by a zero-length
     * READ response, as rxe does).
     */
    public static boolean isReadOrAtomic(final int opcode) {
        return opcode == RDMA_READ || isAtomic(opcode) || opcode == ATOMIC_WRITE || opcode == FLUSH;
    }

    /** The operations whose results the NIC writes into the local SGEs: READ and the fetching atomics. */
    public static boolean writesLocal(final int opcode) {
        return opcode == RDMA_READ || isAtomic(opcode);
    }

    public static boolean isSend(final int opcode) {
        return opcode == SEND || opcode == SEND_WITH_IMM || opcode == SEND_WITH_INV;
    }

    /** Work requests the NIC executes locally, sending nothing: BIND_MW, LOCAL_INV. */
    public static boolean isLocal(final int opcode) {
        return opcode == BIND_MW || opcode == LOCAL_INV;
    }

    public static boolean isWrite(final int opcode) {
        return opcode == RDMA_WRITE || opcode == RDMA_WRITE_WITH_IMM;
    }

    public static boolean hasImmediate(final int opcode) {
        return opcode == RDMA_WRITE_WITH_IMM || opcode == SEND_WITH_IMM;
    }

    /** The completion opcode a requester reports for this work request opcode. */
    public static int completionOpcode(final int opcode) {
        return switch (opcode) {
            case RDMA_WRITE, RDMA_WRITE_WITH_IMM -> WcOpcode.RDMA_WRITE;
            case SEND, SEND_WITH_IMM, SEND_WITH_INV -> WcOpcode.SEND;
            case BIND_MW -> WcOpcode.BIND_MW;
            case LOCAL_INV -> WcOpcode.LOCAL_INV;
            case RDMA_READ -> WcOpcode.RDMA_READ;
            case ATOMIC_CMP_AND_SWP -> WcOpcode.COMP_SWAP;
            case ATOMIC_FETCH_AND_ADD -> WcOpcode.FETCH_ADD;
            case ATOMIC_WRITE -> WcOpcode.ATOMIC_WRITE;
            case FLUSH -> WcOpcode.FLUSH;
            default -> throw new IllegalArgumentException("unknown work request opcode " + opcode);
        };
    }

    public static String name(final int opcode) {
        return switch (opcode) {
            case RDMA_WRITE -> "RDMA_WRITE";
            case RDMA_WRITE_WITH_IMM -> "RDMA_WRITE_WITH_IMM";
            case SEND -> "SEND";
            case SEND_WITH_IMM -> "SEND_WITH_IMM";
            case RDMA_READ -> "RDMA_READ";
            case ATOMIC_CMP_AND_SWP -> "ATOMIC_CMP_AND_SWP";
            case ATOMIC_FETCH_AND_ADD -> "ATOMIC_FETCH_AND_ADD";
            case LOCAL_INV -> "LOCAL_INV";
            case BIND_MW -> "BIND_MW";
            case SEND_WITH_INV -> "SEND_WITH_INV";
            case TSO -> "TSO";
            case DRIVER1 -> "DRIVER1";
            case FLUSH -> "FLUSH";
            case ATOMIC_WRITE -> "ATOMIC_WRITE";
            default -> "UNKNOWN(" + opcode + ")";
        };
    }
}
