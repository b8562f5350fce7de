/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** send_bw over UD: every datagram arrives byte for byte behind the GRH area, runs repeat on one pair. */
class UdSendBwTest {
    @Test
    void everyDatagramArrivesAndRunsRepeatOnOnePair() {
        final UdSendBw pair = new UdSendBw(4096, 16, 8, 4096);
        try {
            for (int run = 0; run < 3; run++) {
                final UdSendBw.Result r = pair.run(200, true);
                assertEquals(200, r.checked());
                assertEquals(0, r.bad());
                assertEquals(200, r.bw().iterations());
                assertEquals(4096, r.bw().bytes());
                assertTrue(r.bw().bwPeakMibS() >= r.bw().bwAvgMibS(), r::toString);
            }
        } finally {
            pair.close();
        }
    }

    @Test
    void aDatagramIsOnePacket() {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> new UdSendBw(4097, 16, 16, 4096));
        assertEquals("-c UD: a datagram is one packet: -s must be 1 .. the MTU (4096), not 4097", e.getMessage());
    }
}
