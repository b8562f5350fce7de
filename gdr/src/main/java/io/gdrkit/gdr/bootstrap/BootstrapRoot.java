/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.bootstrap;

import io.gdrkit.gdr.bootstrap.BootstrapException.Reason;
import io.gdrkit.gdr.bootstrap.BootstrapWire.Frame;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The rendezvous root, what ncclGetUniqueId starts: a thread that accepts the {@code nranks} ranks of one run,
 * checks each one's hello (run id, rank in range and not taken, the same number of ranks, the token), then serves
 * the ranks' small collectives (allgather, barrier, broadcast) as a star: it waits until every rank has called the
 * same operation, then answers each.
 *
 * <p>Failure is shared: when a rank's connection ends without a clean close (the process died), when ranks call
 * different operations, or when not every rank joins within the join timeout, the root sends every other rank an
 * ABORT naming the cause, and {@link #failure()} says it. The root never times out a rank between operations (a
 * rank may compute for an hour); the ranks time out their own waits.
 */
public final class BootstrapRoot implements AutoCloseable {
    private static final int HELLO_TIMEOUT_MS = 5_000;

    private final ServerSocket server;
    private final int nranks;
    private final long runId;
    private final byte[] token;
    private final Duration joinTimeout;
    private final UniqueId id;
    private final Thread thread;
    private final Peer[] peers;
    private final LinkedBlockingQueue<Event> events = new LinkedBlockingQueue<>();
    private volatile String failure;
    private volatile boolean finished;
    private volatile boolean closed;

    private record Event(int rank, Frame frame, String lost) {
    }

    private static final class Peer {
        Socket socket;
        DataOutputStream out;
        final ArrayDeque<Frame> pending = new ArrayDeque<>();
        boolean bye;
    }

    private BootstrapRoot(final ServerSocket server, final String host, final int nranks, final long runId,
                          final byte[] token, final Duration joinTimeout) {
        this.server = server;
        this.nranks = nranks;
        this.runId = runId;
        this.token = token;
        this.joinTimeout = joinTimeout;
        this.peers = new Peer[nranks];
        this.id = new UniqueId(host, server.getLocalPort(), runId);
        this.thread = Thread.ofPlatform().daemon(true).name("bootstrap-root").start(this::run);
    }

    /**
     * Starts a root listening on {@code bind} (port 0: any free port) with a fresh random run id.
     *
     * @param token       the shared secret every rank must present (null or empty: none); issue 18's launcher
     *                    passes it to the ranks in {@link BootstrapContext#ENV_TOKEN}
     * @param joinTimeout how long every rank has to join before the root aborts the run naming the missing ranks
     */
    public static BootstrapRoot start(final InetSocketAddress bind, final int nranks, final String token,
                                      final Duration joinTimeout) {
        if (nranks < 1 || nranks > BootstrapWire.MAX_RANKS) {
            throw new IllegalArgumentException("nranks " + nranks + " outside 1.." + BootstrapWire.MAX_RANKS);
        }
        final byte[] tok = token == null ? new byte[0] : token.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        if (tok.length > BootstrapWire.MAX_TOKEN) {
            throw new IllegalArgumentException("bootstrap token of " + tok.length + " bytes (at most "
                + BootstrapWire.MAX_TOKEN + ")");
        }
        final ServerSocket s;
        try {
            s = new ServerSocket();
            s.setReuseAddress(true);
            s.bind(bind, nranks + 8);
        } catch (final IOException e) {
            throw new BootstrapException(Reason.IO, "cannot listen on " + bind + ": " + e.getMessage(), e);
        }
        final String host = bind.getAddress() == null || bind.getAddress().isAnyLocalAddress()
            ? "127.0.0.1" : bind.getAddress().getHostAddress();
        return new BootstrapRoot(s, host, nranks, new SecureRandom().nextLong(), tok, joinTimeout);
    }

