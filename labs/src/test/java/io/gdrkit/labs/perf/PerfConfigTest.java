/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.softnic.SoftNicContext;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/** The perf engine's Context: perftest's defaults per test, settings by name, one validation with named errors. */
class PerfConfigTest {

    @Test
    void defaultsFollowTheTest() {
        final PerfConfig bw = new PerfConfig(PerfKind.WRITE_BW).conclude();
        assertEquals("PerfConfig[test=write_bw, size=65536, iters=5000, warmup=0, numQps=1, txDepth=128, "
            + "rxDepth=512, cqMod=64, mtu=4096, inlineSize=0, durationSeconds=null, bufferBytes=8388608, "
            + "progress=INVOKER]", bw.toString());
        assertFalse(bw.timed());
        assertEquals(0, bw.durationSeconds());
        final PerfConfig lat = new PerfConfig(PerfKind.WRITE_LAT).conclude();
        assertEquals(2, lat.size());
        assertEquals(1000, lat.iters());
        assertEquals(220, lat.inlineSize());
        assertEquals(8, new PerfConfig(PerfKind.ATOMIC_LAT).conclude().size());
    }

    @Test
    void settingsByName() {
        final PerfConfig c = new PerfConfig(PerfKind.SEND_BW).size(4096).iters(7).warmup(3).numQps(4).txDepth(16)
            .rxDepth(32).cqMod(8).mtu(1024).inlineSize(64).durationSeconds(1.5).bufferBytes(1 << 20)
            .progress(SoftNicContext.ProgressMode.DEDICATED).conclude();
        assertEquals("PerfConfig[test=send_bw, size=4096, iters=7, warmup=3, numQps=4, txDepth=16, rxDepth=32, "
            + "cqMod=8, mtu=1024, inlineSize=64, durationSeconds=1.5, bufferBytes=1048576, progress=DEDICATED]",
            c.toString());
        assertTrue(c.timed());
        final PerfConfig other = c.withSize(128, 10);
        assertNotSame(c, other);
        assertEquals(128, other.size());
        assertEquals(10, other.warmup());
        assertEquals(4096, c.size());
        assertEquals(4, other.numQps());
    }

    @Test
    void everyBadSettingIsNamed() {
        bad(PerfKind.WRITE_BW, c -> c.bufferBytes(32), "--buffer 32 must be 64 .. 1073741824 bytes");
        bad(PerfKind.ATOMIC_LAT, c -> c.size(4),
            "-s/--size 4 is invalid for atomic_lat: atomics operate on exactly 8 bytes");
        bad(PerfKind.WRITE_BW, c -> c.size(0), "-s/--size 0 must be at least 1 byte");
        bad(PerfKind.WRITE_BW, c -> c.size(4096).bufferBytes(1024),
            "-s/--size 4096 exceeds the registered buffer (1024 bytes); raise --buffer");
        bad(PerfKind.WRITE_BW, c -> c.iters(0), "-n/--iters 0 must be at least 1");
        bad(PerfKind.WRITE_BW, c -> c.warmup(-1), "--warmup -1 must not be negative");
        bad(PerfKind.WRITE_BW, c -> c.numQps(1025), "-q/--qp 1025 must be 1 .. 1024");
        bad(PerfKind.READ_LAT, c -> c.numQps(2), "latency tests use one QP (got -q 2)");
        bad(PerfKind.WRITE_BW, c -> c.txDepth(0), "-t/--tx-depth 0 must be 1 .. 16384");
        bad(PerfKind.WRITE_BW, c -> c.rxDepth(16385), "-r/--rx-depth 16385 must be 1 .. 16384");
        bad(PerfKind.WRITE_BW, c -> c.cqMod(0), "-Q/--cq-mod 0 must be at least 1");
        bad(PerfKind.WRITE_BW, c -> c.mtu(3000),
            "--mtu 3000 must be a power of two from 256 to 4096 (IB path MTU) or up to 1048576 (software MTU)");
        bad(PerfKind.WRITE_BW, c -> c.inlineSize(4097), "-I/--inline_size 4097 must be 0 .. 4096");
        bad(PerfKind.WRITE_BW, c -> c.durationSeconds(0), "-D/--duration 0.0 must be > 0 and <= 3600 seconds");
        bad(PerfKind.WRITE_BW, c -> c.durationSeconds(Double.NaN),
            "-D/--duration NaN must be > 0 and <= 3600 seconds");
        bad(PerfKind.WRITE_LAT, c -> c.events(true),
            "-e/--events applies to send_lat (the test that waits on a receive CQ), not write_lat");
        final PerfConfig ev = new PerfConfig(PerfKind.SEND_LAT).events(true).conclude();
        assertEquals(true, ev.events());
        assertEquals(true, ev.withSize(8, 0).events(), "withSize keeps -e");
        assertEquals(false, new PerfConfig(PerfKind.SEND_LAT).conclude().events());
        assertThrows(NullPointerException.class, () -> new PerfConfig(null));
        assertThrows(NullPointerException.class, () -> new PerfConfig(PerfKind.WRITE_BW).progress(null));
    }

    @Test
    void readOnlyAfterConclude() {
        final PerfConfig c = new PerfConfig(PerfKind.WRITE_BW);
        assertEquals("PerfConfig not concluded: call conclude() first",
            assertThrows(IllegalStateException.class, c::size).getMessage());
        c.conclude();
        assertEquals("PerfConfig already concluded; withSize() makes a new one",
            assertThrows(IllegalStateException.class, () -> c.size(4)).getMessage());
        assertThrows(IllegalStateException.class, c::conclude);
    }

    private static void bad(final PerfKind test, final UnaryOperator<PerfConfig> set, final String message) {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> set.apply(new PerfConfig(test)).conclude());
        assertEquals(message, e.getMessage());
    }
}
