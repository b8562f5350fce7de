/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.config.CommConfiguration;
import io.gdrkit.softnic.fabric.ShmFabric;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.Set;
import java.util.function.Consumer;

/**
 * Direct rounds through shared memory, for ranks that are all on one host: NCCL moves data between the GPUs of one
 * node over its SHM/P2P transports, not over the network, and Open MPI's small messages between processes of one
 * node are a store into shared memory and a flag. Here each rank owns one small file: it writes its input of round
 * d into slot d mod {@value #DEPTH} and publishes the round number with a release store; every rank that needs it
 * spins on that number with acquire loads, reads the input where it lies (no copy, no NIC, no system call), and
 * then says with its own "done" word that it is through with round d. A slot is written again only when every
 * peer's done word has passed the round that last used it. A round thus costs a cache-line handshake instead of a
 * trip through a NIC model.
 *
 * <p>Rank r writes only its own file and maps the others' read-only; what it reads there is validated before use
 * (a peer's file is a peer's word: its round number, header and length are checked, and a bad one is a named
 * {@link CollException}). The files live in a private directory (0700, a random name rank 0 makes and sends
 * through the bootstrap with a random nonce every file carries), are created O_EXCL|O_NOFOLLOW with mode 0600, and
 * are unlinked as soon as every rank mapped them: nothing is left in /dev/shm, even after kill -9, once the
 * communicator is up. Ranks on different hosts never see rank 0's directory (or see another with a wrong nonce):
 * they then keep the direct round over the NIC. A same-user process that opened a file before then can still
 * truncate it under the mappings: the next access to a lost page is the JVM's InternalError (a SIGBUS), which the
 * collectives turn into a {@link CollException} naming the truncated file ({@link #faultWhy}); the process lives on.
 *
 * <p>With ranks on several hosts the same rounds run within each host ({@link #open(Bootstrap, boolean, int, Path,
 * long, int[])} by group, for {@link HierCollectives}): "rank" in the files is then the rank's index in its host's
 * group, "ranks" the group's size, and each host's lowest rank makes its directory and nonce; errors name world
 * ranks.
 *
 * <pre>
 * rank r's file (little-endian, as the host):
 *   [0, 8)        magic "GDRKSHD1"
 *   [8, 16)       nonce: rank 0's random, the same in every rank's file
 *   [16, 20)      rank        [20, 24) ranks     [24, 28) slot data bytes     [28, 32) depth
 *   [32, 40)      the settings every rank must share (the direct limit, the tree's above it): ranks that differ keep
 *                 the NIC
 *   [64, 72)      done: the last round whose inputs this rank finished reading (its own cache line)
 *   [128 + s * stride, ...)  slot s:
 *       +0   round number, published last (release)
 *       +8   header: operation, type, reduction, root (Collectives' direct-round header)
 *       +16  data bytes (int)
 *       +24  data, slotBytes (a slot is padded to whole cache lines; 40 bytes of data share the round's line)
 * </pre>
 */
final class ShmDirect implements AutoCloseable {
    static final int DEPTH = 4;
    private static final long MAGIC = 0x3144485348524447L; // "GDRKSHD1" read as a little-endian long
    private static final long DONE = 64;
    private static final long SLOTS = 128;
    /** The data starts in the round number's cache line: a small round's reader takes one line from its writer. */
    private static final long SLOT_HEAD = 24;
    private static final String PREFIX = "gdrkit-colld-";
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final SecureRandom RANDOM = new SecureRandom();
    /**
     * Called with this rank's file just before it is unlinked: a test plays a same-user process that opened the file
     * while it was still there (and later truncates or overwrites it under the ranks' mappings).
     */
    static volatile Consumer<Path> beforeUnlink = f -> { };

    /** This rank's index in its group (its world rank when the group is the world). */
    private final int rank;
    /** The group's ranks. */
    private final int n;
    /** Group index -> world rank: what errors name (a peer is known by its world rank). */
    private final int[] worldOf;
    private final int slotBytes;
    private final long stride;
    private final Arena arena;
    private final MemorySegment[] files;
    /**
     * Each mapped file's descriptor, open for as long as the mapping: the files are unlinked once mapped, and after a
     * fault {@link #faultWhy} asks each one its size (fstat) rather than touch the mapping again, whose fault the JVM
     * may deliver only after the check has returned.
     */
    private final FileChannel[] channels;
    private final MemorySegment own;
    /** Each peer's done word as last read: re-read only when it no longer shows a slot free (a cache miss saved). */
    private final long[] peerDone;
    /** Rounds so far: the direct rounds and {@link ShmCollectives}' rounds share the slots, so they share the count. */
    private long rounds;

