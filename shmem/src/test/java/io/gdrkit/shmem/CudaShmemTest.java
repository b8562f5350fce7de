/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.gpu.cuda.CudaGpu;
import java.time.Duration;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The CUDA kernels on a real GPU; skipped where there is none (CudaFakeDriverTest covers the path on the CPU). */
class CudaShmemTest {
    @BeforeEach
    void needsGpu() {
        Assumptions.assumeTrue(CudaGpu.probe().found(), "no CUDA GPU: " + CudaGpu.probe());
    }

    @ParameterizedTest
    @EnumSource(ShmemMode.class)
    void kernelsPutGetSignalAndAtomicsByteChecked(final ShmemMode mode) {
        for (final ShmemPerf.Test t : ShmemPerf.Test.values()) {
            final ShmemPerf.Result r = CudaShmemPerf.run(new ShmemContext().mode(mode).gpu("cuda:0")
                .timeout(Duration.ofSeconds(20)), t, 8, 4096, 50, 2, 32, 0);
            assertFalse(r.simulatedGpu());
            assertTrue(r.rows().stream().allMatch(ShmemPerf.Row::verified), t.label);
            assertEquals(mode == ShmemMode.IBGDA, r.gpuDoorbells() > 0, t.label + ": the GPU rang the doorbells");
            assertEquals(mode == ShmemMode.IBRC, r.cpuDoorbells() > 0, t.label + ": the proxy rang them");
        }
    }

    @ParameterizedTest
    @EnumSource(ShmemMode.class)
    void moeDispatchCombineKernel(final ShmemMode mode) {
        final MoeRun.Result r = MoeRun.run(new ShmemContext().nPes(4).mode(mode).gpu("cuda:0").sqDepth(64)
            .timeout(Duration.ofSeconds(30)), 16, 1024);
        assertTrue(r.verified(), "mismatching bytes: " + r.mismatches());
    }

    @ParameterizedTest
    @EnumSource(ShmemMode.class)
    void warpAndBlockVariants(final ShmemMode mode) {
        for (int variant = 1; variant <= 2; variant++) {
            final ShmemPerf.Result r = CudaShmemPerf.run(new ShmemContext().mode(mode).gpu("cuda:0")
                .timeout(Duration.ofSeconds(20)), ShmemPerf.Test.PUT_BW, 64, 64, 64, 2, 64, variant);
            assertTrue(r.rows().get(0).verified());
        }
    }
}
