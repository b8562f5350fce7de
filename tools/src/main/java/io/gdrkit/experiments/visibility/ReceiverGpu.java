/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.experiments.visibility;

import io.gdrkit.agent.ManualClock;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.NicMapping;
import io.gdrkit.gpu.sim.SimDeviceBuffer;
import io.gdrkit.gpu.sim.SimGpu;
import io.gdrkit.gpu.sim.SimGpuConfig;
import io.gdrkit.gpu.sim.SimPreset;
import io.gdrkit.tools.GpuSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;

/**
 * The receiver's GPU as the experiment needs it: the same kernels (names and parameters) on a simulated GPU and on
 * CUDA, and the places where the two differ — where host-visible words live and who lets simulated time pass.
 *
 * <ul>
 *   <li>CPU-published flags: on the simulated GPU a word in GPU memory stored by the CPU through BAR1 (a posted
 *       write on the same model as the NIC's); on CUDA pinned host memory mapped into the GPU (where NCCL keeps its
 *       tail). Never a CUDA work submission: that would order the NIC's writes by itself.</li>
 *   <li>Results: on the simulated GPU device memory the host reads directly; on CUDA pinned host memory the kernel
 *       stores into with release semantics.</li>
 * </ul>
 */
final class ReceiverGpu implements AutoCloseable {
    static final Duration TIMEOUT = Duration.ofSeconds(60);
    final GpuDevice gpu;
    private final SimGpu sim;
    private final Arena arena = Arena.ofShared();
    private GpuStream work;

    private ReceiverGpu(final GpuDevice gpu) {
        this.gpu = gpu;
        this.sim = gpu instanceof SimGpu s ? s : null;
    }

    /**
     * A simulated GPU runs deterministically: NIC writes land only when the model's events land them or the
     * receiver lets time pass ({@link #letTimePass}), in an order drawn from the seed.
     */
    static ReceiverGpu open(final VisConfig c, final long memBytes) {
        if (c.simulated()) {
            final SimGpuConfig cfg = SimGpuConfig.deterministic(c.seed(), new ManualClock(0))
                .withMemBytes(Math.max(64L << 20, memBytes + (16L << 20)));
            return new ReceiverGpu(SimGpu.create(SimPreset.byLabel(c.gpu().substring(4)), cfg));
        }
        return new ReceiverGpu(GpuSpec.open(c.gpu()));
    }

    boolean simulated() {
        return sim != null;
    }

    String ordering() {
        return sim != null ? sim.postedWrites().ordering().name() : gpu.attributes().writesOrdering().name();
    }

    /** Host-visible memory a kernel writes or reads: device memory (sim) or pinned host memory (CUDA). */
    final class Words implements AutoCloseable {
        final DeviceBuffer device;
        final MemorySegment host;
        private final NicMapping bar;
        private final MemorySegment word = arena.allocate(8, 8);

        Words(final long bytes) {
            if (sim != null) {
                device = sim.alloc(bytes);
                sim.copyHtoD(device, 0, arena.allocate(bytes, 8), 0, bytes);
                host = ((SimDeviceBuffer) device).memory();
                bar = sim.mapForNic(device);
            } else {
                device = null;
                host = gpu.allocHost(bytes);
                host.fill((byte) 0);
                bar = null;
            }
        }

        KernelArgs addTo(final KernelArgs a) {
            // pinned host memory: the device address of the mapping (equal to the host address with UVA)
            return device != null ? a.ptr(device) : a.u64(((io.gdrkit.gpu.cuda.CudaGpu) gpu).devicePointer(host));
        }

        /** The receiver's CPU stores a 32-bit word: through BAR1 (sim) or into pinned host memory (CUDA). */
        void cpuStore(final long offset, final int value) {
            if (bar != null) {
                word.set(ValueLayout.JAVA_INT, 0, value);
                bar.write(offset, word, 0, 4);
            } else {
                host.set(ValueLayout.JAVA_INT.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), offset, value);
                java.lang.invoke.VarHandle.fullFence();
            }
        }

        long getLongAcquire(final long offset) {
            final long v = host.get(ValueLayout.JAVA_LONG, offset);
            java.lang.invoke.VarHandle.acquireFence();
            return v;
        }

        int getInt(final long offset) {
            return host.get(ValueLayout.JAVA_INT, offset);
        }

        @Override
        public void close() {
            if (bar != null) {
                bar.close();
                sim.free(device);
            } else {
                gpu.freeHost(host);
            }
        }
    }

    Words words(final long bytes) {
        return new Words(bytes);
    }

    /** The stream the receiver's CPU submits its own work on (fills, launched consumers); one per GPU. */
    GpuStream work() {
        if (work == null) {
            work = gpu.createStream(); // created once: a stream is a thread on the simulator, slow to stop
        }
        return work;
    }

    /** Fills a buffer with round {@code round}'s pattern on the device (synchronized: everything lands). */
    void fill(final DeviceBuffer buf, final int round, final int seed) {
        gpu.launch(gpu.function("kernels", "fill_pattern"), Dim3.of(64), Dim3.of(256), work(),
            new KernelArgs(4).ptr(buf).u64(buf.size()).u32(round).u32(seed));
        gpu.synchronize(work(), TIMEOUT);
    }

    /**
     * Lets time pass on the PCIe path of a simulated GPU, one posted chunk at a time in the model's seeded order,
     * until {@code landed} is true; a no-op on CUDA (time passes by itself).
     *
     * @return false when nothing is left to land and {@code landed} is still false
     */
    boolean letTimePass(final java.util.function.BooleanSupplier landed) {
        if (sim == null) {
            return true;
        }
        while (!landed.getAsBoolean()) {
            if (!sim.postedWrites().stepLanding()) {
                return landed.getAsBoolean();
            }
        }
        return true;
    }

    /** Lands whatever is still posted (simulated GPU), before the next round is granted. */
    void landAll() {
        if (sim != null) {
            while (sim.postedWrites().stepLanding()) {
                // the model's seeded order
            }
        }
    }

    @Override
    public void close() {
        if (work != null) {
            gpu.destroyStream(work);
        }
        arena.close();
        gpu.close();
    }
}
