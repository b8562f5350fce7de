/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.doctor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The platform checks judge what they read: memlock against what registration needs, the IOMMU as off, passthrough
 * or translating, quoting only the IOMMU parameters of the command line; a FAIL carries a fix.
 */
class HostProbesTest {
    /** A /proc/self/limits as Linux writes it, with this memlock line. */
    private static Path limits(final Path root, final String soft, final String hard) throws IOException {
        Files.createDirectories(root.resolve("proc/self"));
        Files.writeString(root.resolve("proc/self/limits"), "Limit                     Soft Limit           "
            + "Hard Limit           Units     \nMax open files            1024                 524288               "
            + "files     \nMax locked memory         " + soft + "              " + hard + "              bytes     \n");
        return root;
    }

    @Test
    void memlockIsJudgedAgainstWhatRegistrationNeeds(@TempDir final Path dir) throws IOException {
        final Check small = new HostProbes(limits(dir.resolve("a"), "65536", "65536")).memlock();
        assertEquals(Status.FAIL, small.status(), small.evidence());
        assertEquals("/proc/self/limits: soft limit 65536 bytes < 64 MiB that registering a communicator's host "
            + "buffers needs", small.evidence());
        assertTrue(Hints.of(small).startsWith("raise the locked-memory limit: ulimit -l unlimited"));
        final Check big = new HostProbes(limits(dir.resolve("b"), "8589934592", "unlimited")).memlock();
        assertEquals(Status.PASS, big.status(), big.evidence());
        assertNull(Hints.of(big), "no fix for a pass");
        final Check unl = new HostProbes(limits(dir.resolve("c"), "unlimited", "unlimited")).memlock();
        assertEquals(Status.PASS, unl.status());
        assertEquals("/proc/self/limits: soft limit unlimited bytes", unl.evidence());
        final Check none = new HostProbes(dir.resolve("d")).memlock();
        assertEquals(Status.UNKNOWN, none.status());
        assertEquals("/proc/self/limits unreadable", none.evidence());
    }

    @Test
    void theIommuIsOffPassthroughOrTranslatingAndOnlyItsParametersAreQuoted(@TempDir final Path dir)
        throws IOException {
        final Path off = dir.resolve("off");
        Files.createDirectories(off.resolve("sys/kernel/iommu_groups"));
        Files.createDirectories(off.resolve("proc"));
        Files.writeString(off.resolve("proc/cmdline"), "BOOT_IMAGE=/vmlinuz root=UUID=1234 ro quiet secret=x\n");
        final Check o = new HostProbes(off).iommu();
        assertEquals(Status.PASS, o.status());
        assertEquals("off: no IOMMU groups in /sys/kernel/iommu_groups (no iommu parameter on /proc/cmdline)",
            o.evidence());
        final Path pt = dir.resolve("pt");
        Files.createDirectories(pt.resolve("sys/kernel/iommu_groups/0"));
        Files.createDirectories(pt.resolve("sys/kernel/iommu_groups/1"));
        Files.createDirectories(pt.resolve("proc"));
        Files.writeString(pt.resolve("proc/cmdline"), "BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on iommu=pt "
            + "quiet\n");
        final Check p = new HostProbes(pt).iommu();
        assertEquals(Status.PASS, p.status());
        assertEquals("on, 2 group(s) in /sys/kernel/iommu_groups, passthrough (/proc/cmdline: intel_iommu=on "
            + "iommu=pt)", p.evidence());
        assertFalse(p.evidence().contains("root="), "the rest of the command line stays out");
        Files.writeString(pt.resolve("proc/cmdline"), "BOOT_IMAGE=/vmlinuz intel_iommu=on\n");
        final Check t = new HostProbes(pt).iommu();
        assertEquals(Status.UNKNOWN, t.status());
        assertTrue(t.evidence().startsWith("on, 2 group(s) in /sys/kernel/iommu_groups, translating unless ATS"),
            t.evidence());
    }

    @Test
    void everyFailOfTheHostChecklistThatHasAGeneralFixNamesIt() {
        for (final String name : new String[] {"RDMA devices", "peermem", "DMA-BUF", "mechanism", "CUDA driver",
            "GPUDirect RDMA (116)", "send (NIC reads GPU)", "memlock limit", "GDRCopy /dev/gdrdrv"}) {
            final String hint = Hints.of(new Check("x", name, Status.FAIL, "evidence"));
            assertTrue(hint != null && hint.length() > 20, name + ": " + hint);
        }
        assertTrue(Hints.of(new Check("verbs", "uverbs device files", Status.FAIL, "e")).startsWith("install the "
            + "NIC's driver"), "device files are the driver's, not a port's");
        assertTrue(Hints.of(new Check("verbs", "mlx5_0 port 1", Status.FAIL, "e")).startsWith("bring the port up"));
        assertNull(Hints.of(new Check("x", "peermem", Status.PASS, "evidence")));
        assertNull(Hints.of(new Check("x", "peermem", Status.UNKNOWN, "evidence")));
    }
}
