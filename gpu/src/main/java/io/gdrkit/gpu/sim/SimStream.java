/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuException;
import io.gdrkit.gpu.GpuStream;

import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A simulated CUDA stream: one thread runs its operations (copies, launches, event records) strictly in submission
 * order. A failed operation leaves a sticky error, reported by the next synchronization, as CUDA does.
 */
public final class SimStream implements GpuStream {
    private record Op(String name, Runnable body) {
    }

    private final SimGpu gpu;
    private final int id;
    private final LinkedBlockingQueue<Op> ops = new LinkedBlockingQueue<>();
    private final Thread thread;
    private long submitted;
    private long completed;
    private volatile String running = "nothing";
    private volatile GpuException failure;
    private volatile boolean stopping;

    SimStream(final SimGpu gpu, final int id) {
        this.gpu = gpu;
        this.id = id;
        this.thread = Thread.ofPlatform().daemon(true).name("sim-gpu" + gpu.ordinal() + "-stream" + id)
            .start(this::run);
    }

    @Override
    public GpuDevice device() {
        return gpu;
    }

    public int id() {
        return id;
    }

    /** Queues an operation; returns its sequence number (1-based). */
    long submit(final String name, final Runnable body) {
        if (stopping) {
            throw new GpuException("CUDA_ERROR_INVALID_HANDLE", 400, "stream " + id + " of GPU " + gpu.ordinal()
                + " (simulated) is destroyed");
        }
        final long seq;
        synchronized (this) {
            seq = ++submitted;
        }
        ops.add(new Op(name, body));
        return seq;
    }

    private void run() {
        while (!stopping || !ops.isEmpty()) {
            final Op op;
            try {
                op = ops.poll(100, TimeUnit.MILLISECONDS);
            } catch (final InterruptedException e) {
                return;
            }
            if (op == null) {
                continue;
            }
            running = op.name;
            // a copy or kernel reads device memory while it runs: NIC writes meanwhile go through the posted queue
            gpu.postedWrites().observerStarted();
            try {
                if (failure == null) {
                    op.body.run();
                }
            } catch (final GpuException e) {
                failure = e;
            } catch (final RuntimeException | Error e) {
                failure = new GpuException("CUDA_ERROR_LAUNCH_FAILED", 719, op.name + " failed on stream " + id
                    + " of GPU " + gpu.ordinal() + " (simulated): " + e);
            } finally {
                gpu.postedWrites().observerEnded();
                running = "nothing";
                synchronized (this) {
                    completed++;
                    notifyAll();
                }
            }
        }
    }

    /** The sequence number of the last submitted operation. */
    synchronized long lastSubmitted() {
        return submitted;
    }

    synchronized boolean isComplete(final long seq) {
        return completed >= seq;
    }

    /** Waits until operation {@code seq} has completed; throws the stream's sticky error if there is one. */
    void await(final long seq, final Duration timeout, final String what) {
        final long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (this) {
            while (completed < seq) {
                final long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new GpuException("GDRKIT_TIMEOUT", -1, "timed out after " + timeout + " waiting for " + what
                        + " on stream " + id + " of GPU " + gpu.ordinal() + " (simulated): " + (seq - completed)
                        + " operation(s) outstanding, running " + running);
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(this, left);
                } catch (final InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new GpuException("GDRKIT_INTERRUPTED", -1, "interrupted waiting for " + what);
                }
            }
        }
        final GpuException f = failure;
        if (f != null) {
            throw f;
        }
    }

    void stop() {
        stopping = true;
        try {
            thread.join(TimeUnit.SECONDS.toMillis(10));
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return "SimStream[gpu" + gpu.ordinal() + " #" + id + ", simulated]";
    }
}
