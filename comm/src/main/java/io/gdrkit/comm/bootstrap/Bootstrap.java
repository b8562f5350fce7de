/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.bootstrap;

import io.gdrkit.core.net.DeadlineInputStream;
import io.gdrkit.comm.bootstrap.BootstrapException.Reason;
import io.gdrkit.comm.bootstrap.BootstrapWire.Frame;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.ConnectException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.LinkedBlockingQueue;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * One rank's membership of a run, what ncclCommInitRank does first: it connects to the root named by the unique
 * id (retrying while the root is not up yet), says hello with its rank, the number of ranks and the token, and
 * waits for every rank to join. Then it offers the small collectives ranks need to set up transports: exchanging
 * addresses and keys ({@link #allGather}), {@link #barrier()} and {@link #broadcast}.
 *
 * <p>Every wait has the context's timeout and names what it waited for. A rank that dies, or ranks that call
 * different operations, make every other rank's current or next operation throw a {@link BootstrapException}
 * with reason REMOTE or MISMATCH that names the cause; {@link #check()} asks without waiting.
 *
 * <p>Calls are made by one thread at a time (they are synchronized); blobs are at most 1 MiB per rank.
 */
public final class Bootstrap implements AutoCloseable {
    /** The largest blob one rank contributes to an allgather or broadcast. */
    public static final int MAX_BLOB = BootstrapWire.MAX_BLOB;

    private final BootstrapContext ctx;
    private final Socket socket;
    private final DataOutputStream out;
    private final LinkedBlockingQueue<Frame> results = new LinkedBlockingQueue<>();
    private volatile String failure;
    private volatile Reason failureReason;
    private int seq;
    private boolean closed;

    private Bootstrap(final BootstrapContext ctx, final Socket socket, final DataOutputStream out) {
        this.ctx = ctx;
        this.socket = socket;
        this.out = out;
    }

    /**
     * Joins the run: returns once every rank has joined.
     *
     * @param context where the root is, this rank, the number of ranks and the timeouts
     * @return this rank's bootstrap, joined to the run; close it when done
     * @throws BootstrapException TIMEOUT when the root cannot be reached or not every rank joins in time,
     *                            REJECTED when the root refuses this rank, PROTOCOL for a root that is not one
     */
    public static Bootstrap init(final BootstrapContext context) {
        final BootstrapContext ctx = context.concludeOnce();
        final long deadline = System.nanoTime() + ctx.timeout().toNanos();
        final UniqueId id = ctx.id();
        Socket s = null;
        IOException last = null;
        while (s == null) {
            final long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0) {
                throw new BootstrapException(Reason.TIMEOUT, "rank " + ctx.rank() + " could not reach the root at "
                    + id.host() + ":" + id.port() + " within " + ctx.timeout().toMillis() + " ms"
                    + (last == null ? "" : " (" + last.getMessage() + ")"));
            }
            final Socket attempt = new Socket();
            try {
                attempt.connect(id.address(), (int) Math.min(left, 5_000));
                s = attempt;
            } catch (final ConnectException | SocketTimeoutException e) {
                last = e;
                close(attempt);
                sleep(Math.min(100, left));
            } catch (final IOException e) {
                close(attempt);
                throw new BootstrapException(Reason.IO, "rank " + ctx.rank() + " cannot connect to the root at "
                    + id.host() + ":" + id.port() + ": " + e.getMessage(), e);
            }
        }
        try {
            s.setTcpNoDelay(true);
            final DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
            // one deadline for the whole join (hello to welcome): a root that drips its welcome a byte at a time
            // cannot stretch the wait past the join timeout, as a timeout per read would let it
            final long budget = Math.max(1, deadline - System.nanoTime());
            final DeadlineInputStream din = new DeadlineInputStream(s, Duration.ofNanos(budget));
            final DataInputStream in = new DataInputStream(new BufferedInputStream(din));
            final byte[] tok = ctx.token().getBytes(StandardCharsets.UTF_8);
            final byte[] rankNonce = BootstrapWire.nonce();
            final byte[] hello = ByteBuffer.allocate(4 + BootstrapWire.NONCE).putInt(ctx.nranks()).put(rankNonce)
                .array();
            BootstrapWire.write(out, BootstrapWire.HELLO, 0, ctx.rank(), id.runId(), hello);
            final long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
            Frame f = readFromRoot(in, id, ctx.rank(), left);
            if (f.kind() == BootstrapWire.CHALLENGE) {
                // the root proves it knows the token before this rank says anything that depends on it
                final ByteBuffer c = ByteBuffer.wrap(f.payload());
                if (f.payload().length != BootstrapWire.NONCE + BootstrapWire.MAC) {
                    throw new BootstrapException(Reason.PROTOCOL, "the root at " + id.host() + ":" + id.port()
                        + " sent a challenge of " + f.payload().length + " bytes");
                }
                if (f.rank() != ctx.rank() || f.seq() != 0) {
                    throw new BootstrapException(Reason.PROTOCOL, "the root at " + id.host() + ":" + id.port()
                        + " sent a challenge for rank " + f.rank() + " with sequence number " + f.seq() + " (this is "
                        + "rank " + ctx.rank() + ", a challenge is 0)");
                }
                final byte[] rootNonce = new byte[BootstrapWire.NONCE];
                final byte[] rootProof = new byte[BootstrapWire.MAC];
                c.get(rootNonce).get(rootProof);
                final byte[] want = BootstrapWire.proof(tok, "root", id.runId(), ctx.rank(), ctx.nranks(), rankNonce,
                    rootNonce);
                if (!java.security.MessageDigest.isEqual(want, rootProof)) {
                    throw new BootstrapException(Reason.REJECTED, "rank " + ctx.rank() + ": the root at " + id.host()
                        + ":" + id.port() + " did not prove it knows the run's token (another token on either "
                        + "side, or not this run's root); this rank said nothing more");
                }
                BootstrapWire.write(out, BootstrapWire.PROOF, 0, ctx.rank(), id.runId(), BootstrapWire.proof(tok,
                    "rank", id.runId(), ctx.rank(), ctx.nranks(), rootNonce, rankNonce));
                f = readFromRoot(in, id, ctx.rank(), Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
            } else if (f.kind() != BootstrapWire.ABORT) {
                throw new BootstrapException(Reason.PROTOCOL, "the root sent " + BootstrapWire.kindName(f.kind())
                    + " instead of its challenge");
            }
            if (f.kind() == BootstrapWire.ABORT) {
                final String why = BootstrapWire.text(f.payload());
                throw new BootstrapException(why.startsWith("rejected:") ? Reason.REJECTED : Reason.REMOTE,
                    "rank " + ctx.rank() + ": the root said " + why);
            }
            if (f.kind() != BootstrapWire.WELCOME) {
                throw new BootstrapException(Reason.PROTOCOL, "the root sent " + BootstrapWire.kindName(f.kind())
                    + " instead of welcome");
            }
            din.clear();
            s.setSoTimeout(0);
            final Bootstrap b = new Bootstrap(ctx, s, out);
            Thread.ofPlatform().daemon(true).name("bootstrap-rank-" + ctx.rank()).start(() -> b.readLoop(in));
            return b;
        } catch (final IOException e) {
            close(s);
            throw new BootstrapException(Reason.IO, "rank " + ctx.rank() + " bootstrap with the root at " + id.host()
                + ":" + id.port() + " failed: " + e.getMessage(), e);
        } catch (final RuntimeException e) {
            close(s);
            throw e;
        }
    }

    /** The root's next frame during the join, its timeout and early close named. */
    private static Frame readFromRoot(final DataInputStream in, final UniqueId id, final int rank, final long leftMs)
        throws IOException {
        try {
            return BootstrapWire.read(in, id.runId(), 4096, "the root at " + id.host() + ":" + id.port());
        } catch (final SocketTimeoutException e) {
            throw new BootstrapException(Reason.TIMEOUT, "rank " + rank + " waited " + leftMs + " ms for every rank "
                + "to join (the root's challenge or welcome)");
        } catch (final EOFException e) {
            throw new BootstrapException(Reason.REMOTE, "the root at " + id.host() + ":" + id.port()
                + " closed the connection before the welcome");
        }
    }

    /** {@return this rank, {@code 0..nranks()-1}} */
    public int rank() {
        return ctx.rank();
    }

    /** {@return the number of ranks in the run} */
    public int nranks() {
        return ctx.nranks();
    }

    /** {@return this rank's index among the ranks on its host} */
    public int localRank() {
        return ctx.localRank();
    }

    /** {@return the concluded context this bootstrap was opened with} */
    public BootstrapContext context() {
        return ctx;
    }

    /**
     * The largest blob this run's ranks may pass to {@link #allGather} or {@link #broadcast}: {@link #MAX_BLOB},
     * less with many ranks, so that a whole allgather result stays within 64 MiB.
     *
     * @return the largest blob size in bytes
     */
    public int maxBlob() {
        return BootstrapWire.maxBlob(ctx.nranks());
    }

    /**
     * Every rank's blob, indexed by rank (this rank's included).
     *
     * @param mine this rank's blob, at most {@link #maxBlob()} bytes
     * @return every rank's blob, indexed by rank
     * @throws IllegalArgumentException for a blob over {@link #maxBlob()}
     */
    public synchronized byte[][] allGather(final byte[] mine) {
        if (mine.length > maxBlob()) {
            throw new IllegalArgumentException("allGather blob of " + mine.length + " bytes (at most " + maxBlob()
                + " with " + ctx.nranks() + " ranks)");
        }
        final Frame r = call(BootstrapWire.ALLGATHER, mine);
        final ByteBuffer b = ByteBuffer.wrap(r.payload());
        try {
            final int n = b.getInt();
            if (n != ctx.nranks()) {
                throw protocol("allGather result for " + n + " ranks");
            }
            final byte[][] all = new byte[n][];
            for (int i = 0; i < n; i++) {
                final int len = b.getInt();
                if (len < 0 || len > b.remaining() || len > maxBlob()) {
                    throw protocol("allGather result with a blob of " + len + " bytes");
                }
                all[i] = new byte[len];
                b.get(all[i]);
            }
            if (b.hasRemaining()) {
                throw protocol("allGather result with " + b.remaining() + " trailing bytes");
            }
            return all;
        } catch (final java.nio.BufferUnderflowException e) {
            throw protocol("truncated allGather result");
        }
    }

    /** Returns once every rank has called it. */
    public synchronized void barrier() {
        call(BootstrapWire.BARRIER, new byte[0]);
    }

    /**
     * The blob of rank {@code root} (which passes it; the others pass anything, it is ignored).
     *
     * @param root the rank whose blob is sent
     * @param data the blob on {@code root}; ignored on the other ranks
     * @return the root's blob, on every rank
     */
    public synchronized byte[] broadcast(final int root, final byte[] data) {
        if (root < 0 || root >= ctx.nranks()) {
            throw new IllegalArgumentException("broadcast root " + root + " outside 0.." + (ctx.nranks() - 1));
        }
        final byte[] mine = ctx.rank() == root ? data : new byte[0];
        if (mine.length > maxBlob()) {
            throw new IllegalArgumentException("broadcast blob of " + mine.length + " bytes (at most " + maxBlob()
                + " with " + ctx.nranks() + " ranks)");
        }
        return call(BootstrapWire.BROADCAST, ByteBuffer.allocate(4 + mine.length).putInt(root).put(mine).array())
            .payload();
    }

    /**
     * Throws if the run has failed (a rank died, the root aborted), without waiting: long waits outside the
     * bootstrap (a transport's) call this to end with the remote cause instead of their own timeout.
     */
    public void check() {
        final String f = failure;
        if (f != null) {
            throw new BootstrapException(failureReason, f);
        }
    }

    /**
     * Tells the root this rank failed: every other rank's bootstrap fails with {@code why}.
     *
     * @param why the reason, passed on to the other ranks' exceptions
     */
    public synchronized void abort(final String why) {
        if (closed) {
            return;
        }
        try {
            BootstrapWire.write(out, BootstrapWire.ABORT, seq, ctx.rank(), ctx.id().runId(),
                BootstrapWire.text("rank " + ctx.rank() + ": " + why));
        } catch (final IOException ignored) {
            // the root is gone; the others learn it from their own connections
        }
        closed = true;
        close(socket);
    }

    private Frame call(final int kind, final byte[] payload) {
        if (closed) {
            throw new IllegalStateException("bootstrap of rank " + ctx.rank() + " is closed");
        }
        check();
        final int s = ++seq;
        try {
            BootstrapWire.write(out, kind, s, ctx.rank(), ctx.id().runId(), payload);
        } catch (final IOException e) {
            check();
            throw new BootstrapException(Reason.REMOTE, "rank " + ctx.rank() + " cannot reach the root for "
                + BootstrapWire.kindName(kind) + " #" + s + ": " + e.getMessage());
        }
        final Frame r;
        try {
            r = results.poll(ctx.timeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new BootstrapException(Reason.IO, "interrupted in " + BootstrapWire.kindName(kind) + " #" + s);
        }
        if (r == null || r.kind() != BootstrapWire.RESULT) {
            check();
            if (r == null) {
                throw new BootstrapException(Reason.TIMEOUT, "rank " + ctx.rank() + " waited "
                    + ctx.timeout().toMillis() + " ms in " + BootstrapWire.kindName(kind) + " #" + s
                    + " for the other ranks to call it");
            }
            throw protocol("root sent " + BootstrapWire.kindName(r.kind()) + " for " + BootstrapWire.kindName(kind));
        }
        if (r.seq() != s) {
            throw protocol("result #" + r.seq() + " for " + BootstrapWire.kindName(kind) + " #" + s);
        }
        return r;
    }

    private BootstrapException protocol(final String what) {
        return new BootstrapException(Reason.PROTOCOL, "rank " + ctx.rank() + ": the root sent a " + what);
    }

    private void readLoop(final DataInputStream in) {
        try {
            while (true) {
                final Frame f = BootstrapWire.read(in, ctx.id().runId(), BootstrapWire.maxGather(ctx.nranks()),
                    "the root");
                if (f.kind() == BootstrapWire.ABORT) {
                    fail(Reason.REMOTE, "run aborted: " + BootstrapWire.text(f.payload()));
                    results.add(f);
                    return;
                }
                if (f.kind() != BootstrapWire.RESULT) {
                    fail(Reason.PROTOCOL, "the root sent " + BootstrapWire.kindName(f.kind()) + " during the run");
                    results.add(f);
                    return;
                }
                results.add(f);
            }
        } catch (final BootstrapException e) {
            fail(e.reason(), e.getMessage());
        } catch (final IOException e) {
            if (!closed) {
                fail(Reason.REMOTE, "the bootstrap root at " + ctx.id().host() + ":" + ctx.id().port()
                    + " went away (" + (e instanceof EOFException ? "end of stream" : e.getMessage()) + ")");
            }
        }
        results.add(new Frame(BootstrapWire.ABORT, -1, -1, 0, new byte[0]));
    }

    private void fail(final Reason reason, final String why) {
        if (failure == null) {
            failureReason = reason;
            failure = why;
        }
    }

    /** Leaves the run cleanly: once every rank has closed, the root ends. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            BootstrapWire.write(out, BootstrapWire.BYE, ++seq, ctx.rank(), ctx.id().runId(), new byte[0]);
        } catch (final IOException ignored) {
            // the root is gone: nothing to say goodbye to
        }
        close(socket);
    }

    private static void close(final Socket s) {
        try {
            s.close();
        } catch (final IOException ignored) {
            // closing
        }
    }

    private static void sleep(final long ms) {
        try {
            Thread.sleep(ms);
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new BootstrapException(Reason.IO, "interrupted while connecting to the root");
        }
    }
}
