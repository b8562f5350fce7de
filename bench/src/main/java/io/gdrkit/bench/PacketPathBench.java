/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.bench;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.devices.GpuDevices;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.softnic.fabric.SpscRingBuffer;
import io.gdrkit.softnic.wire.BthOpcode;
import io.gdrkit.softnic.wire.Packet;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The software NIC's per-packet paths, one packet per op, one thread, for the regression guard
 * ({@code bench/perf-check.sh}):
 * <ul>
 *   <li>{@link #ringClaimCommit}: claim a 64-byte record on the link ring, write the LRH/BTH, commit, read it back;</li>
 *   <li>{@link #requesterBuild}: what the requester does for one 4 KiB WRITE MIDDLE packet: claim, headers, copy
 *       the payload out of the source MR, commit (and the ring read that frees the slot);</li>
 *   <li>{@link #responderPlaceHost} / {@link #responderPlaceSimGpu}: what the responder does with it: parse the
 *       headers and place the payload in host memory, or post it into a simulated H200 (fence every 64 packets,
 *       as an ACK every 64 packets does).</li>
 * </ul>
 * Everything is preallocated; an op allocates nothing.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class PacketPathBench {
    private static final int PAYLOAD = 4096;
    private static final int REGION = 1 << 20;

    private Arena arena;
    private SpscRingBuffer ring;
    private final Packet out = new Packet();
    private final Packet in = new Packet();
    private MemorySegment source;
    private MemorySegment target;
    private MemorySegment built;
    private long offset;
    private int placed;
    private GpuDevice gpu;
    private DeviceBuffer gpuBuffer;
    private GpuDmaMemory gpuMemory;
    private final SpscRingBuffer.RecordHandler drop = (b, o, l) -> { };

    @Setup
    public void setUp() {
        arena = Arena.ofShared();
        ring = new SpscRingBuffer(arena.allocate(SpscRingBuffer.segmentSize(1 << 20), 64));
        source = arena.allocate(REGION, 4096);
        target = arena.allocate(REGION, 4096);
        source.fill((byte) 0x5a);
        // one WRITE MIDDLE packet to place, built once
        final int len = Packet.lengthFor(BthOpcode.RDMA_WRITE_MIDDLE, PAYLOAD);
        built = arena.allocate(len, 64);
        out.init(built, 0, len, 1, 2, BthOpcode.RDMA_WRITE_MIDDLE, 7, 100, false, false);
        MemorySegment.copy(source, 0, built, out.payloadOffset(), PAYLOAD);
        gpu = GpuDevices.open("sim:h200");
        gpuBuffer = gpu.alloc(REGION);
        gpuMemory = new GpuDmaMemory(gpu, gpuBuffer);
    }

    @TearDown
    public void tearDown() {
        gpuMemory.close();
        gpu.free(gpuBuffer);
        gpu.close();
        arena.close();
    }

    @Benchmark
    public int ringClaimCommit() {
        final long at = ring.tryClaim(64);
        out.init(ring.buffer(), at, 64, 1, 2, BthOpcode.ACKNOWLEDGE, 7, 100, false, false);
        ring.commit();
        return ring.read(drop, 1);
    }

    @Benchmark
    public int requesterBuild() {
        final int len = Packet.lengthFor(BthOpcode.RDMA_WRITE_MIDDLE, PAYLOAD);
        final long at = ring.tryClaim(len);
        out.init(ring.buffer(), at, len, 1, 2, BthOpcode.RDMA_WRITE_MIDDLE, 7, 100, false, false);
        MemorySegment.copy(source, offset, ring.buffer(), out.payloadOffset(), PAYLOAD);
        offset = (offset + PAYLOAD) % REGION;
        ring.commit();
        return ring.read(drop, 1);
    }

    @Benchmark
    public int responderPlaceHost() {
        in.wrap(built, 0, (int) built.byteSize());
        MemorySegment.copy(built, in.payloadOffset(), target, offset, in.payloadLength());
        offset = (offset + PAYLOAD) % REGION;
        return in.psn();
    }

    @Benchmark
    public int responderPlaceSimGpu() {
        in.wrap(built, 0, (int) built.byteSize());
        gpuMemory.dmaWrite(offset, built, in.payloadOffset(), in.payloadLength());
        offset = (offset + PAYLOAD) % REGION;
        if (++placed % 64 == 0) {
            gpuMemory.completionFence();
        }
        return in.psn();
    }
}
