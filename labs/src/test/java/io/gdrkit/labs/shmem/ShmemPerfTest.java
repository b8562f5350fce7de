package io.gdrkit.labs.shmem;

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
            assertEquals(mode == ShmemMode.IBRC, r.breakdown().issueToProxyUs() >= 0, "proxy step only on IBRC");
            assertEquals(test.equals("put_signal_lat"), r.breakdown().nicToLandingUs() != -1);
        }
    }

    @Test
    void badArgumentsAreNamed() {
        assertEquals(ShmemException.Reason.BAD_ARGUMENT, assertThrows(ShmemException.class,
            () -> ShmemPerf.Test.byLabel("put_latency")).reason());
        assertEquals(ShmemException.Reason.BAD_ARGUMENT, assertThrows(ShmemException.class,
            () -> ShmemPerf.run(new ShmemContext(), ShmemPerf.Test.PUT_LAT, 64, 8, 1, 1, 1)).reason());
    }
}
