/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

/**
 * One nccl-tests row: a size, out-of-place and in-place. Times are the slowest rank's average per iteration;
 * algbw = bytes / time, busbw = algbw x the operation's factor; wrong counts every element that differs from the
 * expected value on any rank (summed over ranks). {@code nicProgress} says how rank 0's software NIC was driven and
 * why (CollWorld#nicProgress); {@code directPath} where rank 0's direct rounds went and why
 * (Communicator#directPath: shared memory or the NIC); {@code reduceThreads} how many threads split rank 0's large host reductions, from
 * which size, and why (CollContext#chooseReduceThreadsBeside); {@code binding} where rank 0's collectives thread ran
 * (Communicator#binding, gdrkit.coll.bind); {@code nicMtu} the software MTU of rank 0's connections and its source
 * (CollWorld#describeMtu, gdrkit.ib.software.mtu); {@code nics} the network devices each rank's channels are
 * spread over (gdrkit.coll.nics software NICs with IbTransport, 1 with SocketTransport) and {@code channels} the
 * channels (connections per peer pair).
 */
public record CollResult(CollOp op, long bytes, long count, DataType type, String redop, int root, int np,
                         String transport, String fabric, boolean simulated,
                         double timeUs, double algBwGbs, double busBwGbs, long wrong,
                         double inPlaceTimeUs, double inPlaceAlgBwGbs, double inPlaceBusBwGbs, long inPlaceWrong,
                         Placement placement, String nicProgress, String directPath,
                         ParallelReducer.Choice reduceThreads, String binding, String nicMtu, int nics,
                         int channels) {
    /**
     * Where the buffers and the reduction were, and what was real: {@code mem} host or gpu; {@code gpu} the
     * device's description (null in host memory) and whether it is simulated; {@code reduceOn} cpu, gpu-kernel or
     * sim-sm-workers; {@code dataPath} host (the NIC on the buffers), gdr (GPU buffers registered with the NIC, which
     * reads and writes device memory), gdr-recv (the NIC writes device memory, sends bounce) or host-bounce (GPU
     * buffers, the NIC on host bounce halves);
     * {@code kernelLaunches} on rank 0 over the sweep; {@code gdr} rank 0's decision with its evidence (null in host
     * memory); {@code nicMr} what rank 0's buffers' registrations cover (gpu, host); {@code bouncedBytes} bytes
     * rank 0 copied between device and host on the data path (0 with gdr; the sends' bytes with gdr-recv);
     * {@code flushes} iflush READs rank 0
     * completed, cumulative over the sweep; {@code sharing} which rank processes share this rank's GPU (rank 0's in
     * what the cli prints) and whether MPS is on for them (null in host memory, or when the communicator was not opened through {@link CollWorld}).
     */
    public record Placement(String mem, String gpu, boolean gpuSimulated, String reduceOn, String dataPath,
                            long kernelLaunches, CollGdr gdr, String nicMr, long bouncedBytes, long flushes,
                            GpuSharing sharing) {
        public static final Placement HOST = new Placement("host", null, false, "cpu", "host", 0, null, "host", 0, 0,
            null);
    }
}
