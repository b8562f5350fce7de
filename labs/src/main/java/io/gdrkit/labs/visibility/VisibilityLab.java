/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.visibility;

import io.gdrkit.core.config.CoreConfiguration;
import io.gdrkit.core.auth.Token;
import io.gdrkit.softnic.fabric.Fabric;
import io.gdrkit.softnic.fabric.InJvmFabric;
import io.gdrkit.softnic.fabric.ShmFabric;
import io.gdrkit.softnic.fabric.TcpFabric;
import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.IntConsumer;

/**
 * The visibility experiment's processes: this process is the receiver (it owns the GPU); the senders run in
 * {@code senderProcesses} other processes it starts (shm or tcp fabric), in threads of this JVM (in-JVM fabric, for
 * tests), or in processes started by hand on other hosts ({@code gdrkit visibility-sender --connect HOST:PORT},
 * tcp fabric). Grants, notifications and results always travel over TCP control connections.
 */
public final class VisibilityLab implements AutoCloseable {
    /** Where the senders run and how their NICs reach the receiver's. */
    public enum Transport {
        /** Sender threads in this JVM, in-JVM fabric (fast; used by the tests). */
        JVM,
        /** Sender processes on this host, shared-memory fabric (the default). */
        SHM,
        /** Sender processes, TCP fabric; with {@code listen} they are started by hand, on this or other hosts. */
        TCP;

        public static Transport parse(final String s) {
            try {
                return valueOf(s.trim().toUpperCase(Locale.ROOT));
            } catch (final IllegalArgumentException e) {
                throw new IllegalArgumentException("the fabric must be jvm, shm or tcp, not '" + s + "'");
            }
        }
    }

    private static final Duration ACCEPT_TIMEOUT = Duration.ofSeconds(60);
    /** Accept failures of the control listener (EMFILE and the like): counted and backed off within the deadline. */
    private final io.gdrkit.core.net.AcceptBackoff acceptBackoff = new io.gdrkit.core.net.AcceptBackoff();
    private static final int LINK_CAPACITY = 1 << 22;

    private final Transport transport;
    private final SoftNicDriver driver;
    private final SoftDevice device;
    private final ServerSocket server;
    private final List<Control> hosts = new ArrayList<>();
    private final List<Process> children = new ArrayList<>();
    private final List<Thread> threads = new ArrayList<>();
    private final Path shmDir;
    private final String processes;
    private final Token token;
    /** Connections refused for a failed token proof while waiting for the senders. */
    private int refused;

    /**
     * @param senderHosts sender processes (or threads) to spread the senders over
     * @param controlPort TCP port of the control channel (0: any; the tcp fabric then listens on the next free one)
     * @param listen      wait for sender processes started by hand instead of starting them (tcp only)
     */
    public static VisibilityLab start(final Transport transport, final int senderHosts, final int controlPort,
                                      final boolean listen) {
        return start(transport, senderHosts, controlPort, listen, Token.fromProcess());
    }

    /**
     * As above; senders must prove {@code token} in their HELLO (HMAC over the receiver's nonce; without a token
     * anyone who reaches the control port is served, so keep it on loopback or a trusted network).
     */
    public static VisibilityLab start(final Transport transport, final int senderHosts, final int controlPort,
                                      final boolean listen, final Token token) {
        return start(transport, senderHosts, controlPort, listen, token, l -> {
        });
    }

    /**
     * What the receiver tells its caller once it listens for senders started by hand ({@code listen}): the control
     * port to give {@code gdrkit visibility-sender --connect HOST:PORT} and how many senders it waits for. The lab
     * does not print it (only the cli prints): the caller says it, before the lab blocks in its accept loop.
     */
    public record Listening(int port, int senderHosts) {
    }

