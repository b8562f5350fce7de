/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TopoSysfsTest
{
    /**
     * A fake sysfs: socket 0 has a root port, a PCIe switch (upstream 01:00.0, downstream 02:00.0 and 02:01.0) with
     * an H100 and a ConnectX-7; socket 1 has an H100 on a root port, an Ethernet NIC without a verbs driver and an
     * ASPEED VGA controller.
     */
    @Test
    void fakeTreeGivesSwitchesHostBridgesAndNumaNodes(@TempDir final Path sys) throws IOException
    {
        device(sys, "pci0000:00/0000:00:01.0", "0x060400", "0x8086", 0, null);
        device(sys, "pci0000:00/0000:00:01.0/0000:01:00.0", "0x060400", "0x1000", 0, null);
        device(sys, "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0", "0x060400", "0x1000", 0, null);
        device(sys, "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0", "0x060400", "0x1000", 0, null);
        device(sys, "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0", "0x030200", "0x10de", 0,
            null);
        device(sys, "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0", "0x020700", "0x15b3", 0,
            "mlx5_0");
        device(sys, "pci0000:80/0000:80:01.0", "0x060400", "0x8086", 1, null);
        device(sys, "pci0000:80/0000:80:01.0/0000:81:00.0", "0x030200", "0x10de", 1, null);
        device(sys, "pci0000:80/0000:80:02.0", "0x060400", "0x8086", 1, null);
        device(sys, "pci0000:80/0000:80:02.0/0000:82:00.0", "0x020000", "0x8086", 1, null);
        device(sys, "pci0000:80/0000:80:03.0", "0x060400", "0x8086", 1, null);
        device(sys, "pci0000:80/0000:80:03.0/0000:83:00.0", "0x030000", "0x1a03", 1, null);

        final SysfsScan scan = SysfsTopoReader.scan(sys);
        System.out.println(scan.report());
        assertEquals(2, scan.gpuCount());
        assertEquals(1, scan.rdmaCount());
        assertEquals(12, scan.inspected().size());
        assertTrue(scan.findings().isEmpty(), scan.findings().toString());
        final TopoSystem system = scan.system();
        assertEquals(List.of("0000:03:00.0", "0000:81:00.0"), system.gpus().stream().map(TopoNode::id).toList());
        assertEquals("mlx5_0", system.nics().getFirst().id());
        assertEquals("0000:04:00.0", system.nics().getFirst().attributes().get("busid"));
        assertEquals(2, system.cpus().size());
        assertEquals(2, system.nodes(NodeType.HOST_BRIDGE).size());
        // The downstream/upstream pair is one switch node (01:00.0), as NCCL's two-levels-up walk makes it.
        assertEquals(List.of("0000:01:00.0"), system.nodes(NodeType.PCI).stream().map(TopoNode::id).toList());

        final TopoPaths paths = PathComputer.compute(system);
        assertEquals(PathType.PIX, paths.gpuToNic(0, 0).type());
        assertEquals(PathType.SYS, paths.gpuToNic(1, 0).type());
        assertEquals(PathType.SYS, paths.gpuToGpu(0, 1).type());
        assertTrue(line(scan, "0000:82:00.0").contains("Ethernet NIC without 0000:82:00.0/infiniband/"),
            line(scan, "0000:82:00.0"));
        assertTrue(line(scan, "0000:83:00.0").contains("display controller, not NVIDIA"));
        assertTrue(line(scan, "0000:04:00.0").contains("RDMA NIC mlx5_0"));
        assertTrue(line(scan, "0000:81:00.0").contains("numa_node=1"));
    }

    @Test
    void roceNicAndMissingNumaAreReported(@TempDir final Path sys) throws IOException
    {
        device(sys, "pci0000:00/0000:00:02.0", "0x060400", "0x8086", -1, null);
        device(sys, "pci0000:00/0000:00:02.0/0000:05:00.0", "0x020000", "0x15b3", -1, "rocep5s0");
        device(sys, "pci0000:00/0000:00:03.0", "0x060400", "0x8086", -1, null);
        device(sys, "pci0000:00/0000:00:03.0/0000:06:00.0", "0x030200", "0x10de", -1, null);
        final SysfsScan scan = SysfsTopoReader.scan(sys);
        assertEquals(1, scan.rdmaCount(), "an Ethernet device with infiniband/ is a RoCE RDMA NIC");
        assertEquals(1, scan.gpuCount());
        assertTrue(scan.findings().getFirst().contains("numa_node is -1"), scan.findings().toString());
        assertEquals(PathType.PHB, PathComputer.compute(scan.system()).gpuToNic(0, 0).type());
    }

    @Test
    void missingSysfsIsSaidNotInvented(@TempDir final Path sys)
    {
        final SysfsScan scan = SysfsTopoReader.scan(sys.resolve("nothing"));
        assertEquals(0, scan.gpuCount());
        assertEquals(0, scan.rdmaCount());
        assertTrue(scan.findings().getFirst().contains("does not exist"), scan.findings().toString());
        assertTrue(scan.system().nodes().isEmpty());
    }

    /**
     * This machine, for real. On the CI host there is no GPU and no RDMA NIC, and the scan must say so; on a GPU
     * host the counts must match an independent count of the same sysfs files.
     */
    @Test
    void realSysfsIsHonest() throws IOException
    {
        final SysfsScan scan = SysfsTopoReader.scan();
        System.out.println(scan.report());
        final Path devices = Path.of("/sys/bus/pci/devices");
        int entries = 0;
        int nvidia = 0;
        int rdma = 0;
        if (Files.isDirectory(devices))
        {
            try (Stream<Path> list = Files.list(devices))
            {
                for (final Path d : list.toList())
                {
                    entries++;
                    final String cls = Files.readString(d.resolve("class")).trim();
                    final String vendor = Files.readString(d.resolve("vendor")).trim();
                    if (vendor.equals("0x10de") && (cls.startsWith("0x0300") || cls.startsWith("0x0302")))
                    {
                        nvidia++;
                    }
                    if ((cls.startsWith("0x0207") || cls.startsWith("0x0200")) &&
                        Files.isDirectory(d.resolve("infiniband")))
                    {
                        try (Stream<Path> ib = Files.list(d.resolve("infiniband")))
                        {
                            rdma += (int)ib.count();
                        }
                    }
                }
            }
        }
        assertEquals(entries, scan.inspected().size(), "every PCI device is listed as inspected");
        assertEquals(nvidia, scan.gpuCount());
        assertEquals(rdma, scan.rdmaCount());
        assertEquals(nvidia, scan.system().gpus().size());
        assertEquals(rdma, scan.system().nics().size());
        if (nvidia == 0)
        {
            assertTrue(scan.findings().stream().anyMatch(f -> f.startsWith("no NVIDIA GPU found")), scan.report());
        }
        if (rdma == 0)
        {
            assertTrue(scan.findings().stream().anyMatch(f -> f.startsWith("no RDMA NIC found")), scan.report());
        }
    }

    private static String line(final SysfsScan scan, final String busId)
    {
        return scan.inspected().stream().filter(l -> l.startsWith(busId)).findFirst().orElseThrow();
    }

    // Creates devices/<path> with class, vendor, device and numa_node files, an optional infiniband/<name>, and
    // the bus/pci/devices/<bdf> symlink to it, as the kernel lays them out.
    private static void device(
        final Path sys, final String path, final String cls, final String vendor, final int numa, final String ib)
        throws IOException
    {
        final Path dir = sys.resolve("devices").resolve(path);
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("class"), cls + "\n");
        Files.writeString(dir.resolve("vendor"), vendor + "\n");
        Files.writeString(dir.resolve("device"), "0x0001\n");
        Files.writeString(dir.resolve("numa_node"), numa + "\n");
        if (ib != null)
        {
            Files.createDirectories(dir.resolve("infiniband").resolve(ib));
        }
        final Path bus = sys.resolve("bus/pci/devices");
        Files.createDirectories(bus);
        final Path link = bus.resolve(dir.getFileName().toString());
        Files.createSymbolicLink(link, link.getParent().relativize(dir));
    }
}
