/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The layouts and constants {@link Pmix} uses, against the installed PMIx headers (compiled with gcc); and the
 * fallback when libpmix cannot be loaded. Skips, saying why, without headers or gcc.
 */
class PmixAbiTest {
    static Path headers() {
        for (final String d : List.of("/usr/lib/x86_64-linux-gnu/pmix2/include", "/usr/lib/aarch64-linux-gnu/pmix2/include",
            "/usr/include", "/usr/include/pmix", "/usr/local/include")) {
            if (Files.isRegularFile(Path.of(d, "pmix.h"))) {
                return Path.of(d);
            }
        }
        return null;
    }

    @Test
    void theLayoutsAndConstantsMatchTheInstalledHeaders(@TempDir final Path dir) throws Exception {
        final Path inc = headers();
        assumeTrue(inc != null, "PMIx headers (pmix.h) not installed: apt-get install libpmix-dev");
        final Path c = dir.resolve("abi.c");
        Files.writeString(c, """
            #include <stdio.h>
            #include <stddef.h>
            #include <pmix.h>
            int main(void) {
              pmix_proc_t p; pmix_value_t v; pmix_info_t i;
              printf("nspace=%zu\\n", sizeof(p.nspace));
              printf("proc=%zu\\n", sizeof(pmix_proc_t));
              printf("proc.rank=%zu\\n", offsetof(pmix_proc_t, rank));
              printf("value=%zu\\n", sizeof(pmix_value_t));
              printf("value.type=%zu/%zu\\n", offsetof(pmix_value_t, type), sizeof(v.type));
              printf("value.data=%zu\\n", offsetof(pmix_value_t, data));
              printf("key=%zu\\n", sizeof(i.key));
              printf("info=%zu\\n", sizeof(pmix_info_t));
              printf("info.flags=%zu\\n", offsetof(pmix_info_t, flags));
              printf("info.value=%zu\\n", offsetof(pmix_info_t, value));
              printf("bool=%zu\\n", sizeof(v.data.flag));
              printf("scope=%zu\\n", sizeof(pmix_scope_t));
              printf("BOOL=%d STRING=%d INT=%d INT32=%d UINT8=%d UINT16=%d UINT32=%d PROC_RANK=%d\\n", PMIX_BOOL,
                PMIX_STRING, PMIX_INT, PMIX_INT32, PMIX_UINT8, PMIX_UINT16, PMIX_UINT32, PMIX_PROC_RANK);
              printf("GLOBAL=%d WILDCARD=%u SUCCESS=%d\\n", PMIX_GLOBAL, (unsigned) PMIX_RANK_WILDCARD, PMIX_SUCCESS);
              printf("keys=%s %s %s %s %s\\n", PMIX_JOB_SIZE, PMIX_LOCAL_RANK, PMIX_LOCAL_SIZE, PMIX_COLLECT_DATA, PMIX_RANK);
              return 0;
            }
            """);
        final Path exe = dir.resolve("abi");
        final Process gcc;
        try {
            gcc = new ProcessBuilder("gcc", "-I" + inc, "-o", exe.toString(), c.toString()).redirectErrorStream(true)
                .start();
        } catch (final java.io.IOException e) {
            assumeTrue(false, "gcc not installed: " + e.getMessage());
            return;
        }
        final String gccOut = new String(gcc.getInputStream().readAllBytes());
        assertTrue(gcc.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, gcc.exitValue(), gccOut);
        final Process run = new ProcessBuilder(exe.toString()).redirectErrorStream(true).start();
        final String out = new String(run.getInputStream().readAllBytes());
        assertEquals(0, run.waitFor());
        final Map<String, String> m = new HashMap<>();
        for (final String line : out.split("\n")) {
            final int eq = line.indexOf('=');
            m.put(line.substring(0, eq), line.substring(eq + 1));
        }
        assertEquals(String.valueOf(Pmix.NSPACE_BYTES), m.get("nspace"), out);
        assertEquals(String.valueOf(Pmix.PROC_SIZE), m.get("proc"), out);
        assertEquals(String.valueOf(Pmix.PROC_RANK), m.get("proc.rank"), out);
        assertEquals(String.valueOf(Pmix.VALUE_SIZE), m.get("value"), out);
        assertEquals("0/2", m.get("value.type"), out);
        assertEquals(String.valueOf(Pmix.VALUE_DATA), m.get("value.data"), out);
        assertEquals(String.valueOf(Pmix.KEY_BYTES), m.get("key"), out);
        assertEquals(String.valueOf(Pmix.INFO_SIZE), m.get("info"), out);
        assertEquals(String.valueOf(Pmix.INFO_FLAGS), m.get("info.flags"), out);
        assertEquals(String.valueOf(Pmix.INFO_VALUE), m.get("info.value"), out);
        assertEquals("1", m.get("bool"), out);
        assertEquals("1", m.get("scope"), out);
        assertTrue(out.contains("BOOL=" + Pmix.TYPE_BOOL + " STRING=" + Pmix.TYPE_STRING + " INT=" + Pmix.TYPE_INT
            + " INT32=" + Pmix.TYPE_INT32 + " UINT8=" + Pmix.TYPE_UINT8 + " UINT16=" + Pmix.TYPE_UINT16 + " UINT32="
            + Pmix.TYPE_UINT32 + " PROC_RANK=" + Pmix.TYPE_PROC_RANK + "\n"), out);
        assertTrue(out.contains("GLOBAL=" + Pmix.SCOPE_GLOBAL + " WILDCARD=" + Integer.toUnsignedString(
            Pmix.RANK_WILDCARD) + " SUCCESS=0"), out);
        assertTrue(out.contains("keys=pmix.job.size pmix.lrank pmix.local.size pmix.collect pmix.rank"), out);
    }

    @Test
    void withoutLibpmixAPmixWorldFallsBackToTorchrunVariablesSayingWhyOrIsRefusedByName() {
        final String before = System.getProperty(Pmix.LIBRARY_PROPERTY);
        System.setProperty(Pmix.LIBRARY_PROPERTY, "/nonexistent/libpmix.so.2");
        try {
            final Map<String, String> pmix = Map.of("PMIX_RANK", "0", "PMIX_NAMESPACE", "test-ns");
            final IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(
                IllegalArgumentException.class, () -> WorldEnvironment.resolve(pmix, java.time.Duration.ofSeconds(2)));
            assertTrue(e.getMessage().contains("started by a PMIx launcher") && e.getMessage().contains(
                "libpmix cannot be loaded"), e.getMessage());
            final Map<String, String> both = new HashMap<>(pmix);
            both.putAll(Map.of("RANK", "0", "WORLD_SIZE", "1"));
            final WorldEnvironment.Resolved r = WorldEnvironment.resolve(both, java.time.Duration.ofSeconds(2));
            r.finish(java.time.Duration.ZERO);
            assertEquals(WorldEnvironment.Source.TORCHRUN, r.world().source());
            assertTrue(r.world().evidence().stream().anyMatch(x -> x.startsWith("PMIx not used: libpmix cannot be "
                + "loaded")), r.world().toString());
        } finally {
            if (before == null) {
                System.clearProperty(Pmix.LIBRARY_PROPERTY);
            } else {
                System.setProperty(Pmix.LIBRARY_PROPERTY, before);
            }
        }
    }
}
