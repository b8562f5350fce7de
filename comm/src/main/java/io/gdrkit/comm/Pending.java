/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.transport.NetTransport;

/**
 * A slot for one request in flight. The slots are objects and not an array of {@link NetTransport.Request}
 * because C2 types an array of an interface as {@code Object[]} when it speculates on the exact array class at a
 * store: every store site of the exchange loop traps once and recompiles it, so an array recompiles the loop once
 * per site where holders compile it a few times. A field store has no such check. Allocated up front, reused.
 */
final class Pending {
    NetTransport.Request req;

    static Pending[] row(final int n) {
        final Pending[] r = new Pending[n];
        for (int i = 0; i < n; i++) {
            r[i] = new Pending();
        }
        return r;
    }

    static Pending[][] grid(final int n, final int m) {
        final Pending[][] g = new Pending[n][];
        for (int i = 0; i < n; i++) {
            g[i] = row(m);
        }
        return g;
    }
}
