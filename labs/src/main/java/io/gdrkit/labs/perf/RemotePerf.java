/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import io.gdrkit.verbs.cm.CmConnection;
import io.gdrkit.verbs.cm.CmException;
import io.gdrkit.verbs.cm.CmListener;
import io.gdrkit.verbs.cm.ConnectionManager;
import io.gdrkit.core.agent.NanoClock;
import io.gdrkit.core.Errno;
import io.gdrkit.core.auth.Token;
import io.gdrkit.softnic.fabric.Fabric;
import io.gdrkit.softnic.fabric.FaultInjector;
import io.gdrkit.softnic.fabric.ShmFabric;
import io.gdrkit.softnic.fabric.TcpFabric;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.Mtu;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.PostException;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import org.HdrHistogram.Histogram;

/**
 * perftest across processes: a server that waits for clients, and a client, each with one software NIC on a
 * shared-memory or TCP fabric, meeting through the connection manager on TCP port {@code port} (18515, like
 * perftest). The client's REQ private data carries the test; the server's REP carries its buffer's address
 * and rkey. One CM connection per QP. The server serves clients one after another until one sends a QUIT
 * request; a client that sends nonsense, breaks off or dies costs only its own run.
 *
 * <p>Before its first REQ a client asks the server (CM INFO, authenticated like a REQ) for its {@link ServerInfo}:
 * the LID the server assigns it, the TCP fabric's port, or the shared-memory directory (a private directory with
 * an unpredictable name). Nothing of it is guessed from the port number.
 *
 * <pre>
 * REQ private data (big-endian):  test ordinal (u8) | size (u32) | QPs (u32) | rx-depth (u32) | MTU (u32)
 *                                 | buffer bytes (u64) | client buffer address (u64) | its rkey (u32) | quit (u8)
 *                                 | run nonce (u64, random per run, the same in all of the run's REQs)
 * REP private data:               buffer address (u64) | rkey (u32)
 * </pre>
 *
 * <p>A run's REQs after the first must come from the first one's host and LID with the very same setup, nonce
 * included; any other REQ that arrives meanwhile (another client's, or a stranger's that copied the visible
 * fields) is refused by name ({@code REJ: busy: ...}) and never sees this run's buffer address or rkey.
 */
public final class RemotePerf {
    public static final int DEFAULT_PORT = 18515;
    /** Largest buffer a server registers for one client unless told otherwise (bytes). */
    public static final long DEFAULT_MAX_SERVER_BUFFER = 1L << 28;
    /** Most receive WRs one client run may make this server post, over all its QPs. */
    public static final long MAX_TOTAL_RECVS = 1L << 18;
    private static final Duration CM_TIMEOUT = Duration.ofSeconds(30);
    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();
    private static final long HIGHEST_NS = 60_000_000_000L;
    private static final int SERVER_LID = 1;
    private static final int CLIENT_LID = 2;

    private RemotePerf() {
    }

    public record Setup(PerfKind test, int size, int numQps, int rxDepth, int mtu, long bufBytes, long clientAddr,
                 int clientRkey, boolean quit, long run, long checkSeed) {
        static final int LENGTH = 58;

        /** A setup with run nonce 0 (tests; QUIT). */
        public Setup(final PerfKind test, final int size, final int numQps, final int rxDepth, final int mtu,
                     final long bufBytes, final long clientAddr, final int clientRkey, final boolean quit) {
            this(test, size, numQps, rxDepth, mtu, bufBytes, clientAddr, clientRkey, quit, 0);
        }

        /** A setup without --check (checkSeed 0). */
        public Setup(final PerfKind test, final int size, final int numQps, final int rxDepth, final int mtu,
                     final long bufBytes, final long clientAddr, final int clientRkey, final boolean quit,
                     final long run) {
            this(test, size, numQps, rxDepth, mtu, bufBytes, clientAddr, clientRkey, quit, run, 0);
        }

        byte[] encode() {
            return ByteBuffer.allocate(LENGTH).put((byte) test.ordinal()).putInt(size).putInt(numQps)
                .putInt(rxDepth).putInt(mtu).putLong(bufBytes).putLong(clientAddr).putInt(clientRkey)
                .put((byte) (quit ? 1 : 0)).putLong(run).putLong(checkSeed).array();
        }

        /** A fresh unpredictable run nonce. */
        static long newRun() {
            return ByteBuffer.wrap(Token.nonce()).getLong();
        }

        /**
         * Decodes and range-checks a client's setup against this server's limits.
         *
         * @throws IllegalArgumentException naming the field and its limit (the server rejects the request with it)
         */
        static Setup decode(final byte[] b) {
            return decode(b, DEFAULT_MAX_SERVER_BUFFER);
        }

        /** As {@link #decode(byte[])}, with this server's buffer limit. */
        static Setup decode(final byte[] b, final long maxBuffer) {
            if (b.length != LENGTH) {
                throw new IllegalArgumentException("not a gdrkit perf client (private data of " + b.length
                    + " bytes)");
            }
            final ByteBuffer bb = ByteBuffer.wrap(b);
            final int t = bb.get();
            if (t < 0 || t >= PerfKind.values().length) {
                throw new IllegalArgumentException("unknown perf test " + t);
            }
            final Setup s = new Setup(PerfKind.values()[t], bb.getInt(), bb.getInt(), bb.getInt(), bb.getInt(),
                bb.getLong(), bb.getLong(), bb.getInt(), bb.get() != 0, bb.getLong(), bb.getLong());
            if (s.checkSeed() != 0 && !(s.test() == PerfKind.WRITE_BW || s.test() == PerfKind.SEND_BW
                || s.test() == PerfKind.READ_BW)) {
                throw new IllegalArgumentException("--check is for write_bw, send_bw and read_bw, not "
                    + s.test().id());
            }
            if (s.quit()) {
                return s;
            }
            s.config(); // the engine's own ranges, named as the client's flags would be
            // then this server's limits: memory it would hold for a stranger
            if ((long) s.numQps() * s.rxDepth() > MAX_TOTAL_RECVS) {
                throw new IllegalArgumentException("QPs x rx-depth = " + (long) s.numQps() * s.rxDepth()
                    + " receives exceeds " + MAX_TOTAL_RECVS);
            }
            if (s.bufBytes() > maxBuffer) {
                throw new IllegalArgumentException("a buffer of " + s.bufBytes() + " bytes exceeds this server's "
                    + "--max-buffer " + maxBuffer);
            }
            return s;
        }

        /**
         * The run the client asks for, concluded through the engine's Context as the client's own flags were: a
         * client is a peer, so a size, QP count, depth, MTU or buffer out of range is a named error before the
         * server allocates or creates anything. The client registers twice its buffer (see runSize).
         */
        PerfConfig config() {
            if (bufBytes % 2 != 0) {
                throw new IllegalArgumentException("client buffer of " + bufBytes + " bytes is not twice a --buffer");
            }
            return new PerfConfig(test).size(size).numQps(numQps).rxDepth(rxDepth).mtu(mtu).bufferBytes(bufBytes / 2)
                .conclude();
        }
    }

