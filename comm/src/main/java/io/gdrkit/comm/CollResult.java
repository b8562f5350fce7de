/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

/**
 * One nccl-tests row: a size, out-of-place and in-place. Times are the slowest rank's average per iteration; algbw =
 * bytes / time, busbw = algbw x the operation's factor; a wrong count is every element that differs from the expected
 * value on any rank (summed over ranks).
 *
 * @param op              the collective
 * @param bytes           the row's size in bytes, by nccl-tests' convention ({@link CollOp})
 * @param count           the size in elements
 * @param type            the element type
 * @param redop           the reduction operator's name, or {@code none} for a collective that does not reduce
 * @param root            the root rank, or -1 for a collective without one
 * @param np              the number of ranks
 * @param transport       the transport's name
 * @param fabric          the fabric's name
 * @param simulated       true when the NICs were software ones or the GPU was simulated
 * @param timeUs          out-of-place: the time per iteration, in microseconds
 * @param algBwGbs        out-of-place: the algorithm bandwidth, in GB/s
 * @param busBwGbs        out-of-place: the bus bandwidth, in GB/s
 * @param wrong           out-of-place: the wrong elements
 * @param inPlaceTimeUs   in-place: the time per iteration, in microseconds
 * @param inPlaceAlgBwGbs in-place: the algorithm bandwidth, in GB/s
 * @param inPlaceBusBwGbs in-place: the bus bandwidth, in GB/s
 * @param inPlaceWrong    in-place: the wrong elements
 * @param placement       where the buffers and the reduction were
 * @param nicProgress     how rank 0's software NIC was driven, and why ({@link CollWorld#nicProgress})
 * @param directPath      where rank 0's direct rounds went (shared memory or the NIC), and why
 * @param reduceThreads   how many threads split rank 0's large host reductions, from which size, and why
 * @param binding         where rank 0's collectives thread ran ({@code gdrkit.coll.bind})
 * @param nicMtu          the software MTU of rank 0's connections and its source ({@code gdrkit.ib.software.mtu})
 * @param nics            the network devices each rank's channels are spread over ({@code gdrkit.coll.nics} software
 *     NICs with IbTransport, 1 with SocketTransport)
 * @param channels        the channels: connections per pair of peers
 * @param tuning          what rank 0's tuning table chose for this size: algorithm, protocol, path ({@code shm}
 *     or {@code net}) and why ({@link CollTuning})
 */
public record CollResult(CollOp op, long bytes, long count, DataType type, String redop, int root, int np,
                         String transport, String fabric, boolean simulated,
                         double timeUs, double algBwGbs, double busBwGbs, long wrong,
                         double inPlaceTimeUs, double inPlaceAlgBwGbs, double inPlaceBusBwGbs, long inPlaceWrong,
                         Placement placement, String nicProgress, String directPath,
                         ParallelReducer.Choice reduceThreads, String binding, String nicMtu, int nics,
                         int channels, CollTuning.Choice tuning) {
    /**
     * Where the buffers and the reduction were, and what was real.
     *
     * @param mem            {@code host} or {@code gpu}
     * @param gpu            the GPU's description, or null in host memory
     * @param gpuSimulated   true when the GPU was simulated
     * @param reduceOn       where reductions ran: {@code cpu}, {@code gpu-kernel} or {@code sim-sm-workers}
     * @param dataPath       {@code host} (the NIC on the buffers), {@code gdr} (GPU buffers registered with the NIC,
     *     which reads and writes device memory), {@code gdr-recv} (the NIC writes device memory, sends bounce) or
     *     {@code host-bounce} (GPU buffers, the NIC on host bounce halves)
     * @param kernelLaunches the reduction kernels rank 0 launched over the sweep
     * @param gdr            rank 0's GDR decision with its evidence, or null in host memory
     * @param nicMr          what rank 0's buffers' registrations cover ({@code gpu}, {@code host})
     * @param bouncedBytes   the bytes rank 0 copied between device and host on the data path (0 with gdr; the sends'
     *     bytes with gdr-recv)
     * @param flushes        the iflush reads rank 0 completed over the sweep
     * @param sharing        which rank processes share rank 0's GPU and whether MPS is on for them; null in host
     *     memory, or when the communicator was not opened through {@link CollWorld}
     */
    public record Placement(String mem, String gpu, boolean gpuSimulated, String reduceOn, String dataPath,
                            long kernelLaunches, CollGdr gdr, String nicMr, long bouncedBytes, long flushes,
                            GpuSharing sharing) {
        /** The placement of a run on host memory, with the CPU reducing. */
        public static final Placement HOST = new Placement("host", null, false, "cpu", "host", 0, null, "host", 0, 0,
            null);
    }
}
