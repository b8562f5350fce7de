/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli.repo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.comm.CollOp;
import io.gdrkit.comm.CollRun;
import io.gdrkit.comm.DataType;
import io.gdrkit.comm.RedOp;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * bench/mpi/coll_timing.c, the OpenMPI side of bench/coll-vs-mpi.sh: for every collective at 2 and 3 ranks it checks
 * every element right (0 wrong), names the op as gdrkit coll's JSON does, and times exactly the sizes gdrkit coll
 * times ({@link CollRun#sizes}), so the table compares the same buffers. Skipped, with the reason, where mpicc or
 * mpirun is missing.
 */
class CollTimingProgramTest {
    @TempDir
    static Path dir;
    private static Path program;

    private static Path onPath(final String name) {
        for (final String d : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            final Path p = Path.of(d.isEmpty() ? "." : d, name);
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }

    private static String run(final long timeoutSeconds, final String... cmd) throws Exception {
        final Process p = new ProcessBuilder(cmd).redirectErrorStream(false)
            .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException(String.join(" ", cmd) + ": no exit within " + timeoutSeconds + " s");
        }
        assertEquals(0, p.exitValue(), String.join(" ", cmd) + ":\n" + out);
        return out;
    }

    @BeforeAll
    static void compile() throws Exception {
        final Path mpicc = onPath("mpicc");
        assumeTrue(mpicc != null && onPath("mpirun") != null, "no mpicc or mpirun on the PATH (OpenMPI)");
        // openmpi-bin without libopenmpi-dev has mpicc but no mpi.h: a toolchain that cannot build the smallest MPI
        // program is absent, not a failure of coll_timing.c
        final Path probe = dir.resolve("probe.c");
        Files.writeString(probe, "#include <mpi.h>\nint main(void) { return MPI_SUCCESS; }\n");
        final Process p = new ProcessBuilder(mpicc.toString(), "-o", dir.resolve("probe").toString(), probe.toString())
            .redirectErrorStream(true).start();
        final String said = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assumeTrue(p.waitFor(120, TimeUnit.SECONDS) && p.exitValue() == 0,
            () -> mpicc + " cannot build a program that only includes mpi.h (OpenMPI's headers missing?): " + said);
        program = dir.resolve("coll_timing");
        run(120, mpicc.toString(), "-O2", "-o", program.toString(),
            LicenseHeaderTest.root().resolve("bench/mpi/coll_timing.c").toString(), "-lm");
    }

    @ParameterizedTest(name = "{0} on {1} ranks")
    @CsvSource({"allreduce,2", "allgather,2", "reduce_scatter,2", "broadcast,2", "reduce,2", "alltoall,2",
        "sendrecv,2", "allreduce,3", "allgather,3", "reduce_scatter,3", "broadcast,3", "reduce,3", "alltoall,3",
        "sendrecv,3"})
    void everyElementIsRightAtGdrkitsSizes(final String op, final int np) throws Exception {
        final String out = run(120, "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", Integer.toString(np),
            program.toString(), op, "8", "40000", "7", "2", "1");
        final CollOp o = CollOp.parse(op);
        final List<Long> want = CollRun.sizes(new CollRun.Config(o, DataType.FLOAT32, RedOp.SUM, 0, 8, 40000, 7, 0,
            2, 1, true, "ib", "injvm", true), np);
        final List<Long> got = new ArrayList<>();
        for (final String line : out.lines().toList()) {
            final JsonNode j = new ObjectMapper().readTree(line);
            assertEquals(o.testName(), j.get("op").asText(), line);
            assertEquals("openmpi", j.get("peer").asText(), line);
            assertEquals(np, j.get("np").asInt(), line);
            assertEquals(0, j.get("wrong").asLong(), line);
            assertTrue(j.get("time_us").asDouble() >= 0, line);
            got.add(j.get("bytes").asLong());
        }
        assertEquals(want, got, "the sizes gdrkit coll times for " + op + " on " + np + " ranks");
    }
}
