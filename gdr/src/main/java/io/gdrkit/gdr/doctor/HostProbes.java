/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.doctor;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The host's files the doctor reads, each probe returning a {@link Check} that names what it looked at. Every path
 * is resolved under {@code root} ("/" on a real host, a fake tree in tests). Nothing is invented: a probe that finds
 * nothing says so and names the path.
 */
public final class HostProbes {
    private static final String[] PEERMEM_PATHS = {"sys/kernel/mm/memory_peers/nv_mem/version",
        "sys/kernel/mm/memory_peers/nv_mem_nc/version", "sys/module/nvidia_peermem"};

    private final Path root;

    public HostProbes(final Path root) {
        this.root = root;
    }

    public Path root() {
        return root;
    }

    /** The sorted names in {@code root/dir}; empty when absent or unreadable. */
    public List<String> list(final String dir) {
        final Path p = root.resolve(dir);
        if (!Files.isDirectory(p)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(p)) {
            return s.map(x -> x.getFileName().toString()).sorted().toList();
        } catch (final IOException e) {
            return List.of();
        }
    }

    public boolean exists(final String path) {
        return Files.exists(root.resolve(path));
    }

    /** RDMA devices in /sys/class/infiniband. */
    public Check rdmaDevices() {
        final List<String> ib = list("sys/class/infiniband");
        return new Check("verbs", "RDMA devices", ib.isEmpty() ? Status.FAIL : Status.PASS, ib.isEmpty()
            ? "none: /sys/class/infiniband is " + (Files.isDirectory(root.resolve("sys/class/infiniband")) ? "empty"
            : "absent") : "/sys/class/infiniband: " + ib);
    }

    /** uverbs character devices in /dev/infiniband. */
    public Check uverbs() {
        final List<String> uverbs = list("dev/infiniband");
        return new Check("verbs", "uverbs device files", uverbs.stream().anyMatch(s -> s.startsWith("uverbs"))
            ? Status.PASS : Status.FAIL, "/dev/infiniband: " + (uverbs.isEmpty() ? "absent or empty" : uverbs));
    }

    /** nv_peer_mem / nvidia_peermem, as NCCL's ncclIbGdrSupport looks for it. */
    public Check peermem() {
        final List<String> found = new ArrayList<>();
        for (final String p : PEERMEM_PATHS) {
            if (exists(p)) {
                found.add("/" + p);
            }
        }
        return new Check("registration", "peermem", found.isEmpty() ? Status.FAIL : Status.PASS, found.isEmpty()
            ? "absent: none of /" + String.join(", /", PEERMEM_PATHS) : "present: " + found);
    }

    /** GDRCopy's kernel device. */
    public Check gdrdrv() {
        final boolean present = exists("dev/gdrdrv");
        return new Check("registration", "GDRCopy /dev/gdrdrv", present ? Status.PASS : Status.FAIL,
            present ? "present" : "/dev/gdrdrv absent");
    }

    /** GDRCopy's user library, asked of the dynamic loader. */
    public static Check gdrapi() {
        final String name = "libgdrapi.so.2";
        try {
            java.lang.foreign.SymbolLookup.libraryLookup(name, java.lang.foreign.Arena.global());
            return new Check("registration", "GDRCopy libgdrapi", Status.PASS, "loaded " + name);
        } catch (final RuntimeException e) {
            return new Check("registration", "GDRCopy libgdrapi", Status.FAIL, name + " not loadable ("
                + e.getMessage() + ")");
        }
    }

    /**
     * The IOMMU: off when the kernel made no IOMMU groups (peer-to-peer DMA is not translated: what GPUDirect RDMA
     * wants); on, in passthrough when the command line says {@code iommu=pt}; on and translating otherwise, which
     * NVIDIA's GPUDirect RDMA guide advises against (or ATS on the devices). Only the IOMMU parameters of the
     * command line are quoted.
     */
    public Check iommu() {
        final List<String> groups = list("sys/kernel/iommu_groups");
        String cmdline;
        try {
            cmdline = Files.readString(root.resolve("proc/cmdline")).trim();
        } catch (final IOException e) {
            cmdline = null;
        }
        final List<String> params = new ArrayList<>();
        if (cmdline != null) {
            for (final String p : cmdline.split("\\s+")) {
                if (p.contains("iommu")) {
                    params.add(p);
                }
            }
        }
        final String quoted = cmdline == null ? "/proc/cmdline unreadable" : params.isEmpty()
            ? "no iommu parameter on /proc/cmdline" : "/proc/cmdline: " + String.join(" ", params);
        if (groups.isEmpty()) {
            return new Check("platform", "IOMMU", Status.PASS, "off: no IOMMU groups in /sys/kernel/iommu_groups ("
                + quoted + ")");
        }
        final boolean pt = params.contains("iommu=pt");
        return new Check("platform", "IOMMU", pt ? Status.PASS : Status.UNKNOWN, "on, " + groups.size()
            + " group(s) in /sys/kernel/iommu_groups, " + (pt ? "passthrough" : "translating unless ATS is on for "
            + "the GPU and the NIC (not probed): NVIDIA advises iommu=pt or the IOMMU off for GPUDirect RDMA") + " ("
            + quoted + ")");
    }

