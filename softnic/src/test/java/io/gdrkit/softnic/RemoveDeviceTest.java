/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.verbs.Device;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A device taken off a driver that others share (the collectives on the in-JVM fabric add their NICs to the caller's
 * driver): its thread ends, its receives flush, its name is free again, and the driver's other devices go on.
 */
class RemoveDeviceTest {
    private static boolean threadAlive(final String name) {
        return Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().equals(name) && t.isAlive());
    }

    @Test
    void aRemovedDeviceStopsFlushesAndFreesItsName() throws Exception {
        final SoftNicContext ctx = new SoftNicContext().progressMode(SoftNicContext.ProgressMode.DEDICATED);
        try (Fixture f = new Fixture(ctx, 1 << 16)) {
            assertTrue(threadAlive("gdrkit-nic-soft1"), "soft1 has its thread");
            f.b.qp.postRecv(new RecvWorkRequest().wrId(11).sge(f.b.mr, 0, 64));
            f.driver.removeDevice(f.b.dev);
            final WorkCompletion wc = f.awaitOne(f.b.rcq, "the removed device's receive to flush");
            assertEquals(11, wc.wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, wc.status, () -> WcStatus.name(wc.status));
            final long deadline = System.nanoTime() + 10_000_000_000L;
            while (threadAlive("gdrkit-nic-soft1") && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertFalse(threadAlive("gdrkit-nic-soft1"), "soft1's thread ended within 10 s");
            assertTrue(threadAlive("gdrkit-nic-soft0"), "soft0 keeps its thread");
            final List<String> names = f.driver.devices().stream().map(Device::name).toList();
            assertEquals(List.of("soft0"), names);
            assertEquals(-2, f.a.dev.port.tryClaim(f.b.dev.lid(), 64), "soft1's LID is unroutable");
            // the name is free again, with a new LID
            final SoftDevice again = f.driver.addDevice("soft1");
            assertNotEquals(f.b.dev.lid(), again.lid());
            final IllegalArgumentException twice = assertThrows(IllegalArgumentException.class,
                () -> f.driver.removeDevice(f.b.dev));
            assertTrue(twice.getMessage().contains("'soft1' is not a device of this driver"), twice.getMessage());
            try (SoftNicDriver other = SoftNicDriver.launch(new SoftNicContext())) {
                final SoftDevice stranger = other.addDevice("stranger");
                final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> f.driver.removeDevice(stranger));
                assertTrue(e.getMessage().contains("'stranger' is not a device of this driver"), e.getMessage());
            }
            f.driver.removeDevice(again);
            assertEquals(List.of("soft0"), f.driver.devices().stream().map(Device::name).toList());
        }
    }
}
