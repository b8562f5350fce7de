/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** A server process over the shared-memory fabric and the client here: records, not printed lines. */
class ShmLoopbackPerfTest {
    @Test
    void bandwidthAndLatencyRowsComeBackAsRecords() {
        final PerfConfig bw = ShmLoopbackPerf.defaults(PerfKind.WRITE_BW, 65536, 200).withSize(65536, 100);
        final ShmLoopbackPerf.Run b = ShmLoopbackPerf.run(bw);
        assertEquals(1, b.bw().size(), b::toString);
        assertEquals(0, b.lat().size());
        assertEquals(65536, b.bw().get(0).bytes());
        assertEquals(200, b.bw().get(0).iterations());
        assertTrue(b.bw().get(0).bwAvgMibS() > 0 && b.bw().get(0).bwPeakMibS() >= b.bw().get(0).bwAvgMibS(),
            b::toString);
        final ShmLoopbackPerf.Run l = ShmLoopbackPerf.run(ShmLoopbackPerf.defaults(PerfKind.WRITE_LAT, 8, 200)
            .withSize(8, 100));
        assertEquals(1, l.lat().size(), l::toString);
        assertEquals(8, l.lat().get(0).bytes());
        assertTrue(l.lat().get(0).tMinUs() > 0 && l.lat().get(0).tMaxUs() >= l.lat().get(0).tMinUs(), l::toString);
    }

    @Test
    void defaultWarmupFollowsPerftestsRule() {
        assertEquals(ShmLoopbackPerf.MIN_WARMUP, ShmLoopbackPerf.defaultWarmup(8, 1000));
        assertEquals(200_000, ShmLoopbackPerf.defaultWarmup(8, 200_000));
        assertEquals((1L << 34) / (1 << 20), ShmLoopbackPerf.defaultWarmup(1 << 20, 1000), "16 GiB cap");
        assertEquals(4 << 20, ShmLoopbackPerf.linkCapacity(4096));
    }
}