    /**
     * What a server tells a client before its run (CM INFO), as ASCII {@code key=value} pairs separated by
     * spaces: {@code lid=<assigned LID> tcp=<fabric port>} or {@code lid=<LID> shm=<directory name>}. A client
     * checks every value: a LID in 2..0xBFFF, a port in 1..65535, a directory name of 16..80 characters from
     * [A-Za-z0-9-] (a name, never a path: it is resolved under the client's own base directory).
     */
    public record ServerInfo(int lid, int tcpPort, String shmName) {
        byte[] encode() {
            return ("lid=" + lid + (shmName != null ? " shm=" + shmName : " tcp=" + tcpPort))
                .getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        }

        static ServerInfo decode(final byte[] b) {
            final String text = new String(b, java.nio.charset.StandardCharsets.US_ASCII);
            int lid = -1;
            int tcp = -1;
            String shm = null;
            for (final String kv : text.trim().split(" ")) {
                final int eq = kv.indexOf('=');
                final String k = eq < 0 ? kv : kv.substring(0, eq);
                final String v = eq < 0 ? "" : kv.substring(eq + 1);
                switch (k) {
                    case "lid" -> lid = parse(v, 2, TcpFabric.MAX_LID, "LID");
                    case "tcp" -> tcp = parse(v, 1, 65535, "fabric port");
                    case "shm" -> {
                        if (!v.matches("[A-Za-z0-9-]{16,80}")) {
                            throw new IllegalArgumentException("the server named shared-memory directory '" + v
                                + "', which is not a plain name of 16..80 letters, digits and '-'");
                        }
                        shm = v;
                    }
                    default -> throw new IllegalArgumentException("the server's INFO has unknown field '" + k + "'");
                }
            }
            if (lid < 0 || (tcp < 0) == (shm == null)) {
                throw new IllegalArgumentException("the server's INFO '" + text + "' lacks a LID and exactly one of "
                    + "tcp= or shm=");
            }
            return new ServerInfo(lid, tcp, shm);
        }

        private static int parse(final String v, final int min, final int max, final String what) {
            try {
                final int n = Integer.parseInt(v);
                if (n >= min && n <= max) {
                    return n;
                }
            } catch (final NumberFormatException e) {
                // named below
            }
            throw new IllegalArgumentException("the server's INFO gives " + what + " '" + v + "', not in " + min
                + ".." + max);
        }
    }

    /** Server side: a TCP fabric on the CM's address (any free port) or a private shared-memory directory. */
    static Fabric serverFabric(final String kind, final java.net.InetAddress bind, final int linkCapacity,
                               final FaultInjector.Config faults, final boolean linkCrc, final Token token) {
        final boolean crc = linkCrc || faults != null && faults.corrupt() > 0;
        final Fabric f = switch (kind) {
            case "tcp" -> {
                final TcpFabric t = new TcpFabric(new InetSocketAddress(bind, 0), linkCapacity, null, crc, 1, token,
                    perfTcp());
                t.requireAdmission(); // clients join only with the LID this server assigns them
                yield t;
            }
            case "shm" -> {
                ShmFabric.sweepStaleDirectories(ShmFabric.defaultBase(), SHM_PREFIX); // what kill -9 left behind
                yield new ShmFabric(ShmFabric.createPrivateDirectory(ShmFabric.defaultBase(), SHM_PREFIX),
                    linkCapacity, 2, null, crc);
            }
            default -> throw new IllegalArgumentException("--fabric must be shm or tcp, not '" + kind + "'");
        };
        if (faults != null) {
            f.hook(new FaultInjector(faults, NanoClock.SYSTEM));
        }
        return f;
    }

