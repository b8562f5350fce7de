/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import java.util.Locale;

/**
 * The collectives, with nccl-tests' size convention and bus-bandwidth factor (nccl-tests doc/PERFORMANCE.md):
 * the size of a row is the largest buffer (allgather: the gathered output; reduce-scatter: the input; alltoall: each
 * rank's whole send buffer), and busbw = algbw x factor.
 */
public enum CollOp {
    /** Every rank gets the reduction of every rank's buffer. */
    ALLREDUCE("all_reduce", true, false),
    /** Every rank gets every rank's buffer, concatenated in rank order. */
    ALLGATHER("all_gather", false, false),
    /** Every rank gets its own block of the reduction of every rank's buffer. */
    REDUCE_SCATTER("reduce_scatter", true, false),
    /** Every rank gets the root's buffer. */
    BROADCAST("broadcast", false, true),
    /** The root gets the reduction of every rank's buffer. */
    REDUCE("reduce", true, true),
    /** Every rank sends a block to every rank, and gets one block from each. */
    ALLTOALL("alltoall", false, false),
    /** Each rank sends its buffer to the next rank and receives the previous rank's. */
    SENDRECV("sendrecv", false, false);

    private final String testName;
    private final boolean reduces;
    private final boolean rooted;

    CollOp(final String testName, final boolean reduces, final boolean rooted) {
        this.testName = testName;
        this.reduces = reduces;
        this.rooted = rooted;
    }

    /** {@return nccl-tests' binary name without _perf} */
    public String testName() {
        return testName;
    }

    /** {@return whether the operation takes a reduction operator} */
    public boolean reduces() {
        return reduces;
    }

    /** {@return whether the operation has a root rank} */
    public boolean rooted() {
        return rooted;
    }

    /**
     * nccl-tests' bus-bandwidth factor for {@code n} ranks.
     *
     * @param n the number of ranks
     * @return the factor by which the algorithm bandwidth is multiplied to give the bus bandwidth
     */
    public double busFactor(final int n) {
        return switch (this) {
            case ALLREDUCE -> 2.0 * (n - 1) / n;
            case ALLGATHER, REDUCE_SCATTER, ALLTOALL -> (double) (n - 1) / n;
            case BROADCAST, REDUCE, SENDRECV -> 1.0;
        };
    }

    /** {@return whether the size must be a multiple of n elements (the buffer is cut into one block per rank)} */
    public boolean perRankBlocks() {
        return this == ALLGATHER || this == REDUCE_SCATTER || this == ALLTOALL;
    }

    /**
     * Reads an operation by name, in any case, with or without {@code _} or {@code -}: {@code allreduce}, {@code
     * all_reduce}, {@code reduce-scatter}, {@code sendrecv}, ...
     *
     * @param s the name
     * @return the operation named
     * @throws IllegalArgumentException if the name is not an operation's
     */
    public static CollOp parse(final String s) {
        final String k = s.toLowerCase(Locale.ROOT).replace("-", "").replace("_", "");
        for (final CollOp o : values()) {
            if (o.name().toLowerCase(Locale.ROOT).replace("_", "").equals(k)) {
                return o;
            }
        }
        throw new IllegalArgumentException("unknown collective '" + s + "' (allreduce, allgather, reduce-scatter, "
            + "broadcast, reduce, alltoall, sendrecv)");
    }
}
