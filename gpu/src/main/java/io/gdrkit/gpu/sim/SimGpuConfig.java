/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import io.gdrkit.core.agent.NanoClock;

import java.time.Duration;
import java.util.Objects;

/**
 * The simulated GPU system's Context (Aeron's pattern): every value has a default, is set by name, and
 * {@link #conclude()} validates the whole once and freezes it. {@link SimGpuSystem#create} concludes it; a concluded
 * config is immutable and may be shared by several systems. Nothing here is read from properties or the
 * environment: the simulated GPU is configured by the code that creates it.
 *
 * <p>Three starting points: {@link #defaults(long)}, {@link #throughput(long)} for perf and gpu-path, and
 * {@link #deterministic(long, NanoClock)} for tests and the visibility lab.
 */
public final class SimGpuConfig {
    private long memBytes = 1L << 30;
    private int smWorkers = 4;
    private long seed = 1;
    private NanoClock clock = NanoClock.SYSTEM;
    private long minDrainNanos = 2_000;
    private long maxDrainNanos = 200_000;
    private int chunkBytes = 256;
    private int stagingBytes = 16 << 20;
    private int maxInFlight = 1 << 16;
    private boolean autoDrain = true;
    private boolean landUnobserved;
    private boolean deferUnsyncedCopies = true;
    private Duration defaultTimeout = Duration.ofSeconds(30);
    private boolean concluded;

    /** Defaults: 1 GiB per GPU, 4 SM workers, 256-byte chunks, 2-200 us drain delays, background draining. */
    public static SimGpuConfig defaults(final long seed) {
        return new SimGpuConfig().seed(seed);
    }

    /**
     * For throughput runs (perf, gpu-path): 4 KiB chunks (one per page rather than per PCIe TLP), a 64 MiB
     * staging ring, and {@link #landUnobserved} on, so the model's bookkeeping does not dominate; what a running
     * kernel or a peer GPU can see is unchanged.
     */
    public static SimGpuConfig throughput(final long seed) {
        return new SimGpuConfig().seed(seed).maxDrainNanos(50_000).chunkBytes(4096).stagingBytes(64 << 20)
            .landUnobserved(true);
    }

    /** Deterministic: writes land only when the test (or the model's events) drains them, on the given clock. */
    public static SimGpuConfig deterministic(final long seed, final NanoClock clock) {
        return new SimGpuConfig().seed(seed).clock(clock).memBytes(64L << 20).stagingBytes(4 << 20)
            .maxInFlight(1 << 14).autoDrain(false);
    }

    /** Device memory per GPU (default 1 GiB). */
    public long memBytes() {
        return memBytes;
    }

    public SimGpuConfig memBytes(final long bytes) {
        open();
        memBytes = bytes;
        return this;
    }

    /** SM worker threads per GPU: kernel blocks run on them; a persistent kernel holds one (default 4). */
    public int smWorkers() {
        return smWorkers;
    }

    public SimGpuConfig smWorkers(final int workers) {
        open();
        smWorkers = workers;
        return this;
    }

    /** Seed of the drain-delay RNG: the same seed gives the same landing order (default 1). */
    public long seed() {
        return seed;
    }

    public SimGpuConfig seed(final long s) {
        open();
        seed = s;
        return this;
    }

    /** Time source of drain deadlines and events ({@code ManualClock} in deterministic tests). */
    public NanoClock clock() {
        return clock;
    }

    public SimGpuConfig clock(final NanoClock c) {
        open();
        clock = c;
        return this;
    }

    /** Shortest delay between posting a NIC write and its landing (default 2 us). */
    public long minDrainNanos() {
        return minDrainNanos;
    }

    public SimGpuConfig minDrainNanos(final long nanos) {
        open();
        minDrainNanos = nanos;
        return this;
    }

    /** Longest such delay (default 200 us). */
    public long maxDrainNanos() {
        return maxDrainNanos;
    }

    public SimGpuConfig maxDrainNanos(final long nanos) {
        open();
        maxDrainNanos = nanos;
        return this;
    }

    /** A NIC write lands in pieces of this size; PCIe max payload is 128-512 B on real systems (default 256). */
    public int chunkBytes() {
        return chunkBytes;
    }

    public SimGpuConfig chunkBytes(final int bytes) {
        open();
        chunkBytes = bytes;
        return this;
    }

    /** Bytes of posted writes in flight per GPU before the NIC is back-pressured (default 16 MiB). */
    public int stagingBytes() {
        return stagingBytes;
    }

    public SimGpuConfig stagingBytes(final int bytes) {
        open();
        stagingBytes = bytes;
        return this;
    }

    /** Posted write chunks in flight per GPU before the NIC is back-pressured, a power of two (default 65536). */
    public int maxInFlight() {
        return maxInFlight;
    }

    public SimGpuConfig maxInFlight(final int chunks) {
        open();
        maxInFlight = chunks;
        return this;
    }

