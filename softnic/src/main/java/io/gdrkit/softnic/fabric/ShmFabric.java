/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;

/**
 * Software NICs in different processes of one host, joined through shared memory: every directed link is a
 * file {@code link-<src>-<dst>} in a directory (normally under /dev/shm) holding one {@link SpscRingBuffer},
 * mapped with FFM into both processes. Sending and receiving are plain loads and stores with acquire/release:
 * no system call per packet. A port claims its LID with a file {@code port-<lid>} that names its process.
 *
 * <p>/dev/shm is a directory every local user can write, so it is treated as hostile (see docs/SECURITY.md):
 * <ul>
 *   <li>the fabric's directory must be a real directory (not a symlink) owned by this user with mode 0700; a
 *       missing one is created so. {@link #createPrivateDirectory} makes one with an unpredictable name, which a
 *       server hands to its clients over the authenticated connection manager;</li>
 *   <li>files are created with O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600, opened with O_NOFOLLOW, and checked to
 *       be regular files owned by this user of exactly the ring's size before they are mapped;</li>
 *   <li>every record header read from a ring is validated ({@link SpscRingBuffer}): a corrupt ring is a named
 *       {@link RingCorruptException} for that link, which is then ignored, never a hang;</li>
 *   <li>each inbound record is copied out of the shared mapping before its CRC and LRH are checked and it is
 *       parsed (checked in place, the producer could change it in between); its DLID must be this port and its
 *       SLID the LID whose link it came on, or that link is dead from then on (as the TCP fabric closes a
 *       connection that spoofs);</li>
 *   <li>a port claims its LID atomically (its process id is linked into place, never seen half written); it
 *       removes its own files when the fabric closes, and the last one out removes the directory: no process
 *       removes files of a live one. Files of ports whose process died are swept when a port attaches, and whole
 *       directories of dead runs by {@link #sweepStaleDirectories}.</li>
 * </ul>
 * <p>Single copy across processes (as UCX's {@code cma}): a SEND or WRITE packet whose payload is at least the
 * NIC's threshold may carry the sender's address instead of its bytes ({@link FabricPort#carriesReferences(int,
 * int)}), and the receiver pulls the bytes straight into the destination MR with {@code process_vm_readv(2)}
 * ({@link RemoteMemoryReader}); with {@code gdrkit.nic.shm.batch} one such record may stand for a span of packets of one
 * message (segment offload, {@code gdrkit.nic.batch}, where the link hook takes spans). Each link is probed once, by its <em>receiver</em>
 * (ptrace permission is not symmetric under yama's ptrace_scope 1): the producer writes a hello (its pid, the address of a random word in
 * its memory, the word) into the link's trailer; the consumer checks that the pid is the one that owns the
 * producer's LID claim ({@code port-<lid>}), reads the word with process_vm_readv and writes its verdict (the
 * pid it granted, or why not) into the trailer, where the producer reads it before every reference packet.
 * Without a grant the bytes travel through the ring (two copies) and {@link #copyMode} says why. Trailer
 * (offsets from the ring's capacity C; {@link SpscRingBuffer}'s reserved line):
 * <pre>
 *   [C+128, C+136)  hello pid (u64, written last, with release)      producer
 *   [C+136, C+144)  address of the probe word in the producer        producer
 *   [C+144, C+152)  the probe word's value (random)                  producer
 *   [C+160, C+168)  verdict pid: the pid granted or refused (u64, written last, with release)   consumer
 *   [C+168, C+176)  verdict: 1 granted, 2 off at the consumer, 3 pid not the LID's owner,
 *                   4 the probe read another value, -errno the probe's process_vm_readv failed
 * </pre>
 * A large pull may be split over the NIC's copy engines ({@link CopyEngines}, {@code gdrkit.nic.copy.engines}), which
 * answer as one read would.
 * A reference is trusted no further than bytes in the ring: the responder checks the destination (rkey, bounds,
 * access) as for any packet; the token (pid) it carries must be the pid granted for the packet's SLID; a failed
 * or short read is a named error the requester sees as a completion error (REM_OP_ERR).
 *
 * <p>What remains: a process of the same user can still truncate a mapped file; touching the lost pages then
 * raises SIGBUS, which the JVM may report as an InternalError or not survive. As with Aeron's mapped files, the
 * defence is the directory's ownership and mode: only the same user can do it.
 */
