package io.gdrkit.softnic.fabric;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Software NICs on different hosts, joined by TCP. One port per fabric instance; it listens on a socket and
 * {@link #connect connects} to peers by address. A connection carries packets both ways: the connecting side
 * opens it with a {@link Hello} naming its LID, and the accepting side sends to that LID over the same
 * connection, so a server never needs its clients' addresses.
 *
 * <p>No thread of its own: the NIC's duty cycle drives non-blocking sockets. {@code doWork} accepts new
 * connections and drains each connection's outbound {@link SpscRingBuffer} to its socket with gathering writes
 * straight from the ring memory; {@code poll} reads each connection into a native buffer and hands every
 * complete frame's packet, in place, to the handler. The frame on the wire is the ring record itself:
 *
 * <pre>
 * Frame (little-endian header; packets are 8-byte aligned on the wire, like in the ring):
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------------------------------------------------------+
 *  |                  length of packet (s32, >= 0)                 |
 *  +---------------------------------------------------------------+
 *  |           link CRC32C of the packet (when crc is on)          |
 *  +---------------------------------------------------------------+
 *  |          packet ... (length bytes), then 0-7 pad bytes        |
 * </pre>
 *
 * <p>With {@code connectionsPerPeer} &gt; 1 each peer gets several connections, each with its own ring; a packet
 * goes on the one its destination QP number picks, so one QP's packets stay in order. Backpressure, never
 * loss: when a socket takes no more, its ring fills and {@code tryClaim} returns -1. A peer whose connection
 * ends (closed, reset, protocol error) is forgotten: packets to it are unroutable (-2) and the NIC's
 * retransmission timeout turns that into RETRY_EXC_ERR.
 *
 * <p>Thread safety: {@link #connect} may be called from any thread (it blocks, bounded by a timeout); the
 * connections it opens are handed to the port's duty thread through a queue. Everything else on the port runs
 * on the duty thread.
 */
public final class TcpFabric implements Fabric {
    /** How long {@link #connect} waits for the TCP handshake. */
    public static final int CONNECT_TIMEOUT_MS = 5_000;
    /** An accepted connection that sends no hello within this long is closed (a stray client). */
    private static final long HELLO_TIMEOUT_NS = 10_000_000_000L;
    /** doWork calls between checks for new connections: an accept() system call is not free. */
    private static final int ACCEPT_EVERY = 64;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;

    private final int linkCapacity;
    private final boolean crc;
    private final int connectionsPerPeer;
    private final ServerSocketChannel server;
    private final InetSocketAddress localAddress;
    private final ConcurrentLinkedQueue<Peer> connected = new ConcurrentLinkedQueue<>();
    private volatile LinkHook hook;
    private volatile TcpPort port;
    private boolean closed;

    /**
     * Listens on {@code bind} (port 0: any free port, see {@link #localAddress()}).
     *
     * @param linkCapacity       bytes of each connection's outbound ring and of its receive buffer (a power of
     *                           two); packets may be up to half of it. Peers must use the same value.
     * @param hook               sees every packet this port sends (null: none)
     * @param crc                whether packets carry a CRC32C checked on receipt; peers must agree
     * @param connectionsPerPeer TCP connections {@link #connect} opens to each peer (1..64)
     */
    public TcpFabric(final InetSocketAddress bind, final int linkCapacity, final LinkHook hook, final boolean crc,
                     final int connectionsPerPeer) {
        if (linkCapacity < 4096 || Integer.bitCount(linkCapacity) != 1 || linkCapacity > (1 << 30)) {
            throw new IllegalArgumentException("linkCapacity " + linkCapacity
                + " must be a power of two from 4 KiB to 1 GiB");
        }
        if (connectionsPerPeer < 1 || connectionsPerPeer > 64) {
            throw new IllegalArgumentException("connectionsPerPeer " + connectionsPerPeer + " outside 1..64");
        }
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
            // the frame header is the ring record header, written in native order
            throw new UnsupportedOperationException("the TCP fabric's frames are little-endian; this host is not");
        }
        this.linkCapacity = linkCapacity;
        this.crc = crc;
        this.connectionsPerPeer = connectionsPerPeer;
        this.hook = hook == null ? LinkHook.PASS : hook;
        try {
            server = ServerSocketChannel.open();
            server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            server.bind(bind);
            server.configureBlocking(false);
            localAddress = (InetSocketAddress) server.getLocalAddress();
        } catch (final IOException e) {
            throw new UncheckedIOException("cannot listen for the TCP fabric on " + bind, e);
        }
    }

    /** The address peers connect to (the bound port, if 0 was asked for). */
    public InetSocketAddress localAddress() {
        return localAddress;
    }

    @Override
    public void hook(final LinkHook hook) {
        this.hook = hook == null ? LinkHook.PASS : hook;
    }

    @Override
    public String describe() {
        return "tcp:" + localAddress;
    }

    @Override
    public synchronized FabricPort attach(final int lid) {
        if (lid < 1) {
            throw new IllegalArgumentException("TCP fabric ports need an explicit LID > 0 (got " + lid + ")");
        }
        if (port != null) {
            throw new IllegalStateException("this TCP fabric already has a port (LID " + port.lid() + ")");
        }
        if (closed) {
            throw new IllegalStateException("TCP fabric on " + localAddress + " is closed");
        }
        port = new TcpPort(lid);
        return port;
    }

    /**
     * Opens {@code connectionsPerPeer} connections to the port listening at {@code peer}, which has LID
     * {@code peerLid}, and says hello on each. Blocks up to {@link #CONNECT_TIMEOUT_MS} per connection. The
     * port must be attached. Replaces an earlier connection to the same LID.
     *
     * @throws UncheckedIOException naming the address when the peer refuses, is unreachable or times out
     */
    public void connect(final int peerLid, final InetSocketAddress peer) {
        final TcpPort p = port;
        if (p == null) {
            throw new IllegalStateException("attach a port before connecting (the hello carries its LID)");
        }
        if (peerLid < 1) {
            throw new IllegalArgumentException("peer LID must be > 0 (got " + peerLid + ")");
        }
        final int session = ThreadLocalRandom.current().nextInt();
        final Peer joined = new Peer(peerLid, session, connectionsPerPeer);
        try {
            for (int i = 0; i < connectionsPerPeer; i++) {
                final SocketChannel ch = SocketChannel.open();
                // owned by the peer from now on, so a failure below closes it
                joined.conns[i] = new Connection(ch, false);
                ch.socket().connect(peer, CONNECT_TIMEOUT_MS);
                ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
                final ByteBuffer hello = ByteBuffer.allocate(Hello.LENGTH).order(ByteOrder.LITTLE_ENDIAN);
                Hello.write(hello, p.lid(), session, i, connectionsPerPeer, linkCapacity, crc);
                hello.flip();
                while (hello.hasRemaining()) {
                    ch.write(hello); // blocking, and 24 bytes always fit an empty socket buffer
                }
                ch.configureBlocking(false);
                joined.conns[i].peer = joined;
                joined.conns[i].index = i;
            }
        } catch (final IOException e) {
            joined.close();
            throw new UncheckedIOException("cannot connect to TCP fabric peer LID " + peerLid + " at " + peer
                + ": " + e.getMessage(), e);
        }
        joined.live = connectionsPerPeer;
        connected.add(joined);
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            server.close();
        } catch (final IOException ignored) {
            // closing anyway
        }
        Peer p;
        while ((p = connected.poll()) != null) {
            p.close();
        }
        if (port != null) {
            port.closeAll();
        }
    }

    /**
     * The first bytes the connecting side sends on each connection.
     *
     * <pre>
     *   0                   1                   2                   3
     *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
     *  +---------------------------------------------------------------+
     *  |                  magic "GDRT" (u32, little-endian)            |  0
     *  +-------------------------------+-------------------------------+
     *  |          version (u16)        |     flags (u16, bit 0: crc)   |  4
     *  +-------------------------------+-------------------------------+
     *  |                  LID of the connecting port (u32)             |  8
     *  +---------------------------------------------------------------+
     *  |     session (u32, random per connect(): groups connections)   | 12
     *  +-------------------------------+-------------------------------+
     *  |    connection index (u16)     |    connections in set (u16)   | 16
     *  +-------------------------------+-------------------------------+
     *  |                    link capacity (u32)                        | 20
     *  +---------------------------------------------------------------+
     * </pre>
     */
    static final class Hello {
        static final int LENGTH = 24;
        static final int MAGIC = 'G' | 'D' << 8 | 'R' << 16 | 'T' << 24;
        static final short VERSION = 1;

        private Hello() {
        }

        static void write(final ByteBuffer b, final int lid, final int session, final int index, final int count,
                          final int linkCapacity, final boolean crc) {
            b.putInt(MAGIC).putShort(VERSION).putShort((short) (crc ? 1 : 0)).putInt(lid).putInt(session)
                .putShort((short) index).putShort((short) count).putInt(linkCapacity);
        }

        static int magic(final MemorySegment s, final long at) {
            return s.get(INT, at);
        }

        static int version(final MemorySegment s, final long at) {
            return s.get(ValueLayout.JAVA_SHORT, at + 4);
        }

        static boolean crc(final MemorySegment s, final long at) {
            return (s.get(ValueLayout.JAVA_SHORT, at + 6) & 1) != 0;
        }

        static int lid(final MemorySegment s, final long at) {
            return s.get(INT, at + 8);
        }

        static int session(final MemorySegment s, final long at) {
            return s.get(INT, at + 12);
        }

        static int index(final MemorySegment s, final long at) {
            return s.get(ValueLayout.JAVA_SHORT, at + 16) & 0xFFFF;
        }

        static int count(final MemorySegment s, final long at) {
            return s.get(ValueLayout.JAVA_SHORT, at + 18) & 0xFFFF;
        }

        static int linkCapacity(final MemorySegment s, final long at) {
            return s.get(INT, at + 20);
        }
    }

    /** The connections to one peer LID, opened together by one {@link #connect} (one session). */
    private static final class Peer {
        final int lid;
        final int session;
        final Connection[] conns;
        int live;

        Peer(final int lid, final int session, final int count) {
            this.lid = lid;
            this.session = session;
            this.conns = new Connection[count];
        }

        void close() {
            for (final Connection c : conns) {
                if (c != null) {
                    c.close();
                }
            }
        }
    }

    /** One TCP connection: its socket, its outbound ring and its receive buffer, all native memory. */
    private final class Connection {
        final SocketChannel ch;
        final Arena arena = Arena.ofShared();
        final SpscRingBuffer out;
        /** Two views of the ring's records, made once: a gathering write sends up to two runs (wrap-around). */
        final ByteBuffer[] gather = new ByteBuffer[2];
        int gatherCount;
        long run1Start;
        long run1End;
        long run2Start;
        long run2End;
        final MemorySegment in;
        final ByteBuffer inView;
        /** Parse position and fill position in {@link #in}. */
        int inStart;
        int inEnd;
        /** An accepted connection owes its hello before any frame. */
        boolean awaitingHello;
        long acceptedAt;
        Peer peer;
        int index;

        Connection(final SocketChannel ch, final boolean accepted) {
            this.ch = ch;
            this.awaitingHello = accepted;
            out = new SpscRingBuffer(arena.allocate(SpscRingBuffer.segmentSize(linkCapacity), 64));
            gather[0] = out.buffer().asSlice(0, linkCapacity).asByteBuffer();
            gather[1] = out.buffer().asSlice(0, linkCapacity).asByteBuffer();
            in = arena.allocate(linkCapacity, 64);
            inView = in.asByteBuffer();
        }

        /** Sends what the ring holds, as much as the socket takes. Returns bytes written. */
        int drain() throws IOException {
            if (gatherCount == 0 && !prepare()) {
                return 0;
            }
            final long n = ch.write(gather, 0, gatherCount);
            if (n <= 0) {
                return 0; // socket buffer full: the ring fills behind it (backpressure)
            }
            // free what the kernel has taken, even mid-record, so the producer gets room early
            final ByteBuffer first = gather[0];
            if (first.hasRemaining()) {
                out.releaseTo(run1Start + (first.position() - out.indexOf(run1Start)));
            } else if (gatherCount == 2 && gather[1].hasRemaining()) {
                out.releaseTo(run2Start + (gather[1].position() - out.indexOf(run2Start)));
            } else {
                out.releaseTo(gatherCount == 2 ? run2End : run1End);
                gatherCount = 0;
            }
            return (int) n;
        }

        /** Points the gather views at the committed records: one run, or two when they wrap around. */
        private boolean prepare() {
            final long tail = out.tailPosition();
            long head = out.headPosition();
            if (head == tail) {
                return false;
            }
            long end = out.contiguousRunEnd(head, tail);
            if (end < 0) { // padding at the ring's end: nothing of it is sent
                head = -end;
                out.releaseTo(head);
                if (head == tail) {
                    return false;
                }
                end = out.contiguousRunEnd(head, tail);
            }
            run1Start = head;
            run1End = end;
            view(gather[0], head, end);
            gatherCount = 1;
            if (end < tail) {
                long next = out.contiguousRunEnd(end, tail);
                long start = end;
                if (next < 0) {
                    start = -next;
                    next = start < tail ? out.contiguousRunEnd(start, tail) : start;
                }
                if (next > start) {
                    run2Start = start;
                    run2End = next;
                    view(gather[1], start, next);
                    gatherCount = 2;
                }
            }
            return true;
        }

        private void view(final ByteBuffer b, final long from, final long to) {
            final int index = out.indexOf(from);
            b.limit(index + (int) (to - from)).position(index);
        }

        /** Reads what the socket has, room permitting. Returns bytes read; -1 at end of stream. */
        int fill() throws IOException {
            if (inStart == inEnd) {
                inStart = 0;
                inEnd = 0;
            } else if (linkCapacity - inEnd < linkCapacity / 2 && inStart > 0) {
                // keep room for a whole frame (at most half the buffer): move the partial one to the front
                MemorySegment.copy(in, inStart, in, 0, inEnd - inStart);
                inEnd -= inStart;
                inStart = 0;
            }
            if (inEnd == linkCapacity) {
                return 0;
            }
            inView.limit(linkCapacity).position(inEnd);
            final int n = ch.read(inView);
            if (n > 0) {
                inEnd += n;
            }
            return n;
        }

        void close() {
            try {
                ch.close();
            } catch (final IOException ignored) {
                // closing anyway
            }
            if (arena.scope().isAlive()) {
                arena.close();
            }
        }
    }

    private final class TcpPort extends RingPort {
        private final int maxPacket = linkCapacity / 2 - SpscRingBuffer.HEADER;
        /** Peers by LID, and every connection of every peer (what poll and doWork walk); duty thread only. */
        private Peer[] peers = new Peer[16];
        private Connection[] conns = new Connection[0];
        private Connection[] accepting = new Connection[0];
        private int cycles;
        private long now;
        private long protocolErrors;

        /** Packets this port sends to its own LID (loopback QPs, e.g. NCCL's flush QP) never touch a socket. */
        private final Arena selfArena = Arena.ofAuto(); // freed with the port: a duty thread may still poll it
        private final SpscRingBuffer self;
        private final SpscRingBuffer[] selfOnly;

        TcpPort(final int lid) {
            super(lid, crc, linkCapacity / 4);
            this.self = new SpscRingBuffer(selfArena.allocate(SpscRingBuffer.segmentSize(linkCapacity), 64));
            this.selfOnly = new SpscRingBuffer[] {self};
        }

        @Override
        public int maxPacket() {
            return maxPacket;
        }

        @Override
        LinkHook hook() {
            return hook;
        }

        @Override
        SpscRingBuffer[] inbound() {
            return selfOnly;
        }

        @Override
        SpscRingBuffer outbound(final int dlid) {
            return outbound(dlid, 0);
        }

        @Override
        SpscRingBuffer outbound(final int dlid, final int destQpn) {
            if (dlid == lid()) {
                return self;
            }
            Peer p = dlid > 0 && dlid < peers.length ? peers[dlid] : null;
            if (p == null) {
                if (connected.isEmpty()) {
                    return null;
                }
                installConnected(); // connect() just returned on another thread: the peer is ours from now
                p = dlid > 0 && dlid < peers.length ? peers[dlid] : null;
                if (p == null) {
                    return null;
                }
            }
            Connection c = p.conns[(destQpn & 0x7FFF_FFFF) % p.conns.length];
            if (c == null) { // an accepted set still missing this connection: any other keeps the packet
                for (final Connection other : p.conns) {
                    if (other != null) {
                        c = other;
                        break;
                    }
                }
            }
            return c.out;
        }

        private void installConnected() {
            Peer p;
            while ((p = connected.poll()) != null) {
                install(p);
                for (final Connection c : p.conns) {
                    conns = append(conns, c);
                }
            }
        }

        private void install(final Peer p) {
            if (p.lid >= peers.length) {
                peers = Arrays.copyOf(peers, Math.max(p.lid + 1, peers.length * 2));
            }
            final Peer old = peers[p.lid];
            peers[p.lid] = p;
            if (old != null) {
                drop(old); // a reconnect replaces the earlier session
            }
        }

        @Override
        public int doWork(final long nowNanos) {
            now = nowNanos;
            int work = super.doWork(nowNanos);
            if (!connected.isEmpty()) {
                installConnected();
            }
            if (++cycles >= ACCEPT_EVERY) {
                cycles = 0;
                work += accept();
            }
            final Connection[] cs = conns;
            for (final Connection c : cs) {
                if (c.peer == null) {
                    continue; // dropped earlier in this loop
                }
                try {
                    work += c.drain();
                } catch (final IOException e) {
                    drop(c.peer);
                }
            }
            return work;
        }

        private int accept() {
            int n = 0;
            try {
                SocketChannel ch;
                while ((ch = server.accept()) != null) {
                    ch.configureBlocking(false);
                    ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
                    final Connection c = new Connection(ch, true);
                    c.acceptedAt = now;
                    accepting = append(accepting, c);
                    n++;
                }
            } catch (final IOException e) {
                // a failed accept (the client gave up, or the fabric is closing) affects no established peer
            }
            return n;
        }

        @Override
        public int poll(final SpscRingBuffer.RecordHandler handler, final int limit) {
            if (accepting.length > 0) {
                readHellos();
            }
            int n = 0;
            final Connection[] cs = conns;
            for (int i = 0; i < cs.length && n < limit; i++) {
                final Connection c = cs[i];
                if (c.peer == null) {
                    continue;
                }
                try {
                    n += receive(c, handler, limit - n);
                } catch (final IOException e) {
                    drop(c.peer);
                }
            }
            if (n < limit) {
                n += super.poll(handler, limit - n); // the loopback ring
            }
            return n;
        }

        /** Hands up to {@code budget} buffered frames to the handler, reading from the socket if it needs more. */
        private int receive(final Connection c, final SpscRingBuffer.RecordHandler handler, final int budget)
            throws IOException {
            int n = parse(c, handler, budget);
            if (n < budget) {
                if (c.fill() < 0) {
                    throw new IOException("peer LID " + c.peer.lid + " closed the connection");
                }
                n += parse(c, handler, budget - n);
            }
            return n;
        }

        private int parse(final Connection c, final SpscRingBuffer.RecordHandler handler, final int budget)
            throws IOException {
            final MemorySegment in = c.in;
            int n = 0;
            while (n < budget && c.inEnd - c.inStart >= SpscRingBuffer.HEADER) {
                final int at = c.inStart;
                final int length = in.get(INT, at);
                if (length < 0 || length > maxPacket) {
                    protocolErrors++;
                    throw new IOException("frame of " + length + " bytes from LID " + c.peer.lid);
                }
                final int frame = (length + SpscRingBuffer.HEADER + 7) & ~7;
                if (c.inEnd - at < frame) {
                    break;
                }
                c.inStart = at + frame;
                if (!crc() || crcOk(in, at + SpscRingBuffer.HEADER, length, in.get(INT, at + 4))) {
                    handler.onRecord(in, at + SpscRingBuffer.HEADER, length);
                }
                n++; // a CRC failure counts as handled: the frame is consumed
                if (c.peer == null) {
                    break; // the handler's sends found the peer dead
                }
            }
            return n;
        }

        private void readHellos() {
            Connection[] still = accepting;
            for (final Connection c : accepting) {
                try {
                    if (c.fill() < 0) {
                        throw new IOException("closed before its hello");
                    }
                    if (c.inEnd < Hello.LENGTH) {
                        if (now - c.acceptedAt > HELLO_TIMEOUT_NS) {
                            throw new IOException("no hello within " + HELLO_TIMEOUT_NS / 1_000_000 + " ms");
                        }
                        continue;
                    }
                    still = remove(still, c);
                    join(c);
                } catch (final IOException e) {
                    still = remove(still, c);
                    c.close();
                }
            }
            accepting = still;
        }

        /** Turns an accepted connection whose hello arrived into one of its peer's connections. */
        private void join(final Connection c) throws IOException {
            final MemorySegment in = c.in;
            final int lid = Hello.lid(in, 0);
            final int index = Hello.index(in, 0);
            final int count = Hello.count(in, 0);
            if (Hello.magic(in, 0) != Hello.MAGIC || Hello.version(in, 0) != Hello.VERSION || lid < 1
                || count < 1 || index >= count || Hello.linkCapacity(in, 0) != linkCapacity
                || Hello.crc(in, 0) != crc) {
                protocolErrors++;
                throw new IOException("hello does not match this fabric (LID " + lid + ")");
            }
            c.inStart = Hello.LENGTH;
            c.awaitingHello = false;
            Peer p = lid < peers.length ? peers[lid] : null;
            if (p == null || p.session != Hello.session(in, 0)) {
                p = new Peer(lid, Hello.session(in, 0), count);
                install(p);
            }
            if (p.conns.length != count || p.conns[index] != null) {
                protocolErrors++;
                throw new IOException("duplicate connection " + index + " from LID " + lid);
            }
            p.conns[index] = c;
            p.live++;
            c.peer = p;
            c.index = index;
            conns = append(conns, c);
        }

        /** Forgets a peer whose connection failed: its packets become unroutable. */
        private void drop(final Peer p) {
            if (p.lid < peers.length && peers[p.lid] == p) {
                peers[p.lid] = null;
            }
            for (final Connection c : p.conns) {
                if (c != null) {
                    conns = remove(conns, c);
                    c.peer = null;
                    c.close();
                }
            }
        }

        void closeAll() {
            for (final Connection c : conns) {
                c.close();
            }
            for (final Connection c : accepting) {
                c.close();
            }
        }

        long protocolErrors() {
            return protocolErrors;
        }
    }

    private static Connection[] append(final Connection[] a, final Connection c) {
        final Connection[] b = Arrays.copyOf(a, a.length + 1);
        b[a.length] = c;
        return b;
    }

    private static Connection[] remove(final Connection[] a, final Connection c) {
        for (int i = 0; i < a.length; i++) {
            if (a[i] == c) {
                final Connection[] b = new Connection[a.length - 1];
                System.arraycopy(a, 0, b, 0, i);
                System.arraycopy(a, i + 1, b, i, a.length - i - 1);
                return b;
            }
        }
        return a;
    }
}
