/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.devices;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class IbvDeviceListTest {
    @Test
    void aMissingLibraryIsSaidPlainly(@TempDir final Path root) {
        final IbvDeviceList.Listing l = IbvDeviceList.list("libibverbs-not-here.so.9", root);
        assertFalse(l.loaded());
        assertTrue(l.devices().isEmpty());
        assertTrue(l.emptyReason().startsWith("libibverbs-not-here.so.9 is not loadable ("), l.emptyReason());
        assertTrue(l.emptyReason().endsWith("/sys/class/infiniband is absent: no RDMA driver is loaded (no HCA, "
            + "or its kernel module, e.g. mlx5_ib, is not loaded; a software one would be rdma_rxe or siw)"),
            l.emptyReason());
    }

    @Test
    void theReasonSaysWhatTheKernelHas(@TempDir final Path root) throws Exception {
        Files.createDirectories(root.resolve("sys/class/infiniband"));
        final IbvDeviceList.Listing empty = IbvDeviceList.list("libibverbs-not-here.so.9", root);
        assertTrue(empty.emptyReason().endsWith("/sys/class/infiniband is empty: the RDMA core is loaded but no "
            + "device driver"), empty.emptyReason());
        Files.createDirectories(root.resolve("sys/class/infiniband/mlx5_1"));
        Files.createDirectories(root.resolve("sys/class/infiniband/mlx5_0"));
        final IbvDeviceList.Listing two = IbvDeviceList.list("libibverbs-not-here.so.9", root);
        assertTrue(two.emptyReason().endsWith("/sys/class/infiniband lists [mlx5_0, mlx5_1]"), two.emptyReason());
    }

    @Test
    void thisHostsListComesFromLibibverbs(@TempDir final Path root) {
        final IbvDeviceList.Listing l = IbvDeviceList.list(IbvDeviceList.LIBRARY, root);
        if (!l.loaded()) {
            assertTrue(l.emptyReason().contains("is not loadable"), l.emptyReason());
        } else if (l.devices().isEmpty()) {
            // this CI machine: rdma-core installed, no RDMA device
            // (libibverbs answers NULL with ENOSYS when the kernel has no verbs subsystem, or 0 devices)
            assertTrue(l.evidence().startsWith("ibv_get_device_list via FFM (libibverbs.so.1): "), l.evidence());
            assertTrue(l.emptyReason().startsWith("libibverbs loaded but lists no device"), l.emptyReason());
            assertTrue(l.emptyReason().contains("/sys/class/infiniband is absent"), l.emptyReason());
        } else {
            l.devices().forEach(d -> assertTrue(d.real() && d.guid().matches("[0-9a-f]{4}(:[0-9a-f]{4}){3}"),
                d.toString()));
        }
    }

    @Test
    void guidsPrintLikeIbvDevinfo() {
        // libibverbs returns the node GUID big-endian: bytes 0c 42 a1 03 00 b4 f2 e0 in memory.
        final long inMemory = java.nio.ByteBuffer.wrap(new byte[] {0x0c, 0x42, (byte) 0xa1, 0x03, 0x00,
            (byte) 0xb4, (byte) 0xf2, (byte) 0xe0}).order(java.nio.ByteOrder.nativeOrder()).getLong();
        assertEquals("0c42:a103:00b4:f2e0", IbvDeviceList.formatGuid(inMemory));
    }
}
