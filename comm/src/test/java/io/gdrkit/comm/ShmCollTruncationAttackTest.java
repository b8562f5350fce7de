/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A same-user process that opened a rank's shared-memory file of the shm collectives before it was unlinked
 * truncates it (to nothing, to its first page: the slots gone, to half of it) or overwrites its rounds', headers'
 * and done words with garbage, while two ranks loop allreduce (small ones and ones split over the reduce threads),
 * or allgather with NCCL_ALGO=ring (the net path's direct round, whose slots are the same files). Every rank ends
 * with a named {@link CollException} (a truncation names the file: "rank 1's file ... was truncated under the
 * mapping"; garbage names the round rank 1's slot holds, or what rank 1 wrote), never a hang or a SIGBUS death,
 * and nothing is left in /dev/shm. Runs in a child JVM ({@link ShmCollTruncationProbe}) so that a fault the JVM
 * could not survive fails this test instead of the run.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ShmCollTruncationAttackTest {
    @ParameterizedTest
    @ValueSource(strings = {"0", "4096", "500000", "-1", "0 ring", "4096 ring", "-1 ring"})
    void aRankFileTruncatedOrOverwrittenWhileRanksRunIsNamedNeverAHangOrSigbus(final String attack)
        throws IOException, InterruptedException {
        final String[] a = attack.split(" ");
        final long size = Long.parseLong(a[0]);
        final Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "--enable-native-access=ALL-UNNAMED", "-Xmx512m", "-cp", System.getProperty("java.class.path"),
            ShmCollTruncationProbe.class.getName(), a[0], a.length > 1 ? a[1] : "auto").redirectErrorStream(true)
            .start();
        final boolean ended = p.waitFor(90, TimeUnit.SECONDS);
        if (!ended) {
            p.destroyForcibly();
        }
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(ended, "the probe hung: " + out);
        assertEquals(0, p.exitValue(), out);
        final List<String> lines = out.lines().filter(l -> l.startsWith("RESULT") || l.startsWith("LEFT")
            || l.startsWith("DONE")).toList();
        assertEquals(4, lines.size(), out);
        for (int r = 0; r < 2; r++) {
            assertTrue(lines.get(r).startsWith("RESULT rank " + r + " io.gdrkit.comm.CollException: "), out);
        }
        final String both = lines.get(0) + lines.get(1);
        if (size >= 0) {
            assertTrue(both.contains("rank 1's file was truncated under the mapping")
                || both.contains("this rank's own file (rank 1) was truncated under the mapping"), out);
        } else {
            assertTrue(both.contains("rank 1's slot holds round") || both.contains("rank 1 wrote"), out);
        }
        assertEquals("LEFT []", lines.get(2), out);
        assertEquals("DONE", lines.get(3), out);
    }
}
