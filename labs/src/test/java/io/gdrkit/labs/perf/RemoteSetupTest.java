/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.gdrkit.labs.perf.RemotePerf.Setup;
import org.junit.jupiter.api.Test;

/** A perf client's setup, as the server decodes it: checked through PerfConfig before anything is allocated. */
class RemoteSetupTest {

    private static String refused(final Setup s) {
        return assertThrows(IllegalArgumentException.class, () -> Setup.decode(s.encode())).getMessage();
    }

    @Test
    void aGoodSetupRoundTrips() {
        final Setup s = new Setup(PerfKind.SEND_BW, 4096, 4, 128, 1024, 1L << 21, 0x7f00_0000_1000L, 77, false);
        assertEquals(s, Setup.decode(s.encode()));
        final PerfConfig c = s.config();
        assertEquals(4096, c.size());
        assertEquals(4, c.numQps());
        assertEquals(1L << 20, c.bufferBytes());
        // QUIT carries no run and is not checked as one
        final Setup quit = new Setup(PerfKind.WRITE_BW, 0, 1, 0, 4096, 0, 0, 0, true);
        assertEquals(quit, Setup.decode(quit.encode()));
    }

    @Test
    void outOfRangeSetupsAreNamed() {
        assertEquals("-q/--qp 100000 must be 1 .. 1024",
            refused(new Setup(PerfKind.WRITE_BW, 64, 100_000, 1, 4096, 1 << 20, 0, 0, false)));
        assertEquals("-r/--rx-depth 0 must be 1 .. 16384",
            refused(new Setup(PerfKind.SEND_BW, 64, 1, 0, 4096, 1 << 20, 0, 0, false)));
        assertEquals("--buffer 4611686018427387903 must be 64 .. 1073741824 bytes",
            refused(new Setup(PerfKind.WRITE_BW, 64, 1, 1, 4096, Long.MAX_VALUE - 1, 0, 0, false)));
        assertEquals("client buffer of 1025 bytes is not twice a --buffer",
            refused(new Setup(PerfKind.WRITE_BW, 64, 1, 1, 4096, 1025, 0, 0, false)));
        assertEquals("-s/--size 4096 exceeds the registered buffer (512 bytes); raise --buffer",
            refused(new Setup(PerfKind.WRITE_BW, 4096, 1, 1, 4096, 1024, 0, 0, false)));
        assertEquals("--mtu 1000 must be a power of two from 256 to 4096 (IB path MTU) or up to 1048576 "
            + "(software MTU)", refused(new Setup(PerfKind.WRITE_BW, 64, 1, 1, 1000, 1 << 20, 0, 0, false)));
        assertEquals("latency tests use one QP (got -q 2)",
            refused(new Setup(PerfKind.WRITE_LAT, 2, 2, 1, 4096, 1 << 20, 0, 0, false)));
        final byte[] unknown = new Setup(PerfKind.WRITE_BW, 64, 1, 1, 4096, 1 << 20, 0, 0, false).encode();
        unknown[0] = 42;
        assertEquals("unknown perf test 42",
            assertThrows(IllegalArgumentException.class, () -> Setup.decode(unknown)).getMessage());
        assertEquals("not a gdrkit perf client (private data of 3 bytes)",
            assertThrows(IllegalArgumentException.class, () -> Setup.decode(new byte[3])).getMessage());
    }
}
