/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

/** The comparison operators of wait_until (NVSHMEM_CMP_*), on signed 64-bit words. */
public enum Cmp {
    /** Equal: {@code value == operand}. */
    EQ,
    /** Not equal: {@code value != operand}. */
    NE,
    /** Greater than: {@code value > operand}. */
    GT,
    /** Greater than or equal: {@code value >= operand}. */
    GE,
    /** Less than: {@code value < operand}. */
    LT,
    /** Less than or equal: {@code value <= operand}. */
    LE;

    /**
     * Compares a value with an operand by this operator.
     *
     * @param value   the value read, such as a signal word
     * @param operand the value it is compared with
     * @return true when {@code value OP operand} holds
     */
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
