/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;

/**
 * NCCL's calls on host data, which {@link Comm} implements: on {@link MemorySegment}s (native or heap), on Java
 * arrays ({@code float[]}, {@code double[]}, {@code int[]}, {@code long[]}), blocking and asynchronous. Counts are
 * elements of the given {@link DataType}; every rank calls the same collectives in the same order.
 */
public interface CommCalls {
    /** {@return the number of ranks} */
    int size();

    /**
     * Runs {@code task} on the operation thread after every call submitted before it.
     *
     * @param task the calls to run
     * @return completes when the task returns; exceptionally with what it threw
     */
    CompletableFuture<Void> submit(Comm.Task task);

    /**
     * Returns on each rank once every rank has called it (MPI_Barrier): a round of flags through shared memory when
     * every rank is on this host, a one-element allreduce over the network otherwise.
     */
    void barrier();

    /**
     * {@link #barrier()}, asynchronously, on the operation thread after the calls submitted before it.
     *
     * @return completes once every rank has entered the barrier
     */
    default CompletableFuture<Void> barrierAsync() {
        return submit(Comm::barrier);
    }

    /**
     * {@code recv = send[0] op send[1] op ... op send[n-1]} element-wise over all ranks, on every rank.
     *
     * @param send  {@code count} elements of this rank's input
     * @param recv  {@code count} elements of output (may be {@code send}: in place)
     * @param count elements per rank
     * @param type  the element type
     * @param op    the reduction
     */
    void allReduce(final MemorySegment send, final MemorySegment recv, final long count, final DataType type,
                   final RedOp op);

    /**
     * {@link #allReduce(MemorySegment, MemorySegment, long, DataType, RedOp)}, asynchronously, on the operation thread after the calls submitted before it; a bad argument completes
     * the future exceptionally.
     *
     * @param send  input
     * @param recv  output
     * @param count elements
     * @param type  element type
     * @param op    reduction
     * @return completes when the output holds the result
     */
    default CompletableFuture<Void> allReduceAsync(final MemorySegment send, final MemorySegment recv,
                                                   final long count, final DataType type, final RedOp op) {
        return submit(c -> c.allReduce(send, recv, count, type, op));
    }

    /**
     * Every rank's {@code count} elements of send, in rank order, in every rank's recv ({@code size() * count}
     * elements).
     *
     * @param send  {@code count} elements (may be this rank's block of recv: in place)
     * @param recv  {@code size() * count} elements
     * @param count elements per rank
     * @param type  the element type
     */
    void allGather(final MemorySegment send, final MemorySegment recv, final long count, final DataType type);

    /**
     * {@link #allGather(MemorySegment, MemorySegment, long, DataType)}, asynchronously, on the operation thread after the calls submitted before it; a bad argument completes
     * the future exceptionally.
     *
     * @param send  input
     * @param recv  output
     * @param count elements per rank
     * @param type  element type
     * @return completes when the output holds every rank's block
     */
    default CompletableFuture<Void> allGatherAsync(final MemorySegment send, final MemorySegment recv,
                                                   final long count, final DataType type) {
        return submit(c -> c.allGather(send, recv, count, type));
    }

    /**
     * Reduces {@code size()} blocks of {@code recvCount} elements of send across ranks; block {@code rank()} of the
     * result lands in this rank's recv.
     *
     * @param send      {@code size() * recvCount} elements
     * @param recv      {@code recvCount} elements (may be this rank's block of send: in place)
     * @param recvCount elements each rank receives
     * @param type      the element type
     * @param op        the reduction
     */
    void reduceScatter(final MemorySegment send, final MemorySegment recv, final long recvCount, final DataType type,
                       final RedOp op);

    /**
     * {@link #reduceScatter(MemorySegment, MemorySegment, long, DataType, RedOp)}, asynchronously, on the operation thread after the calls submitted before it; a bad argument completes
     * the future exceptionally.
     *
     * @param send      input
     * @param recv      output
     * @param recvCount elements each rank receives
     * @param type      element type
     * @param op        reduction
     * @return completes when the output holds this rank's reduced block
     */
    default CompletableFuture<Void> reduceScatterAsync(final MemorySegment send, final MemorySegment recv,
                                                       final long recvCount, final DataType type, final RedOp op) {
        return submit(c -> c.reduceScatter(send, recv, recvCount, type, op));
    }