    /** A root on the loopback interface, any free port (single host, tests). */
    public static BootstrapRoot startLoopback(final int nranks, final Duration joinTimeout) {
        return start(new InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0), nranks, null, joinTimeout);
    }

    /** The id to hand to every rank. */
    public UniqueId id() {
        return id;
    }

    /** Why the run failed, or null while it has not. */
    public String failure() {
        return failure;
    }

    /** True once every rank closed cleanly or the run failed. */
    public boolean finished() {
        return finished;
    }

    /**
     * Waits until the run ends (all ranks closed, or a failure).
     *
     * @return false if it did not end within {@code timeout}
     */
    public boolean await(final Duration timeout) throws InterruptedException {
        thread.join(timeout);
        return !thread.isAlive();
    }

    private void run() {
        try {
            join();
            for (final Peer p : peers) {
                BootstrapWire.write(p.out, BootstrapWire.WELCOME, 0, 0, runId, new byte[0]);
            }
            for (int r = 0; r < nranks; r++) {
                final int rank = r;
                Thread.ofVirtual().name("bootstrap-root-reader-" + r).start(() -> readLoop(rank));
            }
            serve();
        } catch (final BootstrapException e) {
            fail(e.getMessage());
        } catch (final IOException e) {
            fail("root: " + e.getMessage());
        } catch (final InterruptedException e) {
            fail("root interrupted");
        } finally {
            finished = true;
            closeAll();
        }
    }

    private void join() throws IOException {
        final long deadline = System.nanoTime() + joinTimeout.toNanos();
        int joined = 0;
        while (joined < nranks) {
            final long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0 || closed) {
                final List<Integer> missing = new ArrayList<>();
                for (int r = 0; r < nranks; r++) {
                    if (peers[r] == null) {
                        missing.add(r);
                    }
                }
                throw new BootstrapException(closed ? Reason.REMOTE : Reason.TIMEOUT, "rank(s) " + missing
                    + " of " + nranks + " never joined within " + joinTimeout.toMillis() + " ms");
            }
            server.setSoTimeout((int) Math.min(left, Integer.MAX_VALUE));
            final Socket s;
            try {
                s = server.accept();
            } catch (final SocketTimeoutException e) {
                continue;
            }
            final String why = admit(s);
            if (why == null) {
                joined++;
            }
        }
    }

    /** Reads and checks one hello; returns null when the rank was admitted, else why it was not. */
    private String admit(final Socket s) {
        final String from = "connection from " + s.getRemoteSocketAddress();
        try {
            s.setTcpNoDelay(true);
            s.setSoTimeout(HELLO_TIMEOUT_MS);
            final DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
            final DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
            final Frame f;
            try {
                f = BootstrapWire.read(in, runId, 4 + 2 + BootstrapWire.MAX_TOKEN, from);
            } catch (final BootstrapException e) {
                reject(s, out, e.getMessage());
                return e.getMessage();
            }
            String why = null;
            final ByteBuffer b = ByteBuffer.wrap(f.payload());
            if (f.kind() != BootstrapWire.HELLO || f.payload().length < 6) {
                why = from + " sent " + BootstrapWire.kindName(f.kind()) + " before hello";
            } else {
                final int theirN = b.getInt();
                final int tokLen = b.getShort() & 0xffff;
                if (tokLen != b.remaining()) {
                    why = from + ": hello token length " + tokLen + " but " + b.remaining() + " bytes follow";
                } else {
                    final byte[] tok = new byte[tokLen];
                    b.get(tok);
                    if (!MessageDigest.isEqual(tok, token)) {
                        why = "rank " + f.rank() + " (" + from + ") presented the wrong token";
                    } else if (theirN != nranks) {
                        why = "rank " + f.rank() + " thinks the run has " + theirN + " ranks, the root has " + nranks;
                    } else if (f.rank() < 0 || f.rank() >= nranks) {
                        why = "rank " + f.rank() + " is outside 0.." + (nranks - 1);
                    } else if (peers[f.rank()] != null) {
                        why = "rank " + f.rank() + " joined twice (" + from + ")";
                    }
                }
            }
            if (why != null) {
                reject(s, out, why);
                return why;
            }
            s.setSoTimeout(0);
            final Peer p = new Peer();
            p.socket = s;
            p.out = out;
            peers[f.rank()] = p;
            readers.put(s, in);
            return null;
        } catch (final IOException e) {
            closeQuietly(s);
            return from + ": " + e.getMessage();
        }
    }

    private final java.util.Map<Socket, DataInputStream> readers = new java.util.concurrent.ConcurrentHashMap<>();

    private void reject(final Socket s, final DataOutputStream out, final String why) {
        try {
            BootstrapWire.write(out, BootstrapWire.ABORT, 0, -1, 0L, BootstrapWire.text("rejected: " + why));
        } catch (final IOException ignored) {
            // the peer is gone already; nothing to tell it
        }
        closeQuietly(s);
    }

    private void readLoop(final int rank) {
        final Peer p = peers[rank];
        final DataInputStream in = readers.get(p.socket);
        try {
            while (true) {
                final Frame f = BootstrapWire.read(in, runId, BootstrapWire.MAX_BLOB + 4, "rank " + rank);
                if (f.rank() != rank) {
                    events.add(new Event(rank, null, "rank " + rank + " sent a frame claiming to be rank "
                        + f.rank()));
                    return;
                }
                events.add(new Event(rank, f, null));
                if (f.kind() == BootstrapWire.BYE || f.kind() == BootstrapWire.ABORT) {
                    return;
                }
            }
        } catch (final EOFException e) {
            events.add(new Event(rank, null, "rank " + rank + " closed its bootstrap connection without "
                + "closing the communicator (process exited?)"));
        } catch (final BootstrapException e) {
            events.add(new Event(rank, null, e.getMessage()));
        } catch (final IOException e) {
            events.add(new Event(rank, null, "rank " + rank + " lost its bootstrap connection: "
                + e.getMessage()));
        }
    }

    private void serve() throws IOException, InterruptedException {
        int byes = 0;
        while (byes < nranks) {
            final Event e = events.poll(200, TimeUnit.MILLISECONDS);
            if (closed) {
                throw new BootstrapException(Reason.REMOTE, "the bootstrap root was closed");
            }
            if (e == null) {
                continue;
            }
            if (e.lost != null) {
                if (peers[e.rank].bye) {
                    continue;
                }
                throw new BootstrapException(Reason.REMOTE, e.lost);
            }
            if (e.frame.kind() == BootstrapWire.ABORT) {
                throw new BootstrapException(Reason.REMOTE, "rank " + e.rank + " aborted: "
                    + BootstrapWire.text(e.frame.payload()));
            }
            peers[e.rank].pending.add(e.frame);
            byes += step();
        }
    }

    /** Completes every operation all ranks have called; returns how many ranks said bye in it. */
    private int step() throws IOException {
        int byes = 0;
        while (true) {
            for (final Peer p : peers) {
                if (p.pending.isEmpty()) {
                    return byes;
                }
            }
            final Frame head = peers[0].pending.peek();
            for (int r = 1; r < nranks; r++) {
                final Frame f = peers[r].pending.peek();
                if (f.kind() != head.kind() || f.seq() != head.seq()) {
                    throw new BootstrapException(Reason.MISMATCH, "rank 0 called " + BootstrapWire.kindName(
                        head.kind()) + " #" + head.seq() + " while rank " + r + " called "
                        + BootstrapWire.kindName(f.kind()) + " #" + f.seq());
                }
            }
            final byte[] result = switch (head.kind()) {
                case BootstrapWire.ALLGATHER -> gathered();
                case BootstrapWire.BARRIER -> new byte[0];
                case BootstrapWire.BROADCAST -> broadcast();
                case BootstrapWire.BYE -> null;
                default -> throw new BootstrapException(Reason.PROTOCOL, "rank 0 sent "
                    + BootstrapWire.kindName(head.kind()) + " during the run");
            };
            for (final Peer p : peers) {
                p.pending.poll();
                if (result != null) {
                    BootstrapWire.write(p.out, BootstrapWire.RESULT, head.seq(), -1, runId, result);
                } else {
                    p.bye = true;
                    byes++;
                }
            }
        }
    }

    private byte[] gathered() {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteBuffer n = ByteBuffer.allocate(4).putInt(nranks);
        out.writeBytes(n.array());
        for (final Peer p : peers) {
            final byte[] blob = p.pending.peek().payload();
            if (blob.length > BootstrapWire.MAX_BLOB) {
                throw new BootstrapException(Reason.PROTOCOL, "a blob of " + blob.length + " bytes");
            }
            out.writeBytes(ByteBuffer.allocate(4).putInt(blob.length).array());
            out.writeBytes(blob);
        }
        return out.toByteArray();
    }

    private byte[] broadcast() {
        int root = -1;
        for (int r = 0; r < nranks; r++) {
            final byte[] pl = peers[r].pending.peek().payload();
            if (pl.length < 4) {
                throw new BootstrapException(Reason.PROTOCOL, "rank " + r + " sent a broadcast without a root");
            }
            final int theirRoot = ByteBuffer.wrap(pl).getInt();
            if (root >= 0 && theirRoot != root) {
                throw new BootstrapException(Reason.MISMATCH, "ranks disagree on the broadcast root (" + root
                    + " and " + theirRoot + ")");
            }
            root = theirRoot;
        }
        if (root < 0 || root >= nranks) {
            throw new BootstrapException(Reason.MISMATCH, "broadcast root " + root + " outside 0.." + (nranks - 1));
        }
        final byte[] pl = peers[root].pending.peek().payload();
        return java.util.Arrays.copyOfRange(pl, 4, pl.length);
    }

    private void fail(final String why) {
        if (failure == null) {
            failure = why;
        }
        for (final Peer p : peers) {
            if (p != null && !p.bye) {
                try {
                    BootstrapWire.write(p.out, BootstrapWire.ABORT, 0, -1, runId, BootstrapWire.text(why));
                } catch (final IOException ignored) {
                    // that rank is gone too
                }
            }
        }
    }

    private void closeAll() {
        closeQuietly(server);
        for (final Peer p : peers) {
            if (p != null) {
                closeQuietly(p.socket);
            }
        }
    }

    private static void closeQuietly(final AutoCloseable c) {
        try {
            c.close();
        } catch (final Exception ignored) {
            // closing: nothing more to do
        }
    }

    /** Stops the root; ranks still connected get an ABORT. */
    @Override
    public void close() {
        closed = true;
        closeQuietly(server);
        try {
            thread.join(2_000);
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
