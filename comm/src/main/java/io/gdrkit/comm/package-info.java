/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
/**
 * The communicator: NCCL's collectives and point-to-point calls among the ranks of a run, on Java data.
 *
 * <p>{@link io.gdrkit.comm.Comm} is the entry point. One process starts a {@link io.gdrkit.comm.CommRoot} and hands
 * its id to every rank (or {@link io.gdrkit.comm.launch.Launcher} does it for rank processes); each rank opens a
 * {@code Comm} from a {@link io.gdrkit.comm.CommConfig} (the run's id, its rank, the number of ranks, the
 * {@link io.gdrkit.comm.Fabric} that connects the ranks) and then calls the same collectives in the same order:
 * allreduce, allgather, reduce-scatter, broadcast, reduce, alltoall, send and receive, blocking or asynchronous, on
 * {@link java.lang.foreign.MemorySegment}s, Java arrays or GPU buffers.
 *
 * <pre>{@code
 * try (Comm comm = Comm.open(new CommConfig().id(id).rank(r).nranks(4).fabric(Fabric.SHM))) {
 *     comm.allReduce(grad, grad, RedOp.SUM);
 * }
 * }</pre>
 *
 * <p>Underneath, {@link io.gdrkit.comm.CollWorld} builds a rank's stack (fabric, software NICs, a
 * {@link io.gdrkit.comm.transport.NetTransport}, GPU and GDR decisions) and {@link io.gdrkit.comm.Communicator} is
 * the engine that runs the collectives over it ({@link io.gdrkit.comm.Collectives}), with its tuning in
 * {@link io.gdrkit.comm.CollContext}. {@link io.gdrkit.comm.CollRun} and {@link io.gdrkit.comm.CollLocal} run
 * nccl-tests-style sweeps over that engine and report {@link io.gdrkit.comm.CollResult} rows.
 *
 * <p>Failures are {@link io.gdrkit.comm.CollException}s that name what went wrong (a peer gone, a timeout, bad data
 * from a peer); bad arguments are {@link IllegalArgumentException}s naming the argument.
 */
package io.gdrkit.comm;
