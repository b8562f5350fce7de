/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class MoeRunTest {
    @ParameterizedTest
    @CsvSource({"2,IBGDA", "4,IBRC", "8,IBGDA"})
    void dispatchAndCombineComeBackByteForByte(final int n, final ShmemMode mode) {
        final MoeRun.Result r = MoeRun.run(new ShmemContext().nPes(n).mode(mode).sqDepth(64).seed(7)
            .timeout(Duration.ofSeconds(30)), 12, 64);
        assertTrue(r.verified(), "mismatching bytes: " + r.mismatches());
        assertEquals(0, r.mismatches());
        assertEquals(n * 12, Arrays.stream(r.tokensPerExpert()).sum(), "every token went to exactly one expert");
        assertTrue(r.simulated());
        // PE 0's time split: measured parts, non-negative, adding up to the total
        final MoeRun.Split x = r.split();
        assertTrue(x.totalMs() > 0 && x.kernelMs() >= 0 && x.commMs() != null && x.commMs() > 0
            && x.cpuWaitMs() >= 0, x.toString());
        assertEquals(x.totalMs(), x.kernelMs() + x.commMs() + x.cpuWaitMs(), 1e-9 * x.totalMs(), x.toString());
        assertEquals(r.kernelMillis(), x.kernelMs() + x.commMs(), 1e-9 * x.totalMs(), "the span is kernel + comm");
        assertTrue(x.method().startsWith("one clock") && MoeRun.format(x).startsWith("total "), x.toString());
    }

    @Test
    void routerIsSeededAndSpreads() {
        final int[] c = new int[4];
        for (int t = 0; t < 400; t++) {
            c[MoeRun.route(3, 1, t, 4)]++;
        }
        for (final int x : c) {
            assertTrue(x > 50, Arrays.toString(c));
        }
        assertEquals(MoeRun.route(3, 1, 5, 4), MoeRun.route(3, 1, 5, 4));
        assertEquals(ShmemException.Reason.BAD_ARGUMENT, assertThrows(ShmemException.class,
            () -> MoeRun.run(new ShmemContext(), 0, 64)).reason());
    }
}
