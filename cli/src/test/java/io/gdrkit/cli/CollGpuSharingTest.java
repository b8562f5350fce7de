/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.gpu.cuda.CudaDriver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * {@code coll --mem gpu --gpu cuda:0} with 2 ranks on the one GPU of the libcuda test double
 * ({@code src/test/c/fakecuda.c}): as rank processes over shm (each with its own context: time-sliced unless MPS is
 * on, which the double's attribute 133 says through FAKECUDA_MPS), and as threads of one JVM (one context). Every
 * run prints the text table and writes the JSON rows with {@code --report}, so one run checks both outputs.
 */
class CollGpuSharingTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** cuDeviceGetPCIBusId of the test double. */
    private static final String BUS = "0000:fa:ce:0";

    private record Run(String text, JsonNode row) {
    }

    private static Path lib;

    private static synchronized Path lib() throws Exception {
        if (lib != null) {
            return lib;
        }
        lib = FakeCudaLib.build("libfakecuda-share.so");
        return lib;
    }

    /** One 8-byte allreduce sweep on 2 ranks over {@code fabric}, in a child JVM with {@code env} added. */
    private static Run coll(final String name, final String fabric, final Map<String, String> env)
        throws Exception {
        final Path so = lib();
        final Path dir = Files.createDirectories(so.getParent().resolve("share-" + name));
        final Path log = dir.resolve("out.log");
        final List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java"),
            "--enable-native-access=ALL-UNNAMED", "-D" + CudaDriver.LIBRARY_PROPERTY + "=" + so,
            "-Dgdrkit.coll.cuda.gdr=true", "-cp", System.getProperty("java.class.path"), Main.class.getName(), "coll",
            "allreduce", "--np", "2", "--fabric", fabric, "--mem", "gpu", "--gpu", "cuda:0", "-b", "8", "-e", "8",
            "-n", "2", "-w", "1", "--jit-warmup-ms", "0", "--timeout-ms", "60000", "--report", dir.toString()));
        final ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().remove("FAKECUDA_MPS");
        pb.environment().putAll(env);
        final Process p = pb.start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("coll did not end within 120 s: " + log);
        }
        final String out = Files.readString(log);
        assertEquals(0, p.exitValue(), out);
        final List<String> rows = Files.readAllLines(dir.resolve("coll.json"));
        assertEquals(1, rows.size(), String.join("\n", rows));
        final JsonNode row = JSON.readTree(rows.get(0));
        assertEquals(0, row.path("wrong").asLong(-1), row.toString());
        assertEquals(0, row.path("inplace_wrong").asLong(-1), row.toString());
        return new Run(out, row);
    }

    private static String line(final String text, final String prefix) {
        return text.lines().filter(l -> l.startsWith(prefix)).findFirst().orElse(null);
    }

    @Test
    void twoRankProcessesOnOneGpuWithoutMpsGetANoteWithTheEvidence() throws Exception {
        final Run r = coll("off", "shm", Map.of());
        assertEquals(2, r.row().path("gpu_shared_by").asInt(-1), r.row().toString());
        // rank processes on the shm fabric: the collectives' 64 KiB software MTU
        assertEquals("65536 B (gdrkit.ib.software.mtu not set: the collectives' default on the shm fabric)",
            r.row().path("nic_mtu").asText(), r.row().toString());
        assertTrue(r.row().path("mps").isBoolean() && !r.row().path("mps").asBoolean(true), r.row().toString());
        assertEquals("time-sliced", r.row().path("gpu_sharing").asText(), r.row().toString());
        assertEquals(BUS, r.row().path("gpu_bus_id").asText(), r.row().toString());
        assertEquals("[0,1]", r.row().path("gpu_ranks").toString(), r.row().toString());
        assertEquals("[\"0\",\"0\"]", r.row().path("mps_attr133_by_rank").toString(), r.row().toString());
        final String sharing = line(r.text(), "# GPU sharing (rank 0): ");
        assertTrue(sharing != null && sharing.startsWith("# GPU sharing (rank 0): 2 rank processes (ranks 0,1, pids ")
            && sharing.endsWith(") share GPU " + BUS + " without MPS (attribute 133 rank 0: 0, rank 1: 0): the GPU "
            + "time-slices between their contexts"), r.text());
        final String note = line(r.text(), "# note: ");
        assertTrue(note != null && note.startsWith("# note: 2 rank processes share GPU " + BUS + " (ranks 0,1) and "
            + "MPS is off (attribute 133 rank 0: 0, rank 1: 0)"), r.text());
        assertTrue(note.contains("Start MPS (nvidia-cuda-mps-control -d) before the run, or give each rank its own "
            + "GPU (--gpu cuda:rank)"), note);
        assertEquals(note.substring("# note: ".length()), r.row().path("gpu_sharing_note").asText(), r.row()
            .toString());
        // the double's pids differ: two processes, each named
        final List<String> pids = List.of(sharing.replaceAll(".*pids ([0-9,]+)\\).*", "$1").split(","));
        assertEquals(2, pids.size(), sharing);
        assertFalse(pids.get(0).equals(pids.get(1)), sharing);
        // the GPU's description carries attribute 133 as read
        assertTrue(r.row().path("gpu").asText().contains("MPS (133) 0"), r.row().toString());
    }

    @Test
    void withMpsOnThereIsNoNote() throws Exception {
        final Run r = coll("on", "shm", Map.of("FAKECUDA_MPS", "1"));
        assertEquals(2, r.row().path("gpu_shared_by").asInt(-1), r.row().toString());
        assertTrue(r.row().path("mps").isBoolean() && r.row().path("mps").asBoolean(false), r.row().toString());
        assertEquals("mps", r.row().path("gpu_sharing").asText(), r.row().toString());
        assertTrue(line(r.text(), "# GPU sharing (rank 0): 2 rank processes").endsWith(" share GPU " + BUS
            + " through MPS (attribute 133 rank 0: 1, rank 1: 1)"), r.text());
        assertEquals(null, line(r.text(), "# note: "), r.text());
        assertFalse(r.row().has("gpu_sharing_note"), r.row().toString());
    }

    @Test
    void aDriverThatDoesNotKnowAttribute133GivesUnknownAndTheNote() throws Exception {
        final Run r = coll("unknown", "shm", Map.of("FAKECUDA_MPS", "unknown"));
        assertEquals(2, r.row().path("gpu_shared_by").asInt(-1), r.row().toString());
        assertEquals("unknown", r.row().path("mps").asText(), r.row().toString());
        assertTrue(r.row().path("mps").isTextual(), r.row().toString());
        assertEquals("unknown", r.row().path("gpu_sharing").asText(), r.row().toString());
        assertTrue(r.row().path("gpu_sharing_evidence").asText().contains("cuDeviceGetAttribute("
            + "CU_DEVICE_ATTRIBUTE_MPS_ENABLED = 133) = CUDA_ERROR_INVALID_VALUE (this driver does not know the "
            + "attribute): unknown"), r.row().toString());
        final String note = line(r.text(), "# note: ");
        assertTrue(note != null && note.contains("MPS is not known to be on (attribute 133 rank 0: unknown, rank 1: "
            + "unknown)"), r.text());
        assertTrue(r.row().path("gpu").asText().contains("MPS (133) unknown"), r.row().toString());
    }

    @Test
    void threadsOfOneJvmShareOneContextAndAreNotTimeSliced() throws Exception {
        final Run r = coll("injvm", "injvm", Map.of());
        assertEquals(1, r.row().path("gpu_shared_by").asInt(-1), r.row().toString());
        assertEquals("one-context", r.row().path("gpu_sharing").asText(), r.row().toString());
        assertEquals("[0,1]", r.row().path("gpu_ranks").toString(), r.row().toString());
        final String sharing = line(r.text(), "# GPU sharing (rank 0): ");
        assertTrue(sharing != null && sharing.startsWith("# GPU sharing (rank 0): ranks 0,1 are threads of one "
            + "process (pid ") && sharing.contains(") on GPU " + BUS + ": they share its one CUDA context, so the "
            + "GPU does not time-slice between them"), r.text());
        // attribute 133 is still reported as read (0), and no MPS is needed within a process
        assertTrue(r.row().path("mps").isBoolean() && !r.row().path("mps").asBoolean(true), r.row().toString());
        assertEquals(null, line(r.text(), "# note: "), r.text());
    }
}