    private ShmDirect(final int rank, final int n, final int slotBytes, final Arena arena,
                      final MemorySegment[] files, final FileChannel[] channels, final int[] worldOf) {
        this.rank = rank;
        this.worldOf = worldOf;
        this.n = n;
        this.slotBytes = slotBytes;
        this.stride = stride(slotBytes);
        this.arena = arena;
        this.files = files;
        this.channels = channels;
        this.own = files[rank];
        this.peerDone = new long[n];
    }

    private static long stride(final int slotBytes) {
        return (SLOT_HEAD + slotBytes + 63L) / 64 * 64; // slots start on cache lines
    }

    static long fileBytes(final int slotBytes) {
        return SLOTS + DEPTH * stride(slotBytes);
    }

    /**
     * What {@link #open} decided: the shared-memory rounds (null when not used), why, and the directory the files
     * were made in (removed by then; null if none was agreed).
     */
    record Opened(ShmDirect direct, String why, Path dir) {
    }

    /**
     * Sets up the shared-memory rounds with every rank, or says why not. Collective: every rank calls it, in the
     * same place, whatever its own setting; the answer is the same on every rank (used only when every rank wants
     * it and every rank mapped every file).
     *
     * @param wanted    this rank's {@code gdrkit.coll.shm.direct}
     * @param slotBytes the largest direct round's data
     */
    static Opened open(final Bootstrap b, final boolean wanted, final int slotBytes, final long config) {
        return open(b, wanted, slotBytes, ShmFabric.defaultBase(), config);
    }

    /** As above, under {@code base} (tests give ranks different bases, as ranks on different hosts have). */
    static Opened open(final Bootstrap b, final boolean wanted, final int slotBytes, final Path base) {
        return open(b, wanted, slotBytes, base, 0);
    }

    /**
     * As above, with {@code config}: the settings every rank must share to use the shared rounds (the direct
     * limit); a rank whose peer's file says another keeps every rank on the NIC, whose exchanges then name the
     * mismatch.
     */
    static Opened open(final Bootstrap b, final boolean wanted, final int slotBytes, final Path base,
                       final long config) {
        return open(b, wanted, slotBytes, base, config, null);
    }

