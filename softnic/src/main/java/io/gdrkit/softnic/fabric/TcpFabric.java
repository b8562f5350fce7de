/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
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
 * complete frame's packet, in place, to the handler. The frame on the wire is the ring record itself, except where
 * the bytes stay in the MRs (zero copy, no link CRC and no link hook): a record whose payload was
 * {@linkplain FabricPort#deferPayload deferred} holds the headers only and is written as frame header, headers, payload from
 * the sender's MR and pad; and a large WRITE whose headers arrive ahead of its payload has the payload read from the
 * socket straight into the receiver's MR ({@link FabricPort.DirectSink}, {@code gdrkit.tcp.direct.min}). Either way
 * the bytes on the wire are the frames below:
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
 * <p>Socket buffer sizes and idle parking come from a {@link TcpFabricContext}. With parking on, a NIC whose duty
 * cycles find nothing to do for a while waits in a selector on its sockets instead of polling them again: two
 * busy-polling processes and the kernel's TCP work cannot share a small machine's cores, and a spinning process takes
 * the CPU its peer needs to produce the bytes it waits for.
 *
 * <p>With {@code connectionsPerPeer} &gt; 1 each peer gets several connections, each with its own ring; a packet
 * goes on the one its destination QP number picks, so one QP's packets stay in order. Backpressure, never
 * loss: when a socket takes no more, its ring fills and {@code tryClaim} returns -1. A peer whose connection
 * ends (closed, reset, protocol error) is forgotten: packets to it are unroutable (-2) and the NIC's
 * retransmission timeout turns that into RETRY_EXC_ERR.
 *
 * <p>Peers are untrusted. Accepting is done by a handshake thread of the fabric, never by the duty thread: each
 * accepted connection gets a {@link Challenge} (a fresh nonce), must answer with a whole {@link Hello} within
 * {@link #HELLO_TIMEOUT_MS} of accept (one deadline, not per read), and gets a {@link Verdict}: accepted, or a named reason (link capacity or link CRC
 * differ, LID out of range or held by a live connection or not admitted, wrong token). Only then is memory for
 * the connection allocated. At most {@link #MAX_PENDING} connections may be in the handshake at once; more are
 * closed at once. On an established connection every frame's length and every packet's SLID and DLID are
 * checked: a packet claiming another source LID than the one its connection proved is a protocol error that
 * closes that connection only ({@link #protocolErrors}).
 *
 * <p>Thread safety: {@link #connect} may be called from any thread (it blocks, bounded by a timeout); the
 * connections it opens, and those the handshake thread accepts, are handed to the port's duty thread through a
 * queue. Everything else on the port runs on the duty thread.
 */
public final class TcpFabric implements Fabric {
    /** How long {@link #connect} waits for the TCP handshake. */
    public static final int CONNECT_TIMEOUT_MS = 5_000;
    /** An accepted connection that sends no hello within this long is closed (a stray client). */
    public static final int HELLO_TIMEOUT_MS = 5_000;
    /** Accepted connections allowed in the handshake at once. */
    public static final int MAX_PENDING = 32;
    /** Highest LID a hello may name (IB unicast LIDs are 0x0001..0xBFFF). */
    public static final int MAX_LID = 0xBFFF;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    /** Deferred records a connection holds at once (a power of two), their payload pieces, and pieces per record. */
    private static final int DEFER_RECORDS = 256;
    private static final int DEFER_PIECES = 1024;
    private static final int MAX_PIECES = 32;
    /** Deferred records one gathering write sends at most, and its entries (each record 3 and its pieces). */
    private static final int BATCH_RECORDS = 16;
    private static final int DGATHER = 128;
    /** How far a read looks past a frame whose payload went straight into memory (the next one's headers). */
    private static final int DIRECT_PEEK = 1024;
    private static final ValueLayout.OfShort BIG_U16 =
        ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private final int linkCapacity;
    private final boolean crc;
    private final TcpFabricContext ctx;
    private final int connectionsPerPeer;
    private final ServerSocketChannel server;
    private final InetSocketAddress localAddress;
    private final ConcurrentLinkedQueue<Peer> connected = new ConcurrentLinkedQueue<>();
    /** Connections whose hello the handshake thread accepted, for the duty thread to join to their peer. */
    private final ConcurrentLinkedQueue<Connection> joined = new ConcurrentLinkedQueue<>();
    /** LID -> session of the live peer holding it; a hello for a held LID with another session is refused. */
    private final java.util.concurrent.ConcurrentHashMap<Integer, Integer> lidOwners =
        new java.util.concurrent.ConcurrentHashMap<>();
    /** With admission on, only these LIDs may join (the listener assigned them). */
    private final java.util.Set<Integer> admitted = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private volatile boolean admission;
    private final io.gdrkit.core.auth.Token token;
    private final java.util.concurrent.atomic.AtomicInteger pending = new java.util.concurrent.atomic.AtomicInteger();
    private final java.util.concurrent.atomic.AtomicLong rejected = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong spoofed = new java.util.concurrent.atomic.AtomicLong();
    private final io.gdrkit.core.net.AcceptBackoff acceptBackoff = new io.gdrkit.core.net.AcceptBackoff();
    /** Connections in their hello: the oldest silent one makes room when the cap is reached. */
    private final io.gdrkit.core.net.PendingHandshakes inHello = new io.gdrkit.core.net.PendingHandshakes();
    private volatile String lastError = "";
    private volatile boolean parkingOn = true;
    /** Gathering writes that sent records from both ends of a ring (wrap-around), and writes the socket cut short. */
    private volatile long wrappedWrites;
    private volatile long partialWrites;
    /** Records written with their payload straight from the sender's memory. */
    private volatile long deferredSent;
    /** Packets whose payload was read straight into their memory. */
    private volatile long directReceived;
    private final Thread acceptor;
    private volatile LinkHook hook;
    /** The socket buffers the kernel granted the last connection {@link #connect} opened, as it reports them. */
    private volatile String granted = "";
    private volatile TcpPort port;
    private volatile boolean closed;

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
        this(bind, linkCapacity, hook, crc, connectionsPerPeer, io.gdrkit.core.auth.Token.fromProcess());
    }

    /**
     * As {@link #TcpFabric(InetSocketAddress, int, LinkHook, boolean, int)}; peers must prove {@code token} in
     * their hello, and {@link #connect} proves it to them.
     */
    public TcpFabric(final InetSocketAddress bind, final int linkCapacity, final LinkHook hook, final boolean crc,
                     final int connectionsPerPeer, final io.gdrkit.core.auth.Token token) {
        this(bind, linkCapacity, hook, crc, connectionsPerPeer, token, new TcpFabricContext().conclude());
    }

    /**
     * As {@link #TcpFabric(InetSocketAddress, int, LinkHook, boolean, int, io.gdrkit.core.auth.Token)}, with the
     * socket buffer sizes and idle parking of {@code ctx} (concluded).
     */
    public TcpFabric(final InetSocketAddress bind, final int linkCapacity, final LinkHook hook, final boolean crc,
                     final int connectionsPerPeer, final io.gdrkit.core.auth.Token token,
                     final TcpFabricContext ctx) {
        this.token = token;
        this.ctx = ctx;
        ctx.parkMillis(); // throws unless concluded
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
            if (ctx.receiveBuffer() > 0) {
                server.setOption(StandardSocketOptions.SO_RCVBUF, ctx.receiveBuffer()); // accepted ones inherit it
            }
            server.bind(bind, MAX_PENDING);
            localAddress = (InetSocketAddress) server.getLocalAddress();
        } catch (final IOException e) {
            throw new UncheckedIOException("cannot listen for the TCP fabric on " + bind + ": " + e.getMessage(), e);
        }
        acceptor = Thread.ofPlatform().daemon(true).name("tcp-fabric-accept-" + localAddress.getPort())
            .start(this::acceptLoop);
    }

    /**
     * Turns on admission: from now on only LIDs given to {@link #admit} may join (the listener assigns LIDs, a
     * peer cannot claim one).
     */
    public void requireAdmission() {
        admission = true;
    }

    /** Lets a peer with {@code lid} join (with admission on); at most 1024 LIDs are admitted at once. */
    public void admit(final int lid) {
        if (lid < 1 || lid > MAX_LID) {
            throw new IllegalArgumentException("LID " + lid + " outside 1..0x" + Integer.toHexString(MAX_LID));
        }
        if (admitted.size() >= 1024) {
            admitted.clear(); // oldest grants lapse; a live session keeps its LID through lidOwners
        }
        admitted.add(lid);
    }

    /** Whether a live connection holds {@code lid}. */
    public boolean lidInUse(final int lid) {
        return lidOwners.containsKey(lid);
    }

    /** Connections refused in the handshake (bad hello, wrong token, timeout, over the pending cap). */
    public long rejectedConnections() {
        return rejected.get();
    }

    /** Packets whose SLID or DLID did not match their connection (each closed that connection). */
    public long spoofedPackets() {
        return spoofed.get();
    }

    /** Frames with an impossible length, and spoofed packets: each closed its connection. */
    public long protocolErrors() {
        final TcpPort p = port;
        return p == null ? 0 : p.protocolErrors();
    }

    /**
     * Turns idle parking off (busy-poll) or back on, for a fabric whose context has it on
     * ({@link TcpFabricContext#parkMillis()} &gt; 0); without it this changes nothing. Any thread.
     */
    public void idleParking(final boolean on) {
        parkingOn = on;
    }

    /** Gathering writes whose records straddled the ring's wrap (two runs in one system call). */
    long wrappedWrites() {
        return wrappedWrites;
    }

    /** Writes the socket took only part of (the rest stays in the ring and goes on the next cycle). */
    long partialWrites() {
        return partialWrites;
    }

    /** Idle duty cycles in which the port waited in its selector ({@link TcpFabricContext#parkMillis()}). */
    public long idleParks() {
        final TcpPort p = port;
        return p == null ? 0 : p.parks();
    }

    /**
     * Connections that had sent nothing, closed to make room for a newer one when {@link #MAX_PENDING} were in
     * their hello: silent connections churn among themselves and never lock a real peer out.
     */
    public long evictedSilent() {
        return inHello.evictedSilent();
    }

    /** Connections between accept and their verdict now. */
    public int pendingConnections() {
        return pending.get();
    }

    /** How accept failures (EMFILE and the like) were met: counted, remembered, backed off. */
    public io.gdrkit.core.net.AcceptBackoff acceptBackoff() {
        return acceptBackoff;
    }

    /**
     * The socket buffer sizes the kernel granted the last connection {@link #connect} opened, as {@code getsockopt}
     * reports them (Linux caps an ask at net.core.wmem_max / rmem_max); empty before any connect.
     */
    public String grantedBuffers() {
        return granted;
    }

    /** Why the last connection was refused or closed for a protocol error ("" if none). */
    public String lastError() {
        return lastError;
    }

    private void acceptLoop() {
        while (!closed) {
            final SocketChannel ch;
            try {
                ch = server.accept();
                acceptBackoff.succeeded();
            } catch (final IOException e) {
                if (closed) {
                    return;
                }
                // out of descriptors (EMFILE) fails at once while the connection waits in the backlog: back off
                // instead of spinning; a client that reset during accept affects nobody else
                acceptBackoff.failed(e);
                if (!acceptBackoff.pause()) {
                    return;
                }
                continue;
            }
            if (pending.get() >= MAX_PENDING && !inHello.evictOldestSilent()) {
                refuse(ch, "over the cap of " + MAX_PENDING + " pending connections, every one of them speaking");
                continue;
            }
            pending.incrementAndGet();
            final io.gdrkit.core.net.PendingHandshakes.Entry p = inHello.add(ch);
            Thread.ofVirtual().name("tcp-fabric-handshake").start(() -> {
                try {
                    handshake(ch, p);
                } finally {
                    inHello.remove(p);
                    pending.decrementAndGet();
                }
            });
        }
    }

    private void refuse(final SocketChannel ch, final String why) {
        refuse(ch, why, null);
    }

    /** Counts and records the refusal, then sends {@code verdict} (if any) and closes. */
    private void refuse(final SocketChannel ch, final String why, final ByteBuffer verdict) {
        rejected.incrementAndGet();
        String from;
        try {
            from = String.valueOf(ch.getRemoteAddress());
        } catch (final IOException e) {
            from = "?";
        }
        lastError = from + ": " + why;
        try {
            if (verdict != null) {
                writeFully(ch, verdict);
            }
        } catch (final IOException ignored) {
            // the peer left: it learns nothing more
        }
        try {
            ch.close();
        } catch (final IOException ignored) {
            // closing anyway
        }
    }

    /** Challenge, hello, verdict, on a blocking channel with timeouts; a good connection goes to the duty thread. */
    private void handshake(final SocketChannel ch, final io.gdrkit.core.net.PendingHandshakes.Entry p) {
        try {
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            if (ctx.sendBuffer() > 0) {
                ch.setOption(StandardSocketOptions.SO_SNDBUF, ctx.sendBuffer());
            }
            // one deadline from accept for the whole hello, not per read: a byte-at-a-time peer cannot hold a slot
            final io.gdrkit.core.net.DeadlineInputStream in = new io.gdrkit.core.net.DeadlineInputStream(ch.socket(),
                java.time.Duration.ofMillis(HELLO_TIMEOUT_MS));
            final byte[] nonce = io.gdrkit.core.auth.Token.nonce();
            final ByteBuffer chal = ByteBuffer.allocate(Challenge.LENGTH).order(ByteOrder.LITTLE_ENDIAN);
            Challenge.write(chal, nonce);
            writeFully(ch, chal.flip());
            // the first byte on its own: from then on the connection has spoken and is never evicted as silent
            final int first = in.read();
            if (first < 0) {
                throw new IOException("connection closed after 0 of " + (Hello.LENGTH
                    + io.gdrkit.core.auth.Token.MAC_LENGTH) + " handshake bytes");
            }
            p.spoke();
            final byte[] rest = readFully(in, Hello.LENGTH + io.gdrkit.core.auth.Token.MAC_LENGTH - 1);
            final byte[] hello = new byte[Hello.LENGTH + io.gdrkit.core.auth.Token.MAC_LENGTH];
            hello[0] = (byte) first;
            System.arraycopy(rest, 0, hello, 1, rest.length);
            final MemorySegment h = MemorySegment.ofArray(hello);
            final String why = check(h, nonce, hello);
            final ByteBuffer verdict = ByteBuffer.allocate(Verdict.LENGTH).order(ByteOrder.LITTLE_ENDIAN);
            Verdict.write(verdict, why);
            if (why != null) {
                refuse(ch, why, verdict.flip()); // counted before the peer can see the verdict
                return;
            }
            writeFully(ch, verdict.flip());
            ch.configureBlocking(false);
            final Connection c = new Connection(ch, true);
            c.helloLid = Hello.lid(h, 0);
            c.helloSession = Hello.session(h, 0);
            c.index = Hello.index(h, 0);
            c.helloCount = Hello.count(h, 0);
            if (closed) {
                c.close();
                return;
            }
            joined.add(c);
            final TcpPort tp = port;
            if (tp != null) {
                tp.wakeup();
            }
        } catch (final java.net.SocketTimeoutException e) {
            refuse(ch, "no hello within " + HELLO_TIMEOUT_MS + " ms of accept (one deadline for the whole hello)");
        } catch (final IOException | RuntimeException e) {
            refuse(ch, p.evicted() ? "closed to make room: silent while " + MAX_PENDING + " connections were in their "
                + "hello" : "handshake failed: " + e.getMessage());
        }
    }

    /** The handshake's check of a hello (24 bytes + 32 of authenticator) for {@code nonce}; for tests. */
    String checkHello(final byte[] raw, final byte[] nonce) {
        if (raw.length != Hello.LENGTH + io.gdrkit.core.auth.Token.MAC_LENGTH) {
            return "hello of " + raw.length + " bytes";
        }
        return check(MemorySegment.ofArray(raw), nonce, raw);
    }

    /** Null if the hello may join, else the named reason it may not. */
    private String check(final MemorySegment h, final byte[] nonce, final byte[] raw) {
        if (Hello.magic(h, 0) != Hello.MAGIC) {
            return "not a gdrkit TCP fabric hello (magic 0x" + Integer.toHexString(Hello.magic(h, 0)) + ")";
        }
        if (Hello.version(h, 0) != Hello.VERSION) {
            return "hello version " + Hello.version(h, 0) + ", this fabric speaks " + Hello.VERSION;
        }
        if (!token.verify(java.util.Arrays.copyOfRange(raw, Hello.LENGTH, raw.length), nonce,
            java.util.Arrays.copyOf(raw, Hello.LENGTH))) {
            return "authentication failed: the token does not match";
        }
        final int lid = Hello.lid(h, 0);
        if (lid < 1 || lid > MAX_LID) {
            return "LID " + Integer.toUnsignedString(lid) + " outside 1..0x" + Integer.toHexString(MAX_LID);
        }
        final int count = Hello.count(h, 0);
        if (count < 1 || count > 64 || Hello.index(h, 0) >= count) {
            return "connection " + Hello.index(h, 0) + " of " + count + " (valid: 1..64 connections)";
        }
        if (Hello.linkCapacity(h, 0) != linkCapacity) {
            return "link capacity mismatch: peer " + Integer.toUnsignedString(Hello.linkCapacity(h, 0))
                + " bytes, this fabric " + linkCapacity + " (they follow the MTU: use the same --mtu on both sides)";
        }
        if (Hello.crc(h, 0) != crc) {
            return "link CRC mismatch: the peer has it " + (Hello.crc(h, 0) ? "on" : "off") + ", this fabric "
                + (crc ? "on" : "off");
        }
        final TcpPort p = port;
        if (p != null && lid == p.lid()) {
            return "LID " + lid + " is this fabric's own";
        }
        if (admission && !admitted.contains(lid)) {
            return "LID " + lid + " was not assigned by this listener";
        }
        final int session = Hello.session(h, 0);
        final Integer owner = lidOwners.putIfAbsent(lid, session);
        if (owner != null && owner != session) {
            return "LID " + lid + " is held by a live connection";
        }
        return null;
    }

    private static void writeFully(final SocketChannel ch, final ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    /** Reads exactly n bytes (a {@link io.gdrkit.core.net.DeadlineInputStream} bounds the whole read). */
    private static byte[] readFully(final java.io.InputStream in, final int n) throws IOException {
        final byte[] b = in.readNBytes(n);
        if (b.length != n) {
            throw new IOException("connection closed after " + b.length + " of " + n + " handshake bytes");
        }
        return b;
    }

    /** The socket settings this fabric runs with (concluded), each with its source. */
    public TcpFabricContext context() {
        return ctx;
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
     * port must be attached. The LID is held from now until the connection ends: an incoming hello claiming it is
     * refused, and so is a second {@code connect} to it while the first lives (a live LID is never replaced).
     *
     * @throws UncheckedIOException  naming the address when the peer refuses, is unreachable or times out
     * @throws IllegalStateException when a live connection (ours or accepted) already holds {@code peerLid}
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
        // the LID is ours to reach from now: an incoming hello claiming it is refused as held (no takeover)
        if (lidOwners.putIfAbsent(peerLid, session) != null) {
            throw new IllegalStateException("cannot connect to TCP fabric peer LID " + peerLid + " at " + peer
                + ": LID " + peerLid + " is held by a live connection (close it first; it is never replaced)");
        }
        final Peer joined = new Peer(peerLid, session, connectionsPerPeer);
        try {
            for (int i = 0; i < connectionsPerPeer; i++) {
                final SocketChannel ch = SocketChannel.open();
                // owned by the peer from now on, so a failure below closes it
                joined.conns[i] = new Connection(ch, false);
                // before connect: the receive buffer sets the window scale of the handshake
                if (ctx.receiveBuffer() > 0) {
                    ch.setOption(StandardSocketOptions.SO_RCVBUF, ctx.receiveBuffer());
                }
                if (ctx.sendBuffer() > 0) {
                    ch.setOption(StandardSocketOptions.SO_SNDBUF, ctx.sendBuffer());
                }
                ch.socket().connect(peer, CONNECT_TIMEOUT_MS);
                ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
                granted = "SO_SNDBUF " + ch.getOption(StandardSocketOptions.SO_SNDBUF) + " B, SO_RCVBUF "
                    + ch.getOption(StandardSocketOptions.SO_RCVBUF) + " B";
                // the challenge and the verdict within one deadline: a dripping listener cannot stall us
                final io.gdrkit.core.net.DeadlineInputStream in = new io.gdrkit.core.net.DeadlineInputStream(
                    ch.socket(), java.time.Duration.ofMillis(CONNECT_TIMEOUT_MS));
                final MemorySegment chal = MemorySegment.ofArray(readFully(in, Challenge.LENGTH));
                if (Challenge.magic(chal) != Challenge.MAGIC) {
                    throw new IOException("not a gdrkit TCP fabric (no challenge)");
                }
                final ByteBuffer hello = ByteBuffer.allocate(Hello.LENGTH).order(ByteOrder.LITTLE_ENDIAN);
                Hello.write(hello, p.lid(), session, i, connectionsPerPeer, linkCapacity, crc);
                final byte[] mac = token.answer(Challenge.nonce(chal), hello.array());
                writeFully(ch, ByteBuffer.wrap(hello.array()));
                writeFully(ch, ByteBuffer.wrap(mac));
                final MemorySegment verdict = MemorySegment.ofArray(readFully(in, Verdict.LENGTH));
                final String why = Verdict.reason(verdict);
                if (why != null) {
                    throw new IOException("the peer refused our hello: " + why);
                }
                ch.configureBlocking(false);
                joined.conns[i].peer = joined;
                joined.conns[i].index = i;
            }
        } catch (final java.net.SocketTimeoutException e) {
            joined.close();
            lidOwners.remove(peerLid, session);
            throw new UncheckedIOException("cannot connect to TCP fabric peer LID " + peerLid + " at " + peer
                + ": no handshake answer within " + CONNECT_TIMEOUT_MS + " ms", e);
        } catch (final IOException e) {
            joined.close();
            lidOwners.remove(peerLid, session);
            throw new UncheckedIOException("cannot connect to TCP fabric peer LID " + peerLid + " at " + peer
                + ": " + e.getMessage(), e);
        } catch (final RuntimeException e) {
            joined.close();
            lidOwners.remove(peerLid, session);
            throw e;
        }
        joined.live = connectionsPerPeer;
        connected.add(joined);
        p.wakeup(); // a duty thread parked in its selector picks the peer up now
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
        Connection c;
        while ((c = joined.poll()) != null) {
            c.close();
        }
        if (port != null) {
            port.closeAll();
        }
    }

    /**
     * The first bytes the accepting side sends on each connection: a fresh nonce the hello's authenticator covers.
     *
     * <pre>
     *  +---------------------------------------------------------------+
     *  |                  magic "GDRC" (u32, little-endian)            |  0
     *  +-------------------------------+-------------------------------+
     *  |          version (u16)        |          reserved (u16)       |  4
     *  +-------------------------------+-------------------------------+
     *  |                      nonce (16 bytes)                         |  8
     *  +---------------------------------------------------------------+
     * </pre>
     */
    static final class Challenge {
        static final int LENGTH = 24;
        static final int MAGIC = 'G' | 'D' << 8 | 'R' << 16 | 'C' << 24;

        private Challenge() {
        }

        static void write(final ByteBuffer b, final byte[] nonce) {
            b.putInt(MAGIC).putShort(Hello.VERSION).putShort((short) 0).put(nonce);
        }

        static int magic(final MemorySegment s) {
            return s.get(ValueLayout.JAVA_INT_UNALIGNED, 0);
        }

        static byte[] nonce(final MemorySegment s) {
            return s.asSlice(8, 16).toArray(ValueLayout.JAVA_BYTE);
        }
    }

    /**
     * The accepting side's answer to a hello: accepted, or refused with a reason the connecting side reports.
     *
     * <pre>
     *  +---------------------------------------------------------------+
     *  |                  magic "GDRV" (u32, little-endian)            |  0
     *  +---------------------------------------------------------------+
     *  |             reason length (u32; 0: accepted; <= 120)          |  4
     *  +---------------------------------------------------------------+
     *  |                reason, UTF-8, zero padded (120 bytes)         |  8
     *  +---------------------------------------------------------------+
     * </pre>
     */
    static final class Verdict {
        static final int LENGTH = 128;
        static final int MAGIC = 'G' | 'D' << 8 | 'R' << 16 | 'V' << 24;

        private Verdict() {
        }

        static void write(final ByteBuffer b, final String reason) {
            final byte[] r = reason == null ? new byte[0]
                : java.util.Arrays.copyOf(reason.getBytes(java.nio.charset.StandardCharsets.UTF_8),
                    Math.min(LENGTH - 8, reason.getBytes(java.nio.charset.StandardCharsets.UTF_8).length));
            b.putInt(MAGIC).putInt(r.length).put(r);
            b.position(LENGTH);
        }

        /** Null when accepted, else the reason. */
        static String reason(final MemorySegment s) throws IOException {
            if (s.get(ValueLayout.JAVA_INT_UNALIGNED, 0) != MAGIC) {
                throw new IOException("not a gdrkit TCP fabric (no verdict)");
            }
            final int n = s.get(ValueLayout.JAVA_INT_UNALIGNED, 4);
            if (n == 0) {
                return null;
            }
            if (n < 0 || n > LENGTH - 8) {
                throw new IOException("malformed verdict (reason of " + n + " bytes)");
            }
            return new String(s.asSlice(8, n).toArray(ValueLayout.JAVA_BYTE), java.nio.charset.StandardCharsets.UTF_8);
        }
    }

    /**
     * The bytes the connecting side sends on each connection after the challenge, followed by 32 bytes of
     * HMAC-SHA256(token, nonce || these 24 bytes) (zeros without a token).
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
        static final short VERSION = 2;

        private Hello() {
        }

        static void write(final ByteBuffer b, final int lid, final int session, final int index, final int count,
                          final int linkCapacity, final boolean crc) {
            b.putInt(MAGIC).putShort(VERSION).putShort((short) (crc ? 1 : 0)).putInt(lid).putInt(session)
                .putShort((short) index).putShort((short) count).putInt(linkCapacity);
        }

        static int magic(final MemorySegment s, final long at) {
            return s.get(ValueLayout.JAVA_INT_UNALIGNED, at);
        }

        static int version(final MemorySegment s, final long at) {
            return s.get(ValueLayout.JAVA_SHORT_UNALIGNED, at + 4);
        }

        static boolean crc(final MemorySegment s, final long at) {
            return (s.get(ValueLayout.JAVA_SHORT_UNALIGNED, at + 6) & 1) != 0;
        }

        static int lid(final MemorySegment s, final long at) {
            return s.get(ValueLayout.JAVA_INT_UNALIGNED, at + 8);
        }

        static int session(final MemorySegment s, final long at) {
            return s.get(ValueLayout.JAVA_INT_UNALIGNED, at + 12);
        }

        static int index(final MemorySegment s, final long at) {
            return s.get(ValueLayout.JAVA_SHORT_UNALIGNED, at + 16) & 0xFFFF;
        }

        static int count(final MemorySegment s, final long at) {
            return s.get(ValueLayout.JAVA_SHORT_UNALIGNED, at + 18) & 0xFFFF;
        }

        static int linkCapacity(final MemorySegment s, final long at) {
            return s.get(ValueLayout.JAVA_INT_UNALIGNED, at + 20);
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

    /**
     * A ByteBuffer window on {@code length} bytes of {@code memory} at {@code offset}: the view of the whole memory
     * cached in slot {@code slot} while the same memory comes back (no allocation per record), a slice beyond a
     * ByteBuffer's reach (2 GiB).
     */
    private static ByteBuffer window(final MemorySegment[] mems, final ByteBuffer[] views, final int slot,
                                     final MemorySegment memory, final long offset, final int length) {
        if (memory.byteSize() > Integer.MAX_VALUE) {
            return memory.asSlice(offset, length).asByteBuffer();
        }
        if (mems[slot] != memory) {
            views[slot] = memory.asByteBuffer();
            mems[slot] = memory;
        }
        return views[slot].limit((int) (offset + length)).position((int) offset);
    }

    /** Drops the cached views of {@code memory} (it stops being the NIC's). */
    private static void forget(final MemorySegment[] mems, final ByteBuffer[] views, final MemorySegment memory) {
        for (int i = 0; i < mems.length; i++) {
            if (mems[i] == memory) {
                mems[i] = null;
                views[i] = null;
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
        /** What an accepted connection's hello said (checked by the handshake thread). */
        int helloLid;
        int helloSession;
        int helloCount;
        Peer peer;
        int index;
        /** Its key in the port's selector (idle parking only), registered by the duty thread on first park. */
        java.nio.channels.SelectionKey key;

        /*
         * Records whose payload stays in the sender's memory until it is written to the socket (deferred): the ring
         * holds their headers only, and these FIFOs, in ring order, what follows them on the wire. Record r is at
         * ring position dPos, has dSegs pieces (the next ones of the piece FIFO) and dPayload bytes of payload.
         * Duty thread only, as the ring's producer and consumer both are.
         */
        final long[] dPos = new long[DEFER_RECORDS];
        final int[] dSegs = new int[DEFER_RECORDS];
        final int[] dPayload = new int[DEFER_RECORDS];
        long dHead;
        long dTail;
        final MemorySegment[] pMem = new MemorySegment[DEFER_PIECES];
        final long[] pOff = new long[DEFER_PIECES];
        final int[] pLen = new int[DEFER_PIECES];
        long pHead;
        long pTail;
        /** Pieces attached to the record claimed now, not yet published (its commit does). */
        int pendingPieces;
        int pendingPayload;
        /**
         * The deferred records being written, up to {@link #BATCH_RECORDS} consecutive ones per gathering write: for
         * each a frame header, its packet headers (in the ring), its payload pieces and its zero pad. {@code
         * dgatherMem} names the memory behind each payload entry (null for the others); record i of the batch ends
         * with entry {@code dRecLast[i]} and frees the ring to {@code dRecEnd[i]}.
         */
        final ByteBuffer[] dgather = new ByteBuffer[DGATHER];
        final MemorySegment[] dgatherMem = new MemorySegment[DGATHER];
        int dStart;
        int dCount;
        final int[] dRecLast = new int[BATCH_RECORDS];
        final long[] dRecEnd = new long[BATCH_RECORDS];
        int dRecDone;
        final MemorySegment frame;
        final ByteBuffer[] frameViews = new ByteBuffer[BATCH_RECORDS];
        final ByteBuffer[] padViews = new ByteBuffer[BATCH_RECORDS];
        final ByteBuffer[] ringViews = new ByteBuffer[BATCH_RECORDS];
        /*
         * A request's payload read straight into its memory (see DirectSink): the frame's and packet's headers wait at
         * in[0, directHeader) while the payload's rest goes into directView, then what follows into in after them.
         * Cancelled (the memory's keys changed meanwhile): the rest is read into a sink and the packet dropped.
         */
        boolean direct;
        boolean directCancelled;
        ByteBuffer directView;
        long directEpoch;
        int directHeader;
        int directLength;
        int directPad;
        long sinkLeft;
        ByteBuffer sink;
        /** Bytes to skip at the front of what is read next (the pad of a frame read straight into memory). */
        int discard;
        /** Reads peek only a little past a frame while large WRITEs follow each other (they may go direct too). */
        boolean bulk;
        final long[] at = new long[1];
        final ByteBuffer[] scatter = new ByteBuffer[2];
        final MemorySegment[] directViewMem = new MemorySegment[1];
        final ByteBuffer[] directViewBuf = new ByteBuffer[1];

        /** A ByteBuffer view per gather entry, kept while the same memory comes back (no allocation per record). */
        final MemorySegment[] viewMem = new MemorySegment[DGATHER];
        final ByteBuffer[] viewBuf = new ByteBuffer[DGATHER];

        Connection(final SocketChannel ch, final boolean accepted) {
            this.ch = ch;
            out = new SpscRingBuffer(arena.allocate(SpscRingBuffer.segmentSize(linkCapacity), 64));
            gather[0] = out.buffer().asSlice(0, linkCapacity).asByteBuffer();
            gather[1] = out.buffer().asSlice(0, linkCapacity).asByteBuffer();
            in = arena.allocate(linkCapacity, 64);
            inView = in.asByteBuffer();
            // a frame header per record of a batch, then 8 zero bytes of pad
            frame = arena.allocate(8L * BATCH_RECORDS + 8, 8);
            for (int i = 0; i < BATCH_RECORDS; i++) {
                frameViews[i] = frame.asSlice(8L * i, 8).asByteBuffer();
                padViews[i] = frame.asSlice(8L * BATCH_RECORDS, 8).asByteBuffer();
                ringViews[i] = out.buffer().asSlice(0, linkCapacity).asByteBuffer();
            }
        }

        /** Pieces the next record may defer: none while the record FIFO is full, else as many as the piece FIFO has. */
        int deferrablePieces() {
            return dTail - dHead < DEFER_RECORDS
                ? (int) Math.min(MAX_PIECES, DEFER_PIECES - (pTail + pendingPieces - pHead)) : 0;
        }

        void defer(final MemorySegment memory, final long offset, final int length) {
            final int p = (int) ((pTail + pendingPieces) & (DEFER_PIECES - 1));
            pMem[p] = memory;
            pOff[p] = offset;
            pLen[p] = length;
            pendingPieces++;
            pendingPayload += length;
        }

        /** The record claimed at {@code position} is committed with the pieces attached to it. */
        void publishDeferred(final long position) {
            final int r = (int) (dTail & (DEFER_RECORDS - 1));
            dPos[r] = position;
            dSegs[r] = pendingPieces;
            dPayload[r] = pendingPayload;
            pTail += pendingPieces;
            dTail++;
            pendingPieces = 0;
            pendingPayload = 0;
        }

        /** Sends what the ring holds, as much as the socket takes. Returns bytes written. */
        int drain() throws IOException {
            int total = 0;
            for (int round = 0; round < 16; round++) {
                final int n;
                if (dCount > 0) {
                    n = drainDeferred();
                } else if (gatherCount > 0 || prepare()) {
                    n = drainRuns();
                } else if (dTail != dHead && out.headPosition() == dPos[(int) (dHead & (DEFER_RECORDS - 1))]) {
                    prepareDeferred();
                    n = drainDeferred();
                } else {
                    break;
                }
                if (n <= 0) {
                    break;
                }
                total += n;
                if (dCount > 0 || gatherCount > 0) {
                    break; // the socket took less than it was offered: it is full for now
                }
            }
            return total;
        }

        /**
         * Points the deferred gather at the records from the ring's head on, as long as deferred records follow each
         * other: for each a frame header whose length counts the payload, the packet's headers where they lie in the
         * ring, the payload where it lies in the sender's memory, and the zero bytes that align the next frame, as a
         * record in the ring would be laid out.
         */
        private void prepareDeferred() {
            long pos = out.headPosition();
            final MemorySegment ring = out.buffer();
            long piece = pHead;
            int k = 0;
            int b = 0;
            for (long rec = dHead; rec < dTail && b < BATCH_RECORDS; rec++, b++) {
                final int r = (int) (rec & (DEFER_RECORDS - 1));
                if (dPos[r] != pos || k + 3 + dSegs[r] > DGATHER) {
                    break; // a record between them travels with its bytes (or padding), or the gather is full
                }
                final int index = out.indexOf(pos);
                final int headers = ring.get(INT, index);
                final int wire = headers + dPayload[r];
                frame.set(INT, 8L * b, wire);
                frame.set(INT, 8L * b + 4, 0);
                dgatherMem[k] = null;
                dgather[k++] = frameViews[b].clear();
                dgatherMem[k] = null;
                dgather[k++] = ringViews[b].limit(index + SpscRingBuffer.HEADER + headers)
                    .position(index + SpscRingBuffer.HEADER);
                for (int i = 0; i < dSegs[r]; i++, piece++) {
                    final int p = (int) (piece & (DEFER_PIECES - 1));
                    dgatherMem[k] = pMem[p];
                    dgather[k] = payloadView(k, pMem[p], pOff[p], pLen[p]);
                    k++;
                }
                final int frameBytes = SpscRingBuffer.HEADER + wire;
                final int pad = ((frameBytes + 7) & ~7) - frameBytes;
                if (pad > 0) {
                    dgatherMem[k] = null;
                    dgather[k++] = padViews[b].limit(pad).position(0);
                }
                pos += (SpscRingBuffer.HEADER + headers + 7) & ~7;
                dRecLast[b] = k - 1;
                dRecEnd[b] = pos;
            }
            dStart = 0;
            dCount = k;
            dRecDone = 0;
        }

        /** A window on {@code length} bytes of {@code memory}; zeros if it was closed meanwhile. */
        private ByteBuffer payloadView(final int slot, final MemorySegment memory, final long offset, final int length) {
            if (!memory.scope().isAlive()) {
                return ByteBuffer.allocateDirect(length); // freed under a WR in flight: zeros are what is left
            }
            return window(viewMem, viewBuf, slot, memory, offset, length);
        }

        private int drainDeferred() throws IOException {
            long n;
            try {
                n = ch.write(dgather, dStart, dCount - dStart);
            } catch (final IllegalStateException closed) {
                // an arena closed under a WR in flight: what is left of its bytes goes as zeros
                for (int k = dStart; k < dCount; k++) {
                    if (dgatherMem[k] != null && !dgatherMem[k].scope().isAlive()) {
                        dgather[k] = ByteBuffer.allocateDirect(dgather[k].remaining());
                        dgatherMem[k] = null;
                    }
                }
                try {
                    n = ch.write(dgather, dStart, dCount - dStart);
                } catch (final IllegalStateException again) {
                    throw new IOException("the memory of a request in flight was closed while it was sent: "
                        + again.getMessage(), again);
                }
            }
            if (n <= 0) {
                return 0;
            }
            while (dStart < dCount && !dgather[dStart].hasRemaining()) {
                dgatherMem[dStart] = null;
                if (dStart == dRecLast[dRecDone]) { // a whole record sent: its ring bytes and pieces are free
                    final int r = (int) (dHead & (DEFER_RECORDS - 1));
                    for (int i = 0; i < dSegs[r]; i++) {
                        pMem[(int) ((pHead + i) & (DEFER_PIECES - 1))] = null; // hold no memory past its send
                    }
                    pHead += dSegs[r];
                    dHead++;
                    out.releaseTo(dRecEnd[dRecDone]);
                    dRecDone++;
                    deferredSent++;
                }
                dStart++;
            }
            if (dStart == dCount) {
                dCount = 0;
            }
            return (int) n;
        }

        /** Copies the bytes of {@code memory} that deferred records would still send from it (see detachPayloads). */
        void detach(final MemorySegment memory) {
            final boolean alive = memory.scope().isAlive();
            for (long q = pHead; q < pTail + pendingPieces; q++) {
                final int p = (int) (q & (DEFER_PIECES - 1));
                if (pMem[p] == memory) {
                    final MemorySegment copy = Arena.ofAuto().allocate(Math.max(1, pLen[p]), 8);
                    try {
                        if (alive) {
                            MemorySegment.copy(memory, pOff[p], copy, 0, pLen[p]);
                        }
                    } catch (final IllegalStateException closed) {
                        copy.fill((byte) 0); // closed meanwhile by another thread: zeros, as for closed memory
                    }
                    pMem[p] = copy;
                    pOff[p] = 0;
                }
            }
            for (int k = dStart; k < dCount; k++) {
                if (dgatherMem[k] == memory) {
                    final ByteBuffer rest = dgather[k];
                    final ByteBuffer copy = ByteBuffer.allocateDirect(rest.remaining());
                    try {
                        if (alive) {
                            copy.put(rest.duplicate());
                        }
                    } catch (final IllegalStateException closed) {
                        copy.clear(); // closed meanwhile: zeros
                    }
                    copy.position(0).limit(copy.capacity());
                    dgather[k] = copy;
                    dgatherMem[k] = null;
                }
            }
            forget(viewMem, viewBuf, memory);
            forget(directViewMem, directViewBuf, memory);
        }

        /** Writes the ring's runs of records (no deferred one among them) as prepared. */
        private int drainRuns() throws IOException {
            final long n = ch.write(gather, 0, gatherCount);
            if (n <= 0) {
                return 0; // socket buffer full: the ring fills behind it (backpressure)
            }
            if (gatherCount == 2) {
                wrappedWrites++;
            }
            // free what the kernel has taken, even mid-record, so the producer gets room early
            final ByteBuffer first = gather[0];
            if (first.hasRemaining()) {
                partialWrites++;
                out.releaseTo(run1Start + (first.position() - out.indexOf(run1Start)));
            } else if (gatherCount == 2 && gather[1].hasRemaining()) {
                partialWrites++;
                out.releaseTo(run2Start + (gather[1].position() - out.indexOf(run2Start)));
            } else {
                out.releaseTo(gatherCount == 2 ? run2End : run1End);
                gatherCount = 0;
            }
            return (int) n;
        }

        /**
         * Points the gather views at the committed records: one run, or two when they wrap around; up to the first
         * deferred record, which goes on its own.
         */
        private boolean prepare() {
            final long tail = dTail != dHead ? Math.min(out.tailPosition(), dPos[(int) (dHead & (DEFER_RECORDS - 1))])
                : out.tailPosition();
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

        /** A window on {@code length} bytes of {@code memory} at {@code offset}, for a read straight into it. */
        ByteBuffer directWindow(final MemorySegment memory, final long offset, final int length) {
            return window(directViewMem, directViewBuf, 0, memory, offset, length);
        }

        /** Turns a payload being read straight into memory into one read into the sink (and then dropped). */
        void cancelDirect() {
            directCancelled = true;
            sinkLeft = directView.remaining();
            directView = sinkWindow();
        }

        /** The sink's window for the next {@code sinkLeft} bytes of a cancelled payload. */
        ByteBuffer sinkWindow() {
            if (sink == null) {
                sink = ByteBuffer.allocateDirect(64 * 1024);
            }
            return sink.clear().limit((int) Math.min(sink.capacity(), sinkLeft));
        }

        /** Reads what the socket has, room permitting. Returns bytes read; -1 at end of stream. */
        int fill() throws IOException {
            if (inStart == inEnd) {
                // pad still to skip (after a payload read straight into memory): read where the next frame will start
                // 8-byte aligned once it is skipped
                inStart = discard > 0 ? 8 - discard : 0;
                inEnd = inStart;
            } else if (linkCapacity - inEnd < linkCapacity / 2 && inStart > 0) {
                // keep room for a whole frame (at most half the buffer): move the partial one to the front
                MemorySegment.copy(in, inStart, in, 0, inEnd - inStart);
                inEnd -= inStart;
                inStart = 0;
            }
            if (inEnd == linkCapacity) {
                return 0;
            }
            inView.limit(bulk ? Math.min(linkCapacity, inEnd + DIRECT_PEEK) : linkCapacity).position(inEnd);
            final int n = ch.read(inView);
            if (n > 0) {
                inEnd += n;
                skipDiscarded();
            }
            return n;
        }

        private void skipDiscarded() {
            if (discard > 0) {
                final int d = Math.min(discard, inEnd - inStart);
                inStart += d;
                discard -= d;
            }
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
        private volatile long protocolErrors;

        /** Packets this port sends to its own LID (loopback QPs, e.g. NCCL's flush QP) never touch a socket. */
        private final Arena selfArena = Arena.ofAuto(); // freed with the port: a duty thread may still poll it
        private final SpscRingBuffer self;
        private final SpscRingBuffer[] selfOnly;

        /** Idle parking (null when off): every connection's socket, for readable and, with bytes waiting, writable. */
        private final java.nio.channels.Selector selector;
        private final long spinNanos;
        private final int parkMillis;
        /** gdrkit.tcp.direct.min: the smallest WRITE frame read straight into its MR (0: none). */
        private final int directMin;
        /** Duty cycles seen (doWork calls), and the one of the last idle() call: idle cycles must be consecutive. */
        private long cycles;
        private long idleCycle = -2;
        private long idleSince;
        private volatile long parks;

        TcpPort(final int lid) {
            super(lid, crc, linkCapacity / 4);
            this.self = new SpscRingBuffer(selfArena.allocate(SpscRingBuffer.segmentSize(linkCapacity), 64));
            this.selfOnly = new SpscRingBuffer[] {self};
            this.parkMillis = ctx.parkMillis();
            this.spinNanos = ctx.spinMicros() * 1_000L;
            this.directMin = ctx.directMin();
            java.nio.channels.Selector sel = null;
            if (parkMillis > 0) {
                try {
                    sel = java.nio.channels.Selector.open();
                } catch (final IOException e) {
                    throw new UncheckedIOException("cannot open the TCP fabric's selector for idle parking: "
                        + e.getMessage(), e);
                }
            }
            this.selector = sel;
        }

        /**
         * After {@code spinNanos} of consecutive idle duty cycles, waits up to {@code parkMillis} for a socket to
         * become readable (or writable where bytes wait), a new connection, or close. Never with a link hook (its
         * delayed packets are released by time, not by a socket), nor while connections wait to be joined.
         */
        @Override
        public void idle(final long nowNanos) {
            if (selector == null || !parkingOn) {
                return;
            }
            if (idleCycle != cycles - 1 && idleCycle != cycles) {
                idleSince = nowNanos; // the first idle cycle after work
            }
            idleCycle = cycles;
            if (nowNanos - idleSince < spinNanos || hook != LinkHook.PASS || !connected.isEmpty()
                || !joined.isEmpty() || !self.isEmpty() || closed) {
                return;
            }
            park();
        }

        private void park() {
            final Connection[] cs = conns;
            try {
                for (final Connection c : cs) {
                    if (c.peer == null) {
                        continue;
                    }
                    final int ops = java.nio.channels.SelectionKey.OP_READ
                        | (c.gatherCount > 0 || c.dCount > 0 ? java.nio.channels.SelectionKey.OP_WRITE : 0);
                    if (c.key == null) {
                        c.key = c.ch.register(selector, ops);
                    } else if (c.key.interestOps() != ops) {
                        c.key.interestOps(ops);
                    }
                }
                parks++;
                selector.select(parkMillis);
                selector.selectedKeys().clear();
            } catch (final IOException | java.nio.channels.ClosedSelectorException
                           | java.nio.channels.CancelledKeyException e) {
                // a connection closed meanwhile (the next cycle finds it) or the fabric is closing: just go on
            }
        }

        /** Ends a park early (another thread handed over a connection, or the fabric closes). */
        void wakeup() {
            if (selector != null) {
                selector.wakeup();
            }
        }

        long parks() {
            return parks;
        }

        @Override
        public int maxPacket() {
            return maxPacket;
        }

        /**
         * The bytes are copied onto the socket anyway: a record may carry up to {@code gdrkit.nic.batch} MTU packets
         * of one message inline, where the link hook takes whole spans. Per packet the NICs on both sides build,
         * frame, parse and check a header; on loopback that, not the copies, was most of the receiving NIC's time.
         */
        @Override
        boolean inlineSpans() {
            return true;
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

        /** The connection the last {@link #outbound} picked (null: the loopback ring or none). */
        private Connection routed;

        @Override
        public int deferrablePieces(final int dlid, final int destQpn) {
            if (crc() || hook != LinkHook.PASS || dlid == lid() || outbound(dlid, destQpn) == null || routed == null) {
                return 0;
            }
            return routed.deferrablePieces();
        }

        @Override
        public void deferPayload(final MemorySegment memory, final long offset, final int length) {
            routed.defer(memory, offset, length);
        }

        @Override
        public void commit() {
            final Connection c = routed;
            if (c != null && c.pendingPieces > 0) {
                c.publishDeferred(c.out.claimPosition());
            }
            super.commit();
        }

        @Override
        public void abort() {
            final Connection c = routed;
            if (c != null) {
                c.pendingPieces = 0;
                c.pendingPayload = 0;
            }
            super.abort();
        }

        @Override
        public void detachPayloads(final MemorySegment memory) {
            for (final Connection c : conns) {
                c.detach(memory);
            }
        }

        @Override
        public long deferredSent() {
            return deferredSent;
        }

        @Override
        public long directReceived() {
            return directReceived;
        }

        @Override
        SpscRingBuffer outbound(final int dlid, final int destQpn) {
            routed = null;
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
            routed = c;
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
            cycles++;
            int work = super.doWork(nowNanos);
            if (!connected.isEmpty()) {
                installConnected();
            }
            if (!joined.isEmpty()) {
                work += joinAccepted();
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

        @Override
        public int poll(final SpscRingBuffer.RecordHandler handler, final int limit) {
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
                    lastError = e.getMessage();
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
            int n = c.direct ? 0 : parse(c, handler, budget);
            if (n < budget) {
                if (c.direct) {
                    n += fillDirect(c, handler);
                } else if (c.fill() < 0) {
                    throw new IOException("peer LID " + c.peer.lid + " closed the connection");
                }
                if (!c.direct) {
                    n += parse(c, handler, budget - n);
                }
            }
            return n;
        }

        /**
         * The frame at {@code at} of {@code c.in} is a request whose headers are here and whose payload is not all
         * here: if the handler knows where it goes, what is here is copied there, the headers move to the front of the
         * buffer, and the rest will be read straight there ({@link #fillDirect}). Returns whether it went so.
         */
        private boolean startDirect(final Connection c, final FabricPort.DirectSink sink, final int at,
                                    final int length) {
            final MemorySegment in = c.in;
            final long packet = at + SpscRingBuffer.HEADER;
            final int have = c.inEnd - at - SpscRingBuffer.HEADER;
            if (have < io.gdrkit.softnic.wire.Packet.BASE_LENGTH) {
                return false;
            }
            final int opcode = in.get(ValueLayout.JAVA_BYTE, packet + 8) & 0xFF;
            if (!io.gdrkit.softnic.wire.BthOpcode.isValid(opcode)) {
                return false;
            }
            final int headers = io.gdrkit.softnic.wire.Packet.lengthFor(opcode, 0);
            if (have < headers || headers >= length || (in.get(BIG_U16, packet) & 0xFFFF) != lid()
                || (in.get(BIG_U16, packet + 2) & 0xFFFF) != c.peer.lid) {
                return false; // a spoofed frame is refused by name once it is whole
            }
            final MemorySegment memory = sink.directTarget(in, packet, length, c.at);
            if (memory == null) {
                return false;
            }
            final long offset = c.at[0];
            final int payload = length - headers;
            final int here = have - headers;
            final int arrived = Math.min(here, payload); // the rest of what is here is pad (the frame is not whole)
            try {
                MemorySegment.copy(in, packet + headers, memory, offset, arrived);
            } catch (final IllegalStateException closed) {
                return false; // its arena closed just now: the whole packet is judged as always (and refused)
            }
            MemorySegment.copy(in, at, in, 0, SpscRingBuffer.HEADER + headers);
            c.direct = true;
            c.directCancelled = false;
            c.directEpoch = sink.directEpoch();
            c.directHeader = SpscRingBuffer.HEADER + headers;
            c.directLength = length;
            c.directPad = ((length + SpscRingBuffer.HEADER + 7) & ~7) - SpscRingBuffer.HEADER - length
                - (here - arrived);
            c.directView = c.directWindow(memory, offset + arrived, payload - arrived);
            c.inStart = 0;
            c.inEnd = c.directHeader;
            c.bulk = true;
            return true;
        }

        /**
         * Reads the rest of a payload straight into its memory, and a little of what follows into the buffer after
         * the waiting headers; once the payload is whole the packet goes to the handler. Returns packets handled.
         */
        private int fillDirect(final Connection c, final SpscRingBuffer.RecordHandler handler) throws IOException {
            if (!c.directCancelled && (!(handler instanceof FabricPort.DirectSink sink)
                || sink.directEpoch() != c.directEpoch)) {
                c.cancelDirect(); // keys changed since the memory was found (or the port went down): nothing lands there
            }
            // what follows the payload is read where, past its pad, the next frame starts 8-byte aligned in the buffer
            // (frames are read at aligned offsets: the payload that went elsewhere moved the stream against it)
            final int readAt = ((c.directHeader + c.directPad + 7) & ~7) - c.directPad;
            final ByteBuffer inView = c.inView;
            inView.limit(Math.min(linkCapacity, readAt + DIRECT_PEEK)).position(readAt);
            c.scatter[0] = c.directView;
            c.scatter[1] = inView;
            long r;
            try {
                r = c.ch.read(c.scatter);
            } catch (final IllegalStateException closed) {
                c.cancelDirect(); // the memory's arena was closed under the read: the packet is dropped
                c.scatter[0] = c.directView;
                r = c.ch.read(c.scatter);
            }
            if (r < 0) {
                throw new IOException("peer LID " + c.peer.lid + " closed the connection");
            }
            if (c.directCancelled) {
                c.sinkLeft -= c.directView.position();
                if (c.sinkLeft > 0) {
                    c.directView = c.sinkWindow();
                    return 0;
                }
            } else if (c.directView.hasRemaining()) {
                return 0;
            }
            c.inEnd = Math.max(readAt, inView.position());
            c.direct = false;
            if (!c.directCancelled) { // a cancelled one is treated as lost: sent again, it is judged then
                ((FabricPort.DirectSink) handler).onPlaced(c.in, SpscRingBuffer.HEADER, c.directLength);
                directReceived++;
            }
            final int skip = readAt + c.directPad;
            if (c.inEnd >= skip) {
                c.inStart = skip;
            } else {
                c.inStart = c.inEnd;
                c.discard = skip - c.inEnd;
            }
            return c.directCancelled ? 0 : 1;
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
                    if (directMin > 0 && length >= directMin && !crc() && handler instanceof FabricPort.DirectSink sink
                        && startDirect(c, sink, at, length)) {
                        return n;
                    }
                    break;
                }
                c.inStart = at + frame;
                final long packet = at + SpscRingBuffer.HEADER;
                // the LRH must name this port and the LID the connection proved: no spoofed source
                if (length < 4 || (in.get(BIG_U16, packet) & 0xFFFF) != lid()
                    || (in.get(BIG_U16, packet + 2) & 0xFFFF) != c.peer.lid) {
                    protocolErrors++;
                    spoofed.incrementAndGet();
                    throw new IOException("packet on the connection of LID " + c.peer.lid + " claims DLID "
                        + (length < 4 ? "?" : in.get(BIG_U16, packet) & 0xFFFF) + " SLID "
                        + (length < 4 ? "?" : in.get(BIG_U16, packet + 2) & 0xFFFF));
                }
                if (!crc() || crcOk(in, packet, length, in.get(INT, at + 4))) {
                    handler.onRecord(in, packet, length);
                }
                n++; // a CRC failure counts as handled: the frame is consumed
                if (c.peer == null) {
                    break; // the handler's sends found the peer dead
                }
            }
            c.bulk = false; // no payload went straight to memory this time: read whole runs of frames again
            return n;
        }

        /** Joins connections the handshake thread accepted to their peers (grouped by the hello's session). */
        private int joinAccepted() {
            int n = 0;
            Connection c;
            while ((c = joined.poll()) != null) {
                final int lid = c.helloLid;
                Peer p = lid < peers.length ? peers[lid] : null;
                if (p == null || p.session != c.helloSession) {
                    p = new Peer(lid, c.helloSession, c.helloCount);
                    install(p);
                }
                if (p.conns.length != c.helloCount || p.conns[c.index] != null) {
                    protocolErrors++;
                    lastError = "duplicate connection " + c.index + " from LID " + lid;
                    c.close();
                    continue;
                }
                p.conns[c.index] = c;
                p.live++;
                c.peer = p;
                conns = append(conns, c);
                n++;
            }
            return n;
        }

        /** Forgets a peer whose connection failed: its packets become unroutable. */
        private void drop(final Peer p) {
            if (p.lid < peers.length && peers[p.lid] == p) {
                peers[p.lid] = null;
            }
            lidOwners.remove(p.lid, p.session);
            for (final Connection c : p.conns) {
                if (c != null) {
                    conns = remove(conns, c);
                    c.peer = null;
                    c.close();
                }
            }
            if (selector != null) {
                try {
                    selector.selectNow(); // a registered channel's socket is closed once its key is flushed
                } catch (final IOException | java.nio.channels.ClosedSelectorException ignored) {
                    // closing anyway
                }
            }
        }

        void closeAll() {
            for (final Connection c : conns) {
                c.close();
            }
            if (selector != null) {
                try {
                    selector.close(); // wakes a parked duty thread; its next park finds the selector closed
                } catch (final IOException ignored) {
                    // closing anyway
                }
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
