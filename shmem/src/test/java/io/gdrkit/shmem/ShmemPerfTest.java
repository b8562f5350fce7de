/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ShmemPerfTest {
    @ParameterizedTest
    @CsvSource({"put_lat,IBGDA", "put_lat,IBRC", "get_lat,IBGDA", "atomic_lat,IBRC", "put_signal_lat,IBGDA",
        "put_signal_lat,IBRC", "put_bw,IBGDA", "msg_rate,IBRC"})
    void everyTestRunsChecksItsBytesAndSaysWhatWasSimulated(final String test, final ShmemMode mode) {
        final ShmemPerf.Result r = ShmemPerf.run(new ShmemContext().mode(mode).timeout(Duration.ofSeconds(20)),
            ShmemPerf.Test.byLabel(test), 8, 64, 20, 2, 2);
        assertEquals(test, r.test());
        assertTrue(r.simulatedGpu() && r.simulatedNic());
        assertEquals(test.equals("atomic_lat") ? 1 : 4, r.rows().size());
        for (final ShmemPerf.Row row : r.rows()) {
            assertTrue(row.verified());
            assertTrue(row.iters() > 0);
        }
        if (mode == ShmemMode.IBGDA) {
            assertTrue(r.gpuDoorbells() > 0, "doorbells rung by the GPU");
            assertEquals(0, r.cpuDoorbells(), "none rung by a CPU on the GPU's queues");
        } else {
            assertTrue(r.cpuDoorbells() > 0);
            assertEquals(0, r.gpuDoorbells());
        }
        if (!test.equals("put_bw") && !test.equals("msg_rate")) {
            assertTrue(r.breakdown().samples() > 0);
            final ShmemPerf.Breakdown b = r.breakdown();
            assertEquals(mode == ShmemMode.IBRC, b.step(ShmemPerf.ISSUE_TO_PROXY) != null, "proxy step only on IBRC");
            assertEquals(test.equals("put_signal_lat"), b.step(ShmemPerf.NIC_TO_LANDING) != null);
            assertEquals(0, b.clockPairingErrorUs(), "the simulator has one clock");
            for (final ShmemPerf.Step s : b.steps()) {
                assertTrue(s.resolved() && s.us() >= 0 && s.errorUs() == 0, s.toString());
            }
            assertTrue(b.totalUs() > 0);
        }
        // the time split: every latency size has one, its parts are non-negative and add up to the total
        final boolean lat = !test.equals("put_bw") && !test.equals("msg_rate");
        final boolean pingpong = test.equals("put_signal_lat");
        for (final ShmemPerf.Row row : r.rows()) {
            assertEquals(lat ? pingpong ? ShmemPerf.HALF_RTT : ShmemPerf.OP : ShmemPerf.NONE, row.latency());
            final ShmemPerf.Split x = row.split();
            if (!lat) {
                assertEquals(null, x, "no split for a bandwidth test");
                continue;
            }
            final String what = row.bytes() + " B: " + x;
            assertTrue(x.totalUs() > 0 && x.kernelUs() >= 0 && x.commUs() > 0 && x.cpuWaitUs() >= 0, what);
            assertEquals(x.totalUs(), x.kernelUs() + x.commUs() + x.cpuWaitUs(), 1e-9 * x.totalUs(), what);
            assertEquals(pingpong ? x.commUs() : null, x.rttUs(), "rtt only for the ping-pong, the full round trip");
            assertEquals(mode == ShmemMode.IBRC, x.proxyUs() != null, "proxy time only on IBRC: " + what);
            if (x.proxyUs() != null) {
                assertTrue(x.proxyUs() >= 0 && x.proxyUs() <= x.commUs() && x.proxySamples() > 0, what);
            }
            assertEquals(0, x.clockPairingErrorUs(), "the simulator has one clock");
            assertTrue(x.method().contains("one clock"), x.method());
            assertTrue(ShmemPerf.formatSplit(row).startsWith(row.bytes() + " B: total "), ShmemPerf.formatSplit(row));
        }
    }

    /** A step is never reported negative: within the pairing error it is a bound, beyond it a named clock fault. */
    @Test
    void stepsWithinTheClockPairingErrorAreBoundsNeverNegative() {
        final ShmemPerf.Step clear = ShmemPerf.Step.of("x", 5.0, 1.0);
        assertTrue(clear.resolved());
        assertEquals(5.0, clear.us());
        assertEquals("5.00 ±1.00", clear.text());
        final ShmemPerf.Step small = ShmemPerf.Step.of("x", -0.4, 1.0);
        assertEquals(false, small.resolved());
        assertEquals(null, small.us());
        assertEquals("<= 1.00 (within the clock-pairing error)", small.text());
        final ShmemPerf.Step tiny = ShmemPerf.Step.of("x", 0.7, 1.0);
        assertEquals(null, tiny.us());
        final ShmemPerf.Step fault = ShmemPerf.Step.of("x", -4.1, 1.0);
        assertEquals(false, fault.resolved());
        assertEquals(null, fault.us());
        assertTrue(fault.text().startsWith("unresolved: the stamps put it at -4.10, beyond the pairing error 1.00"),
            fault.text());
        final ShmemPerf.Step oneClock = ShmemPerf.Step.of("x", 0.0, 0);
        assertTrue(oneClock.resolved());
        assertEquals(0.0, oneClock.us());
        // a breakdown from stamps: IBGDA {op, issue, proxy 0, NIC, done}; issue->NIC crosses clocks (error 2 us)
        final java.util.List<long[]> stamps = java.util.List.of(new long[] {1, 1000, 0, 500, 9000},
            new long[] {1, 2000, 0, 1500, 10000}, new long[] {1, 3000, 0, 2500, 11000});
        final ShmemPerf.Breakdown b = ShmemPerf.breakdown(stamps, null, 3, 2000);
        assertEquals(2.0, b.clockPairingErrorUs());
        assertEquals(null, b.step(ShmemPerf.ISSUE_TO_PROXY));
        assertEquals(null, b.step(ShmemPerf.TO_NIC).us(), "-0.5 us within ±2 us");
        assertEquals(8.5, b.step(ShmemPerf.TO_COMPLETION).us());
        assertEquals(null, b.step(ShmemPerf.TO_CQE), "no CQE stamps: no step");
        assertEquals(8.0, b.totalUs());
        // with the NIC's CQE stamps (host clock, as the pick-up): the NIC's part ends at the CQE
        final java.util.List<long[]> withCqe = java.util.List.of(new long[] {1, 1000, 0, 5000, 9000, 7000},
            new long[] {1, 2000, 0, 6000, 10000, 8500}, new long[] {1, 3000, 0, 7000, 11000, 9000});
        final ShmemPerf.Breakdown c = ShmemPerf.breakdown(withCqe, null, 3, 1000);
        assertEquals(2.0, c.step(ShmemPerf.TO_CQE).us(), "pick-up to CQE: 2.0, 2.5, 2.0 us");
        assertEquals(2.0, c.step(ShmemPerf.TO_COMPLETION).us(), "CQE to seen: 2.0, 1.5, 2.0 us");
        // one sample without its CQE stamp: the step is left out, not computed from a zero
        final java.util.List<long[]> partial = java.util.List.of(withCqe.get(0), new long[] {1, 2000, 0, 6000, 10000, 0});
        assertEquals(null, ShmemPerf.breakdown(partial, null, 2, 1000).step(ShmemPerf.TO_CQE));
    }

    /** Two pairings a second apart with 5 us of drift between them: host stamps land where the GPU clock was. */
    @Test
    void clockMapInterpolatesTheDriftBetweenTwoPairings() {
        final CudaShmemPerf.ClockPair before = new CudaShmemPerf.ClockPair(1_000_000_000L, 500.0, 400.0);
        final CudaShmemPerf.ClockPair after = new CudaShmemPerf.ClockPair(2_000_000_000L, 5_500.0, 700.0);
        final CudaShmemPerf.ClockMap map = new CudaShmemPerf.ClockMap(before, after);
        assertEquals(1_000_000_500L, map.toGpu(1_000_000_000L));
        assertEquals(1_500_003_000L, map.toGpu(1_500_000_000L), "half way: half the drift");
        assertEquals(2_000_005_500L, map.toGpu(2_000_000_000L));
        assertEquals(700.0, map.errorNs(), "the larger of the two pairings' errors");
        assertEquals(5.0, map.driftPpm(), 1e-9);
        assertTrue(map.describe().contains("drift 5.00 ppm") && map.describe().contains("error ±700 ns"),
            map.describe());
        // one pairing (no time between): the offset, no drift
        final CudaShmemPerf.ClockMap one = new CudaShmemPerf.ClockMap(before, before);
        assertEquals(1_700_000_500L, one.toGpu(1_700_000_000L));
        assertEquals(0.0, one.driftPpm());
    }

    @Test
    void badArgumentsAreNamed() {
        assertEquals(ShmemException.Reason.BAD_ARGUMENT, assertThrows(ShmemException.class,
            () -> ShmemPerf.Test.byLabel("put_latency")).reason());
        assertEquals(ShmemException.Reason.BAD_ARGUMENT, assertThrows(ShmemException.class,
            () -> ShmemPerf.run(new ShmemContext(), ShmemPerf.Test.PUT_LAT, 64, 8, 1, 1, 1)).reason());
    }

    /**
     * The CUDA breakdown's sample: its operations' WQEs fit in half the send queue on both paths (a put-with-signal
     * is two WQEs on IBRC too), and on IBRC their requests in half the proxy ring; issue 13 sampled 128 IBRC
     * put-with-signals (256 WQEs) from a 128-slot queue.
     */
    @Test
    void cudaBreakdownSampleFitsTheSendQueue() {
        assertEquals(2, CudaShmemPerf.wqesPerOp(true));
        assertEquals(1, CudaShmemPerf.wqesPerOp(false));
        assertEquals(200 - 32, CudaShmemPerf.breakdownFrom(200, 2, 256, 128)); // IBRC put_signal_lat
        assertEquals(200 - 32, CudaShmemPerf.breakdownFrom(200, 2, 0, 128)); // IBGDA put_signal_lat
        assertEquals(200 - 64, CudaShmemPerf.breakdownFrom(200, 1, 256, 128)); // IBRC put_lat
        assertEquals(200 - 16, CudaShmemPerf.breakdownFrom(200, 1, 32, 128)); // a small proxy ring bounds it
        assertEquals(0, CudaShmemPerf.breakdownFrom(10, 2, 256, 128)); // fewer operations than fit: all of them
        assertEquals(199, CudaShmemPerf.breakdownFrom(200, 2, 0, 2)); // at least one
        for (final int sq : new int[] {2, 8, 64, 128, 1024}) {
            for (final int proxy : new int[] {0, 4, 256}) {
                for (final int per : new int[] {1, 2}) {
                    final int ops = 500 - CudaShmemPerf.breakdownFrom(500, per, proxy, sq);
                    assertTrue(ops >= 1 && (ops == 1 || ops * per <= sq / 2 && (proxy == 0 || ops <= proxy / 2)),
                        ops + " ops, " + per + " WQEs each, sq " + sq + ", proxy ring " + proxy);
                }
            }
        }
    }
}
