/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

/** Receives each perf result as it is measured, so that a caller (the CLI) can show rows as they come. */
public interface PerfListener {
    /** A bandwidth row for one message size. */
    public void bw(PerfConfig cfg, BwResult r);

    /** A latency row for one message size. */
    public void lat(PerfConfig cfg, LatResult r);

    /**
     * A fact about the rows that follow (until replaced): how the fabric moved the bytes, e.g.
     * {@code shm_copy_mode = cma}. Default: ignored.
     */
    default void fact(final String key, final Object value) {
    }

    /** --check's verdict for the size just reported (across processes). Default: ignored. */
    default void check(final PerfConfig cfg, final DataCheck.Result r) {
    }
}
