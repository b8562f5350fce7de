/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Locale;

/** ncclDataType_t, with the names nccl-tests prints. */
public enum DataType {
    /** Signed 8-bit integer. */
    INT8(1, "int8"),
    /** Signed 32-bit integer. */
    INT32(4, "int32"),
    /** Signed 64-bit integer. */
    INT64(8, "int64"),
    /** IEEE 754 half-precision (16-bit) floating point. */
    FLOAT16(2, "half"),
    /** bfloat16: 16-bit floating point with float's exponent range. */
    BFLOAT16(2, "bfloat16"),
    /** IEEE 754 single-precision (32-bit) floating point. */
    FLOAT32(4, "float"),
    /** IEEE 754 double-precision (64-bit) floating point. */
    FLOAT64(8, "double");

    private final int size;
    private final String ncclName;

    DataType(final int size, final String ncclName) {
        this.size = size;
        this.ncclName = ncclName;
    }

    /** {@return the size of one element, in bytes} */
    public int size() {
        return size;
    }

    /** {@return the name nccl-tests prints in its type column} */
    public String ncclName() {
        return ncclName;
    }

    /**
     * Parses a type as nccl-tests' -d flag names it (int8, int32, int64, half, float16, bfloat16, float, float32,
     * double, float64).
     *
     * @param s the name, in any case
     * @return the type named
     * @throws IllegalArgumentException if the name is not a type's
     */
    public static DataType parse(final String s) {
        return switch (s.toLowerCase(Locale.ROOT)) {
            case "int8", "char" -> INT8;
            case "int32", "int" -> INT32;
            case "int64" -> INT64;
            case "half", "float16", "fp16" -> FLOAT16;
            case "bfloat16", "bf16" -> BFLOAT16;
            case "float", "float32", "fp32" -> FLOAT32;
            case "double", "float64", "fp64" -> FLOAT64;
            default -> throw new IllegalArgumentException("unknown data type '" + s + "' (int8, int32, int64, half, "
                + "bfloat16, float, double)");
        };
    }

    /**
     * Element {@code i} of {@code seg} as a double.
     *
     * @param seg the segment holding elements of this type
     * @param i   the element's index (not its byte offset)
     * @return the element's value
     */
    public double get(final MemorySegment seg, final long i) {
        return switch (this) {
            case INT8 -> seg.get(ValueLayout.JAVA_BYTE, i);
            case INT32 -> seg.get(ValueLayout.JAVA_INT_UNALIGNED, i * 4);
            case INT64 -> seg.get(ValueLayout.JAVA_LONG_UNALIGNED, i * 8);
            case FLOAT16 -> Float.float16ToFloat(seg.get(ValueLayout.JAVA_SHORT_UNALIGNED, i * 2));
            case BFLOAT16 -> Float.intBitsToFloat((seg.get(ValueLayout.JAVA_SHORT_UNALIGNED, i * 2) & 0xffff) << 16);
            case FLOAT32 -> seg.get(ValueLayout.JAVA_FLOAT_UNALIGNED, i * 4);
            case FLOAT64 -> seg.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, i * 8);
        };
    }

    /**
     * Stores {@code v} (rounded to the type) as element {@code i}.
     *
     * @param seg the segment holding elements of this type
     * @param i   the element's index (not its byte offset)
     * @param v   the value to store
     */
    public void set(final MemorySegment seg, final long i, final double v) {
        switch (this) {
            case INT8 -> seg.set(ValueLayout.JAVA_BYTE, i, (byte) (long) v);
            case INT32 -> seg.set(ValueLayout.JAVA_INT_UNALIGNED, i * 4, (int) (long) v);
            case INT64 -> seg.set(ValueLayout.JAVA_LONG_UNALIGNED, i * 8, (long) v);
            case FLOAT16 -> seg.set(ValueLayout.JAVA_SHORT_UNALIGNED, i * 2, Float.floatToFloat16((float) v));
            case BFLOAT16 -> seg.set(ValueLayout.JAVA_SHORT_UNALIGNED, i * 2, toBf16((float) v));
            case FLOAT32 -> seg.set(ValueLayout.JAVA_FLOAT_UNALIGNED, i * 4, (float) v);
            case FLOAT64 -> seg.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, i * 8, v);
        }
    }

    /** float to bfloat16, round to nearest even (NaN stays a quiet NaN). */
    static short toBf16(final float f) {
        final int bits = Float.floatToRawIntBits(f);
        if (Float.isNaN(f)) {
            return (short) 0x7fc0;
        }
        return (short) ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16);
    }
}
