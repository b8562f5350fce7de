/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import io.gdrkit.core.mem.DmaMemory;
import io.gdrkit.comm.transport.NetTransportException.Reason;
import io.gdrkit.gdr.config.GdrConfiguration;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.security.SecureRandom;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * NCCL's net_socket over TCP: the second implementation of the seam and the baseline. Per connection one control
 * socket (each message's tag and size) and {@code NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD} data sockets,
 * each thread owning its sockets. A message is cut into chunks of at least 64 KiB, chunk k on data socket
 * k mod nsocks; both ends cut the same way, so each socket carries its chunks in order.
 *
 * <p>Host memory only (ptrSupport HOST); a receive takes one buffer (maxRecvs 1); isend never returns null (the
 * bytes wait in the socket until the receiver reads them), which the seam allows.
 *
 * <pre>
 *  socket hello (each socket, sender to receiver): magic u32 | listen id u64 | connection id u64 | index u8
 *                                                  (0 = control, 1..n = data) | data sockets u8
 *  control message per isend:                      tag u32 | size u32
 * </pre>
 */
public final class SocketTransport implements NetTransport {
    static final int HANDLE_MAGIC = 0x47534b31; // "GSK1"
    private static final int HELLO_MAGIC = 0x47534b48; // "GSKH"
    private static final int HELLO = 22;

    private final SocketTransportContext ctx;
    private final SecureRandom random = new SecureRandom();
    private final Map<byte[], Connecting> connecting = new IdentityHashMap<>();

    /**
     * Creates the transport with a context's settings, concluding the context first
     * ({@link SocketTransportContext#conclude()}).
     *
     * @param context the interfaces and socket settings to use
     * @throws IllegalArgumentException naming a malformed setting
     */
    public SocketTransport(final SocketTransportContext context) {
        this.ctx = context.concludeOnce();
    }

    /** {@return the concluded context this transport runs with} */
    public SocketTransportContext context() {
        return ctx;
    }

    @Override
    public String name() {
        return "Socket";
    }

    @Override
    public int devices() {
        return 1;
    }

    private static void dev(final int dev) {
        if (dev != 0) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "NET/Socket device " + dev + " outside 0..0");
        }
    }

    @Override
    public NetProperties getProperties(final int dev) {
        dev(dev);
        return new NetProperties("socket:" + ctx.bind().getHostAddress(), "unknown", 0, NetProperties.PTR_HOST,
            false, 0, 0, 0f, 65536, 1, NetProperties.NetDeviceType.HOST, false);
    }

    private int nsocks() {
        return ctx.nThreads() * ctx.nSocksPerThread();
    }

    // ------------------------------------------------------------------ setup

    private static final class Listen implements ListenComm {
        final ServerSocketChannel server;
        final long id;
        final Map<Long, Handshake[]> partial = new HashMap<>();
        /** Accept failures (EMFILE): the listener skips accepting for a pause, serving what is in setup meanwhile. */
        final io.gdrkit.core.net.AcceptBackoff acceptBackoff = new io.gdrkit.core.net.AcceptBackoff();
        final Map<Handshake, Long> started = new IdentityHashMap<>();
        final java.util.List<Handshake> hellos = new java.util.ArrayList<>();
        boolean closed;

        Listen(final ServerSocketChannel server, final long id) {
            this.server = server;
            this.id = id;
        }
    }

    private static final class Connecting {
        final Handshake.Listen target;
        final long connId;
        final SocketChannel[] chans;
        final Handshake[] hs;
        final long started = System.nanoTime();

        Connecting(final Handshake.Listen target, final long connId, final int n) {
            this.target = target;
            this.connId = connId;
            this.chans = new SocketChannel[n + 1];
            this.hs = new Handshake[n + 1];
        }
    }

    @Override
    public ListenComm listen(final int dev, final byte[] handle) {
        dev(dev);
        final ServerSocketChannel s = Handshake.listen(ctx.bind());
        final long id = random.nextLong();
        try {
            Handshake.writeHandle(handle, HANDLE_MAGIC, (InetSocketAddress) s.getLocalAddress(), id);
        } catch (final IOException e) {
            throw new NetTransportException(Reason.SYSTEM, "listener address: " + e.getMessage(), e);
        }
        return new Listen(s, id);
    }

    @Override
    public SendComm connect(final int dev, final byte[] handle) {
        dev(dev);
        Connecting c = connecting.get(handle);
        if (c == null) {
            final Handshake.Listen t = Handshake.readHandle(handle, HANDLE_MAGIC, "NET/Socket");
            c = new Connecting(t, random.nextLong(), nsocks());
            for (int i = 0; i < c.chans.length; i++) {
                c.chans[i] = Handshake.startConnect(t.address());
            }
            connecting.put(handle, c);
        }
        try {
            if (System.nanoTime() - c.started > ctx.timeout().toNanos()) {
                throw new NetTransportException(Reason.TIMEOUT, "connect to NET/Socket listener " + c.target
                    .address() + " did not finish within " + ctx.timeout().toMillis() + " ms");
            }
            boolean all = true;
            for (int i = 0; i < c.chans.length; i++) {
                if (c.hs[i] == null) {
                    if (!Handshake.finishConnect(c.chans[i], c.target.address())) {
                        all = false;
                        continue;
                    }
                    c.hs[i] = new Handshake(c.chans[i], "NET/Socket listener " + c.target.address());
                    c.hs[i].send(ByteBuffer.allocate(HELLO).putInt(HELLO_MAGIC).putLong(c.target.id())
                        .putLong(c.connId).put((byte) i).put((byte) (c.chans.length - 1)));
                }
                all &= c.hs[i].flush();
            }
            if (!all) {
                return null;
            }
            connecting.remove(handle);
            return new Send(c.chans);
        } catch (final RuntimeException e) {
            connecting.remove(handle);
            for (final SocketChannel ch : c.chans) {
                closeQuietly(ch);
            }
            throw e;
        }
    }

    /**
     * How {@code listenComm}'s accept failures (EMFILE and the like) were met: counted, remembered, backed off.
     *
     * @param listenComm a listener of this transport
     * @return its backoff
     */
    public io.gdrkit.core.net.AcceptBackoff acceptBackoff(final ListenComm listenComm) {
        if (!(listenComm instanceof Listen l)) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "not a NET/Socket listen comm");
        }
        return l.acceptBackoff;
    }

    /**
     * The next connection, or null when none is waiting or accepting pauses: out of descriptors (EMFILE) the
     * connection stays in the backlog and the caller's deadline still runs; failing the setup or spinning on it
     * would not free one.
     */
    private static SocketChannel acceptOrPause(final Listen l) throws IOException {
        if (!l.acceptBackoff.mayTry()) {
            return null;
        }
        try {
            final SocketChannel ch = l.server.accept();
            if (ch != null) {
                l.acceptBackoff.succeeded();
            }
            return ch;
        } catch (final java.nio.channels.ClosedChannelException e) {
            throw e;
        } catch (final IOException e) {
            l.acceptBackoff.failed(e);
            return null;
        }
    }

    @Override
    public RecvComm accept(final ListenComm listenComm) {
        if (!(listenComm instanceof Listen l)) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "not a NET/Socket listen comm");
        }
        if (l.closed) {
            throw new NetTransportException(Reason.INVALID_USAGE, "listen comm is closed");
        }
        try {
            SocketChannel ch;
            while ((ch = acceptOrPause(l)) != null) {
                ch.configureBlocking(false);
                ch.setOption(java.net.StandardSocketOptions.TCP_NODELAY, true);
                final Handshake h = new Handshake(ch, "NET/Socket sender " + ch.getRemoteAddress());
                l.hellos.add(h);
                l.started.put(h, System.nanoTime());
            }
        } catch (final IOException e) {
            throw new NetTransportException(Reason.SYSTEM, "accept: " + e.getMessage(), e);
        }
        for (final java.util.Iterator<Handshake> it = l.hellos.iterator(); it.hasNext(); ) {
            final Handshake h = it.next();
            final ByteBuffer b;
            try {
                if (System.nanoTime() - l.started.get(h) > ctx.timeout().toNanos()) {
                    throw new NetTransportException(Reason.TIMEOUT, "a connection to the NET/Socket listener sent "
                        + "no hello within " + ctx.timeout().toMillis() + " ms");
                }
                b = h.read(HELLO);
            } catch (final NetTransportException e) {
                it.remove();
                l.started.remove(h);
                h.close();
                throw e;
            }
            if (b == null) {
                continue;
            }
            it.remove();
            l.started.remove(h);
            final int magic = b.getInt();
            final long lid = b.getLong();
            final long conn = b.getLong();
            final int idx = b.get() & 0xff;
            final int n = b.get() & 0xff;
            if (magic != HELLO_MAGIC || lid != l.id || n < 1 || n > SocketTransportContext.MAX_SOCKS || idx > n) {
                h.close();
                throw new NetTransportException(Reason.REMOTE, magic != HELLO_MAGIC ? "a peer sent a hello that is "
                    + "not NET/Socket's" : lid != l.id ? "a peer connected with the handle of another listener "
                    + "(another run?)" : "a peer sent a hello for socket " + idx + " of " + n);
            }
            if (n != nsocks()) {
                h.close();
                throw new NetTransportException(Reason.REMOTE, "the sender uses " + n + " data sockets, this side "
                    + nsocks() + " (" + GdrConfiguration.SOCKET_NTHREADS.name() + " x "
                    + GdrConfiguration.NSOCKS_PERTHREAD.name() + " must match)");
            }
            final Handshake[] group = l.partial.computeIfAbsent(conn, k -> new Handshake[n + 1]);
            if (group[idx] != null) {
                h.close();
                throw new NetTransportException(Reason.REMOTE, "a peer sent socket " + idx + " twice");
            }
            group[idx] = h;
        }
        for (final Map.Entry<Long, Handshake[]> e : l.partial.entrySet()) {
            boolean full = true;
            for (final Handshake h : e.getValue()) {
                full &= h != null;
            }
            if (full) {
                l.partial.remove(e.getKey());
                final SocketChannel[] chans = new SocketChannel[e.getValue().length];
                for (int i = 0; i < chans.length; i++) {
                    chans[i] = e.getValue()[i].channel();
                }
                return new Recv(chans);
            }
        }
        return null;
    }

    // ------------------------------------------------------------------ comms

    private record Task(SockRequest req, MemorySegment seg, int socket) {
    }

    private abstract class Comm {
        final SocketChannel ctrl;
        final SocketChannel[] data;
        final LinkedBlockingQueue<Task>[] queues;
        final Thread[] threads;
        final AtomicInteger inFlight = new AtomicInteger();
        volatile String error;
        volatile boolean closed;

        @SuppressWarnings("unchecked")
        Comm(final SocketChannel[] chans, final boolean sending) {
            this.ctrl = chans[0];
            this.data = java.util.Arrays.copyOfRange(chans, 1, chans.length);
            try {
                ctrl.configureBlocking(!sending ? false : true);
                for (final SocketChannel d : data) {
                    d.configureBlocking(true);
                }
            } catch (final IOException e) {
                throw new NetTransportException(Reason.SYSTEM, "socket mode: " + e.getMessage(), e);
            }
            queues = new LinkedBlockingQueue[ctx.nThreads()];
            for (int i = 0; i < queues.length; i++) {
                queues[i] = new LinkedBlockingQueue<>();
            }
            threads = new Thread[ctx.nThreads()];
            for (int t = 0; t < threads.length; t++) {
                final int thread = t;
                threads[t] = Thread.ofPlatform().daemon(true).name("net-socket-" + (sending ? "send-" : "recv-") + t)
                    .start(() -> helper(thread, sending));
            }
        }

        /**
         * A helper thread: serves its sockets' chunks in the order they were queued; both ends queue the same
         * chunks in the same order, so every socket carries them in order.
         */
        private void helper(final int thread, final boolean sending) {
            while (!closed) {
                final Task t;
                try {
                    t = queues[thread].poll(50, TimeUnit.MILLISECONDS);
                } catch (final InterruptedException e) {
                    return;
                }
                if (t == null) {
                    continue;
                }
                final int s = t.socket();
                try {
                    final ByteBuffer bb = t.seg().asByteBuffer();
                    while (bb.hasRemaining()) {
                        final int r = sending ? data[s].write(bb) : data[s].read(bb);
                        if (r < 0) {
                            throw new IOException("the peer closed data socket " + s);
                        }
                    }
                    t.req().chunksLeft.decrementAndGet();
                } catch (final IOException e) {
                    if (!closed) {
                        t.req().error = "data socket " + s + ": " + e.getMessage();
                        error = t.req().error;
                    }
                    return;
                }
            }
        }

        /** Cuts [seg] into chunks and queues chunk k on socket k mod n (the same cut on both ends). */
        void queue(final SockRequest r, final MemorySegment seg) {
            final int n = data.length;
            final long size = seg.byteSize();
            final long chunk = Math.max(SocketTransportContext.MIN_CHUNK, (size + n - 1) / n);
            int chunks = 0;
            for (long off = 0; off < size; off += chunk) {
                chunks++;
            }
            r.chunksLeft.set(chunks);
            int k = 0;
            for (long off = 0; off < size; off += chunk) {
                // socket order follows the chunk index, and sockets are served per thread round robin
                final int sock = socketFor(k++);
                queues[sock / ctx.nSocksPerThread()].add(new Task(r, seg.asSlice(off, Math.min(chunk, size - off)),
                    sock));
            }
        }

        private int socketFor(final int k) {
            // chunk k goes to thread (k mod threads), socket ((k / threads) mod perThread) of it
            final int threadsN = ctx.nThreads();
            final int per = ctx.nSocksPerThread();
            return (k % threadsN) * per + (k / threadsN) % per;
        }

        void close() {
            closed = true;
            closeQuietly(ctrl);
            for (final SocketChannel d : data) {
                closeQuietly(d);
            }
            for (final Thread t : threads) {
                try {
                    t.join(1_000);
                } catch (final InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    private final class Send extends Comm implements SendComm {
        final ByteBuffer hdr = ByteBuffer.allocate(8);

        Send(final SocketChannel[] chans) {
            super(chans, true);
        }
    }

    private final class Recv extends Comm implements RecvComm {
        final ByteBuffer hdr = ByteBuffer.allocate(8);
        final java.util.ArrayDeque<SockRequest> waiting = new java.util.ArrayDeque<>();

        Recv(final SocketChannel[] chans) {
            super(chans, false);
        }

        /** Reads control headers for posted receives, in order; starts their data. */
        void progress() {
            while (!waiting.isEmpty()) {
                final int r;
                try {
                    r = ctrl.read(hdr);
                } catch (final IOException e) {
                    error = "control socket: " + e.getMessage();
                    return;
                }
                if (r < 0) {
                    error = "the sender closed the connection";
                    return;
                }
                if (hdr.hasRemaining()) {
                    return;
                }
                hdr.flip();
                final int tag = hdr.getInt();
                final int size = hdr.getInt();
                hdr.clear();
                final SockRequest q = waiting.poll();
                if (tag != q.tag) {
                    q.error = "the sender sent tag " + tag + " where the receive expects tag " + q.tag
                        + " (mismatched operations?)";
                    error = q.error;
                    return;
                }
                if (size < 0 || size > q.seg.byteSize()) {
                    q.error = "message truncated: the sender sent " + Integer.toUnsignedString(size)
                        + " bytes into a receive of " + q.seg.byteSize() + " (tag " + tag + ")";
                    error = q.error;
                    return;
                }
                q.size = size;
                queue(q, q.seg.asSlice(0, size));
            }
        }
    }

    private static final class SockRequest implements Request {
        final Comm comm;
        final MemorySegment seg;
        final int tag;
        final boolean receive;
        /** When test() first saw it in flight (MIN_VALUE before): its timeout runs from there. */
        long waitingSince = Long.MIN_VALUE;
        final AtomicInteger chunksLeft = new AtomicInteger(-1);
        volatile String error;
        int size;
        boolean finished;

        SockRequest(final Comm comm, final MemorySegment seg, final int tag, final boolean receive) {
            this.comm = comm;
            this.seg = seg;
            this.tag = tag;
            this.receive = receive;
        }
    }

    // ------------------------------------------------------------------ registration

    private static final class SockMr implements MrHandle {
        final MemorySegment seg;
        boolean released;

        SockMr(final MemorySegment seg) {
            this.seg = seg;
        }

        @Override
        public long address() {
            return seg.address();
        }

        @Override
        public long length() {
            return seg.byteSize();
        }
    }

    private static void comm(final Object c) {
        if (!(c instanceof Comm)) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "not a NET/Socket comm: " + c);
        }
    }

    @Override
    public MrHandle regMr(final Object comm, final MemorySegment host) {
        comm(comm);
        if (!host.isNative()) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "regMr of a heap segment: native memory only");
        }
        return new SockMr(host);
    }

    @Override
    public MrHandle regMr(final Object comm, final DmaMemory device) {
        comm(comm);
        throw new NetTransportException(Reason.INVALID_USAGE, "NET/Socket registers host memory only (ptrSupport "
            + "HOST): " + device.describe() + " needs a host bounce buffer");
    }

    @Override
    public MrHandle regMrDmaBuf(final Object comm, final long address, final long length, final long offset,
                                final int fd) {
        comm(comm);
        throw new NetTransportException(Reason.INVALID_USAGE, "NET/Socket cannot register DMA-BUF (ptrSupport HOST)");
    }

    @Override
    public void deregMr(final Object comm, final MrHandle mhandle) {
        comm(comm);
        final SockMr m = mr(mhandle);
        m.released = true;
    }

    private static SockMr mr(final MrHandle h) {
        if (!(h instanceof SockMr m)) {
            throw new NetTransportException(Reason.INVALID_USAGE, "not a NET/Socket registration: " + h);
        }
        if (m.released) {
            throw new NetTransportException(Reason.INVALID_USAGE, "registration was already deregistered");
        }
        return m;
    }

    private static MemorySegment slice(final SockMr m, final long data, final long size, final String what) {
        final long off = data - m.seg.address();
        if (size < 0 || off < 0 || off + size > m.seg.byteSize()) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, what + " [0x" + Long.toHexString(data) + ", +"
                + size + ") is outside its registration");
        }
        return m.seg.asSlice(off, size);
    }

    // ------------------------------------------------------------------ data path

    @Override
    public Request isend(final SendComm comm, final long data, final int size, final int tag,
                         final MrHandle mhandle) {
        if (!(comm instanceof Send s)) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "not a NET/Socket send comm: " + comm);
        }
        live(s);
        final MemorySegment seg = slice(mr(mhandle), data, size, "isend buffer");
        if (s.inFlight.get() >= MAX_REQUESTS) {
            throw new NetTransportException(Reason.INVALID_USAGE, "more than " + MAX_REQUESTS
                + " requests in flight on one comm");
        }
        final SockRequest r = new SockRequest(s, seg, tag, false);
        r.size = size;
        s.hdr.clear().putInt(tag).putInt(size).flip();
        try {
            while (s.hdr.hasRemaining()) {
                s.ctrl.write(s.hdr);
            }
        } catch (final IOException e) {
            s.error = "control socket: " + e.getMessage();
            throw new NetTransportException(Reason.REMOTE, s.error, e);
        }
        s.inFlight.incrementAndGet();
        s.queue(r, seg);
        return r;
    }

    @Override
    public Request irecv(final RecvComm comm, final int n, final long[] data, final int[] sizes, final int[] tags,
                         final MrHandle[] mhandles) {
        if (!(comm instanceof Recv r)) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "not a NET/Socket receive comm: " + comm);
        }
        live(r);
        if (n != 1) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "irecv of " + n + " buffers: NET/Socket "
                + "takes 1 (maxRecvs)");
        }
        if (r.inFlight.get() >= MAX_REQUESTS) {
            throw new NetTransportException(Reason.INVALID_USAGE, "more than " + MAX_REQUESTS
                + " requests in flight on one comm");
        }
        final SockRequest q = new SockRequest(r, slice(mr(mhandles[0]), data[0], sizes[0], "irecv buffer"), tags[0],
            true);
        r.inFlight.incrementAndGet();
        r.waiting.add(q);
        r.progress();
        return q;
    }

    @Override
    public Request iflush(final RecvComm comm, final int n, final long[] data, final int[] sizes,
                          final MrHandle[] mhandles) {
        return null; // host memory only: nothing to flush
    }

    private static void live(final Comm c) {
        if (c.closed) {
            throw new NetTransportException(Reason.INVALID_USAGE, "comm is closed");
        }
        if (c.error != null) {
            throw new NetTransportException(Reason.REMOTE, c.error);
        }
    }

    @Override
    public boolean test(final Request request, final int[] sizes) {
        if (!(request instanceof SockRequest q) || q.finished) {
            throw new NetTransportException(Reason.INVALID_USAGE, "test of a request that is not in flight: "
                + request);
        }
        if (q.comm instanceof Recv r) {
            r.progress();
        }
        if (q.error != null || q.comm.error != null) {
            q.finished = true;
            q.comm.inFlight.decrementAndGet();
            final String e = q.error != null ? q.error : q.comm.error;
            throw new NetTransportException(e.startsWith("message truncated") ? Reason.INVALID_USAGE : Reason.REMOTE,
                e);
        }
        if (q.chunksLeft.get() != 0) {
            // the timeout runs from the first test (a receive posted ahead is not late while nobody waits for it)
            final long now = System.nanoTime();
            if (q.waitingSince == Long.MIN_VALUE) {
                q.waitingSince = now;
            } else if (now - q.waitingSince > ctx.timeout().toNanos()) {
                q.finished = true;
                q.comm.inFlight.decrementAndGet();
                q.comm.error = (q.receive ? "irecv (tag " + q.tag + ")" : "isend of " + q.size + " bytes")
                    + " did not complete within " + ctx.timeout().toMillis() + " ms (the peer stopped? mismatched "
                    + "operations?)";
                throw new NetTransportException(Reason.TIMEOUT, q.comm.error);
            }
            return false;
        }
        q.finished = true;
        q.comm.inFlight.decrementAndGet();
        if (sizes != null && sizes.length > 0) {
            sizes[0] = q.size;
        }
        return true;
    }

    @Override
    public void closeSend(final SendComm comm) {
        if (!(comm instanceof Send s)) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "not a NET/Socket send comm");
        }
        s.close();
    }

    @Override
    public void closeRecv(final RecvComm comm) {
        if (!(comm instanceof Recv r)) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "not a NET/Socket receive comm");
        }
        r.close();
    }

    @Override
    public void closeListen(final ListenComm comm) {
        if (!(comm instanceof Listen l)) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "not a NET/Socket listen comm");
        }
        l.closed = true;
        for (final Handshake h : l.hellos) {
            h.close();
        }
        for (final Handshake[] g : l.partial.values()) {
            for (final Handshake h : g) {
                if (h != null) {
                    h.close();
                }
            }
        }
        closeQuietly(l.server);
    }

    private static void closeQuietly(final AutoCloseable c) {
        try {
            c.close();
        } catch (final Exception ignored) {
            // closing
        }
    }

    @Override
    public void close() {
        for (final Connecting c : connecting.values()) {
            for (final SocketChannel ch : c.chans) {
                closeQuietly(ch);
            }
        }
        connecting.clear();
    }
}