    /** The ACS control register of every PCIe bridge whose extended config space is readable. */
    public Check acs() {
        final List<String> bridges = new ArrayList<>();
        for (final String dev : list("sys/bus/pci/devices")) {
            final Path d = root.resolve("sys/bus/pci/devices").resolve(dev);
            try {
                if (!Files.readString(d.resolve("class")).trim().startsWith("0x0604")) {
                    continue;
                }
                bridges.add(dev + ": " + acsControl(Files.readAllBytes(d.resolve("config"))));
            } catch (final IOException e) {
                bridges.add(dev + ": config unreadable");
            }
        }
        return new Check("platform", "ACS on PCIe bridges", Status.UNKNOWN, bridges.isEmpty()
            ? "no PCIe bridges (class 0x0604) in /sys/bus/pci/devices" : String.join("; ", bridges));
    }

    /** Walks the PCIe extended capabilities for ACS (ID 0x000D) and decodes its control register. */
    public static String acsControl(final byte[] cfg) {
        if (cfg.length < 0x104) {
            return "extended config space not readable (" + cfg.length + " bytes; needs root)";
        }
        final MemorySegment c = MemorySegment.ofArray(cfg);
        int off = 0x100;
        for (int guard = 0; off >= 0x100 && off + 8 <= cfg.length && guard < 64; guard++) {
            final int header = c.get(ValueLayout.JAVA_INT_UNALIGNED, off);
            if (header == 0 || header == -1) {
                break;
            }
            if ((header & 0xFFFF) == 0x000D) {
                final int ctrl = c.get(ValueLayout.JAVA_SHORT_UNALIGNED, off + 6) & 0xFFFF;
                return "ACS control 0x" + Integer.toHexString(ctrl) + ((ctrl & 0x0C) != 0
                    ? " (request/completion redirect ON: P2P goes through the root complex)" : " (no redirect)");
            }
            off = header >>> 20;
        }
        return "no ACS capability";
    }

    /**
     * The locked memory a process may pin: registering host memory with a real NIC pins it, and NCCL registers its
     * staging buffers (NCCL_BUFFSIZE, 4 MiB, per channel and peer, both ways) and its rings; a limit below
     * {@link #MEMLOCK_NEEDED} fails registrations of an ordinary communicator.
     */
    public Check memlock() {
        final String line;
        try {
            String found = null;
            for (final String l : Files.readAllLines(root.resolve("proc/self/limits"))) {
                if (l.startsWith("Max locked memory")) {
                    found = l.replaceAll("\\s+", " ").trim();
                    break;
                }
            }
            line = found;
        } catch (final IOException e) {
            return new Check("platform", "memlock limit", Status.UNKNOWN, "/proc/self/limits unreadable");
        }
        if (line == null) {
            return new Check("platform", "memlock limit", Status.UNKNOWN, "/proc/self/limits has no 'Max locked "
                + "memory' line");
        }
        final String[] f = line.substring("Max locked memory".length()).trim().split(" ");
        final String soft = f.length > 0 ? f[0] : "";
        final String ev = "/proc/self/limits: soft limit " + soft + (f.length > 2 ? " " + f[2] : "");
        if (soft.equals("unlimited")) {
            return new Check("platform", "memlock limit", Status.PASS, ev);
        }
        final long bytes;
        try {
            bytes = Long.parseLong(soft);
        } catch (final NumberFormatException e) {
            return new Check("platform", "memlock limit", Status.UNKNOWN, ev + " (not a number)");
        }
        final boolean enough = bytes >= MEMLOCK_NEEDED;
        return new Check("platform", "memlock limit", enough ? Status.PASS : Status.FAIL, ev + (enough ? " >= "
            : " < ") + MEMLOCK_NEEDED / (1 << 20) + " MiB that registering a communicator's host buffers needs");
    }

    /** The locked memory below which the memlock check fails: 64 MiB (16 buffers of NCCL's default 4 MiB). */
    public static final long MEMLOCK_NEEDED = 64L << 20;

    /** The device nodes a container was given. */
    public Check containerDevices() {
        final List<String> nvidia = list("dev").stream().filter(s -> s.startsWith("nvidia")).toList();
        final boolean container = exists(".dockerenv") || exists("run/.containerenv");
        final List<String> ib = list("dev/infiniband");
        return new Check("platform", "container devices", Status.UNKNOWN, (container ? "in a container; " : "")
            + "/dev/nvidia*: " + (nvidia.isEmpty() ? "none" : nvidia) + "; /dev/infiniband: "
            + (ib.isEmpty() ? "none" : ib));
    }
}
