package io.gdrkit.shmem;

/** The comparison operators of wait_until (NVSHMEM_CMP_*), on signed 64-bit words. */
public enum Cmp {
    EQ, NE, GT, GE, LT, LE;

    /** True when {@code value OP operand}. */
    public boolean test(final long value, final long operand) {
        return switch (this) {
            case EQ -> value == operand;
            case NE -> value != operand;
            case GT -> value > operand;
            case GE -> value >= operand;
            case LT -> value < operand;
            case LE -> value <= operand;
        };
    }
}
