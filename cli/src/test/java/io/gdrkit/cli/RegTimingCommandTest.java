/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

class RegTimingCommandTest {
    @Test
    void printsATableAndJson() throws Exception {
        final Cli t = Cli.run("regtiming", "--max-pages", "4", "--reps", "3");
        assertEquals(0, t.exitCode(), t::toString);
        assertTrue(t.lines().getFirst().startsWith("# software NIC (simulated)"), t::toString);
        assertTrue(t.out().contains("# pinning: software NIC (simulated): ibv_reg_mr keeps a reference"), t::toString);
        assertEquals(2 * 10, t.lines().stream().filter(l -> l.matches("^(NET MR cache|comm cache|software NIC) .*"))
            .count(), t::toString);
        final Cli j = Cli.run("regtiming", "--max-pages", "1", "--reps", "3", "--json", "--gpu", "sim:h200");
        assertEquals(0, j.exitCode(), j::toString);
        final JsonNode root = new ObjectMapper().readTree(j.out());
        assertTrue(root.get("simulated").asBoolean());
        assertEquals(10, root.get("rows").size());
        final JsonNode first = root.get("rows").get(0);
        assertEquals("NET MR cache", first.get("layer").asText());
        assertEquals(3, first.get("samples").asInt());
        assertTrue(first.get("min_ns").asLong() <= first.get("max_ns").asLong(), first.toString());
        assertTrue(first.get("p99_ns").isNull(), "3 samples have no p99 of their own: " + first);
        assertTrue(t.out().contains("# p99 '-': fewer than 100 samples, where it would only repeat the max"),
            t::toString);
        assertTrue(root.get("notes").toString().contains("is simulated"), root.toString());
    }

    @Test
    void badSizesAreUsageErrors() {
        final Cli r = Cli.run("regtiming", "--max-pages", "0");
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(r.err().contains("max pages 0 must be 1 .. 262144 (2^18)"), r::toString);
    }
}
