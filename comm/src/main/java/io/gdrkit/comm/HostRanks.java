/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.bootstrap.Bootstrap;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * Which ranks share a host, and how many processors each rank's host has: what the automatic choices (NICs per rank,
 * the NIC's progress, reduce threads) need to count the ranks that compete for one host's processors. Ranks on other
 * hosts do not compete. Before this, a run over tcp counted every rank as local, so 16 ranks on 4 hosts got the
 * choices of 16 ranks on one; and hosts with different processor counts chose different NIC counts, which the
 * communicator then refused ("rank p has D network devices").
 *
 * <p>Every rank sends one record through the bootstrap ({@link #gather}); every rank checks every record and works
 * out the same table. Records are untrusted. Wire format, printable ASCII, fields separated by one space:
 * <pre>
 *   host1 CPUS HOST
 *   CPUS  the processors this rank's JVM may use, 1..65536, decimal without sign or leading zeros
 *   HOST  the host's identity ({@link GpuSharing#hostIdentity}: the kernel's boot id, else the host name), 1..96
 *         printable characters without spaces; "unknown" where neither is known (all such ranks count as one host)
 * </pre>
 *
 * @param hostOf      rank -> index of its host, hosts numbered in order of their lowest rank
 * @param cpus        rank -> processors of that rank's JVM
 * @param identified  whether every rank's host was identified (no "unknown")
 */
record HostRanks(int[] hostOf, int[] cpus, boolean identified) {
    /** The error a malformed record from a peer gets. */
    static final String BAD_RECORD = "BAD_HOST_RECORD";
    static final int MAX_RECORD = 128;
    static final int MAX_CPUS = 65536;
    private static final String MAGIC = "host1";

    HostRanks {
        if (hostOf.length != cpus.length || hostOf.length == 0) {
            throw new IllegalArgumentException("hostOf and cpus must have one entry per rank");
        }
        hostOf = hostOf.clone();
        cpus = cpus.clone();
    }

    /** Every one of {@code n} ranks on this host, with this JVM's processors (in-JVM ranks: one host by definition). */
    static HostRanks oneHost(final int n, final int cpus) {
        final int[] c = new int[n];
        Arrays.fill(c, cpus);
        return new HostRanks(new int[n], c, true);
    }

    /** This rank's record: its processors and its host's identity. */
    static byte[] record(final int cpus, final String hostIdentity) {
        return (MAGIC + " " + cpus + " " + hostIdentity).getBytes(StandardCharsets.US_ASCII);
    }

    /** Gathers every rank's record (collective: every rank calls it at the same point) and checks them. */
    static HostRanks gather(final Bootstrap b, final int cpus, final String hostIdentity) {
        return of(b.allGather(record(cpus, hostIdentity)));
    }

    /** The table from every rank's record, in rank order. */
    static HostRanks of(final byte[][] records) {
        final int n = records.length;
        final int[] hostOf = new int[n];
        final int[] cpus = new int[n];
        final Map<String, Integer> hosts = new HashMap<>();
        boolean identified = true;
        for (int r = 0; r < n; r++) {
            final String[] f = parse(records[r], r);
            cpus[r] = Integer.parseInt(f[1]);
            identified &= !f[2].equals("unknown");
            final Integer h = hosts.putIfAbsent(f[2], hosts.size());
            hostOf[r] = h == null ? hosts.size() - 1 : h;
        }
        return new HostRanks(hostOf, cpus, identified);
    }

    private static String[] parse(final byte[] b, final int rank) {
        if (b == null || b.length == 0 || b.length > MAX_RECORD) {
            throw bad(rank, "its length " + (b == null ? 0 : b.length) + " is outside 1.." + MAX_RECORD);
        }
        for (final byte c : b) {
            if (c < 0x20 || c > 0x7e) {
                throw bad(rank, "it holds a byte that is not printable ASCII");
            }
        }
        final String[] f = new String(b, StandardCharsets.US_ASCII).split(" ", -1);
        if (f.length != 3 || !f[0].equals(MAGIC)) {
            throw bad(rank, "it is not '" + MAGIC + " CPUS HOST'");
        }
        if (!f[1].matches("[1-9][0-9]{0,4}") || Integer.parseInt(f[1]) > MAX_CPUS) {
            throw bad(rank, "its processor count '" + f[1] + "' is not a number in 1.." + MAX_CPUS);
        }
        if (f[2].isEmpty() || f[2].length() > GpuSharing.MAX_HOST) {
            throw bad(rank, "its host identity is empty or longer than " + GpuSharing.MAX_HOST + " characters");
        }
        return f;
    }

    private static CollException bad(final int rank, final String why) {
        return new CollException(BAD_RECORD + ": rank " + rank + "'s host record is refused: " + why);
    }

    int nranks() {
        return hostOf.length;
    }

    /** The ranks on rank {@code r}'s host, {@code r} included. */
    int localRanks(final int r) {
        int k = 0;
        for (final int h : hostOf) {
            if (h == hostOf[r]) {
                k++;
            }
        }
        return k;
    }

    /** How many hosts the ranks are on. */
    int hosts() {
        return Arrays.stream(hostOf).max().orElse(0) + 1;
    }

    @Override
    public boolean equals(final Object o) {
        return o instanceof HostRanks h && Arrays.equals(hostOf, h.hostOf) && Arrays.equals(cpus, h.cpus)
            && identified == h.identified;
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(hostOf) + Arrays.hashCode(cpus);
    }

    @Override
    public String toString() {
        return "HostRanks" + Arrays.toString(hostOf) + " cpus " + Arrays.toString(cpus);
    }
}
