/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.net;

import io.gdrkit.core.agent.ManualClock;
import io.gdrkit.gdr.gate.GpuCaps;
import io.gdrkit.gdr.gate.NetCaps;
import io.gdrkit.gdr.topo.PathType;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.sim.SimGpu;
import io.gdrkit.gpu.sim.SimGpuConfig;
import io.gdrkit.gpu.sim.SimPreset;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.VerbsContext;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

/**
 * Two ranks, each with a simulated GPU and a software NIC on one in-JVM fabric, the NICs probed for what they
 * offer: rank 0 sends from GPU 0 through soft0 (NET/IB/0), rank 1 receives into its GPU through soft1 (NET/IB/1).
 */
final class SoftNet implements AutoCloseable {
    static final int CUDA_13 = 13000;

    final SoftNicDriver driver;
    final SimGpu gpu0;
    final SimGpu gpu1;
    final VerbsContext ctx0;
    final VerbsContext ctx1;
    final NetNic nic0;
    final NetNic nic1;
    final NetEndpoint sender;
    final NetEndpoint receiver;
    final Arena arena = Arena.ofShared();

    SoftNet(final SoftNicContext nicCtx, final SimPreset senderGpu, final SimPreset receiverGpu) {
        driver = SoftNicDriver.launch(nicCtx);
        gpu0 = SimGpu.create(senderGpu, SimGpuConfig.deterministic(1, new ManualClock(0)));
        gpu1 = SimGpu.create(receiverGpu, SimGpuConfig.deterministic(2, new ManualClock(0)));
        ctx0 = driver.addDevice("soft0").open();
        ctx1 = driver.addDevice("soft1").open();
        nic0 = new NetNic(0, ctx0, NetCaps.probe(0, ctx0, gpu0));
        nic1 = new NetNic(1, ctx1, NetCaps.probe(1, ctx1, gpu1));
        sender = new NetEndpoint(0, gpu0, caps(gpu0), nic0, PathType.PIX);
        receiver = new NetEndpoint(1, gpu1, caps(gpu1), nic1, PathType.PIX);
    }

    static GpuCaps caps(final GpuDevice gpu) {
        return GpuCaps.of(gpu, CUDA_13, false, false);
    }

    /** {@code len} bytes of seeded random data in host memory. */
    MemorySegment random(final int len, final long seed) {
        final MemorySegment host = arena.allocate(len, 4096);
        final SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < len; i++) {
            host.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt(256));
        }
        return host;
    }

    /** Fills the first {@code len} bytes of {@code buf} with seeded random data and returns them. */
    MemorySegment fill(final GpuDevice gpu, final DeviceBuffer buf, final int len, final long seed) {
        final MemorySegment host = random(len, seed);
        gpu.copyHtoD(buf, 0, host, 0, len);
        return host;
    }

    /** The first {@code len} bytes of a GPU buffer, read back with a GPU copy. */
    MemorySegment read(final GpuDevice gpu, final DeviceBuffer buf, final int len) {
        final MemorySegment host = arena.allocate(len);
        gpu.copyDtoH(host, 0, buf, 0, len);
        return host;
    }

    @Override
    public void close() {
        nic0.close();
        nic1.close();
        ctx0.close();
        ctx1.close();
        driver.close();
        gpu0.close();
        gpu1.close();
        arena.close();
    }
}
