/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.config.CommConfiguration;
import io.gdrkit.softnic.fabric.RemoteMemoryReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.function.IntFunction;

/**
 * Single-copy rounds on the shm path, as Open MPI's vader moves large messages: the writer of a round publishes in
 * its slot only the address and length of the region of its own native buffer that readers need, and each reader
 * pulls it with {@code process_vm_readv} (cross-memory attach, CMA) from the writer's process straight into its
 * destination. One copy per byte instead of two (into the slot, out of it).
 *
 * <p>Set up once when the shm rounds are open ({@link #open}, collective through the bootstrap): every rank sends its
 * pid, its threshold and the address of a native word holding a random value; every rank reads every peer's word
 * through the reader and all ranks agree, so that either every rank uses single copy or none does, and the reason
 * is recorded (EPERM from Yama's ptrace_scope, a container, ENOSYS, a peer with another threshold). Ranks that are
 * threads of one JVM share a pid: the call then reads this process, which needs no ptrace permission.
 *
 * <p>A peer's word is a peer's word: the pid comes only from setup (checked positive), the address only from the
 * peer's own slot, and the length pulled must equal what this rank expects for the round; a short read or an errno
 * is a named {@link CollException} naming the peer, the round and the errno, never a crash.
 */
final class CmaPull implements AutoCloseable {
    /** The reader for a world rank: tests inject one that fails. */
    static volatile IntFunction<RemoteMemoryReader> readerFor = r -> RemoteMemoryReader.processVmReadv();
    private static final SecureRandom RANDOM = new SecureRandom();

    private final RemoteMemoryReader reader;
    /** Group index -> pid, from setup only. */
    private final long[] pids;
    private final int threshold;
    private final ShmDirect shm;
    private final Arena arena;
    /** A slot's worth of native memory: a reader whose destination is on the heap pulls here, then copies. */
    private final MemorySegment bounce;

    private CmaPull(final RemoteMemoryReader reader, final long[] pids, final int threshold, final ShmDirect shm,
                    final Arena arena) {
        this.reader = reader;
        this.pids = pids;
        this.threshold = threshold;
        this.shm = shm;
        this.arena = arena;
        this.bounce = arena.allocate(Math.max(8, shm.slotBytes()), 64);
    }

    /**
     * What {@link #open} decided: the single-copy rounds (null: not used) and what the tuning says about them.
     */
    record Opened(CmaPull cma, String why) {
    }

    /**
     * Exchanges pids and probes CMA with every rank of {@code shm}'s group (the world). Collective: every rank calls
     * it alike once the shm rounds are open; the answer is the same on every rank.
     *
     * @param threshold this rank's {@code gdrkit.coll.cma.bytes} (0: off)
     */
    static Opened open(final Bootstrap b, final ShmDirect shm, final int threshold) {
        final int n = shm.size();
        final int me = shm.index();
        final Arena arena = Arena.ofShared();
        final MemorySegment word = arena.allocate(8, 8);
        final long value = RANDOM.nextLong() | 1;
        word.set(ValueLayout.JAVA_LONG, 0, value);
        final long pid = ProcessHandle.current().pid();
        final RemoteMemoryReader reader = readerFor.apply(b.rank());
        final String mine = pid + " " + threshold + " " + Long.toHexString(word.address()) + " "
            + Long.toHexString(value);
        final byte[][] all = b.allGather(mine.getBytes(StandardCharsets.US_ASCII));
        final long[] pids = new long[n];
        final long[] addr = new long[n];
        final long[] val = new long[n];
        final long[] rec = new long[3];
        String why = null;
        for (int p = 0; p < n && why == null; p++) {
            why = parseRecord(all[shm.world(p)], shm.world(p), b.rank(), threshold, rec);
            pids[p] = rec[0];
            addr[p] = rec[1];
            val[p] = rec[2];
        }
        String local = null;
        if (why == null) {
            final MemorySegment got = arena.allocate(8, 8);
            for (int s = 1; s < n && local == null; s++) {
                final int p = (me + s) % n;
                got.set(ValueLayout.JAVA_LONG, 0, ~val[p]);
                final long r = reader.read(pids[p], got, 0, addr[p], 8);
                if (r != 8) {
                    local = "rank " + b.rank() + " cannot read rank " + shm.world(p) + "'s memory (pid " + pids[p]
                        + "): " + (r < 0 ? RemoteMemoryReader.describe(r) : "short read of " + r + " of 8 bytes");
                } else if (got.get(ValueLayout.JAVA_LONG, 0) != val[p]) {
                    local = "rank " + b.rank() + " read another value at rank " + shm.world(p) + "'s probe word";
                }
            }
        }
        // every rank's probe answer, then all agree on the first reason in rank order
        final byte[][] probes = b.allGather(local == null ? new byte[0] : local.getBytes(StandardCharsets.UTF_8));
        for (int p = 0; p < probes.length && why == null; p++) {
            if (probes[p].length > 0) {
                why = new String(probes[p], 0, Math.min(probes[p].length, 400), StandardCharsets.UTF_8);
            }
        }
        if (why != null) {
            arena.close();
            return new Opened(null, "no single copy (" + why + ")");
        }
        return new Opened(new CmaPull(reader, pids, threshold, shm, arena), "single copy (process_vm_readv) from "
            + threshold + " B per block");
    }