    /**
     * true (default): a background agent lands writes when their delay expires; false: only explicit drains and the
     * events of the model land them (deterministic tests).
     */
    public boolean autoDrain() {
        return autoDrain;
    }

    public SimGpuConfig autoDrain(final boolean on) {
        open();
        autoDrain = on;
        return this;
    }

    /**
     * true: a NIC write that nothing can observe in flight lands at once, straight from the NIC's bytes into device
     * memory (one copy, no staging, no queue entry): when no stream operation or kernel is running on the GPU, no
     * other GPU of the system can read it, and nothing earlier is still posted. Who could tell? Only a kernel or
     * copy running during the write (then the write is posted as usual, with its delays); one started later lands
     * every posted write before it runs anyway, and the CPU sees device memory only through such operations. The
     * stats count these writes as posted, landed and retired, and apart as {@code landedAtOnce}. Needs
     * {@link #autoDrain} (deterministic runs step every chunk). Default false; {@link #throughput} turns it on.
     */
    public boolean landUnobserved() {
        return landUnobserved;
    }

    public SimGpuConfig landUnobserved(final boolean on) {
        open();
        landUnobserved = on;
        return this;
    }

    /**
     * Whether a synchronous host-to-device copy into a NIC-mapped buffer without {@code SYNC_MEMOPS} lands lazily
     * (default on): it is held and applied at this GPU's next synchronizing event (any work submission, copy,
     * stream or event synchronize, {@link SimGpu#landDeferredCopies}), so a NIC access in between sees the old
     * bytes, as CUDA allows. Off: every synchronous copy lands before it returns. Buffers with the attribute, and
     * buffers no NIC maps, are unaffected either way, since only a third-party device can tell the difference.
     */
    public boolean deferUnsyncedCopies() {
        return deferUnsyncedCopies;
    }

    public SimGpuConfig deferUnsyncedCopies(final boolean on) {
        open();
        deferUnsyncedCopies = on;
        return this;
    }

    /** Timeout of waits that have no explicit one, e.g. stream threads waiting on SM workers (default 30 s). */
    public Duration defaultTimeout() {
        return defaultTimeout;
    }

    public SimGpuConfig defaultTimeout(final Duration timeout) {
        open();
        defaultTimeout = timeout;
        return this;
    }

    /** Whether {@link #conclude()} has validated and frozen this config. */
    public boolean isConcluded() {
        return concluded;
    }

    /**
     * Validates every value and their combinations, naming the setting, and freezes the config. Concluding a
     * concluded config does nothing: it was validated and cannot have changed since.
     */
    public SimGpuConfig conclude() {
        if (concluded) {
            return this;
        }
        if (memBytes < 1) {
            throw new IllegalArgumentException("memBytes must be > 0: " + memBytes);
        }
        if (smWorkers < 1 || smWorkers > 1024) {
            throw new IllegalArgumentException("smWorkers must be in 1..1024: " + smWorkers);
        }
        if (stagingBytes < 1) {
            throw new IllegalArgumentException("stagingBytes must be > 0: " + stagingBytes);
        }
        if (chunkBytes <= 0 || chunkBytes > stagingBytes) {
            throw new IllegalArgumentException("chunkBytes must be in (0, stagingBytes]: " + chunkBytes);
        }
        if (maxInFlight < 1 || Integer.bitCount(maxInFlight) != 1) {
            throw new IllegalArgumentException("maxInFlight must be a power of two: " + maxInFlight);
        }
        if (minDrainNanos < 0 || maxDrainNanos < minDrainNanos) {
            throw new IllegalArgumentException("drain delays must satisfy 0 <= min <= max: minDrainNanos "
                + minDrainNanos + ", maxDrainNanos " + maxDrainNanos);
        }
        Objects.requireNonNull(clock, "clock");
        if (landUnobserved && !autoDrain) {
            throw new IllegalArgumentException("landUnobserved needs autoDrain: a deterministic run steps every chunk");
        }
        if (defaultTimeout == null || defaultTimeout.isNegative() || defaultTimeout.isZero()) {
            throw new IllegalArgumentException("defaultTimeout must be > 0: " + defaultTimeout);
        }
        concluded = true;
        return this;
    }

    private void open() {
        if (concluded) {
            throw new IllegalStateException("SimGpuConfig already concluded (a GPU system uses it); make a new one");
        }
    }

    @Override
    public String toString() {
        return "SimGpuConfig[memBytes=" + memBytes + ", smWorkers=" + smWorkers + ", seed=" + seed + ", clock="
            + clock + ", minDrainNanos=" + minDrainNanos + ", maxDrainNanos=" + maxDrainNanos + ", chunkBytes="
            + chunkBytes + ", stagingBytes=" + stagingBytes + ", maxInFlight=" + maxInFlight + ", autoDrain="
            + autoDrain + ", landUnobserved=" + landUnobserved + ", deferUnsyncedCopies=" + deferUnsyncedCopies
            + ", defaultTimeout=" + defaultTimeout + "]";
    }
}