    /**
     * The root's {@code count} elements of send in every rank's recv.
     *
     * @param send  the root's input (read on the root only)
     * @param recv  {@code count} elements of output (may be {@code send}: in place)
     * @param count elements
     * @param type  the element type
     * @param root  the rank whose data goes out
     */
    void broadcast(final MemorySegment send, final MemorySegment recv, final long count, final DataType type,
                   final int root);

    /**
     * {@link #broadcast(MemorySegment, MemorySegment, long, DataType, int)}, asynchronously, on the operation thread after the calls submitted before it; a bad argument completes
     * the future exceptionally.
     *
     * @param send  input (root)
     * @param recv  output
     * @param count elements
     * @param type  element type
     * @param root  the rank whose data goes out
     * @return completes when the output holds the root's data
     */
    default CompletableFuture<Void> broadcastAsync(final MemorySegment send, final MemorySegment recv,
                                                   final long count, final DataType type, final int root) {
        return submit(c -> c.broadcast(send, recv, count, type, root));
    }

    /**
     * {@code recv = send[0] op ... op send[n-1]} on the root only.
     *
     * @param send  {@code count} elements of this rank's input
     * @param recv  the root's output of {@code count} elements (may be {@code send}: in place); other ranks may
     *              pass null
     * @param count elements
     * @param type  the element type
     * @param op    the reduction
     * @param root  the rank that receives the result
     */
    void reduce(final MemorySegment send, final MemorySegment recv, final long count, final DataType type,
                final RedOp op, final int root);

    /**
     * {@link #reduce(MemorySegment, MemorySegment, long, DataType, RedOp, int)}, asynchronously, on the operation thread after the calls submitted before it; a bad argument completes
     * the future exceptionally.
     *
     * @param send  input
     * @param recv  output on the root (null elsewhere)
     * @param count elements
     * @param type  element type
     * @param op    reduction
     * @param root  the rank that receives the result
     * @return completes when this rank's part is done (on the root: the output holds the result)
     */
    default CompletableFuture<Void> reduceAsync(final MemorySegment send, final MemorySegment recv, final long count,
                                                final DataType type, final RedOp op, final int root) {
        return submit(c -> c.reduce(send, recv, count, type, op, root));
    }

    /**
     * Block p of this rank's send ({@code count} elements) goes to rank p, landing in its recv at block
     * {@code rank()}.
     *
     * @param send  {@code size() * count} elements
     * @param recv  {@code size() * count} elements (may overlap send: then send is copied first)
     * @param count elements per block
     * @param type  the element type
     */
    void allToAll(final MemorySegment send, final MemorySegment recv, final long count, final DataType type);

    /**
     * {@link #allToAll(MemorySegment, MemorySegment, long, DataType)}, asynchronously, on the operation thread after the calls submitted before it; a bad argument completes
     * the future exceptionally.
     *
     * @param send  input
     * @param recv  output
     * @param count elements per block
     * @param type  element type
     * @return completes when the output holds every rank's block
     */
    default CompletableFuture<Void> allToAllAsync(final MemorySegment send, final MemorySegment recv, final long count,
                                                  final DataType type) {
        return submit(c -> c.allToAll(send, recv, count, type));
    }

    /**
     * Sends {@code count} elements to {@code peer}, which calls {@link #recv} for them. Outside a group this returns
     * once the data has left (the peer must be receiving); inside a group it pairs with a receive.
     *
     * @param buf   the data
     * @param count elements
     * @param type  the element type
     * @param peer  the receiving rank
     */
    void send(final MemorySegment buf, final long count, final DataType type, final int peer);

    /**
     * Receives {@code count} elements from {@code peer}, which calls {@link #send} with them.
     *
     * @param buf   where the data lands
     * @param count elements
     * @param type  the element type
     * @param peer  the sending rank
     */
    void recv(final MemorySegment buf, final long count, final DataType type, final int peer);

    /**
     * {@link #allReduce(MemorySegment, MemorySegment, long, DataType, RedOp)} of {@code send.length} floats.
     *
     * @param send this rank's input
     * @param recv the output, at least as long (may be {@code send})
     * @param op   the reduction
     */
    default void allReduce(final float[] send, final float[] recv, final RedOp op) {
        allReduce(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.FLOAT32, op);
    }