public final class ShmFabric implements Fabric {
    private static final Set<PosixFilePermission> OWNER_ONLY_DIR = PosixFilePermissions.fromString("rwx------");
    private static final FileAttribute<Set<PosixFilePermission>> FILE_0600 =
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"));
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Path dir;
    private final int linkCapacity;
    private final int maxLid;
    private final Arena arena = Arena.ofShared();
    private final List<Path> owned = new ArrayList<>();
    private volatile LinkHook hook;
    private final boolean crc;
    private boolean closed;
    private final List<ShmPort> ports = new ArrayList<>();
    private volatile RemoteMemoryReader reader = RemoteMemoryReader.processVmReadv();
    /** The word peers read to prove they can read this process (cma probe); in the fabric's arena. */
    private MemorySegment probeWord;
    private long probeValue;
    private static final long PID = ProcessHandle.current().pid();
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final int HELLO = 128;
    private static final int VERDICT = 160;
    static final long GRANTED = 1;
    static final long OFF_AT_PEER = 2;
    static final long NOT_LID_OWNER = 3;
    static final long WRONG_WORD = 4;

    /**
     * @param dir          the directory shared by the processes, created (0700) if missing
     * @param linkCapacity ring bytes per link (power of two)
     * @param maxLid       highest LID a port may have; a port maps an inbound ring from each
     */
    public ShmFabric(final Path dir, final int linkCapacity, final int maxLid, final LinkHook hook) {
        this(dir, linkCapacity, maxLid, hook, true);
    }

    /** @param crc whether packets carry a CRC32C checked on receipt */
    public ShmFabric(final Path dir, final int linkCapacity, final int maxLid, final LinkHook hook,
                     final boolean crc) {
        this.crc = crc;
        if (maxLid < 1 || maxLid > 4096) {
            throw new IllegalArgumentException("maxLid " + maxLid + " outside 1..4096");
        }
        if (linkCapacity < 1024 || Integer.bitCount(linkCapacity) != 1 || linkCapacity > (1 << 30)) {
            throw new IllegalArgumentException("linkCapacity " + linkCapacity
                + " must be a power of two from 1 KiB to 1 GiB");
        }
        this.dir = dir;
        this.linkCapacity = linkCapacity;
        this.maxLid = maxLid;
        this.hook = hook == null ? LinkHook.PASS : hook;
        ensurePrivateDirectory(dir);
    }

    /**
     * Creates {@code base/<prefix><32 random hex digits>} with mode 0700: a name nobody can guess in advance (so
     * nobody can plant files or symlinks there first).
     */
    public static Path createPrivateDirectory(final Path base, final String prefix) {
        final byte[] r = new byte[16];
        RANDOM.nextBytes(r);
        final Path d = base.resolve(prefix + HexFormat.of().formatHex(r));
        try {
            Files.createDirectory(d, PosixFilePermissions.asFileAttribute(OWNER_ONLY_DIR));
            Files.setPosixFilePermissions(d, OWNER_ONLY_DIR); // the umask may have removed nothing, but be sure
        } catch (final IOException e) {
            throw new UncheckedIOException("cannot create private shared-memory directory " + d + ": " + e, e);
        }
        return d;
    }

