/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.ibverbs.NativeProvider;
import org.junit.jupiter.api.Test;

class DevicesCommandTest {
    /** What libibverbs says on this host decides the expected exit code and text; both branches are checked. */
    @Test
    void listsWhatLibibverbsListsAndSaysWhyWhenEmpty() throws Exception {
        final NativeProvider.Probe host = NativeProvider.probe();
        final Cli r = Cli.run("devices");
        assertTrue(r.lines().getFirst().startsWith("# native provider (libibverbs, FFM): "), r::toString);
        if (host.devices().isEmpty()) {
            assertEquals(Main.EXIT_NO_HARDWARE, r.exitCode(), r::toString);
            assertTrue(r.out().contains("no RDMA device: " + DevicesCommand.emptyReason(host)), r::toString);
            assertTrue(r.out().contains("listed only when asked: --soft N"), r::toString);
            assertFalse(r.out().contains("simulated"), "nothing simulated is listed unasked: " + r);
            if (host.libraryLoaded() && host.evidence().contains("/sys/class/infiniband does not exist")) {
                // this CI machine: rdma-core installed, no RDMA driver
                assertTrue(r.out().contains("libibverbs loaded but lists no device. /sys/class/infiniband does not "
                    + "exist: no RDMA driver is loaded"), r::toString);
            }
        } else {
            assertEquals(0, r.exitCode(), r::toString);
            host.devices().forEach(d -> assertTrue(r.out().contains(d.name() + ": real, node_guid "), r::toString));
        }
        final Cli j = Cli.run("devices", "--json", "--soft", "1");
        assertEquals(0, j.exitCode(), j::toString);
        final JsonNode root = new ObjectMapper().readTree(j.out());
        assertEquals(host.libraryLoaded(), root.get("ibverbs").get("loaded").asBoolean());
        assertEquals(host.devices().size(), root.get("ibverbs").get("devices").size());
        for (final JsonNode d : root.get("ibverbs").get("devices")) {
            assertTrue(d.get("real").asBoolean() && !d.get("simulated").asBoolean(), d.toString());
        }
        assertEquals(host.devices().isEmpty(), !root.get("ibverbs").get("empty_reason").isNull());
        final JsonNode soft = root.get("soft").get(0);
        assertEquals("soft0", soft.get("name").asText());
        assertFalse(soft.get("real").asBoolean());
        assertTrue(soft.get("simulated").asBoolean());
        assertEquals("ACTIVE", soft.get("ports").get(0).get("state").asText());
        assertTrue(soft.get("guid").asText().matches("[0-9a-f]{4}(:[0-9a-f]{4}){3}"), soft.toString());
        assertTrue(root.get("simulated").asBoolean());
    }

    @Test
    void providerPicksOneProvider() throws Exception {
        final NativeProvider.Probe host = NativeProvider.probe();
        final Cli nat = Cli.run("devices", "--provider", "native", "--json");
        assertEquals(host.devices().isEmpty() ? Main.EXIT_NO_HARDWARE : 0, nat.exitCode(), nat::toString);
        final JsonNode n = new ObjectMapper().readTree(nat.out());
        assertEquals(host.devices().size(), n.get("ibverbs").get("devices").size());
        assertEquals(0, n.get("soft").size(), "native lists no software NIC: " + nat);
        assertFalse(n.get("simulated").asBoolean());

        final Cli soft = Cli.run("devices", "--provider", "soft", "--json");
        assertEquals(0, soft.exitCode(), soft::toString);
        final JsonNode s = new ObjectMapper().readTree(soft.out());
        assertTrue(s.get("ibverbs") == null, "soft does not probe libibverbs: " + soft);
        assertEquals(1, s.get("soft").size(), "--soft defaults to 1 under --provider soft");
        assertEquals("soft0", s.get("soft").get(0).get("name").asText());
        assertTrue(s.get("simulated").asBoolean());

        final Cli soft2 = Cli.run("devices", "--provider", "soft", "--soft", "2");
        assertEquals(0, soft2.exitCode(), soft2::toString);
        assertTrue(soft2.out().contains("soft1: software NIC (simulated)"), soft2::toString);
        assertFalse(soft2.out().contains("native provider"), soft2::toString);

        final Cli bad = Cli.run("devices", "--provider", "rxe");
        assertEquals(2, bad.exitCode(), bad::toString);
        assertTrue(bad.err().contains("Invalid value for option '--provider': 'rxe' is not one of"), bad::toString);
        final Cli both = Cli.run("devices", "--provider", "native", "--soft", "1");
        assertEquals(2, both.exitCode(), both::toString);
        assertTrue(both.err().contains("--provider native lists none"), both::toString);
    }

    @Test
    void badSoftCountIsAUsageError() {
        final Cli r = Cli.run("devices", "--soft", "65");
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(r.err().contains("--soft 65 must be 0 .. 64"), r::toString);
    }
}
