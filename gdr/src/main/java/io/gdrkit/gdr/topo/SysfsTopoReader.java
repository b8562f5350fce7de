/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Reads the PCIe tree of this host from sysfs ({@code /sys/bus/pci/devices/*}).
 *
 * <ul>
 * <li>NVIDIA GPUs: vendor 0x10de with class 0x0300xx (VGA) or 0x0302xx (3D controller).</li>
 * <li>RDMA NICs: class 0x0207xx (InfiniBand) or 0x0200xx (Ethernet) with an {@code infiniband/} directory, which
 * the kernel creates only for devices with a verbs driver; one NIC node per directory entry (e.g. mlx5_0).
 * An Ethernet device without it is listed as inspected but is not an RDMA NIC.</li>
 * <li>Parents: the device directory's real path, e.g. {@code /sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0}.
 * Like NCCL's sysfs walk, each step goes up two path levels, so that the downstream port and upstream port pair
 * of a PCIe switch become one switch node and root ports disappear; the {@code pciDDDD:BB} root is the host
 * bridge.</li>
 * <li>CPU: the device's {@code numa_node}; -1 (no NUMA information, common in VMs) is taken as node 0 and noted.</li>
 * </ul>
 * Nothing is invented: when no GPU or RDMA NIC is present the scan says so, with the list of what it looked at.
 */
public final class SysfsTopoReader
{
    private static final Pattern BDF = Pattern.compile("[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\.[0-7]");
    private static final Pattern ROOT = Pattern.compile("pci[0-9a-fA-F]{4}:[0-9a-fA-F]{2}");

    private SysfsTopoReader()
    {
    }

    /**
     * @return the scan of this machine's {@code /sys}.
     */
    public static SysfsScan scan()
    {
        return scan(Path.of("/sys"));
    }

    /**
     * @param sysRoot a sysfs root (a fake tree in tests).
     * @return the scan.
     */
    public static SysfsScan scan(final Path sysRoot)
    {
        final Path devicesDir = sysRoot.resolve("bus/pci/devices");
        final List<String> inspected = new ArrayList<>();
        final List<String> findings = new ArrayList<>();
        final TopologyBuilder builder = new TopologyBuilder().source("sysfs " + sysRoot);

        final List<Device> devices = new ArrayList<>();
        if (!Files.isDirectory(devicesDir))
        {
            findings.add(devicesDir + " does not exist or is not a directory: no PCI information");
        }
        else
        {
            try (Stream<Path> entries = Files.list(devicesDir))
            {
                for (final Path entry : entries.sorted().toList())
                {
                    devices.add(readDevice(entry, findings));
                }
            }
            catch (final IOException ex)
            {
                findings.add("could not list " + devicesDir + ": " + ex.getMessage());
            }
        }

        // CPUs for the NUMA nodes of the devices we keep; created in NUMA order.
        final Map<Integer, TopoNode> cpus = new TreeMap<>();
        final Map<String, TopoNode> pciNodes = new HashMap<>();
        int gpus = 0;
        int rdma = 0;
        boolean noNuma = false;
        final List<Device> kept = new ArrayList<>();
        for (final Device d : devices)
        {
            String role;
            if (d.isNvidiaGpu())
            {
                role = "NVIDIA GPU";
                kept.add(d);
            }
            else if (d.isNicClass())
            {
                if (d.ibNames.isEmpty())
                {
                    role = (d.isIbClass() ? "InfiniBand" : "Ethernet") + " NIC without " + d.dir.getFileName() +
                        "/infiniband/ (no verbs driver bound): not an RDMA NIC";
                }
                else
                {
                    role = "RDMA NIC " + String.join(",", d.ibNames);
                    kept.add(d);
                }
            }
            else if (d.classCode >>> 8 == 0x0300 || d.classCode >>> 8 == 0x0302)
            {
                role = "display controller, not NVIDIA: ignored";
            }
            else if (d.classCode >>> 8 == 0x0604)
            {
                role = "PCI bridge";
            }
            else
            {
                role = "ignored";
            }
            inspected.add(d.busId + " class=" + hex(d.classCode, 6) + " vendor=" + hex(d.vendor, 4) +
                " numa_node=" + d.numa + " path=" + d.realPath + " -> " + role);
        }
        for (final Device d : kept)
        {
            noNuma |= d.numa < 0;
            final int numa = Math.max(d.numa, 0);
            cpus.computeIfAbsent(numa, builder::cpu);
        }
        for (final Device d : kept)
        {
            final TopoNode cpu = cpus.get(Math.max(d.numa, 0));
            final TopoNode parent = parentOf(d, cpu, builder, pciNodes);
            final Map<String, String> attrs = new LinkedHashMap<>();
            attrs.put("busid", d.busId);
            attrs.put("class", hex(d.classCode, 6));
            attrs.put("vendor", hex(d.vendor, 4));
            attrs.put("device", hex(d.device, 4));
            attrs.put("numa_node", Integer.toString(d.numa));
            if (d.isNvidiaGpu())
            {
                builder.gpu(d.busId, parent, TopologyBuilder.PCI_BW, attrs);
                gpus++;
            }
            else
            {
                for (final String ib : d.ibNames)
                {
                    builder.nic(ib, parent, TopologyBuilder.PCI_BW, attrs);
                    rdma++;
                }
            }
        }
        if (gpus == 0)
        {
            findings.add("no NVIDIA GPU found: no device with vendor 0x10de and class 0x0300xx/0x0302xx among " +
                devices.size() + " PCI devices");
        }
        if (rdma == 0)
        {
            findings.add("no RDMA NIC found: no 0x0207xx (InfiniBand) or 0x0200xx (Ethernet) device with an " +
                "infiniband/ directory among " + devices.size() + " PCI devices");
        }
        if (noNuma)
        {
            findings.add("numa_node is -1 for some kept devices (no NUMA information); they are placed on CPU 0");
        }
        final TopoSystem system = builder.build();
        return new SysfsScan(system, sysRoot.toString(), List.copyOf(inspected), gpus, rdma, List.copyOf(findings));
    }

    private static TopoNode parentOf(
        final Device d, final TopoNode cpu, final TopologyBuilder builder, final Map<String, TopoNode> pciNodes)
    {
        // Path components from the pciDDDD:BB root down to the device.
        final List<String> parts = new ArrayList<>();
        boolean inTree = false;
        for (final Path p : d.realPath)
        {
            final String s = p.toString();
            if (ROOT.matcher(s).matches())
            {
                inTree = true;
                parts.clear();
            }
            if (inTree)
            {
                parts.add(s);
            }
        }
        if (parts.isEmpty())
        {
            builder.note(d.busId + ": real path " + d.realPath + " has no pciDDDD:BB root; attached to " + cpu);
            return cpu;
        }
        final TopoNode bridge = pciNodes.computeIfAbsent(parts.get(0), id -> builder.hostBridge(id, cpu));
        // Up two levels at a time, as NCCL does, collecting the switch chain from the top down.
        final List<String> chain = new ArrayList<>();
        for (int i = parts.size() - 3; i >= 1; i -= 2)
        {
            if (BDF.matcher(parts.get(i)).matches())
            {
                chain.addFirst(parts.get(i).toLowerCase(java.util.Locale.ROOT));
            }
        }
        TopoNode parent = bridge;
        for (final String busId : chain)
        {
            final TopoNode above = parent;
            parent = pciNodes.computeIfAbsent(busId, id -> builder.pciSwitch(id, above));
        }
        return parent;
    }

    private static String hex(final int value, final int digits)
    {
        return String.format("0x%0" + digits + "x", value);
    }

    private record Device(
        Path dir, String busId, int classCode, int vendor, int device, int numa, Path realPath, List<String> ibNames)
    {
        boolean isNvidiaGpu()
        {
            return vendor == 0x10de && (classCode >>> 8 == 0x0300 || classCode >>> 8 == 0x0302);
        }

        boolean isIbClass()
        {
            return classCode >>> 8 == 0x0207;
        }

        boolean isNicClass()
        {
            return isIbClass() || classCode >>> 8 == 0x0200;
        }
    }

    private static Device readDevice(final Path entry, final List<String> findings)
    {
        final String busId = entry.getFileName().toString().toLowerCase(java.util.Locale.ROOT);
        Path real;
        try
        {
            real = entry.toRealPath();
        }
        catch (final IOException ex)
        {
            findings.add(entry + ": could not resolve real path (" + ex.getMessage() + ")");
            real = entry;
        }
        final List<String> ib = new ArrayList<>();
        final Path ibDir = entry.resolve("infiniband");
        if (Files.isDirectory(ibDir))
        {
            try (Stream<Path> names = Files.list(ibDir))
            {
                names.map(p -> p.getFileName().toString()).sorted().forEach(ib::add);
            }
            catch (final IOException ex)
            {
                findings.add(ibDir + ": " + ex.getMessage());
            }
        }
        return new Device(entry, busId, readHex(entry.resolve("class"), findings),
            readHex(entry.resolve("vendor"), findings), readHex(entry.resolve("device"), findings),
            readInt(entry.resolve("numa_node")), real, ib);
    }

    private static int readHex(final Path file, final List<String> findings)
    {
        try
        {
            final String s = Files.readString(file).trim();
            return Integer.parseInt(s.startsWith("0x") ? s.substring(2) : s, 16);
        }
        catch (final IOException | NumberFormatException ex)
        {
            findings.add(file + ": unreadable (" + ex.getMessage() + ")");
            return -1;
        }
    }

    private static int readInt(final Path file)
    {
        try
        {
            return Integer.parseInt(Files.readString(file).trim());
        }
        catch (final IOException | NumberFormatException ex)
        {
            return -1;
        }
    }
}