    /**
     * As above, among the ranks of each group: {@code group} is this rank's group, its world ranks in ascending
     * order (each host's ranks, for the hierarchical path), every rank of the world in exactly one group; null is one
     * group of every rank. Still collective over the whole world, each rank calling it alike: each group's lowest
     * rank makes the group's directory and nonce, each rank maps the files of its own group only, and the answer is
     * the same on every rank of the world (the groups are used only when every rank of every group mapped every file
     * of its group, since the algorithm over them needs every host).
     *
     * @param group this rank's group (world ranks, ascending, this rank among them), or null for the whole world
     */
    static Opened open(final Bootstrap b, final boolean wanted, final int slotBytes, final Path base,
                       final long config, final int[] group) {
        final int rank = b.rank();
        final int worldN = b.nranks();
        final int[] members = group == null ? java.util.stream.IntStream.range(0, worldN).toArray() : group.clone();
        final int me = java.util.Arrays.binarySearch(members, rank);
        if (me < 0 || members.length < 1 || members[members.length - 1] >= worldN || members[0] < 0) {
            throw new IllegalArgumentException("rank " + rank + "'s shared-memory group " + java.util.Arrays.toString(
                members) + " does not hold it, or names a rank outside 0.." + (worldN - 1));
        }
        final int n = members.length;
        final int leader = members[0];
        Path dir = null;
        long nonce = 0;
        if (me == 0 && wanted) {
            try {
                ShmFabric.sweepStaleDirectories(base, PREFIX);
                dir = ShmFabric.createPrivateDirectory(base, PREFIX);
                nonce = RANDOM.nextLong();
            } catch (final RuntimeException e) {
                dir = null; // said below: the leader proposes nothing
            }
        }
        // round 1: who wants it, and each group leader's directory and nonce
        final String proposal = (wanted ? "1" : "0") + (dir == null ? "" : " " + dir.getFileName() + " "
            + Long.toHexString(nonce));
        final byte[][] all = b.allGather(proposal.getBytes(StandardCharsets.US_ASCII));
        String why = null;
        for (int p = 0; p < worldN && why == null; p++) {
            if (all[p].length == 0 || all[p][0] != '1') {
                why = "rank " + p + " has it off (" + CommConfiguration.COLL_SHM_DIRECT.name() + ")";
            }
        }
        String local = null;
        if (why == null) {
            // the leader's word is a peer's word: a name that is not one this code makes is refused
            final String[] f = new String(all[leader], StandardCharsets.US_ASCII).split(" ");
            if (f.length != 3 || !f[1].matches(PREFIX + "[0-9a-f]{32}") || !f[2].matches("[0-9a-f]{1,16}")) {
                local = "rank " + leader + " could not make the shared directory";
            } else {
                dir = base.resolve(f[1]);
                nonce = Long.parseUnsignedLong(f[2], 16);
            }
        }
        final Arena arena = Arena.ofShared();
        final MemorySegment[] files = new MemorySegment[n];
        final FileChannel[] channels = new FileChannel[n];
        Path mine = null;
        if (why == null && local == null) {
            try {
                mine = dir.resolve("rank-" + me);
                channels[me] = create(dir, mine, slotBytes);
                files[me] = channels[me].map(FileChannel.MapMode.READ_WRITE, 0, fileBytes(slotBytes), arena);
                files[me].set(ValueLayout.JAVA_LONG, 0, MAGIC);
                files[me].set(ValueLayout.JAVA_LONG, 8, nonce);
                files[me].set(ValueLayout.JAVA_INT, 16, me);
                files[me].set(ValueLayout.JAVA_INT, 20, n);
                files[me].set(ValueLayout.JAVA_INT, 24, slotBytes);
                files[me].set(ValueLayout.JAVA_INT, 28, DEPTH);
                files[me].set(ValueLayout.JAVA_LONG, 32, config);
            } catch (final RuntimeException | IOException e) {
                local = "rank " + rank + " cannot make its file in rank " + leader + "'s shared directory (another "
                    + "host, or a full /dev/shm?): " + e.getMessage();
            }
        }
        // round 2: every rank made its file (or why not)
        why = gatherWhy(b, why, local);
        if (why == null) {
            for (int p = 0; p < n && local == null; p++) {
                if (p != me) {
                    try {
                        channels[p] = openPeer(dir.resolve("rank-" + p), slotBytes);
                        files[p] = channels[p].map(FileChannel.MapMode.READ_ONLY, 0, fileBytes(slotBytes), arena);
                        check(files[p], nonce, p, n, slotBytes);
                        if (files[p].get(ValueLayout.JAVA_LONG, 32) != config) {
                            throw new IllegalStateException("its settings word 0x" + Long.toHexString(files[p].get(
                                ValueLayout.JAVA_LONG, 32)) + " is not this rank's 0x" + Long.toHexString(config)
                                + " (another " + CommConfiguration.COLL_DIRECT_BYTES.name() + " or "
                                + CommConfiguration.COLL_SHM_TREE_BYTES.name() + "?)");
                        }
                    } catch (final RuntimeException | IOException e) {
                        local = "rank " + rank + " cannot use rank " + members[p] + "'s file: " + e.getMessage();
                    }
                }
            }
        }
        // round 3: every rank mapped every file (or why not); then nothing stays on disk
        why = gatherWhy(b, why, local);
        if (mine != null) {
            beforeUnlink.accept(mine);
            delete(mine);
        }
        b.barrier(); // every rank's file is gone: each leader's directory is empty
        if (me == 0 && dir != null) {
            delete(dir);
        }
        if (why != null) {
            arena.close();
            closeAll(channels);
            return new Opened(null, why, dir);
        }
        return new Opened(new ShmDirect(me, n, slotBytes, arena, files, channels, members), group == null ? "all " + n
            + " ranks on one host" : "the " + n + " ranks of each host share memory", dir);
    }

    /** The first reason any rank gave (rank order), or the reason already known; the same answer on every rank. */
    private static String gatherWhy(final Bootstrap b, final String known, final String local) {
        final byte[][] all = b.allGather(local == null ? new byte[0] : local.getBytes(StandardCharsets.UTF_8));
        if (known != null) {
            return known;
        }
        for (final byte[] w : all) {
            if (w.length > 0) {
                return new String(w, 0, Math.min(w.length, 400), StandardCharsets.UTF_8);
            }
        }
        return null;
    }