    /**
     * Removes this user's directories {@code base/<prefix>*} left by processes that died (kill -9 leaves them):
     * a private directory whose port files all name dead processes, or an empty one older than a minute. Returns
     * how many were removed. Directories of other users, or not 0700, are never touched.
     */
    public static int sweepStaleDirectories(final Path base, final String prefix) {
        int removed = 0;
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(base, prefix + "*")) {
            for (final Path d : dirs) {
                try {
                    ensurePrivateDirectoryExists(d);
                } catch (final RuntimeException notOurs) {
                    continue;
                }
                try {
                    if (isStale(d)) {
                        try (DirectoryStream<Path> files = Files.newDirectoryStream(d)) {
                            for (final Path f : files) {
                                Files.deleteIfExists(f);
                            }
                        }
                        Files.deleteIfExists(d);
                        removed++;
                    }
                } catch (final IOException | UncheckedIOException raced) {
                    // its last process removed it (or a file of it) meanwhile: nothing left to sweep there
                }
            }
        } catch (final IOException | UncheckedIOException e) {
            // best effort: a sweep that cannot list the base removes nothing
        }
        return removed;
    }

    /**
     * Checks an existing directory as the fabric does (a real directory, not a symlink, owned by this user, mode
     * 0700) without creating it: for another component's files under a directory a peer named.
     *
     * @throws IllegalStateException naming the directory and what is wrong with it (or that it is missing)
     */
    public static void checkPrivateDirectory(final Path d) {
        ensurePrivateDirectoryExists(d);
    }

    private static void ensurePrivateDirectoryExists(final Path d) {
        if (!Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)) {
            throw new IllegalStateException(d + " is not a directory");
        }
        ensurePrivateDirectory(d);
    }

    private static boolean isStale(final Path d) throws IOException {
        int ports = 0;
        try (DirectoryStream<Path> pf = Files.newDirectoryStream(d, "port-*")) {
            for (final Path p : pf) {
                ports++;
                if (ownerAlive(p)) {
                    return false;
                }
            }
        }
        if (ports > 0) {
            return true;
        }
        final long age = System.currentTimeMillis() - Files.getLastModifiedTime(d, LinkOption.NOFOLLOW_LINKS)
            .toMillis();
        return age > 60_000; // a fresh, still empty one may belong to a process that is about to attach
    }

    /** The usual base directory: /dev/shm if present, else java.io.tmpdir. */
    public static Path defaultBase() {
        return Files.isDirectory(Path.of("/dev/shm")) ? Path.of("/dev/shm") : Path.of(
            System.getProperty("java.io.tmpdir"));
    }

    /**
     * Creates {@code dir} with mode 0700 if missing; otherwise checks that it is a directory, not a symlink,
     * owned by this process's user, with no permission for group or others.
     *
     * @throws IllegalStateException naming the directory and what is wrong with it
     */
    static void ensurePrivateDirectory(final Path dir) {
        try {
            if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
                try {
                    Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(OWNER_ONLY_DIR));
                    Files.setPosixFilePermissions(dir, OWNER_ONLY_DIR);
                } catch (final FileAlreadyExistsException raced) {
                    // someone made it first: checked below like any existing one
                }
            }
            final PosixFileAttributes a = Files.readAttributes(dir, PosixFileAttributes.class,
                LinkOption.NOFOLLOW_LINKS);
            if (!a.isDirectory()) {
                throw new IllegalStateException("refusing shared-memory directory " + dir + ": it is "
                    + (a.isSymbolicLink() ? "a symbolic link" : "not a directory"));
            }
            final String me = System.getProperty("user.name");
            if (!a.owner().getName().equals(me)) {
                throw new IllegalStateException("refusing shared-memory directory " + dir + ": owned by "
                    + a.owner().getName() + ", not by " + me);
            }
            if (!OWNER_ONLY_DIR.containsAll(a.permissions())) {
                throw new IllegalStateException("refusing shared-memory directory " + dir + ": mode "
                    + PosixFilePermissions.toString(a.permissions()) + " lets other users in (must be rwx------)");
            }
        } catch (final IOException e) {
            throw new UncheckedIOException("cannot use shared-memory directory " + dir + ": " + e, e);
        }
    }

    @Override
    public void hook(final LinkHook hook) {
        this.hook = hook == null ? LinkHook.PASS : hook;
    }

    @Override
    public String describe() {
        return "shm:" + dir;
    }

    public Path directory() {
        return dir;
    }

    @Override
    public synchronized FabricPort attach(final int lid) {
        if (lid < 1 || lid > maxLid) {
            throw new IllegalArgumentException("shared-memory ports need an explicit LID in 1.." + maxLid
                + " (got " + lid + ")");
        }
        if (closed) {
            throw new IllegalStateException("shared-memory fabric on " + dir + " is closed");
        }
        sweepStale();
        claimLid(lid);
        final SpscRingBuffer[] inbound = new SpscRingBuffer[maxLid];
        for (int src = 1; src <= maxLid; src++) {
            // the consumer owns its inbound rings: it creates them empty before any peer can know its QPs
            final Path link = linkFile(src, lid);
            inbound[src - 1] = new SpscRingBuffer(create(link));
            owned.add(link);
        }
        final ShmPort port = new ShmPort(lid, inbound);
        ports.add(port);
        return port;
    }

    /**
     * Replaces how this process reads a peer's memory for the single-copy path (default
     * {@link RemoteMemoryReader#processVmReadv()}): tests inject a failing reader to drive the probe's fallback
     * and the named errors.
     */
    public void remoteReader(final RemoteMemoryReader r) {
        reader = java.util.Objects.requireNonNull(r, "reader");
    }

    /** How payloads travel from this fabric's port {@code lid} to {@code dlid}, and why; null if no such port. */
    public synchronized CopyMode copyMode(final int lid, final int dlid) {
        for (final ShmPort p : ports) {
            if (p.lid() == lid) {
                return p.copyMode(dlid);
            }
        }
        return null;
    }

    /**
     * The copy mode of one link: {@code cma} (the receiver pulls the sender's bytes with process_vm_readv, one copy)
     * or {@code ring} (the bytes travel through the shared ring, two copies), why, and the sending port's counts of
     * reference packets (cma) among all packets it sent, and of references it pulled as a receiver.
     */
    public record CopyMode(String mode, String reason, long referencePackets, long packetsSent, long pulls,
                           long pullErrors) {
    }

    /** The probe word, made on first use: 8 random bytes in this process's memory. */
    private synchronized MemorySegment probeWord() {
        if (probeWord == null) {
            probeValue = RANDOM.nextLong() | 1; // never 0: an unwritten word never passes
            probeWord = arena.allocate(8, 8);
            probeWord.set(ValueLayout.JAVA_LONG, 0, probeValue);
        }
        return probeWord;
    }

    /** Removes port files (and their inbound links) whose process is dead. */
    private void sweepStale() {
        try (DirectoryStream<Path> ports = Files.newDirectoryStream(dir, "port-*")) {
            for (final Path p : ports) {
                final String name = p.getFileName().toString();
                final String lid = name.substring("port-".length());
                if (!lid.matches("\\d{1,4}") || ownerAlive(p)) {
                    continue;
                }
                Files.deleteIfExists(p);
                try (DirectoryStream<Path> links = Files.newDirectoryStream(dir, "link-*-" + lid)) {
                    for (final Path l : links) {
                        Files.deleteIfExists(l);
                    }
                }
            }
        } catch (final IOException e) {
            throw new UncheckedIOException("cannot sweep stale files in " + dir + ": " + e, e);
        }
    }

    private static boolean ownerAlive(final Path portFile) {
        final String owner = read(portFile);
        return owner.matches("\\d{1,10}") && ProcessHandle.of(Long.parseLong(owner))
            .map(ProcessHandle::isAlive).orElse(false);
    }

    /**
     * Claims {@code port-<lid>} atomically: the process id goes into a private file first, which is then hard-linked
     * to the port's name (link(2) fails if the name exists). A port file is thus never seen empty: created empty and
     * written after, a sweep in another process read it in between as "no live owner" and removed a live port's
     * files (or, in {@link #sweepStaleDirectories}, the whole directory of a run that was starting).
     */
    private void claimLid(final int lid) {
        final Path portFile = dir.resolve("port-" + lid);
        final String me = Long.toString(ProcessHandle.current().pid());
        final byte[] r = new byte[8];
        RANDOM.nextBytes(r);
        final Path claim = dir.resolve("claim-" + lid + "-" + HexFormat.of().formatHex(r));
        try {
            try (FileChannel ch = FileChannel.open(claim, Set.of(StandardOpenOption.CREATE_NEW,
                StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS), FILE_0600)) {
                ch.write(ByteBuffer.wrap(me.getBytes(StandardCharsets.US_ASCII)));
            }
            Files.createLink(portFile, claim);
            owned.add(portFile);
        } catch (final FileAlreadyExistsException e) {
            throw new IllegalStateException("LID " + lid + " on " + dir + " is held by live process "
                + read(portFile));
        } catch (final IOException e) {
            throw new UncheckedIOException("cannot claim " + portFile + ": " + e, e);
        } finally {
            try {
                Files.deleteIfExists(claim);
            } catch (final IOException ignored) {
                // a leftover claim file names no port: a sweep removes it with its directory
            }
        }
    }

    private static String read(final Path p) {
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
            final ByteBuffer b = ByteBuffer.allocate(32);
            ch.read(b);
            return new String(b.array(), 0, b.position(), StandardCharsets.US_ASCII).trim();
        } catch (final IOException e) {
            return "";
        }
    }

    private Path linkFile(final int src, final int dst) {
        return dir.resolve("link-" + src + "-" + dst);
    }

    /** The consumer's side: a fresh file (any old one is removed first), O_EXCL|O_NOFOLLOW, mode 0600. */
    private MemorySegment create(final Path file) {
        final long size = SpscRingBuffer.segmentSize(linkCapacity);
        try {
            Files.deleteIfExists(file); // removes a stale file or a planted symlink itself, never its target
            try (FileChannel ch = FileChannel.open(file, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS), FILE_0600)) {
                ch.write(ByteBuffer.wrap(new byte[1]), size - 1);
                return ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            }
        } catch (final IOException e) {
            throw new UncheckedIOException("cannot create shared-memory link " + file + ": " + e, e);
        }
    }

    /** The producer's side: an existing regular file of this user, exactly the ring's size; null if absent. */
    private MemorySegment open(final Path file) {
        final long size = SpscRingBuffer.segmentSize(linkCapacity);
        final OpenOption[] opts = {StandardOpenOption.READ, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS};
        try (FileChannel ch = FileChannel.open(file, opts)) {
            final PosixFileAttributes a = Files.readAttributes(file, PosixFileAttributes.class,
                LinkOption.NOFOLLOW_LINKS);
            if (!a.isRegularFile() || !a.owner().getName().equals(System.getProperty("user.name"))) {
                throw new RingCorruptException(file + " is not a regular file of this user");
            }
            if (ch.size() != size) {
                throw new RingCorruptException(file + " is " + ch.size() + " bytes, expected " + size
                    + ": a different link capacity, or a truncated file");
            }
            return ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
        } catch (final NoSuchFileException e) {
            return null;
        } catch (final IOException e) {
            throw new UncheckedIOException("cannot map shared-memory link " + file + ": " + e, e);
        }
    }

    /** Unmaps every ring and removes the files this fabric created (its port file and inbound links). */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        arena.close();
        for (final Path p : owned) {
            try {
                Files.deleteIfExists(p);
            } catch (final IOException ignored) {
                // best effort: a later attach sweeps what is left
            }
        }
        try {
            Files.deleteIfExists(dir); // only if empty: the last process out removes the directory
        } catch (final IOException ignored) {
            // another process's files are still there
        }
    }

    private final class ShmPort extends RingPort {
        /** doWork calls between checks that the peers we send to are still the processes we mapped. */
        private static final int CHECK_EVERY = 4096;
        /** doWork calls between looks for a new producer's hello on the inbound links (cma probe). */
        private static final int PROBE_EVERY = 64;
        private final SpscRingBuffer[] inbound;
        private final SpscRingBuffer[] outbound = new SpscRingBuffer[maxLid + 1];
        private final String[] outboundOwner = new String[maxLid + 1];
        private int countdown = CHECK_EVERY;
        private int probeCountdown = 1;
        // cross-process single copy, set by the NIC (SoftNicContext); off until then
        private volatile boolean cma;
        private volatile int threshold = Integer.MAX_VALUE;
        /** gdrkit.nic.shm.batch: spans across processes (off until the NIC says so). */
        private volatile boolean batches;
        /** Receiver side, by source LID: the hello pid last probed, the pid granted (0: none), why not. */
        private final long[] probedPid = new long[maxLid + 1];
        private final long[] grantedPid = new long[maxLid + 1];
        private final String[] refusal = new String[maxLid + 1];
        private final MemorySegment probeScratch = Arena.ofAuto().allocate(8, 8);
        private MemorySegment pullScratch;
        /** The NIC's copy engines (gdrkit.nic.copy.engines): large pulls split over threads; null: one thread. */
        private volatile CopyEngines engines;
        private String pullError = "";
        private long pulled;
        private long pullErrors;

        @Override
        public int doWork(final long nowNanos) {
            final int work = super.doWork(nowNanos);
            if (--countdown <= 0) {
                countdown = CHECK_EVERY;
                checkPeers();
            }
            if (--probeCountdown <= 0) {
                probeCountdown = PROBE_EVERY;
                probeInbound();
            }
            return work;
        }

        @Override
        public void crossProcessCopy(final boolean on, final int threshold) {
            this.threshold = Math.max(1, threshold);
            this.cma = on;
        }

        @Override
        public boolean carriesReferences(final int dlid, final int payload) {
            if (!cma || payload < threshold || crc || !hook.passesReferences()) {
                return false;
            }
            final SpscRingBuffer ring = outbound(dlid);
            if (ring == null) {
                return false;
            }
            final MemorySegment b = ring.buffer();
            final long v = ring.capacity() + (long) VERDICT;
            return (long) LONG.getAcquire(b, v) == PID && (long) LONG.get(b, v + 8) == GRANTED;
        }

        /**
         * Segment offload across processes: a reference record may stand for a span of packets where references
         * travel at all (asked per record, after {@link #carriesReferences(int, int)} said yes for the link) and the
         * hook takes whole spans; the receiver checks the span as a whole and pulls it ({@code Responder}).
         */
        @Override
        public boolean carriesBatches() {
            final LinkHook h = hook;
            return batches && cma && !crc && h.passesReferences() && h.passesBatches();
        }

        @Override
        public void crossProcessBatches(final boolean on) {
            this.batches = on;
        }

        /**
         * Where the bytes travel in the ring (no single copy to the peer: {@code process_vm_readv} refused, as by
         * Yama's ptrace_scope 1 between sibling processes, or off), a record may carry a span of packets inline, as
         * on the TCP fabric.
         */
        @Override
        boolean inlineSpans() {
            return true;
        }

        @Override
        public long referenceToken() {
            return PID;
        }

        @Override
        public void copyEngines(final CopyEngines engines) {
            this.engines = engines;
        }

        @Override
        public boolean pullsReferences() {
            return true;
        }

        @Override
        public long pull(final int slid, final long token, final long remoteAddress, final MemorySegment dst,
                         final long dstOffset, final int length) {
            return pullAhead(slid, token, remoteAddress, dst, dstOffset, length, length);
        }

        @Override
        public long pullAhead(final int slid, final long token, final long remoteAddress, final MemorySegment dst,
                              final long dstOffset, final int length, final long wanted) {
            final long granted = slid >= 1 && slid <= maxLid ? grantedPid[slid] : 0;
            if (granted == 0) {
                return pullFailed(-1, "LID " + slid + " was not granted cross-process reads ("
                    + (slid >= 1 && slid <= maxLid && refusal[slid] != null ? refusal[slid] : "not probed")
                    + "): its reference packets are refused");
            }
            if (token != granted) {
                return pullFailed(-2, "a reference names process " + token + ", but LID " + slid + " is process "
                    + granted);
            }
            if (length <= 0 || wanted < length || dstOffset < 0 || dstOffset > dst.byteSize() - wanted) {
                return pullFailed(-3, "a reference of " + length + " bytes does not fit its destination");
            }
            final long n;
            if (dst.isNative()) {
                final CopyEngines e = engines;
                // split over the copy engines from their threshold on; answers as the one read would
                n = e != null && wanted >= e.threshold() ? e.read(reader, granted, dst, dstOffset, remoteAddress, wanted)
                    : reader.read(granted, dst, dstOffset, remoteAddress, wanted);
                if (n == CopyEngines.TIMED_OUT) {
                    return pullFailed(-5, e.timeoutError());
                }
                if (n >= length) {
                    pulled++;
                    return n; // the bytes past length only if the range ahead was readable: a short read is fine
                }
            } else {
                // not addressable by the kernel: through a scratch buffer (two copies, still no ring)
                if (pullScratch == null || pullScratch.byteSize() < length) {
                    pullScratch = Arena.ofAuto().allocate(Math.max(length, 65536), 64);
                }
                n = reader.read(granted, pullScratch, 0, remoteAddress, length);
                if (n == length) {
                    MemorySegment.copy(pullScratch, 0, dst, dstOffset, length);
                }
            }
            if (n == length) {
                pulled++;
                return length;
            }
            return pullFailed(n < 0 ? n : -4, n < 0
                ? "process_vm_readv of " + length + " bytes at 0x" + Long.toHexString(remoteAddress) + " in process "
                    + granted + " (LID " + slid + "): " + RemoteMemoryReader.describe(n)
                : "short process_vm_readv: " + n + " of " + length + " bytes at 0x"
                    + Long.toHexString(remoteAddress) + " in process " + granted + " (LID " + slid + ")");
        }

        private long pullFailed(final long code, final String why) {
            pullErrors++;
            pullError = why;
            return code < 0 ? code : -1;
        }

        @Override
        public String pullError() {
            return pullError;
        }

        /**
         * The receiver's half of the link setup: a producer that wrote a hello with a pid not probed yet is probed
         * now (its pid must own its LID claim; its probe word must read back through process_vm_readv), and the
         * verdict goes into the link's trailer for it to read.
         */
        private void probeInbound() {
            for (int i = 0; i < inbound.length; i++) {
                final int src = i + 1;
                final MemorySegment b = inbound[i].buffer();
                final long h = inbound[i].capacity() + (long) HELLO;
                final long pid = (long) LONG.getAcquire(b, h);
                if (pid == 0 || pid == probedPid[src]) {
                    continue;
                }
                final long address = (long) LONG.get(b, h + 8);
                final long word = (long) LONG.get(b, h + 16);
                if ((long) LONG.getAcquire(b, h) != pid) {
                    continue; // rewritten meanwhile: the next look takes the settled one
                }
                probedPid[src] = pid;
                grantedPid[src] = 0;
                final long verdict = probe(src, pid, address, word);
                refusal[src] = verdict == GRANTED ? null : verdictText(verdict, "this process");
                if (verdict == GRANTED) {
                    grantedPid[src] = pid;
                }
                final long v = inbound[i].capacity() + (long) VERDICT;
                // seqlock-like: the pid goes to 0 before the verdict changes and is written last, so a producer
                // that reads pid, verdict, pid and sees the same pid twice read that pid's verdict (a re-probe for
                // another process could otherwise pair the old pid with the new verdict)
                LONG.setVolatile(b, v, 0L);
                LONG.setRelease(b, v + 8, verdict);
                LONG.setRelease(b, v, pid);
            }
        }

        private long probe(final int src, final long pid, final long address, final long word) {
            if (!cma) {
                return OFF_AT_PEER;
            }
            final String owner = read(dir.resolve("port-" + src));
            if (!owner.equals(Long.toString(pid))) {
                return NOT_LID_OWNER;
            }
            final long n = reader.read(pid, probeScratch, 0, address, 8);
            if (n < 0) {
                return n;
            }
            return n == 8 && probeScratch.get(ValueLayout.JAVA_LONG, 0) == word ? GRANTED : WRONG_WORD;
        }

        /** The sender's view of its link to {@code dlid}. */
        CopyMode copyMode(final int dlid) {
            final String local = !cma ? io.gdrkit.softnic.config.SoftNicConfiguration.SHM_CMA.name() + " (or "
                + io.gdrkit.softnic.config.SoftNicConfiguration.ONE_COPY.name() + ") is off in this process"
                : crc ? "the link CRC is on (it would cover the reference, not the bytes)"
                : !hook.passesReferences() ? "the link hook (fault injection) looks at payloads"
                : null;
            String reason = local;
            boolean granted = false;
            if (reason == null) {
                final SpscRingBuffer ring = dlid >= 1 && dlid <= maxLid ? outbound[dlid] : null;
                if (ring == null) {
                    reason = "no link to LID " + dlid + " yet";
                } else {
                    final MemorySegment b = ring.buffer();
                    final long v = ring.capacity() + (long) VERDICT;
                    final long first = (long) LONG.getAcquire(b, v);
                    final long verdict = (long) LONG.getAcquire(b, v + 8);
                    final long pid = (long) LONG.getAcquire(b, v) == first ? first : 0; // torn: not settled yet
                    granted = pid == PID && verdict == GRANTED;
                    reason = pid == 0 ? "the peer (LID " + dlid + ") has not probed this process yet (or is "
                        + "writing its verdict)"
                        // another process wrote this link's hello after ours (a stranger, or a replaced producer)
                        : pid != PID ? "the peer (LID " + dlid + ") probed process " + pid + ", not this one ("
                            + (verdict == GRANTED ? "granted" : verdictText(verdict, "it"))
                            + "): another process wrote this link's hello"
                        : granted ? "LID " + dlid + " read this process's probe word with process_vm_readv; payloads "
                            + "of " + threshold + " bytes or more travel as references"
                        : verdictText(verdict, "the peer (LID " + dlid + ")");
                }
            }
            return new CopyMode(granted ? "cma" : "ring", reason, referencesSent(), packetsSent(), pulled, pullErrors);
        }

        private static String verdictText(final long verdict, final String who) {
            if (verdict == OFF_AT_PEER) {
                return io.gdrkit.softnic.config.SoftNicConfiguration.SHM_CMA.name() + " is off in " + who;
            }
            if (verdict == NOT_LID_OWNER) {
                return who + " found the hello's pid is not the owner of the sender's LID claim";
            }
            if (verdict == WRONG_WORD) {
                return who + " read another value than the sender's probe word";
            }
            if (verdict < 0) {
                return who + " cannot read the sender's memory: process_vm_readv " + RemoteMemoryReader.describe(
                    verdict);
            }
            return "unknown verdict " + verdict;
        }

        /**
         * Forgets the link to a peer whose process died or was replaced (its port file names another process):
         * a new process made a new ring file, and a dead one reads nothing; packets to it become unroutable
         * until it is back, which the retry error reports.
         */
        private void checkPeers() {
            for (int d = 1; d <= maxLid; d++) {
                if (outbound[d] == null) {
                    continue;
                }
                final Path portFile = dir.resolve("port-" + d);
                if (!read(portFile).equals(outboundOwner[d]) || !ownerAlive(portFile)) {
                    outbound[d] = null;
                    outboundOwner[d] = null;
                }
            }
        }

        ShmPort(final int lid, final SpscRingBuffer[] inbound) {
            super(lid, crc, linkCapacity / 4);
            this.inbound = inbound;
        }

        @Override
        public int maxPacket() {
            return linkCapacity / 2 - SpscRingBuffer.HEADER;
        }

        @Override
        SpscRingBuffer outbound(final int dlid) {
            if (dlid < 1 || dlid > maxLid) {
                return null;
            }
            SpscRingBuffer ring = outbound[dlid];
            if (ring == null) {
                final String owner = read(dir.resolve("port-" + dlid));
                if (owner.isEmpty()) {
                    return null; // nobody there: lost, as on a network
                }
                // first packet to this peer: map the link once (its consumer created it empty)
                final MemorySegment seg;
                try {
                    seg = open(linkFile(lid(), dlid));
                } catch (final RuntimeException e) {
                    return null; // a bad link file: unroutable, the retry error follows
                }
                if (seg == null) {
                    return null;
                }
                ring = new SpscRingBuffer(seg);
                outbound[dlid] = ring;
                outboundOwner[dlid] = owner;
                hello(ring);
            }
            return ring;
        }

        /** The producer's half of the link setup: this process's pid and probe word, for the consumer to probe. */
        private void hello(final SpscRingBuffer ring) {
            final MemorySegment word = probeWord();
            final MemorySegment b = ring.buffer();
            final long h = ring.capacity() + (long) HELLO;
            LONG.set(b, h + 8, word.address());
            LONG.set(b, h + 16, probeValue);
            LONG.setRelease(b, h, PID);
        }

        @Override
        SpscRingBuffer[] inbound() {
            return inbound;
        }

        @Override
        boolean sharedInbound() {
            return true; // another process writes them: copy each record out, then check its LIDs and CRC
        }

        @Override
        int inboundSlid(final int index) {
            return index + 1; // inbound[src - 1] is link-<src>-<this LID>
        }

        @Override
        LinkHook hook() {
            return hook;
        }
    }
}
