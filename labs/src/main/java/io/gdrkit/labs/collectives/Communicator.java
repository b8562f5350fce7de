/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.collectives;

import io.gdrkit.gdr.bootstrap.Bootstrap;
import io.gdrkit.gdr.bootstrap.BootstrapException;
import io.gdrkit.gdr.net.transport.NetTransport;
import io.gdrkit.gdr.net.transport.NetTransportException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * A communicator over any {@link NetTransport}: every pair of ranks is connected by {@code channels} connections
 * in each direction, set up by exchanging listen handles through the bootstrap (as NCCL's transport setup does),
 * with connect and accept driven without blocking. Its one data primitive is {@link #exchange}: send a range to
 * one peer while receiving (or receiving and reducing) a range from another, cut in chunks of BUFFSIZE/STEPS,
 * STEPS chunks in flight per channel, chunk i on channel i mod channels. Collectives are sequences of exchanges.
 *
 * <p>Tags carry the exchange's number between the two ranks and the chunk's index, and each chunk's size is
 * checked, so ranks that disagree on sizes or on the sequence of exchanges meet a named error (a wrong size, no
 * receive with the tag, or a timeout naming the exchange) instead of mixing data. Every wait is bounded by the
 * context's timeout and asks the bootstrap whether another rank failed.
 */
public final class Communicator implements AutoCloseable {
    private final Bootstrap bootstrap;
    private final NetTransport net;
    private final CollContext ctx;
    private final int rank;
    private final int n;
    private final int channels;
    private final NetTransport.SendComm[][] send;
    private final NetTransport.RecvComm[][] recv;
    private final NetTransport.ListenComm[][] listens;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment[] staging;
    private final NetTransport.MrHandle[] stagingMr;
    private final int chunk;
    private final long timeoutNanos;
    private DeviceReducer deviceReducer;
    // exchange's working state, reused (one exchange at a time per communicator)
    private NetTransport.Request[] sReq = new NetTransport.Request[0];
    private NetTransport.Request[] rReq = new NetTransport.Request[0];
    private final int[] sOut;
    private final int[] rOut;
    private final int[] sHead;
    private final int[] rHead;
    private final long[] addr = new long[1];
    private final int[] size = new int[1];
    private final int[] tag = new int[1];
    private final NetTransport.MrHandle[] mh = new NetTransport.MrHandle[1];
    private final int[] got = new int[1];
    /** Exchanges with each peer since the communicator was made (the algorithm's footprint, for tests and reports). */
    private final long[] sentTo;
    private final long[] receivedFrom;
    /** Exchanges sent to / received from each peer so far: the tag's upper half, equal on both ends of a pair. */
    private final int[] sendSeq;
    private final int[] recvSeq;

    /**
     * A registered buffer: the host memory the transport reads and writes, its registration (null when there is no
     * peer), and for GPU collectives its device half (null in host memory; see {@link DeviceReducer}).
     */
    public record Buffer(MemorySegment seg, NetTransport.MrHandle mr, io.gdrkit.gpu.DeviceBuffer dev) {
        public Buffer(final MemorySegment seg, final NetTransport.MrHandle mr) {
            this(seg, mr, null);
        }
    }

    public Communicator(final Bootstrap bootstrap, final NetTransport net, final CollContext context) {
        this.bootstrap = bootstrap;
        this.net = net;
        this.ctx = context.conclude();
        this.rank = bootstrap.rank();
        this.n = bootstrap.nranks();
        this.channels = ctx.channels();
        this.chunk = ctx.chunkBytes();
        this.timeoutNanos = ctx.timeout().toNanos();
        this.sOut = new int[channels];
        this.rOut = new int[channels];
        this.sHead = new int[channels];
        this.rHead = new int[channels];
        this.sendSeq = new int[n];
        this.sentTo = new long[n];
        this.receivedFrom = new long[n];
        this.recvSeq = new int[n];
        send = new NetTransport.SendComm[n][channels];
        recv = new NetTransport.RecvComm[n][channels];
        listens = new NetTransport.ListenComm[n][channels];
        final byte[] mine = new byte[n * channels * NetTransport.HANDLE_MAXSIZE];
        for (int p = 0; p < n; p++) {
            for (int c = 0; c < channels; c++) {
                if (p != rank) {
                    final byte[] h = new byte[NetTransport.HANDLE_MAXSIZE];
                    listens[p][c] = net.listen(0, h);
                    System.arraycopy(h, 0, mine, (p * channels + c) * NetTransport.HANDLE_MAXSIZE, h.length);
                }
            }
        }
        final byte[][] all = bootstrap.allGather(mine);
        for (int p = 0; p < n; p++) {
            if (all[p].length != mine.length) {
                throw new CollException("rank " + p + " sent " + all[p].length + " bytes of listen handles, expected "
                    + mine.length + " (a different channel count?)");
            }
        }
        connectAll(all);
        staging = new MemorySegment[channels];
        stagingMr = new NetTransport.MrHandle[channels];
        for (int c = 0; c < channels; c++) {
            staging[c] = arena.allocate((long) chunk * ctx.steps(), 4096);
            stagingMr[c] = n > 1 ? net.regMr(anyComm(), staging[c]) : null;
        }
        bootstrap.barrier();
    }

    private void connectAll(final byte[][] all) {
        final long deadline = System.nanoTime() + ctx.timeout().toNanos();
        final byte[][][] handles = new byte[n][channels][];
        for (int p = 0; p < n; p++) {
            for (int c = 0; c < channels; c++) {
                if (p != rank) {
                    handles[p][c] = Arrays.copyOfRange(all[p], (rank * channels + c) * NetTransport.HANDLE_MAXSIZE,
                        (rank * channels + c + 1) * NetTransport.HANDLE_MAXSIZE);
                }
            }
        }
        int missing = 2 * (n - 1) * channels;
        while (missing > 0) {
            for (int p = 0; p < n; p++) {
                for (int c = 0; c < channels; c++) {
                    if (p == rank) {
                        continue;
                    }
                    if (send[p][c] == null && (send[p][c] = net.connect(0, handles[p][c])) != null) {
                        missing--;
                    }
                    if (recv[p][c] == null && (recv[p][c] = net.accept(listens[p][c])) != null) {
                        missing--;
                    }
                }
            }
            if (missing > 0) {
                waitCheck(deadline, "connections to every peer (" + missing + " of " + 2 * (n - 1) * channels
                    + " not up)");
                idle(YIELDS);
            }
        }
        for (int p = 0; p < n; p++) {
            for (int c = 0; c < channels; c++) {
                if (listens[p][c] != null) {
                    net.closeListen(listens[p][c]);
                    listens[p][c] = null;
                }
            }
        }
    }

    private Object anyComm() {
        return send[(rank + 1) % n][0];
    }

    public int rank() {
        return rank;
    }

    public int nranks() {
        return n;
    }

    public NetTransport transport() {
        return net;
    }

    /** Exchanges that sent to {@code peer} so far. */
    public long exchangesSentTo(final int peer) {
        return sentTo[peer];
    }

    /** Exchanges that received from {@code peer} so far. */
    public long exchangesReceivedFrom(final int peer) {
        return receivedFrom[peer];
    }

    public Bootstrap bootstrap() {
        return bootstrap;
    }

    public CollContext context() {
        return ctx;
    }

    /** Registers host memory for every connection of this communicator. */
    public Buffer register(final MemorySegment seg) {
        return register(seg, null);
    }

    /** Registers host memory (the bounce half) of a buffer whose data lives in {@code dev} on this rank's GPU. */
    public Buffer register(final MemorySegment seg, final io.gdrkit.gpu.DeviceBuffer dev) {
        return new Buffer(seg, n > 1 ? net.regMr(anyComm(), seg) : null, dev);
    }

    /**
     * Reductions from now on run on {@code gpu} ({@link DeviceReducer}); the communicator closes the reducer, not
     * the GPU.
     */
    public void attachGpu(final io.gdrkit.gpu.GpuDevice gpu) {
        if (deviceReducer != null) {
            throw new IllegalStateException("a GPU is attached already");
        }
        deviceReducer = new DeviceReducer(gpu, chunk, ctx.timeout());
    }

    /** The GPU reducer, or null when reductions run on the CPU. */
    public DeviceReducer deviceReducer() {
        return deviceReducer;
    }

    public void deregister(final Buffer b) {
        if (b.mr() != null) {
            net.deregMr(anyComm(), b.mr());
        }
    }


    private long lastCheck;

    private void waitCheck(final long deadline, final String what) {
        final long now = System.nanoTime();
        if (now - lastCheck > 1_000_000) {
            lastCheck = now;
            try {
                bootstrap.check();
            } catch (final BootstrapException e) {
                throw new CollException("rank " + rank + " stopped waiting for " + what + ": " + e.getMessage(), e);
            }
        }
        if (now > deadline) {
            throw new CollException("rank " + rank + " waited " + ctx.timeout().toMillis() + " ms for " + what);
        }
    }

    /**
     * Sends {@code sendBytes} at {@code src + srcOff} to {@code to} while receiving {@code recvBytes} from
     * {@code from} into {@code dst + dstOff}; with {@code op} non-null the received data is reduced into dst
     * ({@code dst = op(dst, received)}) chunk by chunk through the staging buffer. {@code to} or {@code from} may be
     * -1 (no send, no receive). Allocates nothing once its request arrays have grown to the largest exchange.
     */
    public void exchange(final int to, final Buffer src, final long srcOff, final long sendBytes, final int from,
                         final Buffer dst, final long dstOff, final long recvBytes, final RedOp op,
                         final DataType type) {
        final int sSeq = to < 0 ? 0 : (sendSeq[to] = (sendSeq[to] + 1) & 0x7fff);
        final int rSeq = from < 0 ? 0 : (recvSeq[from] = (recvSeq[from] + 1) & 0x7fff);
        if (to >= 0) {
            sentTo[to]++;
        }
        if (from >= 0) {
            receivedFrom[from]++;
        }
        final int steps = ctx.steps();
        final int nS = to < 0 ? 0 : (int) ((sendBytes + chunk - 1) / chunk);
        final int nR = from < 0 ? 0 : (int) ((recvBytes + chunk - 1) / chunk);
        if (sReq.length < nS) {
            sReq = new NetTransport.Request[nS];
        }
        if (rReq.length < nR) {
            rReq = new NetTransport.Request[nR];
        }
        final NetTransport.Request[] sReq = this.sReq;
        final NetTransport.Request[] rReq = this.rReq;
        final int[] sOut = this.sOut;
        final int[] rOut = this.rOut;
        final int[] rHead = this.rHead;
        final int[] sHead = this.sHead;
        for (int c = 0; c < channels; c++) {
            rHead[c] = c;
            sHead[c] = c;
            sOut[c] = 0;
            rOut[c] = 0;
        }
        int nextS = 0;
        int nextR = 0;
        int doneS = 0;
        int doneR = 0;
        final long[] addr = this.addr;
        final int[] size = this.size;
        final int[] tag = this.tag;
        final NetTransport.MrHandle[] mh = this.mh;
        final int[] got = this.got;
        final long deadline = System.nanoTime() + timeoutNanos;
        int idle = 0;
        try {
            while (doneS < nS || doneR < nR) {
                boolean progress = false;
                while (nextR < nR && rOut[nextR % channels] < steps) {
                    final int c = nextR % channels;
                    final int j = nextR / channels;
                    final long off = (long) nextR * chunk;
                    final int len = (int) Math.min(chunk, recvBytes - off);
                    if (op != null) {
                        addr[0] = staging[c].address() + (long) (j % steps) * chunk;
                        mh[0] = stagingMr[c];
                    } else {
                        addr[0] = dst.seg().address() + dstOff + off;
                        mh[0] = dst.mr();
                    }
                    size[0] = len;
                    tag[0] = (rSeq << 16) | (j & 0xffff);
                    rReq[nextR] = net.irecv(recv[from][c], 1, addr, size, tag, mh);
                    rOut[c]++;
                    nextR++;
                    progress = true;
                }
                while (nextS < nS && sOut[nextS % channels] < steps) {
                    final int c = nextS % channels;
                    final int j = nextS / channels;
                    final long off = (long) nextS * chunk;
                    final int len = (int) Math.min(chunk, sendBytes - off);
                    final NetTransport.Request r = net.isend(send[to][c], src.seg().address() + srcOff + off, len,
                        (sSeq << 16) | (j & 0xffff), src.mr());
                    if (r == null) {
                        break; // the receiver has not posted it yet
                    }
                    sReq[nextS] = r;
                    sOut[c]++;
                    nextS++;
                    progress = true;
                }
                for (int c = 0; c < channels; c++) {
                    // oldest first per channel: staging slots are reused in order
                    final int i = rHead[c];
                    if (i < nextR && rReq[i] != null && net.test(rReq[i], got)) {
                        final long off = (long) i * chunk;
                        final int len = (int) Math.min(chunk, recvBytes - off);
                        if (got[0] != len) {
                            throw new CollException("rank " + rank + " " + what(to, sendBytes, from, recvBytes)
                                + ": chunk " + i + " brought " + got[0] + " bytes, expected " + len
                                + " (mismatched sizes across ranks?)");
                        }
                        if (op != null) {
                            final long at = (long) (i / channels % steps) * chunk;
                            if (deviceReducer != null) {
                                if (dst.dev() == null) {
                                    throw new IllegalStateException("a reduction into a buffer without a device half "
                                        + "while a GPU is attached");
                                }
                                deviceReducer.reduce(dst, dstOff + off, staging[c], at, len / type.size(), type, op);
                            } else {
                                Reducer.reduce(dst.seg(), dstOff + off, staging[c], at, len / type.size(), type, op);
                            }
                        }
                        rReq[i] = null;
                        rOut[c]--;
                        rHead[c] += channels;
                        doneR++;
                        progress = true;
                    }
                    final int k = sHead[c];
                    if (k < nextS && sReq[k] != null && net.test(sReq[k], null)) {
                        sReq[k] = null;
                        sOut[c]--;
                        sHead[c] += channels;
                        doneS++;
                        progress = true;
                    }
                }
                if (!progress) {
                    if (++idle > SPINS) {
                        waitCheck(deadline, to, sendBytes, from, recvBytes);
                    }
                    idle(idle);
                } else {
                    idle = 0;
                }
            }
        } catch (final NetTransportException e) {
            throw new CollException("rank " + rank + " " + what(to, sendBytes, from, recvBytes) + ": "
                + e.getMessage(), e);
        }
    }

    private static String what(final int to, final long sendBytes, final int from, final long recvBytes) {
        return "exchange (send " + sendBytes + " B to rank " + to + ", receive " + recvBytes + " B from rank "
            + from + ")";
    }

    private void waitCheck(final long deadline, final int to, final long sendBytes, final int from,
                           final long recvBytes) {
        final long now = System.nanoTime();
        if (now - lastCheck > 1_000_000 || now > deadline) {
            waitCheck(deadline, what(to, sendBytes, from, recvBytes));
        }
    }

    /** Spins before yielding: the rank's own polling is what moves its NIC (and the peer is often one hop away). */
    private static final int SPINS = 2000;
    private static final int YIELDS = 2100;

    /**
     * Backs off while nothing moves: spin, then yield, then park briefly. A busy-spinning rank on a shared or
     * oversubscribed host would take the CPU its peer needs to make the progress it waits for; the NIC's backstop
     * thread keeps it answering while parked.
     */
    private static void idle(final int idleRounds) {
        if (idleRounds < SPINS) {
            Thread.onSpinWait();
        } else if (idleRounds < YIELDS) {
            Thread.yield();
        } else {
            java.util.concurrent.locks.LockSupport.parkNanos(20_000);
        }
    }

    /** Copies {@code bytes} within this rank (the part of a collective that stays local). */
    public static void copy(final Buffer src, final long srcOff, final Buffer dst, final long dstOff,
                            final long bytes) {
        if (bytes > 0 && (src.seg() != dst.seg() || srcOff != dstOff)) {
            MemorySegment.copy(src.seg(), srcOff, dst.seg(), dstOff, bytes);
        }
    }

    @Override
    public void close() {
        if (deviceReducer != null) {
            deviceReducer.close();
        }
        for (final NetTransport.MrHandle m : stagingMr) {
            if (m != null) {
                net.deregMr(anyComm(), m);
            }
        }
        for (int p = 0; p < n; p++) {
            for (int c = 0; c < channels; c++) {
                if (send[p][c] != null) {
                    net.closeSend(send[p][c]);
                }
                if (recv[p][c] != null) {
                    net.closeRecv(recv[p][c]);
                }
                if (listens[p][c] != null) {
                    net.closeListen(listens[p][c]);
                }
            }
        }
        arena.close();
    }
}