    /**
     * As above; with {@code listen}, {@code onListening} hears the port and the sender count once the control port
     * is bound, before this call waits for the senders (it is not called otherwise).
     */
    public static VisibilityLab start(final Transport transport, final int senderHosts, final int controlPort,
                                      final boolean listen, final Token token,
                                      final java.util.function.Consumer<Listening> onListening) {
        java.util.Objects.requireNonNull(onListening, "onListening");
        if (senderHosts < 1 || senderHosts > 128) {
            throw new IllegalArgumentException("--sender-processes must be 1..128, not " + senderHosts);
        }
        if (listen && transport != Transport.TCP) {
            throw new IllegalArgumentException("--listen waits for senders on other hosts: it needs --fabric tcp");
        }
        return new VisibilityLab(transport, senderHosts, controlPort, listen, token, onListening);
    }

    private VisibilityLab(final Transport transport, final int senderHosts, final int controlPort,
                          final boolean listen, final Token token,
                          final java.util.function.Consumer<Listening> onListening) {
        this.transport = transport;
        this.token = token;
        try {
            this.server = new ServerSocket();
            server.bind(new InetSocketAddress(listen ? null : InetAddress.getLoopbackAddress(), controlPort));
        } catch (final IOException e) {
            throw new UncheckedIOException("cannot listen for visibility senders on port " + controlPort, e);
        }
        final int port = server.getLocalPort();
        final Fabric fabric;
        final String assign;
        switch (transport) {
            case JVM -> {
                fabric = new InJvmFabric(LINK_CAPACITY, null);
                assign = "jvm";
                shmDir = null;
            }
            case SHM -> {
                // a private directory with an unpredictable name; senders get only its name, over the control channel
                ShmFabric.sweepStaleDirectories(ShmFabric.defaultBase(), "gdrkit-vis-"); // left by kill -9
                shmDir = ShmFabric.createPrivateDirectory(ShmFabric.defaultBase(), "gdrkit-vis-");
                fabric = new ShmFabric(shmDir, LINK_CAPACITY, senderHosts + 1, null, false);
                assign = "shm:" + (senderHosts + 1) + ":" + shmDir.getFileName();
            }
            default -> {
                shmDir = null;
                final TcpFabric tcp = new TcpFabric(new InetSocketAddress(listen ? null
                    : InetAddress.getLoopbackAddress(), 0), LINK_CAPACITY, null, false, 1);
                tcp.requireAdmission(); // a sender joins only with the LID its ASSIGN gave it: none can be claimed
                fabric = tcp;
                assign = "tcp:" + tcp.localAddress().getPort();
            }
        }
        // the receiver's NIC has its own progress thread: the senders' packets arrive while it waits on TCP. It
        // yields rather than parks when idle, so a round's packets are not held up by a backoff sleep.
        this.driver = SoftNicDriver.launch(new SoftNicContext().progressMode(SoftNicContext.ProgressMode.DEDICATED)
            .idleStrategy("yield"), fabric);
        this.device = driver.addDevice("vis-receiver", 1);
        this.processes = switch (transport) {
            case JVM -> "receiver + " + senderHosts + " sender thread(s) in one JVM, in-JVM fabric";
            case SHM -> "receiver + " + senderHosts + " sender process(es), shm fabric";
            case TCP -> "receiver + " + senderHosts + " sender process(es), tcp fabric" + (listen ? " (remote)" : "");
        };
        try {
            final InetSocketAddress addr = new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
            for (int i = 0; i < senderHosts; i++) {
                if (transport == Transport.JVM) {
                    threads.add(Thread.ofPlatform().daemon(true).name("vis-sender-" + i).start(() -> {
                        try (SenderHost h = new SenderHost(addr, null, driver, token)) {
                            h.run();
                        }
                    }));
                } else if (!listen) {
                    children.add(spawn(addr));
                }
            }
            if (listen) {
                onListening.accept(new Listening(port, senderHosts));
            }
            final long deadline = System.nanoTime() + ACCEPT_TIMEOUT.toNanos();
            for (int i = 0; i < senderHosts; i++) {
                // one deadline for all senders: strangers that keep connecting cannot stretch the wait
                final long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new SocketTimeoutException("accept");
                }
                server.setSoTimeout((int) Math.max(1, left / 1_000_000));
                final Socket s;
                try {
                    s = server.accept();
                    acceptBackoff.succeeded();
                } catch (final SocketTimeoutException e) {
                    throw e;
                } catch (final IOException e) {
                    if (server.isClosed()) {
                        throw e;
                    }
                    // out of descriptors (EMFILE): back off and try again within the one deadline, not spin or end
                    acceptBackoff.failed(e);
                    acceptBackoff.pause();
                    i--;
                    continue;
                }
                final Control ch = new Control(s, "sender host " + s.getRemoteSocketAddress());
                hosts.add(ch);
                final byte[] nonce = Token.nonce();
                ch.out.writeByte(Control.CHAL);
                ch.out.write(nonce);
                ch.flush();
                // the HELLO within what is left of the one deadline; with a token, a peer is judged only once it
                // proved it: one that says something else, closes, stalls or fails the proof is refused and not
                // counted, and cannot end the run (without a token every peer is taken at its word)
                int version = Control.VERSION;
                byte[] proof = null;
                String unproven = null;
                try {
                    ch.expect(Control.HELLO, Duration.ofNanos(Math.max(1_000_000, deadline - System.nanoTime())),
                        "HELLO");
                    version = ch.in.readInt();
                    ch.in.readInt();
                    proof = ch.in.readNBytes(Token.MAC_LENGTH);
                } catch (final IOException | IllegalStateException e) {
                    if (!token.isSet()) {
                        throw e;
                    }
                    unproven = "no whole HELLO (" + e.getMessage() + ")";
                }
                if (unproven == null && !token.verify(proof, nonce, Control.HELLO_PROOF)) {
                    unproven = "its HELLO does not prove the receiver's token (set "
                        + CoreConfiguration.TOKEN_ENV.name() + " as on the receiver)";
                }
                if (unproven != null) {
                    // a stranger (or a sender without this run's GDRKIT_TOKEN): told if it still listens, dropped
                    refused++;
                    try {
                        ch.out.writeByte(Control.REFUSED);
                        ch.out.writeUTF(unproven);
                        ch.flush();
                    } catch (final IOException | RuntimeException gone) {
                        // it left already: nothing to tell
                    }
                    ch.close();
                    hosts.remove(ch);
                    i--;
                    continue;
                }
                if (version != Control.VERSION) {
                    throw new IllegalStateException(ch.peer() + " speaks control version " + version + ", not "
                        + Control.VERSION);
                }
                ch.out.writeByte(Control.ASSIGN);
                if (fabric instanceof TcpFabric tcp) {
                    tcp.admit(2 + i); // before the ASSIGN: the sender's hello may follow at once
                }
                // in-JVM LIDs are handed out in attach order, so the host takes the next one (0)
                ch.out.writeInt(transport == Transport.JVM ? 0 : 2 + i);
                ch.out.writeUTF(assign);
                ch.flush();
            }
        } catch (final SocketTimeoutException e) {
            close();
            throw new IllegalStateException("sender processes did not connect within " + ACCEPT_TIMEOUT.toSeconds()
                + " s (" + hosts.size() + " of " + senderHosts + " did" + (refused > 0 ? "; " + refused
                + " refused for a failed token proof" : "") + ")", e);
        } catch (final IOException e) {
            close();
            throw new UncheckedIOException("visibility receiver: control channel", e);
        } catch (final RuntimeException e) {
            close();
            throw e;
        }
    }

    /** The receiver's TCP fabric (null on the other fabrics); tests play a stranger against it. */
    TcpFabric tcpFabric() {
        return driver.fabric() instanceof TcpFabric t ? t : null;
    }

    /** Most ports an ASSIGN may ask a sender to map rings for (each costs a ring file of LINK_CAPACITY). */
    static final int MAX_ASSIGNED_LIDS = 129;

    /**
     * Opens the fabric an ASSIGN names, in a sender process. The receiver is a peer, so nothing it sends is used
     * unchecked: a shared-memory directory is a plain name resolved under this user's base directory, must
     * already exist, and must be this user's with mode 0700 (a sender never creates a directory or a path a peer
     * chose); the port count is capped at {@value #MAX_ASSIGNED_LIDS}.
     *
     * @throws IllegalStateException naming what in the ASSIGN is wrong
     */
    public static Fabric openFabric(final String assign) {
        if (assign.startsWith("shm:")) {
            final int colon = assign.indexOf(':', 4);
            if (colon < 0) {
                throw new IllegalStateException("the receiver's ASSIGN '" + assign + "' is not shm:PORTS:NAME");
            }
            final int ports;
            try {
                ports = Integer.parseInt(assign.substring(4, colon));
            } catch (final NumberFormatException e) {
                throw new IllegalStateException("the receiver's ASSIGN names port count '" + assign.substring(4, colon)
                    + "', not a number");
            }
            if (ports < 2 || ports > MAX_ASSIGNED_LIDS) {
                throw new IllegalStateException("the receiver's ASSIGN asks for " + ports + " ports (allowed: 2.."
                    + MAX_ASSIGNED_LIDS + ")");
            }
            final String name = assign.substring(colon + 1);
            if (!name.matches("gdrkit-vis-[0-9a-f]{32}")) {
                throw new IllegalStateException("the receiver's ASSIGN names directory '" + name + "', not a "
                    + "gdrkit-vis-<32 hex digits> name (a sender never uses a path chosen by a peer)");
            }
            final Path dir = ShmFabric.defaultBase().resolve(name);
            if (!Files.isDirectory(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                throw new IllegalStateException("the receiver's shared-memory directory " + dir + " does not exist "
                    + "(a sender does not create it)");
            }
            return new ShmFabric(dir, LINK_CAPACITY, ports, null, false);
        }
        if (assign.startsWith("tcp:")) {
            // a sender only connects out: its own listening socket stays on loopback and admits no LID at all
            final TcpFabric tcp = new TcpFabric(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                LINK_CAPACITY, null, false, 1);
            tcp.requireAdmission();
            return tcp;
        }
        throw new IllegalStateException("the receiver assigned an unknown fabric '" + assign + "'");
    }

    private static Process spawn(final InetSocketAddress control) throws IOException {
        final String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // the settings given to this process's command line (--set) hold in the sender too
        final List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED"));
        cmd.addAll(io.gdrkit.core.config.SettingsReader.processOverrideFlags());
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), SenderMain.class.getName(), "--connect",
            control.getHostString() + ":" + control.getPort()));
        final ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .redirectError(ProcessBuilder.Redirect.INHERIT);
        pb.environment().putAll(io.gdrkit.core.config.SettingsReader.processOverrideEnvironment());
        return pb.start();
    }

    /**
     * Runs one configuration, concluding it first if it is not yet; {@code roundDone} (may be null) hears of every
     * finished round.
     */
    public VisResult run(final VisConfig c, final IntConsumer roundDone) {
        if (!c.isConcluded()) {
            c.conclude();
        }
        return new VisReceiver(device, hosts).run(c, processes, roundDone);
    }

    public String processes() {
        return processes;
    }

    @Override
    public void close() {
        for (final Control ch : hosts) {
            try {
                ch.out.writeByte(Control.BYE);
                ch.flush();
            } catch (final IOException | UncheckedIOException e) {
                // the host is gone already
            }
        }
        for (final Process p : children) {
            try {
                if (!p.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                }
            } catch (final InterruptedException e) {
                Thread.currentThread().interrupt();
                p.destroyForcibly();
            }
        }
        for (final Thread t : threads) {
            try {
                t.join(10_000);
            } catch (final InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        for (final Control ch : hosts) {
            ch.close();
        }
        try {
            server.close();
        } catch (final IOException e) {
            // closing
        }
        driver.close();
        if (shmDir != null) {
            try (var files = Files.list(shmDir)) {
                for (final Path f : files.toList()) {
                    Files.deleteIfExists(f);
                }
                Files.deleteIfExists(shmDir);
            } catch (final IOException e) {
                // best effort: the directory is in /dev/shm and named after the port
            }
        }
    }
}
