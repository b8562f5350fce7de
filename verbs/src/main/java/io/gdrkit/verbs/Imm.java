/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

import java.nio.ByteOrder;

/**
 * Byte order of immediate data. libibverbs keeps {@code imm_data} as a {@code __be32} that C code fills with
 * {@code htonl} and reads with {@code ntohl}; gdrkit keeps it in host order ({@link SendWorkRequest#immData},
 * {@link WorkCompletion#immData}). These convert between the two exactly as the C functions do on this host.
 */
public final class Imm {
    private static final boolean LITTLE = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

    private Imm() {
    }

    /** C's htonl on this host: host order to the network-order form. */
    public static int htonl(final int host) {
        return LITTLE ? Integer.reverseBytes(host) : host;
    }

    /** C's ntohl on this host: the network-order form to host order. */
    public static int ntohl(final int network) {
        return LITTLE ? Integer.reverseBytes(network) : network;
    }
}