    /** Client side: the fabric the server's INFO describes. */
    static Fabric clientFabric(final String kind, final ServerInfo info, final int linkCapacity,
                               final FaultInjector.Config faults, final boolean linkCrc, final Token token) {
        final boolean crc = linkCrc || faults != null && faults.corrupt() > 0;
        final Fabric f = switch (kind) {
            case "tcp" -> {
                if (info.tcpPort() < 0) {
                    throw new IllegalArgumentException("--fabric tcp, but the server runs a shared-memory fabric");
                }
                final TcpFabric t = new TcpFabric(new InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0),
                    linkCapacity, null, crc, 1, token, perfTcp());
                t.requireAdmission(); // a client only connects out: nobody may join its listener
                yield t;
            }
            case "shm" -> {
                if (info.shmName() == null) {
                    throw new IllegalArgumentException("--fabric shm, but the server runs a TCP fabric");
                }
                // a name, resolved under our own base: the server cannot point us anywhere else, and the
                // directory must be ours and 0700 (ShmFabric checks)
                yield new ShmFabric(ShmFabric.defaultBase().resolve(info.shmName()), linkCapacity, 2, null, crc);
            }
            default -> throw new IllegalArgumentException("--fabric must be shm or tcp, not '" + kind + "'");
        };
        if (faults != null) {
            f.hook(new FaultInjector(faults, NanoClock.SYSTEM));
        }
        return f;
    }

    private static final String SHM_PREFIX = "gdrkit-perf-";

    /**
     * The fact (JSON field, comment line, report note) that lists the TCP fabric's {@code gdrkit.tcp.*} settings
     * as {@code name=value (source)}: the client's; the server prints its own at start.
     */
    public static final String TCP_SETTINGS = "tcp_settings";

    /**
     * The TCP fabric's settings for perf: idle parking on (1 ms), since each perf process moves its NIC from the
     * one thread that waits on it, so a post can never be stuck behind a park; {@code gdrkit.tcp.*} properties
     * still override it ({@code -Dgdrkit.tcp.park.ms=0}: busy-poll). Bandwidth runs park; latency runs
     * busy-poll ({@link TcpFabric#idleParking}): on a loaded machine a parked thread's wake-up costs a ping-pong
     * tens of microseconds, while a streaming peer gains the CPU a spinning one would take.
     */
    static io.gdrkit.softnic.fabric.TcpFabricContext perfTcp() {
        return new io.gdrkit.softnic.fabric.TcpFabricContext().defaultParkMillis(1).conclude();
    }

    public static String header(final String fabric) {
        return "# software NIC (simulated), " + fabric + " fabric between processes";
    }

    public static QpAttr attr(final int mtu) {
        final QpAttr a = QpBringUp.rcDefaults();
        if (mtu <= 4096) {
            a.pathMtu(Mtu.fromBytes(mtu));
        } else {
            a.softwareMtu(mtu);
        }
        return a;
    }

    // ------------------------------------------------------------------ server

    /** Serves perf clients until one sends QUIT; prints one line per run. */
    public static void serve(final String fabricKind, final int port, final int linkCapacity, final PrintWriter out,
                      final long acceptTimeoutMs, final FaultInjector.Config faults) {
        serve(fabricKind, new InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), port), linkCapacity, out,
            acceptTimeoutMs, faults, false, DEFAULT_MAX_SERVER_BUFFER, Token.fromProcess());
    }

    /**
     * Serves perf clients one after another until one sends QUIT; prints what it bound, and one line per run or
     * per refused client. Ends when no valid request arrives within {@code acceptTimeoutMs}.
     *
     * @param bind      the CM's address (loopback unless told otherwise; port 0: any free port, printed)
     * @param linkCrc   link CRC on the fabric (clients must agree; --faults corrupt= turns it on too)
     * @param maxBuffer the largest buffer a client may make this server register
     * @param token     what clients must prove ({@link Token#NONE}: nothing)
     */
    public static void serve(final String fabricKind, final InetSocketAddress bind, final int linkCapacity,
                             final PrintWriter out, final long acceptTimeoutMs, final FaultInjector.Config faults,
                             final boolean linkCrc, final long maxBuffer, final Token token) {
        try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext()
                .progressMode(SoftNicContext.ProgressMode.OWN_DEVICE),
                serverFabric(fabricKind, bind.getAddress(), linkCapacity, faults, linkCrc, token));
             CmListener listener = new CmListener(bind, token, CmListener.DEFAULT_HANDSHAKE_TIMEOUT,
                 CmListener.DEFAULT_MAX_PENDING)) {
            final SoftDevice dev = driver.addDevice("perf-server", SERVER_LID);
            final java.util.concurrent.atomic.AtomicInteger nextLid = new java.util.concurrent.atomic.AtomicInteger();
            listener.info(() -> {
                if (driver.fabric() instanceof TcpFabric tcp) {
                    // each asking client gets a LID of its own; only assigned LIDs may join the fabric
                    final int lid = 2 + Math.floorMod(nextLid.getAndIncrement(), TcpFabric.MAX_LID - 1);
                    tcp.admit(lid);
                    return new ServerInfo(lid, tcp.localAddress().getPort(), null).encode();
                }
                final ShmFabric shm = (ShmFabric) driver.fabric();
                return new ServerInfo(CLIENT_LID, -1, shm.directory().getFileName().toString()).encode();
            });
            out.println(header(fabricKind));
            out.println("# server: bound to " + listener.localAddress() + " (connection manager), "
                + driver.fabric().describe() + " (fabric); token " + (token.isSet() ? "required" : "not set"));
            if (driver.fabric() instanceof TcpFabric tcp) {
                out.println("# server: " + TCP_SETTINGS + ": " + tcp.context().describe());
            }
            out.println("# server: waiting for clients on port " + listener.localAddress().getPort());
            out.flush();
            while (true) {
                final CmListener.Request first = listener.accept(Duration.ofMillis(acceptTimeoutMs));
                final Setup setup;
                try {
                    setup = Setup.decode(first.privateData(), maxBuffer);
                } catch (final IllegalArgumentException e) {
                    // an unknown or out-of-range client is refused, named, and the server waits for the next
                    first.reject("bad perf setup: " + e.getMessage());
                    out.println("# server: refused a client: " + e.getMessage());
                    out.flush();
                    continue;
                }
                if (setup.quit()) {
                    first.reject("server done");
                    out.println("# server: done");
                    out.flush();
                    return;
                }
                try {
                    if (driver.fabric() instanceof TcpFabric tcp) {
                        tcp.idleParking(setup.test().bandwidth); // a ping-pong busy-polls (see perfTcp)
                    }
                    serveRun(dev, listener, first, setup, out);
                } catch (final RuntimeException e) {
                    // one client's failure (it died, broke off, or its QPs failed) ends its run, not the server
                    out.println("# server: run of " + first.remoteAddress() + " failed: " + e.getMessage());
                    out.flush();
                }
            }
        }
    }

    private static void serveRun(final SoftDevice dev, final CmListener listener, final CmListener.Request first,
                                 final Setup s, final PrintWriter out) {
        try (Arena arena = Arena.ofShared()) {
            final Loopback.Side side = new Loopback.Side(dev, s.numQps(), Math.max(64, s.numQps() * s.rxDepth() * 2));
            try {
                serveRun(side, arena, listener, first, s, out);
            } finally {
                for (final var qp : side.qps) {
                    if (qp != null) {
                        qp.close();
                    }
                }
                if (side.mr != null) {
                    side.mr.deregister();
                }
                side.scq.close();
                side.rcq.close();
            }
        }
    }

    private static void serveRun(final Loopback.Side side, final Arena arena, final CmListener listener,
                                 final CmListener.Request first, final Setup s, final PrintWriter out) {
        final SoftDevice dev = side.dev;
        {
            side.buf = arena.allocate(Math.max(s.bufBytes(), 64), 4096); // zeroed: a --check destination starts clean
            if (s.checkSeed() != 0 && s.test() == PerfKind.READ_BW) {
                DataCheck.fillHost(side.buf, s.size(), DataCheck.remoteSeed(s.checkSeed())); // what the client reads
            }
            side.mr = side.pd.registerMr(side.buf, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            final CmConnection[] conns = new CmConnection[s.numQps()];
            try {
                serveConnected(side, listener, first, s, out, conns);
            } catch (final RuntimeException e) {
                for (final CmConnection c : conns) {
                    if (c != null) {
                        try {
                            c.close();
                        } catch (final RuntimeException ignored) {
                            // the run failed already; a peer that does not answer DREQ changes nothing
                        }
                    }
                }
                throw e;
            }
        }
    }

    private static void serveConnected(final Loopback.Side side, final CmListener listener,
                                       final CmListener.Request first, final Setup s, final PrintWriter out,
                                       final CmConnection[] conns) {
        final SoftDevice dev = side.dev;
        {
            final byte[] rep = ByteBuffer.allocate(12).putLong(side.mr.address()).putInt(side.mr.rkey()).array();
            CmListener.Request req = first;
            final long until = System.nanoTime() + CM_TIMEOUT.toNanos();
            for (int q = 0; q < s.numQps(); q++) {
                if (q > 0) {
                    req = nextOfRun(listener, first, s, until, out);
                }
                final QpInitAttr ia = new QpInitAttr();
                ia.cap.maxSendWr(256).maxRecvWr(Math.max(1, s.rxDepth())).maxInlineData(256);
                side.qps[q] = side.pd.createQp(ia.cqs(side.scq, side.rcq));
                conns[q] = req.accept(side.qps[q], dev.lid(), attr(s.mtu()), rep);
                if (s.test().isSend()) {
                    // a SEND that overtakes these gets an RNR NAK and is retried: no loss
                    for (int i = 0; i < s.rxDepth(); i++) {
                        postRecv(side, q, s.size());
                    }
                }
            }
            out.println("# server: running " + s.test().id() + " " + s.size() + " B with " + s.numQps()
                + " QP(s) for " + first.remoteAddress());
            out.flush();
            final AtomicBoolean done = new AtomicBoolean();
            final Thread watcher = Thread.ofPlatform().daemon(true).name("perf-disconnect").start(() -> {
                try {
                    while (!conns[0].isDisconnected()) {
                        try {
                            conns[0].awaitDisconnect();
                        } catch (final CmException e) {
                            if (e.reason() != CmException.Reason.TIMEOUT) {
                                break;
                            }
                        }
                    }
                } catch (final RuntimeException e) {
                    // whatever went wrong, the run is over: the server loop must never spin on
                } finally {
                    done.set(true);
                }
            });
            serverLoop(side, s, done);
            for (int q = 1; q < conns.length; q++) {
                conns[q].close();
            }
            join(watcher);
            out.println("# server: finished " + s.test().id() + " " + s.size() + " B with " + s.numQps() + " QP(s)");
            out.flush();
        }
    }

    /**
     * The next REQ of the run {@code first} began: from its host and LID with the same setup and run nonce. Any
     * other REQ meanwhile is refused by name and the wait goes on (up to {@code until}); it never gets the REP,
     * which carries this run's buffer address and rkey.
     */
    private static CmListener.Request nextOfRun(final CmListener listener, final CmListener.Request first,
                                                final Setup s, final long until, final PrintWriter out) {
        while (true) {
            final long left = until - System.nanoTime();
            if (left <= 0) {
                throw new CmException(CmException.Reason.TIMEOUT, "the client " + first.remoteAddress()
                    + " sent not all of its " + s.numQps() + " REQs within " + CM_TIMEOUT.toSeconds() + " s", null);
            }
            final CmListener.Request r = listener.accept(Duration.ofNanos(left));
            final String why = notOfRun(first, s, r);
            if (why == null) {
                return r;
            }
            r.reject("busy: " + why);
            out.println("# server: refused a client: " + r.remoteAddress() + ": " + why);
            out.flush();
        }
    }

    /** Null when {@code r} is the next REQ of the run {@code first} began, else why not. */
    private static String notOfRun(final CmListener.Request first, final Setup s, final CmListener.Request r) {
        if (!r.remoteAddress().getAddress().equals(first.remoteAddress().getAddress())
            || r.remoteLid() != first.remoteLid()) {
            return "another client's run is being set up (from " + first.remoteAddress().getAddress() + ")";
        }
        final Setup other;
        try {
            other = Setup.decode(r.privateData(), Long.MAX_VALUE);
        } catch (final IllegalArgumentException e) {
            return "another client's run is being set up (and this setup is bad: " + e.getMessage() + ")";
        }
        return other.equals(s) ? null : "another client's run is being set up (this REQ's setup or run nonce "
            + "differs from the run's)";
    }

    /** The passive half: receives (send tests), echoes (latency ping-pong), or just drives the NIC. */
    private static void serverLoop(final Loopback.Side side, final Setup s, final AtomicBoolean done) {
        final WorkCompletion[] wcs = new WorkCompletion[32];
        for (int i = 0; i < wcs.length; i++) {
            wcs[i] = new WorkCompletion();
        }
        final SendWorkRequest wr = new SendWorkRequest(1);
        final RecvWorkRequest rwr = new RecvWorkRequest(1);
        final boolean pingPong = !s.test().bandwidth && s.test().halfRoundTrip();
        final long outHalf = side.buf.byteSize() / 2;
        final long last = Math.max(1, s.size()) - 1;
        wr.opcode(s.test().opcode).sge(side.mr, outHalf, s.size());
        if (!s.test().isSend()) {
            wr.remote(s.clientAddr(), s.clientRkey());
        }
        final int inline = s.size() <= 220 ? SendFlags.INLINE : 0;
        byte seen = 0;
        long posted = 0;
        final boolean checkWrites = s.checkSeed() != 0 && s.test() != PerfKind.READ_BW;
        boolean verdictSent = false;
        final long flagOff = side.buf.byteSize() - CHECK_FLAG_FROM_END;
        while (!done.get()) {
            if (checkWrites && !verdictSent && (long) LONG.getAcquire(side.buf, flagOff) == CHECK_DONE) {
                sendVerdict(side, s);
                verdictSent = true;
            }
            boolean echo = false;
            if (s.test().isSend()) {
                final int n = side.rcq.poll(wcs);
                for (int i = 0; i < n; i++) {
                    if (wcs[i].status != WcStatus.SUCCESS) {
                        return; // the client went away mid-run: its QP flushed
                    }
                    rwr.wrId(wcs[i].wrId).sge(side.mr, 0, Math.max(s.size(), 1));
                    side.qps[(int) wcs[i].wrId].postRecv(rwr);
                    echo |= pingPong;
                }
            } else if (pingPong) {
                final byte v = (byte) BYTE.getAcquire(side.buf, last);
                if (v != seen) {
                    seen = v;
                    side.buf.set(ValueLayout.JAVA_BYTE, outHalf + last, v);
                    echo = true;
                } else {
                    side.dev.doWork();
                }
            } else {
                side.dev.doWork();
            }
            if (echo) {
                // every 64th echo signaled, so the send queue drains; RC completes in order
                wr.wrId = posted;
                wr.sendFlags = inline | (posted % 64 == 63 ? SendFlags.SIGNALED : 0);
                side.qps[0].postSend(wr);
                posted++;
            }
            side.scq.poll(wcs);
        }
    }

    /** --check: the client's "all written" flag, 8 bytes this far from the end of the server's buffer. */
    static final long CHECK_FLAG_FROM_END = 8;
    /** --check: the server's verdict lands in the last 16 bytes of the client's buffer: bad position + 2, marker. */
    static final long CHECK_VERDICT_FROM_END = 16;
    static final long CHECK_DONE = 0x636865636b646f6eL;
    static final long CHECK_MARKER = 0x7665726469637421L;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    /**
     * Tests only: added to the seed of the pattern the client writes (write_bw, send_bw) or expects (read_bw), so
     * that a test can show the other side's check failing. 0 in every real run.
     */
    static volatile long clientPatternSkew;

    /**
     * --check, server side: every byte the client wrote (write_bw) or sent (send_bw) is compared with the seeded
     * pattern by this process, and the verdict (first bad byte, or none) is written into the client's buffer.
     */
    private static void sendVerdict(final Loopback.Side side, final Setup s) {
        final long at = DataCheck.firstMismatchHost(side.buf, s.size(), DataCheck.remoteSeed(s.checkSeed()));
        final long stage = side.buf.byteSize() - 64;
        side.buf.set(ValueLayout.JAVA_LONG_UNALIGNED, stage, at + 2);
        side.buf.set(ValueLayout.JAVA_LONG_UNALIGNED, stage + 8, CHECK_MARKER);
        final SendWorkRequest v = new SendWorkRequest(1).opcode(io.gdrkit.verbs.WrOpcode.RDMA_WRITE)
            .flags(SendFlags.SIGNALED).wrId(-7);
        v.sge(side.mr, stage, 16).remote(s.clientAddr() + s.bufBytes() - CHECK_VERDICT_FROM_END, s.clientRkey());
        side.qps[0].postSend(v);
    }

    /**
     * --check, client side, after the measured run: read_bw's bytes are compared here; for write_bw and send_bw
     * the client tells the server all is written (every send completion has arrived, so every byte is placed) and
     * waits for the server's verdict.
     */
    private static DataCheck.Result remoteCheck(final Loopback.Side side, final PerfConfig cfg, final long remoteAddr,
                                                final int remoteRkey, final long seed) {
        final int size = cfg.size();
        final int pattern = DataCheck.remoteSeed(seed + clientPatternSkew);
        if (cfg.test() == PerfKind.READ_BW) {
            final long at = DataCheck.firstMismatchHost(side.buf, size, pattern);
            return new DataCheck.Result(at == -1, at, size, (at == -1 ? "byte-exact: server -> client" : "MISMATCH: "
                + "server -> client first bad byte " + at) + ": the " + size + " bytes read compared after the run "
                + "with the seeded pattern the server process wrote", "the client process's CPU: host memory "
                + "compared byte by byte");
        }
        final long end = side.buf.byteSize();
        final long flagSrc = end - 64;
        side.buf.set(ValueLayout.JAVA_LONG_UNALIGNED, flagSrc, CHECK_DONE);
        final SendWorkRequest w = new SendWorkRequest(1).opcode(io.gdrkit.verbs.WrOpcode.RDMA_WRITE)
            .flags(SendFlags.SIGNALED).wrId(-7);
        w.sge(side.mr, flagSrc, 8).remote(remoteAddr + end - CHECK_FLAG_FROM_END, remoteRkey);
        side.qps[0].postSend(w);
        final WorkCompletion[] wcs = {new WorkCompletion()};
        final Deadline d = new Deadline();
        while (side.scq.poll(wcs, 1) == 0) {
            side.dev.doWork();
            d.check("the completion of --check's done flag", 0, 1);
        }
        check(wcs[0], -1);
        final long verdictOff = end - CHECK_VERDICT_FROM_END;
        while ((long) LONG.getAcquire(side.buf, verdictOff + 8) != CHECK_MARKER) {
            side.dev.doWork();
            d.check("the server's --check verdict", 0, 1);
        }
        final long at = (long) LONG.getAcquire(side.buf, verdictOff) - 2;
        return new DataCheck.Result(at == -1, at, size, (at == -1 ? "byte-exact: client -> server" : "MISMATCH: "
            + "client -> server first bad byte " + at) + ": the " + size + " bytes " + (cfg.test().isSend() ? "sent"
            : "written") + " compared after the run with the seeded pattern by the server process",
            "the server process's CPU: host memory compared byte by byte");
    }

    /** Setup only, not on the hot path. */
    private static void postRecv(final Loopback.Side side, final int q, final int size) {
        final RecvWorkRequest rwr = new RecvWorkRequest(1);
        rwr.wrId(q).sge(side.mr, 0, Math.max(size, 1));
        side.qps[q].postRecv(rwr);
    }


    // ------------------------------------------------------------------ client

    /** Runs the test against the server at {@code host:port}, one size after another, then tells it to quit. */
    public static void runClient(final String host, final int port, final String fabricKind, final int linkCapacity,
                          final PerfConfig first, final int[] sizes, final java.util.function.LongUnaryOperator warmup,
                          final PerfListener printer, final boolean quitServer, final FaultInjector.Config faults,
                          final boolean stripe) {
        runClient(host, port, fabricKind, linkCapacity, first, sizes, warmup, printer, quitServer, faults, false,
            stripe, Token.fromProcess());
    }

    /**
     * As the shorter overload, with the link CRC setting (the server must agree: a mismatch is a named refusal
     * of the fabric hello) and the token to prove.
     */
    public static void runClient(final String host, final int port, final String fabricKind, final int linkCapacity,
                          final PerfConfig first, final int[] sizes, final java.util.function.LongUnaryOperator warmup,
                          final PerfListener printer, final boolean quitServer, final FaultInjector.Config faults,
                          final boolean linkCrc, final boolean stripe, final Token token) {
        final InetSocketAddress server = new InetSocketAddress(host, port);
        final ServerInfo info;
        try {
            info = ServerInfo.decode(ConnectionManager.query(server, CM_TIMEOUT, token));
        } catch (final IllegalArgumentException e) {
            throw new IllegalStateException("server " + server + ": " + e.getMessage(), e);
        }
        try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext()
                .progressMode(SoftNicContext.ProgressMode.OWN_DEVICE),
                clientFabric(fabricKind, info, linkCapacity, faults, linkCrc, token))) {
            final SoftDevice dev = driver.addDevice("perf-client", info.lid());
            if (driver.fabric() instanceof TcpFabric tcp) {
                tcp.connect(SERVER_LID, new InetSocketAddress(host, info.tcpPort()));
                tcp.idleParking(first.test().bandwidth); // a ping-pong busy-polls (see perfTcp)
                printer.fact(TCP_SETTINGS, tcp.context().describe());
                printer.fact("tcp_buffers_granted", tcp.grantedBuffers());
                // park.ms is the setting; whether this port parks also depends on the test (a ping-pong busy-polls)
                // and on fault injection (a port with a link hook never parks)
                printer.fact("tcp_parking", first.test().bandwidth && tcp.context().parkMillis() > 0 && faults == null);
            }
            try {
                for (final int size : sizes) {
                    final PerfConfig cfg = first.withSize(size, warmup.applyAsLong(size));
                    runSize(driver.fabric(), dev, server, cfg, printer, stripe, token);
                }
            } catch (final RuntimeException e) {
                // the run's own error (a dead server: RETRY_EXC_ERR) is the one to report; telling a dead server
                // to quit would only add "REFUSED: nothing listens" on top of it
                if (quitServer) {
                    try {
                        quit(dev, server, token);
                    } catch (final RuntimeException q) {
                        e.addSuppressed(q);
                    }
                }
                throw e;
            }
            if (quitServer) {
                quit(dev, server, token);
            }
        }
    }

    /**
     * On the shared-memory fabric: how this client's payloads reached the server in the run just done (cma: pulled
     * by the server with process_vm_readv; ring: copied through the link, and why), with the client's counts of
     * reference packets among all packets sent so far.
     */
    private static void copyMode(final Fabric fabric, final SoftDevice dev, final PerfListener printer) {
        if (fabric instanceof ShmFabric shm) {
            final ShmFabric.CopyMode m = shm.copyMode(dev.lid(), SERVER_LID);
            if (m != null) {
                printer.fact("shm_copy_mode", m.mode());
                printer.fact("shm_copy_reason", m.reason());
                printer.fact("shm_reference_packets", m.referencePackets());
                printer.fact("shm_packets_sent", m.packetsSent());
            }
        }
    }

    private static void runSize(final Fabric fabric, final SoftDevice dev, final InetSocketAddress server,
                                final PerfConfig cfg, final PerfListener printer, final boolean stripe,
                                final Token token) {
        final PerfKind test = cfg.test();
        try (Arena arena = Arena.ofShared()) {
            final int cqe = Math.max(cfg.numQps() * Math.max(cfg.txDepth(), cfg.rxDepth()) + 16, 64);
            final Loopback.Side side = new Loopback.Side(dev, cfg.numQps(), cqe);
            final long bufBytes = 2 * cfg.bufferBytes();
            side.buf = arena.allocate(bufBytes, 4096);
            side.mr = side.pd.registerMr(side.buf, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            final Setup setup = new Setup(test, cfg.size(), cfg.numQps(), cfg.rxDepth(), cfg.mtu(), bufBytes,
                side.mr.address(), side.mr.rkey(), false, Setup.newRun(), cfg.check() ? 0x5eedL + cfg.size() : 0);
            if (cfg.check() && test != PerfKind.READ_BW) {
                DataCheck.fillHost(side.buf, cfg.size(), DataCheck.remoteSeed(setup.checkSeed() + clientPatternSkew));
            }
            final CmConnection[] conns = new CmConnection[cfg.numQps()];
            long remoteAddr = 0;
            int remoteRkey = 0;
            RuntimeException failed = null;
            try {
                for (int q = 0; q < cfg.numQps(); q++) {
                    final QpInitAttr ia = new QpInitAttr();
                    ia.cap.maxSendWr(cfg.txDepth()).maxRecvWr(Math.max(1, cfg.rxDepth()))
                        .maxInlineData(cfg.inlineSize());
                    side.qps[q] = side.pd.createQp(ia.cqs(side.scq, side.rcq));
                    conns[q] = ConnectionManager.connect(server, side.qps[q], dev.lid(), attr(cfg.mtu()),
                        setup.encode(), CM_TIMEOUT, token);
                    final byte[] repData = conns[q].remotePrivateData();
                    if (repData.length != 12) {
                        throw new IllegalStateException("protocol: the server's REP carries " + repData.length
                            + " bytes of private data, not the 12 of address and rkey");
                    }
                    final ByteBuffer rep = ByteBuffer.wrap(repData);
                    remoteAddr = rep.getLong();
                    remoteRkey = rep.getInt();
                }
                if (test.bandwidth && stripe) {
                    final BwResult r = new StripedBwRun(side, remoteAddr, remoteRkey, cfg).run();
                    copyMode(fabric, dev, printer);
                    printer.bw(cfg, r);
                } else if (test.bandwidth) {
                    final BwResult r = new BwRun(side, null, remoteAddr, remoteRkey, () -> side.dev.doWork(), cfg)
                        .run();
                    copyMode(fabric, dev, printer);
                    printer.bw(cfg, r);
                } else {
                    final LatResult r = latency(side, cfg, remoteAddr, remoteRkey);
                    copyMode(fabric, dev, printer);
                    printer.lat(cfg, r);
                }
                if (test.bandwidth && cfg.check()) {
                    final DataCheck.Result c = remoteCheck(side, cfg, remoteAddr, remoteRkey, setup.checkSeed());
                    printer.check(cfg, c);
                    if (!c.byteExact()) {
                        throw new IllegalStateException("--check failed: " + c.evidence());
                    }
                }
            } catch (final RuntimeException e) {
                failed = e;
                throw e;
            } finally {
                for (final CmConnection c : conns) {
                    if (c != null) {
                        try {
                            c.close();
                        } catch (final RuntimeException e) {
                            // a dead server's CM may not answer DREQ either: the run's own error names the cause
                            if (failed == null) {
                                throw e;
                            }
                            failed.addSuppressed(e);
                        }
                    }
                }
                for (final var qp : side.qps) {
                    if (qp != null) {
                        qp.close();
                    }
                }
                side.mr.deregister();
                side.scq.close();
                side.rcq.close();
            }
        }
    }

    /** The active half of a latency run on QP 0; nothing allocated per iteration. */
    private static LatResult latency(final Loopback.Side side, final PerfConfig cfg, final long remoteAddr,
                                     final int remoteRkey) {
        final PerfKind test = cfg.test();
        final int size = cfg.size();
        final boolean pingPong = test.halfRoundTrip();
        final long outHalf = side.buf.byteSize() / 2;
        final long last = Math.max(1, size) - 1;
        final SendWorkRequest wr = new SendWorkRequest(1);
        final RecvWorkRequest rwr = new RecvWorkRequest(1);
        final WorkCompletion[] wcs = new WorkCompletion[16];
        for (int i = 0; i < wcs.length; i++) {
            wcs[i] = new WorkCompletion();
        }
        wr.opcode(test.opcode).sge(side.mr, pingPong ? outHalf : 0, size).remote(remoteAddr, remoteRkey);
        if (test.isAtomic()) {
            wr.atomic(1, 0);
        }
        if (test.isSend()) {
            for (int i = 0; i < Math.max(1, cfg.rxDepth()); i++) {
                rwr.wrId(0).sge(side.mr, 0, Math.max(size, 1));
                side.qps[0].postRecv(rwr);
            }
        }
        final int inline = pingPong && size <= cfg.inlineSize() ? SendFlags.INLINE : 0;
        final Histogram histogram = new Histogram(HIGHEST_NS, 3);
        final Deadline deadline = new Deadline();
        final String waitingFor = pingPong ? "the server's echo" : test.id() + " completion";
        final Probe probe = new Probe(remoteAddr, remoteRkey);
        long posted = 0;
        long completed = 0;
        long count = 0;
        long min = Long.MAX_VALUE;
        long max = 0;
        double sum = 0;
        double sumSq = 0;
        // the warm-up: --warmup iterations, and with --warmup-ms at least that long (the server only echoes, so the
        // client alone decides); then -n iterations or, with -D, the duration, as perftest does
        final long warmIters = cfg.warmupMs() > 0 ? Math.max(Warmup.MIN_ROUND, cfg.warmup()) : cfg.warmup();
        final long warmUntil = System.nanoTime() + cfg.warmupMs() * 1_000_000L;
        long total = Long.MAX_VALUE;
        long stopAt = Long.MAX_VALUE;
        boolean warming = true;
        for (long i = 0; i < total; i++) {
            if (warming && i >= warmIters && (cfg.warmupMs() == 0 || System.nanoTime() - warmUntil >= 0)) {
                warming = false;
                total = cfg.timed() ? Long.MAX_VALUE : i + cfg.iters();
                stopAt = cfg.timed() ? System.nanoTime() + (long) (cfg.durationSeconds() * 1e9) : Long.MAX_VALUE;
                histogram.reset();
                count = 0;
                min = Long.MAX_VALUE;
                max = 0;
                sum = 0;
                sumSq = 0;
            }
            if (!warming && System.nanoTime() >= stopAt) {
                break; // -D: the duration is over
            }
            final byte v = (byte) (i % 255 + 1);
            final long t0 = System.nanoTime();
            deadline.rearm();
            if (pingPong) {
                side.buf.set(ValueLayout.JAVA_BYTE, outHalf + last, v);
                final boolean signaled = posted % 64 == 63;
                wr.wrId = posted++;
                wr.sendFlags = inline | (signaled ? SendFlags.SIGNALED : 0);
                side.qps[0].postSend(wr);
                if (test.isSend()) {
                    while (true) {
                        final int n = side.rcq.poll(wcs, 1);
                        if (n == 1) {
                            check(wcs[0], WcOpcode.RECV);
                            rwr.wrId(0).sge(side.mr, 0, Math.max(size, 1));
                            side.qps[0].postRecv(rwr);
                            break;
                        }
                        completed += sendErrors(side, wcs, probe); // a dead server: the retry error
                        probe.due(side, t0);
                        deadline.check(waitingFor, count, cfg.iters());
                    }
                } else {
                    while ((byte) BYTE.getAcquire(side.buf, last) != v) {
                        completed += sendErrors(side, wcs, probe);
                        probe.due(side, t0);
                        deadline.check(waitingFor, count, cfg.iters());
                    }
                }
                completed += sendErrors(side, wcs, probe);
            } else {
                wr.wrId = posted++;
                wr.sendFlags = SendFlags.SIGNALED;
                side.qps[0].postSend(wr);
                while (side.scq.poll(wcs, 1) == 0) {
                    deadline.check(waitingFor, count, cfg.iters());
                }
                check(wcs[0], -1);
                completed++;
            }
            final long t = pingPong ? (System.nanoTime() - t0) / 2 : System.nanoTime() - t0;
            histogram.recordValue(Math.min(t, HIGHEST_NS));
            min = Math.min(min, t);
            max = Math.max(max, t);
            sum += t;
            sumSq += (double) t * t;
            count++;
        }
        // retire the unsignaled tail: a signaled zero-byte WRITE behind it completes in order
        final SendWorkRequest flush = new SendWorkRequest(1).opcode(io.gdrkit.verbs.WrOpcode.RDMA_WRITE)
            .flags(SendFlags.SIGNALED).remote(remoteAddr, remoteRkey).wrId(-1);
        flush.numSge(0);
        side.qps[0].postSend(flush);
        deadline.rearm();
        boolean flushed = false;
        while (!flushed) {
            final int n = side.scq.poll(wcs);
            for (int i = 0; i < n; i++) {
                check(wcs[i], -1);
                flushed |= wcs[i].wrId == -1;
            }
            deadline.check("the last send completions", completed, posted);
        }
        final double avg = sum / count;
        final double stdev = Math.sqrt(Math.max(0, sumSq / count - avg * avg));
        return new LatResult(size, count, min / 1e3, max / 1e3, Percentiles.at(histogram, 50, min, max) / 1e3,
            avg / 1e3, stdev / 1e3, Percentiles.at(histogram, 99, min, max) / 1e3,
            Percentiles.at(histogram, 99.9, min, max) / 1e3);
    }

    /**
     * Polls the send CQ (which also drives the NIC): successes are counted, a failure (an unsignaled WR's error
     * completes too, e.g. RETRY_EXC_ERR from a dead server) ends the run at once, within the retry timeout.
     */
    private static int sendErrors(final Loopback.Side side, final WorkCompletion[] wcs, final Probe probe) {
        final int n = side.scq.poll(wcs);
        for (int i = 0; i < n; i++) {
            check(wcs[i], -1);
            if (wcs[i].wrId == Probe.WR_ID) {
                probe.out = false;
            }
        }
        return n;
    }

    /**
     * A ping-pong waits on memory, not on a completion: a server killed after it acknowledged the client's WRITE
     * but before it echoed leaves nothing to retry, so the wait would end only at the 30 s deadline. After
     * {@link #QUIET_NS} without the echo, a signaled zero-byte WRITE (it touches no memory) goes out, one at a
     * time; against a dead server its retries run out and its completion carries RETRY_EXC_ERR, which ends the run
     * with the error that names the cause. Allocated once per run.
     */
    private static final class Probe {
        static final long WR_ID = -2;
        static final long QUIET_NS = 1_000_000_000L;
        private final SendWorkRequest wr;
        boolean out;
        /** When the last probe went out: a live but slow server gets one probe per quiet second, not a stream. */
        private long lastNs;
        private boolean sent;

        Probe(final long remoteAddr, final int remoteRkey) {
            wr = new SendWorkRequest(1).opcode(io.gdrkit.verbs.WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .remote(remoteAddr, remoteRkey).wrId(WR_ID);
            wr.numSge(0);
        }

        /** Posts the probe when the wait that began at {@code since} has been quiet long enough and none is out. */
        void due(final Loopback.Side side, final long since) {
            if (out) {
                return;
            }
            final long now = System.nanoTime();
            if (now - since < QUIET_NS || sent && now - lastNs < QUIET_NS) {
                return;
            }
            try {
                side.qps[0].postSend(wr);
                out = true;
                sent = true;
                lastNs = now;
            } catch (final PostException e) {
                if (e.errno() != Errno.ENOMEM) {
                    throw e;
                }
                // the queue is full of WRs still unacknowledged: their own retries end a dead server's run
            }
        }
    }

    private static void check(final WorkCompletion wc, final int opcode) {
        if (wc.status != WcStatus.SUCCESS || (opcode >= 0 && wc.opcode != opcode)) {
            throw new IllegalStateException("completion failed: " + wc);
        }
    }

    /** A REQ with the quit flag: the server rejects it and exits. */
    private static void quit(final SoftDevice dev, final InetSocketAddress server, final Token token) {
        final var ctx = dev.open();
        final var pd = ctx.allocPd();
        final var cq = ctx.createCq(4);
        final var qp = pd.createQp(new QpInitAttr().cqs(cq, cq));
        try {
            ConnectionManager.connect(server, qp, dev.lid(), QpBringUp.rcDefaults(),
                new Setup(PerfKind.WRITE_BW, 0, 1, 0, 4096, 0, 0, 0, true).encode(), CM_TIMEOUT, token);
        } catch (final CmException e) {
            if (e.reason() != CmException.Reason.REJECTED) {
                throw e;
            }
        } finally {
            qp.close();
            cq.close();
        }
    }

    private static void join(final Thread t) {
        try {
            t.join(CM_TIMEOUT.toMillis());
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
