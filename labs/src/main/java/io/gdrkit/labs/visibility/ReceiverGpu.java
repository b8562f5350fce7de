/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.visibility;

import io.gdrkit.core.agent.ManualClock;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.NicMapping;
import io.gdrkit.gpu.VisKernels;
import io.gdrkit.gpu.sim.SimDeviceBuffer;
import io.gdrkit.gpu.sim.SimGpu;
import io.gdrkit.gpu.sim.SimGpuConfig;
import io.gdrkit.gpu.sim.SimGpuSystem;
import io.gdrkit.gpu.cuda.CudaGpu;
import io.gdrkit.gpu.sim.SimPreset;
import io.gdrkit.gpu.devices.GpuDevices;
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
    /** The GPU the NIC writes (the data and NIC-written flags live here). */
    final GpuDevice gpu;
    /** The GPU the consumer kernels run on: {@link #gpu}, or its peer reading through peer access. */
    final GpuDevice consumer;
    private final SimGpu sim;
    private final SimGpu consumerSim;
    private final Arena arena = Arena.ofShared();
    private GpuStream work;
    private GpuStream fillStream;

    private ReceiverGpu(final GpuDevice gpu, final GpuDevice consumer) {
        this.gpu = gpu;
        this.consumer = consumer;
        this.sim = gpu instanceof SimGpu s ? s : null;
        this.consumerSim = consumer instanceof SimGpu s ? s : null;
    }

    /**
     * A simulated GPU runs deterministically: NIC writes land only when the model's events land them or the
     * receiver lets time pass ({@link #letTimePass}), in an order drawn from the seed.
     */
    static ReceiverGpu open(final VisConfig c, final long memBytes) {
        if (c.simulated()) {
            final SimGpuConfig cfg = SimGpuConfig.deterministic(c.seed(), new ManualClock(0))
                .memBytes(Math.max(64L << 20, memBytes + (16L << 20)));
            final SimPreset preset = SimPreset.byLabel(c.gpu().substring(4));
            if (!c.peerConsumer()) {
                final SimGpu g = SimGpu.create(preset, cfg);
                return new ReceiverGpu(g, g);
            }
            final SimGpuSystem system = SimGpuSystem.create(cfg, preset, preset);
            system.enablePeerAccess(1, 0);
            return new ReceiverGpu(system.gpu(0), system.gpu(1));
        }
        final GpuDevice g = GpuDevices.open(c.gpu());
        if (!c.peerConsumer()) {
            return new ReceiverGpu(g, g);
        }
        final int count = CudaGpu.probe().deviceCount();
        final int n = g.ordinal();
        if (count < 2) {
            g.close();
            throw new IllegalArgumentException("--consumer-gpu peer needs a second CUDA GPU; this host has " + count);
        }
        final CudaGpu peer = CudaGpu.open((n + 1) % count);
        if (!peer.canAccessPeer((CudaGpu) g)) {
            peer.close();
            g.close();
            throw new IllegalArgumentException("--consumer-gpu peer: CUDA GPU " + peer.ordinal() + " cannot access GPU "
                + n + " (cuDeviceCanAccessPeer = 0)");
        }
        peer.enablePeerAccess((CudaGpu) g);
        return new ReceiverGpu(g, peer);
    }

    boolean simulated() {
        return sim != null;
    }

    boolean peer() {
        return consumer != gpu;
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
            if (consumerSim != null) {
                device = consumerSim.alloc(bytes);
                consumerSim.copyHtoD(device, 0, arena.allocate(bytes, 8), 0, bytes);
                host = ((SimDeviceBuffer) device).memory();
                bar = consumerSim.mapForNic(device);
            } else {
                device = null;
                host = consumer.allocHost(bytes);
                host.fill((byte) 0);
                bar = null;
            }
        }

        KernelArgs addTo(final KernelArgs a) {
            // pinned host memory: the device address of the mapping (equal to the host address with UVA)
            return device != null ? a.ptr(device) : a.u64(((CudaGpu) consumer).devicePointer(host));
        }

        /**
         * The receiver's CPU publishes {@code value} as sender {@code sender}'s flag: a store through BAR1 (sim), or a
         * release store into pinned host memory (CUDA), so that nothing the CPU wrote before is reordered after it.
         */
        void publishFlag(final int sender, final int value) {
            if (bar != null) {
                word.set(ValueLayout.JAVA_INT, 0, value);
                bar.write(4L * sender, word, 0, 4);
            } else {
                VisKernels.publish(host, sender, value);
            }
        }

        @Override
        public void close() {
            if (bar != null) {
                bar.close();
                consumerSim.free(device);
            } else {
                consumer.freeHost(host);
            }
        }
    }

    Words words(final long bytes) {
        return new Words(bytes);
    }

    /** The stream the receiver's CPU submits its own work on (fills, launched consumers); one per GPU. */
    GpuStream work() {
        if (work == null) {
            work = consumer.createStream(); // created once: a stream is a thread on the simulator, slow to stop
        }
        return work;
    }

    /** Fills a buffer with round {@code round}'s pattern on the data GPU (synchronized: everything lands). */
    void fill(final DeviceBuffer buf, final int round, final int seed) {
        if (fillStream == null) {
            fillStream = gpu.createStream();
        }
        gpu.launch(gpu.function("kernels", "fill_pattern"), Dim3.of(64), Dim3.of(256), fillStream,
            new KernelArgs(4).ptr(buf).u64(buf.size()).u32(round).u32(seed));
        gpu.synchronize(fillStream, TIMEOUT);
    }

    /**
     * Lets time pass on the PCIe path of a simulated GPU, one posted chunk at a time in the model's seeded order,
     * until {@code landed} is true; a no-op on CUDA (time passes by itself).
     *
     * @return false when nothing is left to land and {@code landed} is still false
     */
    boolean letTimePass(final boolean flagsOnConsumer, final java.util.function.BooleanSupplier landed) {
        if (sim == null) {
            return true;
        }
        final SimGpu owner = flagsOnConsumer ? consumerSim : sim;
        while (!landed.getAsBoolean()) {
            if (!owner.postedWrites().stepLanding()) {
                return landed.getAsBoolean();
            }
        }
        return true;
    }

    /** Lands whatever is still posted (simulated GPU), before the next round is granted. */
    void landAll() {
        if (sim != null) {
            for (final SimGpu g : peer() ? new SimGpu[] {sim, consumerSim} : new SimGpu[] {sim}) {
                while (g.postedWrites().stepLanding()) {
                    // the model's seeded order
                }
            }
            if (peer()) {
                // and retired, so the peer starts the next round from memory that holds this round everywhere
                sim.flushGpuDirectRdmaWrites(io.gdrkit.gpu.FlushScope.TO_ALL_DEVICES);
            }
        }
    }

    @Override
    public void close() {
        if (work != null) {
            consumer.destroyStream(work);
        }
        if (fillStream != null) {
            gpu.destroyStream(fillStream);
        }
        arena.close();
        if (peer() && sim != null) {
            sim.system().close(); // the two simulated GPUs belong to a system that is closed as one
            return;
        }
        if (peer()) {
            consumer.close();
        }
        gpu.close();
    }
}