    /**
     * {@link #allGather(MemorySegment, MemorySegment, long, DataType)} of {@code send.length} floats per rank.
     *
     * @param send this rank's block
     * @param recv {@code size() * send.length} elements
     */
    default void allGather(final float[] send, final float[] recv) {
        allGather(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.FLOAT32);
    }

    /**
     * {@link #reduceScatter(MemorySegment, MemorySegment, long, DataType, RedOp)}: this rank receives
     * {@code recv.length} floats.
     *
     * @param send {@code size() * recv.length} elements
     * @param recv this rank's reduced block
     * @param op   the reduction
     */
    default void reduceScatter(final float[] send, final float[] recv, final RedOp op) {
        reduceScatter(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), recv.length, DataType.FLOAT32, op);
    }

    /**
     * {@link #broadcast(MemorySegment, MemorySegment, long, DataType, int)} in place: the root's {@code buf} in
     * every rank's {@code buf}.
     *
     * @param buf  the root's data; the output everywhere
     * @param root the rank whose data goes out
     */
    default void broadcast(final float[] buf, final int root) {
        final MemorySegment s = MemorySegment.ofArray(buf);
        broadcast(s, s, buf.length, DataType.FLOAT32, root);
    }

    /**
     * {@link #reduce(MemorySegment, MemorySegment, long, DataType, RedOp, int)} of {@code send.length} floats.
     *
     * @param send this rank's input
     * @param recv the root's output (may be {@code send}); null on other ranks
     * @param op   the reduction
     * @param root the rank that receives the result
     */
    default void reduce(final float[] send, final float[] recv, final RedOp op, final int root) {
        reduce(MemorySegment.ofArray(send), recv == null ? null : MemorySegment.ofArray(recv), send.length,
            DataType.FLOAT32, op, root);
    }

    /**
     * {@link #allToAll(MemorySegment, MemorySegment, long, DataType)}: {@code send.length / size()} floats to each
     * rank.
     *
     * @param send {@code size()} blocks
     * @param recv {@code size()} blocks
     */
    default void allToAll(final float[] send, final float[] recv) {
        if (send.length % size() != 0) {
            throw new IllegalArgumentException("allToAll: " + send.length + " elements are not " + size()
                + " equal blocks");
        }
        allToAll(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length / size(), DataType.FLOAT32);
    }

    /**
     * {@link #send(MemorySegment, long, DataType, int)} of {@code buf.length} floats.
     *
     * @param buf  the data
     * @param peer the receiving rank
     */
    default void send(final float[] buf, final int peer) {
        send(MemorySegment.ofArray(buf), buf.length, DataType.FLOAT32, peer);
    }

    /**
     * {@link #recv(MemorySegment, long, DataType, int)} of {@code buf.length} floats.
     *
     * @param buf  where the data lands
     * @param peer the sending rank
     */
    default void recv(final float[] buf, final int peer) {
        recv(MemorySegment.ofArray(buf), buf.length, DataType.FLOAT32, peer);
    }

    /**
     * {@link #allReduce(MemorySegment, MemorySegment, long, DataType, RedOp)} of {@code send.length} doubles.
     *
     * @param send this rank's input
     * @param recv the output, at least as long (may be {@code send})
     * @param op   the reduction
     */
    default void allReduce(final double[] send, final double[] recv, final RedOp op) {
        allReduce(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.FLOAT64, op);
    }

    /**
     * {@link #allGather(MemorySegment, MemorySegment, long, DataType)} of {@code send.length} doubles per rank.
     *
     * @param send this rank's block
     * @param recv {@code size() * send.length} elements
     */
    default void allGather(final double[] send, final double[] recv) {
        allGather(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.FLOAT64);
    }

    /**
     * {@link #reduceScatter(MemorySegment, MemorySegment, long, DataType, RedOp)}: this rank receives
     * {@code recv.length} doubles.
     *
     * @param send {@code size() * recv.length} elements
     * @param recv this rank's reduced block
     * @param op   the reduction
     */
    default void reduceScatter(final double[] send, final double[] recv, final RedOp op) {
        reduceScatter(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), recv.length, DataType.FLOAT64, op);
    }

    /**
     * {@link #broadcast(MemorySegment, MemorySegment, long, DataType, int)} in place: the root's {@code buf} in
     * every rank's {@code buf}.
     *
     * @param buf  the root's data; the output everywhere
     * @param root the rank whose data goes out
     */
    default void broadcast(final double[] buf, final int root) {
        final MemorySegment s = MemorySegment.ofArray(buf);
        broadcast(s, s, buf.length, DataType.FLOAT64, root);
    }

    /**
     * {@link #reduce(MemorySegment, MemorySegment, long, DataType, RedOp, int)} of {@code send.length} doubles.
     *
     * @param send this rank's input
     * @param recv the root's output (may be {@code send}); null on other ranks
     * @param op   the reduction
     * @param root the rank that receives the result
     */
    default void reduce(final double[] send, final double[] recv, final RedOp op, final int root) {
        reduce(MemorySegment.ofArray(send), recv == null ? null : MemorySegment.ofArray(recv), send.length,
            DataType.FLOAT64, op, root);
    }

    /**
     * {@link #allToAll(MemorySegment, MemorySegment, long, DataType)}: {@code send.length / size()} doubles to each
     * rank.
     *
     * @param send {@code size()} blocks
     * @param recv {@code size()} blocks
     */
    default void allToAll(final double[] send, final double[] recv) {
        if (send.length % size() != 0) {
            throw new IllegalArgumentException("allToAll: " + send.length + " elements are not " + size()
                + " equal blocks");
        }
        allToAll(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length / size(), DataType.FLOAT64);
    }

    /**
     * {@link #send(MemorySegment, long, DataType, int)} of {@code buf.length} doubles.
     *
     * @param buf  the data
     * @param peer the receiving rank
     */
    default void send(final double[] buf, final int peer) {
        send(MemorySegment.ofArray(buf), buf.length, DataType.FLOAT64, peer);
    }

    /**
     * {@link #recv(MemorySegment, long, DataType, int)} of {@code buf.length} doubles.
     *
     * @param buf  where the data lands
     * @param peer the sending rank
     */
    default void recv(final double[] buf, final int peer) {
        recv(MemorySegment.ofArray(buf), buf.length, DataType.FLOAT64, peer);
    }

    /**
     * {@link #allReduce(MemorySegment, MemorySegment, long, DataType, RedOp)} of {@code send.length} ints.
     *
     * @param send this rank's input
     * @param recv the output, at least as long (may be {@code send})
     * @param op   the reduction
     */
    default void allReduce(final int[] send, final int[] recv, final RedOp op) {
        allReduce(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.INT32, op);
    }

    /**
     * {@link #allGather(MemorySegment, MemorySegment, long, DataType)} of {@code send.length} ints per rank.
     *
     * @param send this rank's block
     * @param recv {@code size() * send.length} elements
     */
    default void allGather(final int[] send, final int[] recv) {
        allGather(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.INT32);
    }

    /**
     * {@link #reduceScatter(MemorySegment, MemorySegment, long, DataType, RedOp)}: this rank receives
     * {@code recv.length} ints.
     *
     * @param send {@code size() * recv.length} elements
     * @param recv this rank's reduced block
     * @param op   the reduction
     */
    default void reduceScatter(final int[] send, final int[] recv, final RedOp op) {
        reduceScatter(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), recv.length, DataType.INT32, op);
    }

    /**
     * {@link #broadcast(MemorySegment, MemorySegment, long, DataType, int)} in place: the root's {@code buf} in
     * every rank's {@code buf}.
     *
     * @param buf  the root's data; the output everywhere
     * @param root the rank whose data goes out
     */
    default void broadcast(final int[] buf, final int root) {
        final MemorySegment s = MemorySegment.ofArray(buf);
        broadcast(s, s, buf.length, DataType.INT32, root);
    }

    /**
     * {@link #reduce(MemorySegment, MemorySegment, long, DataType, RedOp, int)} of {@code send.length} ints.
     *
     * @param send this rank's input
     * @param recv the root's output (may be {@code send}); null on other ranks
     * @param op   the reduction
     * @param root the rank that receives the result
     */
    default void reduce(final int[] send, final int[] recv, final RedOp op, final int root) {
        reduce(MemorySegment.ofArray(send), recv == null ? null : MemorySegment.ofArray(recv), send.length,
            DataType.INT32, op, root);
    }

    /**
     * {@link #allToAll(MemorySegment, MemorySegment, long, DataType)}: {@code send.length / size()} ints to each
     * rank.
     *
     * @param send {@code size()} blocks
     * @param recv {@code size()} blocks
     */
    default void allToAll(final int[] send, final int[] recv) {
        if (send.length % size() != 0) {
            throw new IllegalArgumentException("allToAll: " + send.length + " elements are not " + size()
                + " equal blocks");
        }
        allToAll(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length / size(), DataType.INT32);
    }

    /**
     * {@link #send(MemorySegment, long, DataType, int)} of {@code buf.length} ints.
     *
     * @param buf  the data
     * @param peer the receiving rank
     */
    default void send(final int[] buf, final int peer) {
        send(MemorySegment.ofArray(buf), buf.length, DataType.INT32, peer);
    }

    /**
     * {@link #recv(MemorySegment, long, DataType, int)} of {@code buf.length} ints.
     *
     * @param buf  where the data lands
     * @param peer the sending rank
     */
    default void recv(final int[] buf, final int peer) {
        recv(MemorySegment.ofArray(buf), buf.length, DataType.INT32, peer);
    }

    /**
     * {@link #allReduce(MemorySegment, MemorySegment, long, DataType, RedOp)} of {@code send.length} longs.
     *
     * @param send this rank's input
     * @param recv the output, at least as long (may be {@code send})
     * @param op   the reduction
     */
    default void allReduce(final long[] send, final long[] recv, final RedOp op) {
        allReduce(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.INT64, op);
    }

    /**
     * {@link #allGather(MemorySegment, MemorySegment, long, DataType)} of {@code send.length} longs per rank.
     *
     * @param send this rank's block
     * @param recv {@code size() * send.length} elements
     */
    default void allGather(final long[] send, final long[] recv) {
        allGather(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.INT64);
    }

    /**
     * {@link #reduceScatter(MemorySegment, MemorySegment, long, DataType, RedOp)}: this rank receives
     * {@code recv.length} longs.
     *
     * @param send {@code size() * recv.length} elements
     * @param recv this rank's reduced block
     * @param op   the reduction
     */
    default void reduceScatter(final long[] send, final long[] recv, final RedOp op) {
        reduceScatter(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), recv.length, DataType.INT64, op);
    }

    /**
     * {@link #broadcast(MemorySegment, MemorySegment, long, DataType, int)} in place: the root's {@code buf} in
     * every rank's {@code buf}.
     *
     * @param buf  the root's data; the output everywhere
     * @param root the rank whose data goes out
     */
    default void broadcast(final long[] buf, final int root) {
        final MemorySegment s = MemorySegment.ofArray(buf);
        broadcast(s, s, buf.length, DataType.INT64, root);
    }

    /**
     * {@link #reduce(MemorySegment, MemorySegment, long, DataType, RedOp, int)} of {@code send.length} longs.
     *
     * @param send this rank's input
     * @param recv the root's output (may be {@code send}); null on other ranks
     * @param op   the reduction
     * @param root the rank that receives the result
     */
    default void reduce(final long[] send, final long[] recv, final RedOp op, final int root) {
        reduce(MemorySegment.ofArray(send), recv == null ? null : MemorySegment.ofArray(recv), send.length,
            DataType.INT64, op, root);
    }

    /**
     * {@link #allToAll(MemorySegment, MemorySegment, long, DataType)}: {@code send.length / size()} longs to each
     * rank.
     *
     * @param send {@code size()} blocks
     * @param recv {@code size()} blocks
     */
    default void allToAll(final long[] send, final long[] recv) {
        if (send.length % size() != 0) {
            throw new IllegalArgumentException("allToAll: " + send.length + " elements are not " + size()
                + " equal blocks");
        }
        allToAll(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length / size(), DataType.INT64);
    }

    /**
     * {@link #send(MemorySegment, long, DataType, int)} of {@code buf.length} longs.
     *
     * @param buf  the data
     * @param peer the receiving rank
     */
    default void send(final long[] buf, final int peer) {
        send(MemorySegment.ofArray(buf), buf.length, DataType.INT64, peer);
    }

    /**
     * {@link #recv(MemorySegment, long, DataType, int)} of {@code buf.length} longs.
     *
     * @param buf  where the data lands
     * @param peer the sending rank
     */
    default void recv(final long[] buf, final int peer) {
        recv(MemorySegment.ofArray(buf), buf.length, DataType.INT64, peer);
    }
}