    /** This rank's file, made new and written in full; the channel stays open (the caller maps and keeps it). */
    private static FileChannel create(final Path dir, final Path file, final int slotBytes) {
        ShmFabric.checkPrivateDirectory(dir);
        final long size = fileBytes(slotBytes);
        FileChannel ch = null;
        try {
            ch = FileChannel.open(file, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS), PosixFilePermissions.asFileAttribute(
                PosixFilePermissions.fromString("rw-------")));
            // written in full, not sized sparse: tmpfs gives a page when it is first touched, and a full /dev/shm
            // would then be a SIGBUS in the middle of a round; written here, it is an IOException (ENOSPC) and the
            // ranks fall back to the NIC, saying why
            final ByteBuffer zeros = ByteBuffer.allocateDirect((int) Math.min(size, 1 << 20));
            for (long at = 0; at < size; ) {
                zeros.clear().limit((int) Math.min(zeros.capacity(), size - at));
                at += ch.write(zeros, at);
            }
            return ch;
        } catch (final IOException e) {
            closeAll(ch);
            throw new IllegalStateException("cannot create " + file + ": " + e.getMessage(), e);
        }
    }

    /**
     * A peer's file opened for reading (the caller maps it read-only and keeps the channel), once it is found a
     * regular file of this user, not a link, exactly the size agreed.
     */
    static FileChannel openPeer(final Path file, final int slotBytes) {
        final long size = fileBytes(slotBytes);
        FileChannel ch = null;
        try {
            ch = FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
            final PosixFileAttributes a = Files.readAttributes(file, PosixFileAttributes.class,
                LinkOption.NOFOLLOW_LINKS);
            if (!a.isRegularFile() || !a.owner().getName().equals(System.getProperty("user.name"))) {
                throw new IllegalStateException(file + " is not a regular file of this user");
            }
            if (ch.size() != size) {
                throw new IllegalStateException(file + " is " + ch.size() + " bytes, expected " + size);
            }
            return ch;
        } catch (final NoSuchFileException e) {
            throw new IllegalStateException(file + " does not exist", e);
        } catch (final IOException e) {
            closeAll(ch);
            throw new IllegalStateException("cannot map " + file + ": " + e.getMessage(), e);
        } catch (final RuntimeException e) {
            closeAll(ch);
            throw e;
        }
    }

    private static void closeAll(final FileChannel... chs) {
        for (final FileChannel c : chs) {
            if (c != null) {
                try {
                    c.close();
                } catch (final IOException ignored) {
                    // a read-only or already unlinked file: nothing is lost by a failed close
                }
            }
        }
    }

    private static void check(final MemorySegment f, final long nonce, final int p, final int n, final int slot) {
        if (f.get(ValueLayout.JAVA_LONG, 0) != MAGIC || f.get(ValueLayout.JAVA_LONG, 8) != nonce
            || f.get(ValueLayout.JAVA_INT, 16) != p || f.get(ValueLayout.JAVA_INT, 20) != n
            || f.get(ValueLayout.JAVA_INT, 24) != slot || f.get(ValueLayout.JAVA_INT, 28) != DEPTH) {
            throw new IllegalStateException("its header is not this run's rank " + p + " of " + n + " with "
                + slot + "-byte slots");
        }
    }

    private static void delete(final Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (final IOException ignored) {
            // best effort: the next run's sweep removes what is left
        }
    }

    /**
     * Which files no longer hold their mapping in full, said after a fault on a mapped access (a SIGBUS, the JVM's
     * InternalError): each file's size now, asked through the descriptor kept open since it was mapped, against the
     * size mapped. Files are unlinked once mapped, so only a process that opened one before can truncate it.
     */
    String faultWhy() {
        final StringBuilder b = new StringBuilder();
        final StringBuilder unknown = new StringBuilder();
        final long mapped = fileBytes(slotBytes);
        for (int p = 0; p < n; p++) {
            final String name = p == rank ? "this rank's own file (rank " + worldOf[p] + ")" : "rank " + worldOf[p]
                + "'s file";
            try {
                if (channels[p].size() < mapped) {
                    b.append(b.isEmpty() ? "" : ", ").append(name);
                }
            } catch (final IOException e) {
                unknown.append(unknown.isEmpty() ? "" : ", ").append(name);
            }
        }
        final String sizes = unknown.isEmpty() ? "" : " (the size of " + unknown + " cannot be read)";
        return b.isEmpty() ? "a fault on a mapped shared-memory file, none of which is truncated now" + sizes
            : b + " was truncated under the mapping (" + mapped + " bytes mapped)" + sizes;
    }

    /** {@return the world rank of group index {@code p}} */
    int world(final int p) {
        return worldOf[p];
    }

    /** {@return this rank's index in its group} */
    int index() {
        return rank;
    }

    /** {@return the ranks of the group} */
    int size() {
        return n;
    }

    /** The largest direct round's data. */
    int slotBytes() {
        return slotBytes;
    }

    private long slot(final long d) {
        return SLOTS + (d % DEPTH) * stride;
    }

    /** Whether round {@code d}'s slot is free: every peer is done with round d - DEPTH, its last user. */
    boolean slotFree(final long d) {
        for (int p = 0; p < n; p++) {
            if (p != rank && peerDone[p] < d - DEPTH) {
                peerDone[p] = (long) LONG.getAcquire(files[p], DONE);
                if (peerDone[p] < d - DEPTH) {
                    return false;
                }
            }
        }
        return true;
    }

    /** {@return the next round's number (counted once for every rank's rounds, which all ranks run alike)} */
    long nextRound() {
        return ++rounds;
    }

    /** {@return the last round's number} */
    long lastRound() {
        return rounds;
    }

    /** {@return this rank's own file, writable: a round's data may be written at {@link #dataAt} before it is published} */
    MemorySegment own() {
        return own;
    }

    /**
     * Publishes round {@code d} whose {@code bytes} of data the caller already wrote into its own slot (the slot was
     * free, {@link #slotFree}): the header, then the round number with a release store.
     */
    void publishWritten(final long d, final long what, final int bytes) {
        final long s = slot(d);
        own.set(ValueLayout.JAVA_LONG, s + 8, what);
        own.set(ValueLayout.JAVA_INT, s + 16, bytes);
        LONG.setRelease(own, s, d);
    }

    /** Writes round {@code d}'s input and header, then publishes the round (release: the data is visible first). */
    void publish(final long d, final long what, final MemorySegment src, final long srcOff, final int bytes) {
        final long s = slot(d);
        own.set(ValueLayout.JAVA_LONG, s + 8, what);
        own.set(ValueLayout.JAVA_INT, s + 16, bytes);
        MemorySegment.copy(src, srcOff, own, s + SLOT_HEAD, bytes);
        LONG.setRelease(own, s, d);
    }

    /**
     * Whether rank {@code p}'s round {@code d} is there (false: not yet). Validates what the peer wrote: a round
     * number that is neither d nor an earlier user of the slot, or a header or length that is not this round's.
     *
     * @throws CollException naming the peer and what it wrote
     */
    boolean arrived(final int p, final long d, final long what, final int bytes) {
        return arrivedAs(p, d, what, bytes, what, bytes) != 0;
    }

    /**
     * As {@link #arrived}, where the writer may have published either of two forms of the round (its data, or a
     * single-copy record, {@link CmaPull}): 0 not yet, 1 header {@code what} with {@code bytes}, 2 header
     * {@code alt} with {@code altBytes}; anything else is a named {@link CollException}.
     */
    int arrivedAs(final int p, final long d, final long what, final int bytes, final long alt, final int altBytes) {
        final long s = slot(d);
        final long got = (long) LONG.getAcquire(files[p], s);
        if (got != d) {
            // not yet: the slot still holds an earlier round of its own (or none: 0, also when the peer had no
            // input in those rounds, as a broadcast's receivers have none)
            if (got != 0 && (got > d || got < 0 || (d - got) % DEPTH != 0)) {
                throw new CollException("rank " + worldOf[rank] + " direct round " + d + " in shared memory: rank "
                    + worldOf[p] + "'s slot holds round " + got + " (not this round or an earlier one of the slot)");
            }
            return 0;
        }
        final long head = files[p].get(ValueLayout.JAVA_LONG, s + 8);
        final int len = files[p].get(ValueLayout.JAVA_INT, s + 16);
        if (head == what && len == bytes) {
            return 1;
        }
        if (head == alt && len == altBytes) {
            return 2;
        }
        throw new CollException("rank " + worldOf[rank] + " direct round of " + bytes + " B in shared memory: rank "
            + worldOf[p] + " wrote " + len + " bytes with header 0x" + Long.toHexString(head) + ", expected " + bytes
            + " with 0x" + Long.toHexString(what) + (alt != what ? " (or a single-copy record with 0x"
            + Long.toHexString(alt) + ")" : "") + " (mismatched operations, types, sizes or "
            + CommConfiguration.COLL_DIRECT_BYTES.name() + " across ranks?)");
    }

    /** The segment holding rank {@code p}'s data (its file; read-only unless p is this rank). */
    MemorySegment seg(final int p) {
        return files[p];
    }

    /** Where round {@code d}'s data lies in every rank's file. */
    long dataAt(final long d) {
        return slot(d) + SLOT_HEAD;
    }

    /** This rank is through with the inputs of rounds up to {@code d}: their writers may reuse those slots. */
    void done(final long d) {
        LONG.setRelease(own, DONE, d);
    }

    @Override
    public void close() {
        arena.close();
        closeAll(channels);
    }
}
