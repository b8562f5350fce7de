/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.MpsState;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Which rank processes share this rank's GPU, and whether MPS is on for them. Rank processes on one GPU without
 * the CUDA Multi-Process Service each have their own context, and the GPU time-slices between contexts: a ring step
 * that needs GPU work from both ranks waits for a context switch, which makes a small allreduce several times slower
 * than with MPS or with ranks as threads of one process (the measurement is in docs/TRANSPORT.md, "Several rank
 * processes on one GPU: MPS").
 * Ranks that are threads of one process share that process's one (primary) context: no time-slicing between them.
 *
 * <p>Every rank sends one record through the bootstrap's allGather ({@link #record}), and each rank works out its
 * own view from all of them ({@link #of}). Records are untrusted: {@link #parse} bounds and checks every field.
 * Wire format, printable ASCII, fields separated by one space:
 * <pre>
 *   gpu1 HOST BUS PID PROC MPS
 *   HOST  host identity: boot:&lt;kernel boot id&gt; (one kernel, one set of GPUs), else name:&lt;hostname&gt;; 1..96
 *   BUS   the GPU's PCI bus id (cuDeviceGetPCIBusId: hex digits, ':' and '.'; 1..32), or '-' (simulated GPU)
 *   PID   the rank process's id, 1..10 decimal digits, > 0 (shown to the user)
 *   PROC  16 lowercase hex digits, random per process: tells processes apart where PID namespaces repeat pids
 *   MPS   attribute 133 as read: 1, 0, unknown; n/a exactly when BUS is '-'
 * </pre>
 *
 * @param verdict   what the sharing means for this rank
 * @param busId     this rank's GPU's PCI bus id (null on a simulated GPU)
 * @param processes rank processes on this GPU of this host, this rank's included (0 when not applicable)
 * @param ranks     the ranks on this GPU of this host, threads and processes (empty when not applicable)
 * @param pids      the process ids of those ranks, in rank order
 * @param mps       MPS over the processes on this GPU: OFF if any says 0, else UNKNOWN if any is unknown, else ON
 * @param mpsByRank attribute 133 of each rank in {@code ranks} as read there (1, 0, unknown)
 * @param evidence  this rank's own attribute 133 call and its answer, and how the host was identified
 */
public record GpuSharing(Verdict verdict, String busId, int processes, List<Integer> ranks, List<Long> pids,
                         MpsState mps, List<String> mpsByRank, String evidence) {
    /** The error a malformed record from a peer gets. */
    public static final String BAD_RECORD = "BAD_GPU_PLACEMENT_RECORD";
    /** The longest record accepted. */
    public static final int MAX_RECORD = 256;
    static final String MAGIC = "gpu1";
    /** The longest host identity a record carries ({@link #hostIdentity} stays within it). */
    static final int MAX_HOST = 96;
    private static final int MAX_BUS = 32;
    /** This process's identity among the processes of its host (see PROC above). */
    private static final String PROC = HexFormat.of().toHexDigits(new SecureRandom().nextLong());

    /** Copies the lists, so that the record cannot change. */
    public GpuSharing {
        ranks = List.copyOf(ranks);
        pids = List.copyOf(pids);
        mpsByRank = List.copyOf(mpsByRank);
    }

    /** What sharing the GPU means for this rank. */
    public enum Verdict {
        /** The only rank on this GPU. */
        ALONE("alone"),
        /** Several ranks, all threads of one process: one CUDA context, nothing to time-slice between them. */
        ONE_CONTEXT("one-context"),
        /** Several rank processes, all with MPS on: their work runs in the MPS server's one context. */
        MPS("mps"),
        /** Several rank processes, MPS off for at least one: the GPU time-slices between their contexts. */
        TIME_SLICED("time-sliced"),
        /** Several rank processes, and whether MPS is on is not known (attribute 133 unanswered), or the host. */
        UNKNOWN("unknown"),
        /** A simulated GPU: each rank has its own, and there is no CUDA context. */
        NOT_APPLICABLE("not-applicable");

        private final String label;

        Verdict(final String label) {
            this.label = label;
        }

        /** {@return the lower-case name the output uses} */
        public String label() {
            return label;
        }
    }

    /** One rank's record, checked. */
    record Entry(String host, String bus, long pid, String proc, String mps) {
        boolean realGpu() {
            return !bus.equals("-");
        }
    }

    /**
     * This process's record for {@code gpu}: the host identity, the GPU's bus id and attribute 133 (or '-' and
     * n/a for a simulated GPU), the process id and its random process identity.
     *
     * @param gpu this rank's GPU
     * @return the record to pass to every rank (by allGather)
     */
    public static byte[] record(final GpuDevice gpu) {
        return record(hostIdentity(), gpu.pciBusId(), ProcessHandle.current().pid(), PROC,
            gpu.attributes().mpsEnabled());
    }

    static byte[] record(final String host, final String bus, final long pid, final String proc, final MpsState mps) {
        final boolean real = bus != null && mps != MpsState.NOT_APPLICABLE;
        final String s = MAGIC + " " + host + " " + (real ? bus : "-") + " " + pid + " " + proc + " "
            + (real ? mps.attributeText() : "n/a");
        final byte[] b = s.getBytes(StandardCharsets.US_ASCII);
        // what this process sends must pass its peers' checks: a record of its own that does not is a bug here
        parse(b, -1);
        return b;
    }

    /**
     * This host's identity: the kernel's boot id (the same for every process and container under one kernel, so
     * for one set of GPUs; random per boot, so different on other hosts), else {@code name:} and the host name,
     * else {@code unknown}. Only printable ASCII without spaces, at most 96 characters.
     */
    static String hostIdentity() {
        try {
            final String id = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim();
            if (!id.isEmpty()) {
                return clean("boot:" + id);
            }
        } catch (final java.io.IOException | RuntimeException e) {
            // not Linux, or /proc not mounted: the host name is the next best identity
        }
        final String name = io.gdrkit.core.host.HostName.get(); // the kernel's name: no resolver wait
        return name.startsWith("unknown") ? "unknown" : clean("name:" + name);
    }

    private static String clean(final String s) {
        final StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length() && b.length() < MAX_HOST; i++) {
            final char c = s.charAt(i);
            b.append(c > ' ' && c < 127 ? c : '_');
        }
        return b.toString();
    }

    /**
     * Checks rank {@code rank}'s record (untrusted).
     *
     * @throws CollException named {@value #BAD_RECORD}, saying what is wrong
     */
    static Entry parse(final byte[] b, final int rank) {
        if (b == null || b.length == 0 || b.length > MAX_RECORD) {
            throw bad(rank, b, "its length " + (b == null ? 0 : b.length) + " is outside 1.." + MAX_RECORD);
        }
        for (final byte c : b) {
            if (c < 0x20 || c > 0x7e) {
                throw bad(rank, b, "it holds a byte that is not printable ASCII (0x"
                    + HexFormat.of().toHexDigits(c) + ")");
            }
        }
        final String[] f = new String(b, StandardCharsets.US_ASCII).split(" ", -1);
        if (f.length != 6) {
            throw bad(rank, b, "it has " + f.length + " space-separated fields, not 6");
        }
        if (!f[0].equals(MAGIC)) {
            throw bad(rank, b, "it does not start with '" + MAGIC + "' (another version, or not such a record)");
        }
        final String host = f[1];
        if (host.isEmpty() || host.length() > MAX_HOST) {
            throw bad(rank, b, "its host identity has " + host.length() + " characters, not 1.." + MAX_HOST);
        }
        final String bus = f[2];
        if (!bus.equals("-") && (bus.isEmpty() || bus.length() > MAX_BUS || !bus.chars().allMatch(c
            -> Character.digit(c, 16) >= 0 || c == ':' || c == '.'))) {
            throw bad(rank, b, "its GPU bus id is neither '-' nor 1.." + MAX_BUS + " hex digits, ':' and '.'");
        }
        final String pidText = f[3];
        if (pidText.isEmpty() || pidText.length() > 10 || !pidText.chars().allMatch(c -> c >= '0' && c <= '9')
            || Long.parseLong(pidText) <= 0) {
            throw bad(rank, b, "its process id is not 1..10 decimal digits above 0");
        }
        final String proc = f[4];
        if (proc.length() != 16 || !proc.chars().allMatch(c -> (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            throw bad(rank, b, "its process identity is not 16 lowercase hex digits");
        }
        final String mps = f[5];
        if (!List.of("1", "0", "unknown", "n/a").contains(mps)) {
            throw bad(rank, b, "its MPS value is not 1, 0, unknown or n/a");
        }
        if (bus.equals("-") != mps.equals("n/a")) {
            throw bad(rank, b, "bus id '-' (no CUDA GPU) goes with MPS n/a and only with it; it has bus "
                + (bus.equals("-") ? "'-'" : "id") + " and MPS " + mps);
        }
        return new Entry(host, bus, Long.parseLong(pidText), proc, mps);
    }

    private static CollException bad(final int rank, final byte[] b, final String why) {
        return new CollException(BAD_RECORD + ": " + (rank < 0 ? "this process built" : "rank " + rank + " sent")
            + " a GPU placement record that cannot be used: " + why + " (" + printable(b) + ")");
    }

    /** At most 48 characters of untrusted bytes, anything unprintable as \xNN. */
    private static String printable(final byte[] b) {
        if (b == null) {
            return "none";
        }
        final StringBuilder s = new StringBuilder("'");
        for (int i = 0; i < Math.min(b.length, 48); i++) {
            final int c = b[i] & 0xff;
            s.append(c >= 0x20 && c < 0x7f ? String.valueOf((char) c) : String.format("\\x%02x", c));
        }
        return s.append(b.length > 48 ? "'... " + b.length + " bytes" : "'").toString();
    }

    /**
     * Rank {@code rank}'s view from every rank's record ({@code all}, indexed by rank, as the allGather returns
     * them); {@code ownEvidence} is this rank's attribute 133 evidence.
     *
     * @param rank        this rank
     * @param all         every rank's record, indexed by rank
     * @param ownEvidence this rank's attribute 133 call and its answer
     * @return this rank's view of who shares its GPU
     * @throws CollException named {@value #BAD_RECORD} for any malformed record (every rank fails alike, as every
     *                       rank checks every record)
     */
    public static GpuSharing of(final int rank, final byte[][] all, final String ownEvidence) {
        final List<Entry> es = new ArrayList<>(all.length);
        for (int p = 0; p < all.length; p++) {
            es.add(parse(all[p], p));
        }
        if (rank < 0 || rank >= es.size()) {
            throw new CollException(BAD_RECORD + ": " + es.size() + " GPU placement records gathered, none for rank "
                + rank);
        }
        final Entry me = es.get(rank);
        if (!me.realGpu()) {
            return new GpuSharing(Verdict.NOT_APPLICABLE, null, 0, List.of(), List.of(), MpsState.NOT_APPLICABLE,
                List.of(), "simulated GPU: each rank opens its own, and there is no CUDA context to share or "
                + "time-slice; " + ownEvidence);
        }
        final List<Integer> ranks = new ArrayList<>();
        final List<Long> pids = new ArrayList<>();
        final List<String> mpsByRank = new ArrayList<>();
        final Set<String> procs = new LinkedHashSet<>();
        boolean off = false;
        boolean unknown = false;
        for (int p = 0; p < es.size(); p++) {
            final Entry e = es.get(p);
            if (e.host().equals(me.host()) && e.bus().equals(me.bus())) {
                ranks.add(p);
                pids.add(e.pid());
                mpsByRank.add(e.mps());
                procs.add(e.proc() + "/" + e.pid());
                off |= e.mps().equals("0");
                unknown |= e.mps().equals("unknown");
            }
        }
        final MpsState mps = off ? MpsState.OFF : unknown ? MpsState.UNKNOWN : MpsState.ON;
        final int processes = procs.size();
        final boolean hostKnown = !me.host().equals("unknown");
        final Verdict v = ranks.size() == 1 ? Verdict.ALONE : processes == 1 ? Verdict.ONE_CONTEXT
            : !hostKnown ? Verdict.UNKNOWN : mps == MpsState.ON ? Verdict.MPS : mps == MpsState.OFF
            ? Verdict.TIME_SLICED : Verdict.UNKNOWN;
        return new GpuSharing(v, me.bus(), processes, ranks, pids, mps, mpsByRank, ownEvidence + "; host "
            + (hostKnown ? "identified by " + (me.host().startsWith("boot:") ? "kernel boot id" : "host name")
            : "identity unknown (no boot id, no host name): ranks elsewhere cannot be told apart"));
    }

    /**
     * {@return JSON's {@code gpu_shared_by}: the number of rank processes on this GPU, or null when not applicable}
     */
    public Integer sharedBy() {
        return verdict == Verdict.NOT_APPLICABLE ? null : processes;
    }

    /** {@return one line for the text output: who is on this GPU and what that means} */
    public String summary() {
        final String who = "rank" + (ranks.size() == 1 ? " " : "s ") + join(ranks);
        return switch (verdict) {
            case NOT_APPLICABLE -> "not applicable: " + evidence;
            case ALONE -> who + " alone on GPU " + busId + " (pid " + pids.get(0) + "); MPS (attribute 133) "
                + mpsByRank.get(0);
            case ONE_CONTEXT -> who + " are threads of one process (pid " + pids.get(0) + ") on GPU " + busId
                + ": they share its one CUDA context, so the GPU does not time-slice between them (MPS: not needed "
                + "within a process; attribute 133 " + mpsByRank.get(0) + ")";
            case MPS -> processes + " rank processes (" + who + ", pids " + join(pids) + ") share GPU " + busId
                + " through MPS (attribute 133 " + perRank() + ")";
            case TIME_SLICED -> processes + " rank processes (" + who + ", pids " + join(pids) + ") share GPU "
                + busId + " without MPS (attribute 133 " + perRank() + "): the GPU time-slices between their "
                + "contexts";
            case UNKNOWN -> processes + " rank processes (" + who + ", pids " + join(pids) + ") share GPU " + busId
                + "; whether MPS is on is unknown (attribute 133 " + perRank() + "; " + evidence + ")";
        };
    }

    /**
     * The advice line when rank processes share the GPU and MPS is not known to be on (null otherwise): what was
     * seen, what it costs, and what to do.
     *
     * @return the advice line, or null
     */
    public String note() {
        if (verdict != Verdict.TIME_SLICED && verdict != Verdict.UNKNOWN) {
            return null;
        }
        return processes + " rank processes share GPU " + busId + " (ranks " + join(ranks) + ") and MPS is "
            + (verdict == Verdict.TIME_SLICED ? "off" : "not known to be on") + " (attribute 133 " + perRank()
            + "): without MPS the GPU time-slices between their contexts and every step waits for GPU work of "
            + "each (on an H200: 0.7-1.2 ms per allreduce of 8 B to 32 KiB, against 0.10-0.13 ms with MPS in one run; "
            + "docs/TRANSPORT.md, GPU buffers). Start MPS (nvidia-cuda-mps-control -d) before the run, or give each rank its own GPU "
            + "(--gpu cuda:rank).";
    }

    private String perRank() {
        final List<String> l = new ArrayList<>();
        for (int i = 0; i < ranks.size(); i++) {
            l.add("rank " + ranks.get(i) + ": " + mpsByRank.get(i));
        }
        return String.join(", ", l);
    }

    private static String join(final List<?> l) {
        return l.stream().map(String::valueOf).collect(Collectors.joining(","));
    }
}
