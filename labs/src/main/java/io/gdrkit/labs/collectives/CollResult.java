/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.collectives;

/**
 * One nccl-tests row: a size, out-of-place and in-place. Times are the slowest rank's average per iteration;
 * algbw = bytes / time, busbw = algbw x the operation's factor; wrong counts every element that differs from the
 * expected value on any rank (summed over ranks).
 */
public record CollResult(CollOp op, long bytes, long count, DataType type, String redop, int root, int np,
                         String transport, String fabric, boolean simulated,
                         double timeUs, double algBwGbs, double busBwGbs, long wrong,
                         double inPlaceTimeUs, double inPlaceAlgBwGbs, double inPlaceBusBwGbs, long inPlaceWrong) {
}