    /**
     * Whether {@code op}'s rounds over {@code n} ranks may move with one copy: where one reader pulls each region
     * (sendrecv, alltoall; allgather and broadcast only between 2 ranks). With n - 1 readers of one region the pulls
     * contend in the writer's address space: at 8 ranks on the H200 host a single-copy broadcast took 1.2-2.7x the
     * copy through the slots from 256 KiB. The shm path and the tuning table's reasons both ask here.
     */
    static boolean oneReaderPerRegion(final CollOp op, final int n) {
        return op == CollOp.SENDRECV || op == CollOp.ALLTOALL
            || n == 2 && (op == CollOp.ALLGATHER || op == CollOp.BROADCAST);
    }

    /**
     * Reads rank {@code from}'s setup record ("pid threshold address value", the last two in hex) into {@code out}
     * (pid, address, value). The record is a peer's word: anything but four well-formed fields, a pid outside
     * 1..2^31-1 or a threshold other than this rank's is refused.
     *
     * @return null when usable, else why not (said by every rank, and the ranks then copy through the slots)
     */
    static String parseRecord(final byte[] raw, final int from, final int me, final int threshold, final long[] out) {
        final String[] f = new String(raw, StandardCharsets.US_ASCII).split(" ");
        try {
            if (f.length != 4) {
                throw new NumberFormatException(f.length + " fields");
            }
            final long pid = Long.parseLong(f[0]);
            final int t = Integer.parseInt(f[1]);
            out[1] = Long.parseUnsignedLong(f[2], 16);
            out[2] = Long.parseUnsignedLong(f[3], 16);
            if (pid <= 0 || pid > Integer.MAX_VALUE) {
                throw new NumberFormatException("pid " + pid);
            }
            out[0] = pid;
            if (t == 0) {
                return "rank " + from + " has it off (" + CommConfiguration.COLL_CMA_BYTES.name() + "=0)";
            }
            if (t != threshold) {
                return "rank " + from + " has " + CommConfiguration.COLL_CMA_BYTES.name() + "=" + t + ", rank " + me
                    + " " + threshold + " (every rank must give the same)";
            }
            return null;
        } catch (final NumberFormatException e) {
            final String m = String.valueOf(e.getMessage());
            return "rank " + from + " sent a malformed pid record (" + m.substring(0, Math.min(m.length(), 80)) + ")";
        }
    }

    /** {@return the smallest round (bytes per block) that moves with one copy} */
    int threshold() {
        return threshold;
    }

    /**
     * Whether this rank, as a writer, may offer {@code len} bytes of {@code src} for readers to pull: the round is
     * at least the threshold and the source is native (heap segments have no stable address to read).
     */
    boolean offers(final MemorySegment src, final long len) {
        return len >= threshold && src.isNative();
    }

    /**
     * Pulls {@code len} bytes of rank {@code p}'s round {@code d}, whose slot record (address, length) lies at
     * {@code recordAt} in its file, from {@code delta} bytes past the published address into {@code dst} at
     * {@code dstOff}.
     *
     * @throws CollException naming the peer, the round and what went wrong
     */
    void pull(final int p, final long d, final long recordAt, final long delta, final MemorySegment dst,
              final long dstOff, final int len, final String op) {
        final MemorySegment f = shm.seg(p);
        final long addr = f.get(ValueLayout.JAVA_LONG, recordAt);
        final long offered = f.get(ValueLayout.JAVA_LONG, recordAt + 8);
        if (offered != len) {
            throw new CollException("rank " + shm.world(shm.index()) + " " + op + " single-copy round " + d
                + ": rank " + shm.world(p) + " offers " + offered + " bytes, expected " + len + " (mismatched sizes "
                + "across ranks?)");
        }
        final boolean direct = dst.isNative();
        final long r = reader.read(pids[p], direct ? dst : bounce, direct ? dstOff : 0, addr + delta, len);
        if (r != len) {
            throw new CollException("rank " + shm.world(shm.index()) + " " + op + " single-copy round " + d
                + ": process_vm_readv of " + len + " B at 0x" + Long.toHexString(addr + delta) + " in rank "
                + shm.world(p) + " (pid " + pids[p] + ") answered " + (r < 0 ? RemoteMemoryReader.describe(r)
                : "a short read of " + r + " bytes"));
        }
        if (!direct) {
            MemorySegment.copy(bounce, 0, dst, dstOff, len);
        }
    }

    @Override
    public void close() {
        arena.close();
    }
}
