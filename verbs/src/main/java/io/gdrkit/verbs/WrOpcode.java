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
    /** The opcodes below are libibverbs' too; the software NIC refuses them at post time with EINVAL. */
    public static final int LOCAL_INV = 7;
    public static final int BIND_MW = 8;
    public static final int SEND_WITH_INV = 9;
    public static final int TSO = 10;
    public static final int DRIVER1 = 11;
    /** IBA 1.5 FLUSH (IBV_WR_FLUSH, posted with ibv_wr_flush in libibverbs' extended API). */
    public static final int FLUSH = 14;
    /** IBA 1.5 ATOMIC WRITE (IBV_WR_ATOMIC_WRITE). */
    public static final int ATOMIC_WRITE = 15;

    private WrOpcode() {
    }

    /** @return true for the opcodes the RC software NIC implements. */
    public static boolean isSupported(final int opcode) {
        return opcode >= RDMA_WRITE && opcode <= ATOMIC_FETCH_AND_ADD;
    }

    public static boolean isAtomic(final int opcode) {
        return opcode == ATOMIC_CMP_AND_SWP || opcode == ATOMIC_FETCH_AND_ADD;
    }

    /** READ and ATOMIC are the operations a FENCE waits for and max_rd_atomic limits. */
    public static boolean isReadOrAtomic(final int opcode) {
        return opcode == RDMA_READ || isAtomic(opcode);
    }

    public static boolean isSend(final int opcode) {
        return opcode == SEND || opcode == SEND_WITH_IMM;
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
            case SEND, SEND_WITH_IMM -> WcOpcode.SEND;
            case RDMA_READ -> WcOpcode.RDMA_READ;
            case ATOMIC_CMP_AND_SWP -> WcOpcode.COMP_SWAP;
            case ATOMIC_FETCH_AND_ADD -> WcOpcode.FETCH_ADD;
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
