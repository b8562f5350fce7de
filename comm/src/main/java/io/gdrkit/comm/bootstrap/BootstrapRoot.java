/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.bootstrap;

import io.gdrkit.comm.bootstrap.BootstrapException.Reason;
import io.gdrkit.comm.bootstrap.BootstrapWire.Frame;
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
    /** Time a connection has, from accept, to send its whole hello (one deadline, not per read). */
    static final int HELLO_TIMEOUT_MS = 5_000;
    /**
     * Connections in admission at once; more wait in the listen backlog until a slot frees (a rank's own timeout
     * bounds its wait), so a burst of real ranks is never refused.
     */
    static final int MAX_PENDING = 64;
    /** Operations one rank may have queued at the root before the others catch up (a rank waits for each). */
    private static final int MAX_QUEUED_PER_RANK = 2;

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
    /** Guards peers[], joined and sealed while admissions run on their own threads. */
    private final Object admission = new Object();
    private int joined;
    private boolean sealed;
    private final java.util.concurrent.Semaphore admissionSlots = new java.util.concurrent.Semaphore(MAX_PENDING);
    private final io.gdrkit.core.net.AcceptBackoff acceptBackoff = new io.gdrkit.core.net.AcceptBackoff();
    private final java.util.concurrent.atomic.AtomicLong refusedConnections =
        new java.util.concurrent.atomic.AtomicLong();
    private volatile String lastRefusal = "";

    private record Event(int rank, Frame frame, String lost) {
    }

    private static final class Peer {
        Socket socket;
        DataOutputStream out;
        final ArrayDeque<Frame> pending = new ArrayDeque<>();
        /** Operations read from this rank and not yet answered (the reader adds, the root thread subtracts). */
        final java.util.concurrent.atomic.AtomicInteger queued = new java.util.concurrent.atomic.AtomicInteger();
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
     * @param bind        the address and port to listen on; port 0 picks any free port
     * @param nranks      the number of ranks of the run
     * @param token       the shared secret every rank must present (null or empty: none); the launcher
     *                    passes it to the ranks in {@link BootstrapContext#ENV_TOKEN}
     * @param joinTimeout how long every rank has to join before the root aborts the run naming the missing ranks
     * @return the running root; hand {@link #id()} to every rank
     */
    public static BootstrapRoot start(final InetSocketAddress bind, final int nranks, final String token,
                                      final Duration joinTimeout) {
        return start(bind, nranks, token, joinTimeout, new SecureRandom().nextLong());
    }

    /**
     * Starts a root listening on {@code bind} with a run id every rank already knows (derived alike on every rank,
     * as {@link WorldEnvironment} does for worlds whose launcher hands out no id).
     *
     * @param bind        the address and port to listen on
     * @param nranks      the number of ranks of the run
     * @param token       the shared secret every rank must present (null or empty: none)
     * @param joinTimeout how long every rank has to join before the root aborts the run naming the missing ranks
     * @param runId       the run id the ranks present in their hellos
     * @return the running root
     */
    public static BootstrapRoot start(final InetSocketAddress bind, final int nranks, final String token,
                                      final Duration joinTimeout, final long runId) {
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
            s.bind(bind, nranks + MAX_PENDING + 16); // ranks wait here while admission slots are busy
        } catch (final IOException e) {
            throw new BootstrapException(Reason.IO, "cannot listen on " + bind + ": " + e.getMessage(), e);
        }
        final String host = bind.getAddress() == null || bind.getAddress().isAnyLocalAddress()
            ? "127.0.0.1" : bind.getAddress().getHostAddress();
        return new BootstrapRoot(s, host, nranks, runId, tok, joinTimeout);
    }

    /**
     * A root on the loopback interface, any free port (single host, tests).
     *
     * @param nranks      the number of ranks of the run
     * @param joinTimeout how long every rank has to join before the root aborts the run naming the missing ranks
     * @return the running root; hand {@link #id()} to every rank
     */
    public static BootstrapRoot startLoopback(final int nranks, final Duration joinTimeout) {
        return start(new InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0), nranks, null, joinTimeout);
    }

    /** {@return the id to hand to every rank} */
    public UniqueId id() {
        return id;
    }

    /** {@return why the run failed, or null while it has not} */
    public String failure() {
        return failure;
    }

    /**
     * {@return connections refused before they joined (bad or late hello, no hello in time, over the pending cap)}
     */
    public long refusedConnections() {
        return refusedConnections.get();
    }

    /** {@return how accept failures (EMFILE and the like) were met: counted, remembered, backed off} */
    public io.gdrkit.core.net.AcceptBackoff acceptBackoff() {
        return acceptBackoff;
    }

    /** {@return why the last connection was refused before joining ("" if none)} */
    public String lastRefusal() {
        return lastRefusal;
    }

    /** {@return true once every rank closed cleanly or the run failed} */
    public boolean finished() {
        return finished;
    }

    /**
     * Waits until the run ends (all ranks closed, or a failure).
     *
     * @return false if it did not end within {@code timeout}
     * @param timeout how long to wait
     * @throws InterruptedException if this thread is interrupted while waiting
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

    /**
     * Waits until every rank joined, or the join timeout. Connections are accepted by a thread of their own and
     * each is admitted on a virtual thread of its own, within {@link #HELLO_TIMEOUT_MS} of accept: a slow or
     * silent connection holds only its own admission (at most {@link #MAX_PENDING} at once), never the join.
     */
    private void join() throws IOException {
        final long deadline = System.nanoTime() + joinTimeout.toNanos();
        Thread.ofPlatform().daemon(true).name("bootstrap-root-accept").start(this::acceptLoop); // ends with server
        synchronized (admission) {
            while (joined < nranks) {
                final long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (left <= 0 || closed) {
                    sealed = true;
                    final List<Integer> missing = new ArrayList<>();
                    for (int r = 0; r < nranks; r++) {
                        if (peers[r] == null) {
                            missing.add(r);
                        }
                    }
                    throw new BootstrapException(closed ? Reason.REMOTE : Reason.TIMEOUT, "rank(s) " + missing
                        + " of " + nranks + " never joined within " + joinTimeout.toMillis() + " ms");
                }
                try {
                    admission.wait(Math.min(left, 200));
                } catch (final InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new BootstrapException(Reason.IO, "root interrupted while ranks joined");
                }
            }
            sealed = true; // a later connection is refused: the run is complete
        }
    }

    /**
     * Accepts until the socket closes, each connection once an admission slot is free, and admits it on a virtual
     * thread of its own.
     */
    private void acceptLoop() {
        while (!closed && !server.isClosed()) {
            try {
                if (!admissionSlots.tryAcquire(200, TimeUnit.MILLISECONDS)) {
                    continue; // all slots busy: the next connection waits in the backlog
                }
            } catch (final InterruptedException e) {
                return;
            }
            final Socket s;
            try {
                s = server.accept();
                acceptBackoff.succeeded();
            } catch (final IOException e) {
                admissionSlots.release();
                if (closed || server.isClosed()) {
                    return;
                }
                // out of descriptors (EMFILE) fails at once while the rank waits in the backlog: back off instead
                // of spinning; a peer that reset during accept affects nobody else
                acceptBackoff.failed(e);
                if (!acceptBackoff.pause()) {
                    return;
                }
                continue;
            }
            Thread.ofVirtual().name("bootstrap-root-admit").start(() -> {
                try {
                    admit(s);
                } finally {
                    admissionSlots.release();
                }
            });
        }
    }

    private void refused(final String why) {
        refusedConnections.incrementAndGet();
        lastRefusal = why;
    }

    /** Reads and checks one hello within its deadline; returns null when the rank was admitted, else why not. */
    private String admit(final Socket s) {
        final String from = "connection from " + s.getRemoteSocketAddress();
        try {
            s.setTcpNoDelay(true);
            final io.gdrkit.core.net.DeadlineInputStream din = new io.gdrkit.core.net.DeadlineInputStream(s,
                Duration.ofMillis(HELLO_TIMEOUT_MS));
            final DataInputStream in = new DataInputStream(new BufferedInputStream(din));
            final DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
            final Frame f;
            try {
                f = BootstrapWire.read(in, runId, 4 + BootstrapWire.NONCE, from);
            } catch (final BootstrapException e) {
                reject(s, out, e.getMessage());
                return e.getMessage();
            } catch (final SocketTimeoutException e) {
                final String why = from + ": no complete hello within " + HELLO_TIMEOUT_MS + " ms of accept (one "
                    + "deadline for the whole hello)";
                reject(s, out, why);
                return why;
            }
            String why = null;
            final ByteBuffer b = ByteBuffer.wrap(f.payload());
            if (f.kind() != BootstrapWire.HELLO || f.payload().length != 4 + BootstrapWire.NONCE) {
                why = f.kind() != BootstrapWire.HELLO ? from + " sent " + BootstrapWire.kindName(f.kind())
                    + " before hello" : from + ": a hello of " + f.payload().length + " bytes (expected "
                    + (4 + BootstrapWire.NONCE) + ")";
            } else {
                final int theirN = b.getInt();
                final byte[] rankNonce = new byte[BootstrapWire.NONCE];
                b.get(rankNonce);
                if (f.seq() != 0) {
                    why = from + ": a hello with sequence number " + f.seq() + " (a hello is 0)";
                } else if (theirN != nranks) {
                    why = "rank " + f.rank() + " thinks the run has " + theirN + " ranks, the root has " + nranks;
                } else if (f.rank() < 0 || f.rank() >= nranks) {
                    why = "rank " + f.rank() + " is outside 0.." + (nranks - 1);
                } else {
                    why = challenge(f.rank(), rankNonce, in, out, from);
                }
            }
            if (why == null) {
                synchronized (admission) {
                    if (sealed) {
                        why = "rank " + f.rank() + " (" + from + ") came after the run was complete or over";
                    } else if (peers[f.rank()] != null) {
                        why = "rank " + f.rank() + " joined twice (" + from + ")";
                    } else {
                        din.clear();
                        s.setSoTimeout(0); // between operations a rank may compute for an hour
                        final Peer p = new Peer();
                        p.socket = s;
                        p.out = out;
                        readers.put(s, in);
                        peers[f.rank()] = p;
                        joined++;
                        admission.notifyAll();
                        return null;
                    }
                }
            }
            reject(s, out, why);
            return why;
        } catch (final IOException e) {
            closeQuietly(s);
            refused(from + ": " + e.getMessage());
            return from + ": " + e.getMessage();
        }
    }

    /**
     * The root proves it knows the token over the rank's nonce, then checks the rank's proof over its own: the token
     * never crosses the wire, a recorded handshake replays nothing (both nonces are fresh), and a rank learns that
     * it reached the run's root before it says anything that depends on the token. Within the hello's deadline.
     *
     * @return null when the rank proved the token, else why not
     */
    private String challenge(final int rank, final byte[] rankNonce, final DataInputStream in,
                             final DataOutputStream out, final String from) throws IOException {
        final byte[] rootNonce = BootstrapWire.nonce();
        final byte[] c = ByteBuffer.allocate(BootstrapWire.NONCE + BootstrapWire.MAC).put(rootNonce)
            .put(BootstrapWire.proof(token, "root", runId, rank, nranks, rankNonce, rootNonce)).array();
        BootstrapWire.write(out, BootstrapWire.CHALLENGE, 0, rank, runId, c);
        final Frame p;
        try {
            p = BootstrapWire.read(in, runId, BootstrapWire.MAC, from);
        } catch (final BootstrapException e) {
            return e.getMessage();
        } catch (final SocketTimeoutException e) {
            return from + ": no proof within " + HELLO_TIMEOUT_MS + " ms of accept (one deadline for the whole hello)";
        } catch (final java.io.EOFException e) {
            return "rank " + rank + " (" + from + ") closed the connection instead of proving the token (another "
                + "token on either side?)";
        }
        if (p.kind() != BootstrapWire.PROOF || p.rank() != rank || p.seq() != 0
            || p.payload().length != BootstrapWire.MAC) {
            return from + " sent " + BootstrapWire.kindName(p.kind()) + " instead of its proof";
        }
        if (!MessageDigest.isEqual(p.payload(), BootstrapWire.proof(token, "rank", runId, rank, nranks, rootNonce,
            rankNonce))) {
            return "rank " + rank + " (" + from + ") presented the wrong token";
        }
        return null;
    }

    private final java.util.Map<Socket, DataInputStream> readers = new java.util.concurrent.ConcurrentHashMap<>();

    private void reject(final Socket s, final DataOutputStream out, final String why) {
        refused(why);
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
                // a blob, plus a broadcast's root: within the per-rank share of the capped allgather result
                final Frame f = BootstrapWire.read(in, runId, BootstrapWire.maxBlob(nranks) + 4, "rank " + rank);
                if (f.rank() != rank) {
                    events.add(new Event(rank, null, "rank " + rank + " sent a frame claiming to be rank "
                        + f.rank()));
                    return;
                }
                if (f.kind() == BootstrapWire.BYE || f.kind() == BootstrapWire.ABORT) {
                    events.add(new Event(rank, f, null));
                    return;
                }
                // a rank waits for each result: more operations queued than that is a rank flooding the root
                if (p.queued.incrementAndGet() > MAX_QUEUED_PER_RANK) {
                    events.add(new Event(rank, null, "rank " + rank + " sent " + BootstrapWire.kindName(f.kind())
                        + " #" + f.seq() + " with " + (MAX_QUEUED_PER_RANK) + " operations not yet answered"));
                    return;
                }
                events.add(new Event(rank, f, null));
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
                    p.queued.decrementAndGet(); // answered (a BYE was never counted)
                }
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
            if (blob.length > BootstrapWire.maxBlob(nranks)) {
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
