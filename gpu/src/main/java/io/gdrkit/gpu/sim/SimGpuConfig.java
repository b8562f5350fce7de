package io.gdrkit.gpu.sim;

import io.gdrkit.core.agent.NanoClock;

import java.time.Duration;

/**
 * Tuning of a simulated GPU system.
 *
 * @param memBytes        device memory per GPU
 * @param smWorkers       SM worker threads per GPU (kernel blocks run on them; a persistent kernel holds one)
 * @param seed            seed of the drain-delay RNG; the same seed gives the same landing order
 * @param clock           time source for drain deadlines and events ({@code ManualClock} in deterministic tests)
 * @param minDrainNanos   shortest delay between posting a NIC write and its landing
 * @param maxDrainNanos   longest such delay
 * @param chunkBytes      a NIC write lands in pieces of this size (PCIe max payload is 128-512 B on real systems)
 * @param stagingBytes    bytes of posted writes in flight per GPU before the NIC is back-pressured
 * @param maxInFlight     posted write chunks in flight per GPU before the NIC is back-pressured
 * @param autoDrain       true: a background agent lands writes when their delay expires; false: only explicit
 *                        drains and the events of the model land them (deterministic tests)
 * @param defaultTimeout  timeout of waits that have no explicit one (stream threads waiting on SM workers)
 */
public record SimGpuConfig(long memBytes, int smWorkers, long seed, NanoClock clock, long minDrainNanos,
                           long maxDrainNanos, int chunkBytes, int stagingBytes, int maxInFlight, boolean autoDrain,
                           Duration defaultTimeout) {
    public SimGpuConfig {
        if (chunkBytes <= 0 || chunkBytes > stagingBytes) {
            throw new IllegalArgumentException("chunkBytes must be in (0, stagingBytes]: " + chunkBytes);
        }
        if (Integer.bitCount(maxInFlight) != 1) {
            throw new IllegalArgumentException("maxInFlight must be a power of two: " + maxInFlight);
        }
        if (minDrainNanos < 0 || maxDrainNanos < minDrainNanos) {
            throw new IllegalArgumentException("drain delays must satisfy 0 <= min <= max");
        }
    }

    /** Defaults: 1 GiB per GPU, 4 SM workers, 256-byte chunks, 2-200 us drain delays, background draining. */
    public static SimGpuConfig defaults(final long seed) {
        return new SimGpuConfig(1L << 30, 4, seed, NanoClock.SYSTEM, 2_000, 200_000, 256, 16 << 20, 1 << 16, true,
            Duration.ofSeconds(30));
    }

    /**
     * For throughput runs (perf, gpu-path): 4 KiB chunks (one per page rather than per PCIe TLP) and a 64 MiB
     * staging ring, so the model's bookkeeping does not dominate; ordering and visibility rules are unchanged.
     */
    public static SimGpuConfig throughput(final long seed) {
        return new SimGpuConfig(1L << 30, 4, seed, NanoClock.SYSTEM, 2_000, 50_000, 4096, 64 << 20, 1 << 16, true,
            Duration.ofSeconds(30));
    }

    /** Deterministic: writes land only when the test (or the model's events) drains them, on the given clock. */
    public static SimGpuConfig deterministic(final long seed, final NanoClock clock) {
        return new SimGpuConfig(64L << 20, 4, seed, clock, 2_000, 200_000, 256, 4 << 20, 1 << 14, false,
            Duration.ofSeconds(30));
    }

    public SimGpuConfig withChunkBytes(final int bytes) {
        return new SimGpuConfig(memBytes, smWorkers, seed, clock, minDrainNanos, maxDrainNanos, bytes, stagingBytes,
            maxInFlight, autoDrain, defaultTimeout);
    }

    public SimGpuConfig withMemBytes(final long bytes) {
        return new SimGpuConfig(bytes, smWorkers, seed, clock, minDrainNanos, maxDrainNanos, chunkBytes, stagingBytes,
            maxInFlight, autoDrain, defaultTimeout);
    }
}
