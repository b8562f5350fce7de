/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

/** Operation codes of a device request, shared by the proxy ring, the Java device API and the PTX. */
final class Op {
    static final int PUT = 1;
    static final int GET = 2;
    static final int PUT_SIGNAL = 3;
    static final int FETCH_ADD = 4;
    static final int COMPARE_SWAP = 5;

    private Op() {
    }

    static String name(final int op) {
        return switch (op) {
            case PUT -> "put";
            case GET -> "get";
            case PUT_SIGNAL -> "put_signal";
            case FETCH_ADD -> "fetch_add";
            case COMPARE_SWAP -> "compare_swap";
            default -> "op " + op;
        };
    }
}
