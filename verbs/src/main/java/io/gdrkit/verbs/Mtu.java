/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/** Path MTU enumeration; values equal libibverbs' {@code enum ibv_mtu}. */
public final class Mtu {
    public static final int MTU_256 = 1;
    public static final int MTU_512 = 2;
    public static final int MTU_1024 = 3;
    public static final int MTU_2048 = 4;
    public static final int MTU_4096 = 5;

    /** Smallest and largest software MTU the software NIC accepts through {@link QpAttrMask#SOFTWARE_MTU}. */
    public static final int MIN_BYTES = 256;
    public static final int MAX_SOFTWARE_BYTES = 1 << 20;

    private Mtu() {
    }

    public static boolean isValid(final int mtu) {
        return mtu >= MTU_256 && mtu <= MTU_4096;
    }

    public static int toBytes(final int mtu) {
        if (!isValid(mtu)) {
            throw new IllegalArgumentException("invalid path MTU enum " + mtu + " (valid: 1=256 .. 5=4096)");
        }
        return 128 << mtu;
    }

    /** @return the enum for a byte size 256..4096 that is a power of two, or -1. */
    public static int fromBytes(final int bytes) {
        for (int m = MTU_256; m <= MTU_4096; m++) {
            if ((128 << m) == bytes) {
                return m;
            }
        }
        return -1;
    }

    public static boolean isValidSoftwareBytes(final int bytes) {
        return bytes >= MIN_BYTES && bytes <= MAX_SOFTWARE_BYTES && Integer.bitCount(bytes) == 1;
    }
}
