/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A same-uid process truncates a shm link file while its two ports run (to nothing, into the ring, to the ring's
 * data but not its head and tail). The receiving port names it and drops that link, as a corrupt ring
 * ({@code corruptRings}, {@code lastRingError}: "its file was truncated under the mapping"); the sending side meets
 * the JVM's InternalError for the SIGBUS, which a NIC engine turns into DEVICE_FATAL; the process lives on and
 * ends normally. Before, the receiver's poll threw the InternalError out of the fabric. Runs in a child JVM (see
 * {@link ShmTruncationProbe}) so that a fault the JVM could not survive fails this test instead of the test run.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ShmTruncationAttackTest {
    @ParameterizedTest
    @ValueSource(longs = {0, 100, 4096})
    void aLinkFileTruncatedWhilePortsRunIsNamedNeverASigbusDeath(final long size, @TempDir final Path tmp)
        throws IOException, InterruptedException {
        final Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-cp", System.getProperty("java.class.path"),
            ShmTruncationProbe.class.getName(), tmp.toString(), Long.toString(size)).redirectErrorStream(true)
            .start();
        final boolean ended = p.waitFor(90, TimeUnit.SECONDS);
        if (!ended) {
            p.destroyForcibly();
        }
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(ended, "the probe hung: " + out);
        assertEquals(0, p.exitValue(), out);
        final List<String> lines = out.lines().filter(l -> !l.startsWith("WARNING")).toList();
        assertEquals("BEFORE 1", lines.get(0), out);
        assertTrue(lines.get(1).startsWith("RESULT sender java.lang.InternalError: a fault occurred in an unsafe "
            + "memory access"), out);
        assertEquals("RESULT receiver polled 1, corrupt rings 1, corrupt ring: its file was truncated under the "
            + "mapping (a fault occurred in an unsafe memory access operation)", lines.get(2), out);
        assertEquals("DONE", lines.get(3), out);
    }
}
