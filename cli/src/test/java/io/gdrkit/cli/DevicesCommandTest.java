/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.gdr.devices.IbvDeviceList;
import org.junit.jupiter.api.Test;

class DevicesCommandTest {
    /** What libibverbs says on this host decides the expected exit code and text; both branches are checked. */
    @Test
    void listsWhatLibibverbsListsAndSaysWhyWhenEmpty() throws Exception {
        final IbvDeviceList.Listing host = IbvDeviceList.list();
        final Cli r = Cli.run("devices");
        if (host.devices().isEmpty()) {
            assertEquals(Main.EXIT_FAILURE, r.exitCode(), r::toString);
            assertTrue(r.out().contains("no RDMA device: " + host.emptyReason()), r::toString);
            assertTrue(r.out().contains("listed only when asked: --soft N"), r::toString);
            assertFalse(r.out().contains("simulated"), "nothing simulated is listed unasked: " + r);
        } else {
            assertEquals(0, r.exitCode(), r::toString);
            for (final IbvDeviceList.Device d : host.devices()) {
                assertTrue(r.out().contains(d.name() + ": real, node_guid " + d.guid()), r::toString);
            }
        }
        final Cli j = Cli.run("devices", "--json", "--soft", "1");
        assertEquals(0, j.exitCode(), j::toString);
        final JsonNode root = new ObjectMapper().readTree(j.out());
        assertEquals(host.loaded(), root.get("ibverbs").get("loaded").asBoolean());
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
    void badSoftCountIsAUsageError() {
        final Cli r = Cli.run("devices", "--soft", "65");
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(r.err().contains("--soft 65 must be 0 .. 64"), r::toString);
    }
}
