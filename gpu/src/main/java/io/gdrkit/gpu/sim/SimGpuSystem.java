/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import io.gdrkit.core.agent.Agent;
import io.gdrkit.core.agent.AgentRunner;
import io.gdrkit.core.agent.BackoffIdleStrategy;
import io.gdrkit.gpu.GpuException;

import java.util.ArrayList;
import java.util.List;

/**
 * A simulated host with one or more GPUs, peer access between them, and the agent that lands posted NIC writes
 * when their drain delays expire (started only when {@link SimGpuConfig#autoDrain()}; otherwise tests step
 * {@link #drainAgent()} or the queues themselves).
 */
public final class SimGpuSystem implements AutoCloseable {
    /**
     * What the simulated driver answers to cuDriverGetVersion: 13000 (CUDA 13.0), a driver new enough for DMA-BUF
     * (NCCL's floor is 11.7), like the drivers shipped with the H100/H200 generation.
     */
    public static final int DRIVER_VERSION = 13000;

    private final SimGpuConfig config;
    private final List<SimGpu> gpus = new ArrayList<>();
    private final boolean[][] peer;
    private final Agent drainAgent;
    private final AgentRunner drainRunner;

    private SimGpuSystem(final SimGpuConfig config, final SimPreset... presets) {
        if (presets.length == 0) {
            throw new IllegalArgumentException("a simulated system needs at least one GPU preset");
        }
        this.config = config.conclude();
        for (int i = 0; i < presets.length; i++) {
            gpus.add(new SimGpu(this, i, presets[i], config));
        }
        for (final SimGpu g : gpus) {
            g.postedWrites().peersCanRead(presets.length > 1);
        }
        this.peer = new boolean[presets.length][presets.length];
        final SimGpu[] all = gpus.toArray(new SimGpu[0]);
        this.drainAgent = new Agent() {
            @Override
            public int doWork() {
                int work = 0;
                for (final SimGpu g : all) {
                    work += g.postedWrites().drain();
                }
                return work;
            }

            @Override
            public String roleName() {
                return "sim-gpu-drain";
            }
        };
        // park quickly when idle: the drainer must not take a core from the NIC on small machines
        this.drainRunner = config.autoDrain()
            ? new AgentRunner(drainAgent, new BackoffIdleStrategy(0, 10, 5_000, 50_000)).start() : null;
    }

    /** A system with one GPU per preset, ordinals in order; concludes {@code config}. */
    public static SimGpuSystem create(final SimGpuConfig config, final SimPreset... presets) {
        return new SimGpuSystem(config, presets);
    }

    public SimGpu gpu(final int ordinal) {
        if (ordinal < 0 || ordinal >= gpus.size()) {
            throw new GpuException("CUDA_ERROR_INVALID_DEVICE", 101, "no simulated GPU " + ordinal + " (have "
                + gpus.size() + ")");
        }
        return gpus.get(ordinal);
    }

    public int count() {
        return gpus.size();
    }

    public SimGpuConfig config() {
        return config;
    }

    /** Lets kernels and copies on GPU {@code from} access memory of GPU {@code to} ({@code cuCtxEnablePeerAccess}). */
    public synchronized void enablePeerAccess(final int from, final int to) {
        gpu(from);
        gpu(to);
        if (from == to) {
            throw new GpuException("CUDA_ERROR_INVALID_DEVICE", 101, "peer access from a GPU to itself");
        }
        if (peer[from][to]) {
            throw new GpuException("CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", 704, "GPU " + from + " -> " + to);
        }
        peer[from][to] = true;
    }

    public synchronized boolean peerAccessEnabled(final int from, final int to) {
        return peer[from][to];
    }

    /** The live buffer, on any GPU of this system, whose range holds device address {@code address}, or null. */
    SimDeviceBuffer bufferAt(final long address) {
        for (final SimGpu g : gpus) {
            final SimDeviceBuffer b = g.bufferAt(address);
            if (b != null) {
                return b;
            }
        }
        return null;
    }

    /** The agent that lands and retires posted writes whose delays have expired, on every GPU. */
    public Agent drainAgent() {
        return drainAgent;
    }

    private boolean closed;

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (drainRunner != null) {
            drainRunner.close();
        }
        for (final SimGpu g : gpus) {
            g.shutdown();
        }
        for (final SimGpu g : gpus) {
            g.releaseArena();
        }
    }

    @Override
    public String toString() {
        return "SimGpuSystem[" + gpus.size() + " simulated GPU(s)]";
    }
}
