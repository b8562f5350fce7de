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
import io.gdrkit.gpu.cuda.CudaGpu;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * {@code coll --mem gpu --gpu cuda:0}: against the libcuda test double ({@code src/test/c/fakecuda.c}, which runs
 * coll_reduce on the host: it proves the kernel's parameters, the copies and the bounce path, not a GPU), and on a
 * real GPU where there is one (skipped otherwise, with the probe's reason). Child JVMs: the driver binds once per
 * process.
 */
class CollCudaTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** {@code gdrkit.coll.cuda.gdr}: true (the default) lets the gates decide GDR on a CUDA GPU; false holds it back. */
    private static final String OPT_IN = "-Dgdrkit.coll.cuda.gdr";

    private static List<JsonNode> coll(final Path log, final String lib, final String... args) throws Exception {
        return coll(java.util.Map.of(OPT_IN, "true"), log, lib, args);
    }

    /** As above with {@code env} added to the child's environment (NCCL_* settings). */
    private static List<JsonNode> coll(final java.util.Map<String, String> env, final Path log, final String lib,
                                       final String... args) throws Exception {
        final List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java"),
            "--enable-native-access=ALL-UNNAMED"));
        if (lib != null) {
            cmd.add("-D" + CudaDriver.LIBRARY_PROPERTY + "=" + lib);
        }
        // entries named -Dname are JVM properties (gdrkit.* settings reach the ranks that way), the rest environment
        env.forEach((k, v) -> {
            if (k.startsWith("-D")) {
                cmd.add(k + "=" + v);
            }
        });
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName(), "coll"));
        cmd.addAll(List.of(args));
        cmd.addAll(List.of("--np", "2", "--mem", "gpu", "--gpu", "cuda:0", "-n", "2", "-w", "1", "--jit-warmup-ms",
            "0", "--json"));
        final ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        env.forEach((k, v) -> {
            if (!k.startsWith("-D")) {
                pb.environment().put(k, v);
            }
        });
        final Process p = pb.start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("coll did not end within 120 s: " + log);
        }
        final String out = Files.readString(log);
        assertEquals(0, p.exitValue(), out);
        final List<JsonNode> rows = new ArrayList<>();
        for (final String line : out.split("\n")) {
            if (line.startsWith("{")) {
                rows.add(JSON.readTree(line));
            }
        }
        assertFalse(rows.isEmpty(), out);
        return rows;
    }

    private static void rightOnTheGpu(final List<JsonNode> rows, final boolean reduces) {
        rightOnTheGpu(rows, reduces, true);
    }

    /**
     * Every element right on the device, reduced by the kernel; with {@code gdr} the software NIC moved the device
     * memory itself (registered through the seam, nothing bounced), else the data bounced through host memory.
     */
    private static void rightOnTheGpu(final List<JsonNode> rows, final boolean reduces, final boolean gdr) {
        for (final JsonNode r : rows) {
            assertEquals(0, r.path("wrong").asLong(-1), r.toString());
            assertEquals(0, r.path("inplace_wrong").asLong(-1), r.toString());
            assertEquals("gpu", r.path("mem").asText(), r.toString());
            assertEquals("gpu-kernel", r.path("reduce_on").asText(), r.toString());
            assertEquals(gdr ? "gdr" : "host-bounce", r.path("data_path").asText(), r.toString());
            assertEquals(gdr, r.path("gdr").asBoolean(!gdr), r.toString());
            assertEquals(gdr ? "gpu" : "host", r.path("nic_mr").asText(), r.toString());
            assertEquals(gdr, r.path("bounced_bytes_rank0").asLong(-1) == 0, r.toString());
            assertFalse(r.path("gdr_reason").asText().isEmpty(), r.toString());
            assertFalse(r.path("gpu_simulated").asBoolean(true), r.toString());
        }
        final long launches = rows.get(rows.size() - 1).path("kernel_launches_rank0").asLong(-1);
        assertTrue(reduces ? launches > 0 : launches == 0, "kernel launches: " + launches);
    }

    /**
     * The H200's wrong elements, reproduced: with FAKECUDA_LEGACY_ASYNC the double's "synchronous" device-to-device
     * and host-to-device copies run late, as CUDA's legacy stream may, and the NIC's non-blocking stream does not
     * wait for them. The out-of-place collectives copy their input into the output first; gdrkit's synchronous
     * copies must have landed before they return, or the NIC sends (and the check reads) what was there before.
     */
    @Test
    void synchronousCopiesHaveLandedBeforeTheNicReadsTheirDestination() throws Exception {
        final Path lib = buildDouble("libfakecuda-coll-legacy.so");
        final java.util.Map<String, String> env = java.util.Map.of("FAKECUDA_LEGACY_ASYNC", "1", OPT_IN, "true");
        final Path dir = lib.getParent();
        rightOnTheGpu(coll(env, dir.resolve("coll-legacy-ar.log"), lib.toString(), "allreduce", "-b", "8", "-e",
            "65536", "-f", "16"), true);
        rightOnTheGpu(coll(env, dir.resolve("coll-legacy-rs.log"), lib.toString(), "reduce-scatter", "-b", "4096",
            "-e", "4096", "-d", "int32"), true);
        rightOnTheGpu(coll(env, dir.resolve("coll-legacy-ag.log"), lib.toString(), "allgather", "-b", "4096", "-e",
            "4096"), false);
        rightOnTheGpu(coll(env, dir.resolve("coll-legacy-bc.log"), lib.toString(), "broadcast", "-b", "4096", "-e",
            "4096"), false);
    }

    private static Path buildDouble(final String name) throws Exception {
        return FakeCudaLib.build(name);
    }

    @Test
    void collectivesOnCudaBuffersAgainstTheFakeDriver() throws Exception {
        final Path lib = buildDouble("libfakecuda-coll.so");
        final Path dir = lib.getParent();
        final List<JsonNode> sum = coll(dir.resolve("coll-float.log"), lib.toString(), "allreduce", "-b", "8", "-e",
            "65536", "-f", "16");
        rightOnTheGpu(sum, true);
        assertTrue(sum.get(0).path("gpu").asText().contains("fake"), "the double names itself: " + sum.get(0));
        rightOnTheGpu(coll(dir.resolve("coll-bf16.log"), lib.toString(), "allreduce", "-b", "4096", "-e", "4096",
            "-d", "bfloat16", "-o", "max"), true);
        rightOnTheGpu(coll(dir.resolve("coll-rs.log"), lib.toString(), "reduce-scatter", "-b", "4096", "-e", "8192",
            "-f", "2", "-d", "int32", "-o", "min"), true);
        rightOnTheGpu(coll(dir.resolve("coll-ag.log"), lib.toString(), "allgather", "-b", "4096", "-e", "4096"),
            false);
        // the gates decided GDR by DMA-BUF (attribute 124 = 1, a driver >= 11.7, the software NIC imports the fd)
        assertEquals("DMA-BUF", sum.get(0).path("gdr_mechanism").asText(), sum.get(0).toString());
        // NCCL_NET_GDR_LEVEL=LOC: the distance gate turns GDR off, the data bounces, the setting is named
        final List<JsonNode> loc = coll(java.util.Map.of("NCCL_NET_GDR_LEVEL", "LOC", OPT_IN, "true"),
            dir.resolve("coll-loc.log"),
            lib.toString(), "allreduce", "-b", "4096", "-e", "65536", "-f", "16");
        rightOnTheGpu(loc, true, false);
        assertTrue(loc.get(0).path("gdr_reason").asText().contains("NCCL_NET_GDR_LEVEL=LOC (environment)"),
            loc.get(0).toString());
        // NCCL_NET_FORCE_FLUSH=1 on the GDR path: the flush READ ran before the kernel read what the NIC wrote
        final List<JsonNode> flush = coll(java.util.Map.of("NCCL_NET_FORCE_FLUSH", "1", OPT_IN, "true"),
            dir.resolve("coll-flush.log"), lib.toString(), "allreduce", "-b", "4096", "-e", "65536", "-f", "16");
        rightOnTheGpu(flush, true, true);
        assertTrue(flush.get(flush.size() - 1).path("flush").asBoolean(false), flush.get(0).toString());
        assertTrue(flush.get(flush.size() - 1).path("flushes_rank0").asLong(0) > 0, flush.get(0).toString());
        // by default the gates decide (GDR here); gdrkit.coll.cuda.gdr=false holds their verdict back and the data
        // bounces, the hold-back and its setting named
        rightOnTheGpu(coll(java.util.Map.of(), dir.resolve("coll-default.log"), lib.toString(), "allreduce", "-b",
            "4096", "-e", "4096"), true, true);
        final List<JsonNode> held = coll(java.util.Map.of(OPT_IN, "false"), dir.resolve("coll-held.log"),
            lib.toString(), "allreduce", "-b", "4096", "-e", "4096");
        rightOnTheGpu(held, true, false);
        assertEquals("software NIC on CUDA", held.get(0).path("gdr_gate").asText(), held.get(0).toString());
        assertTrue(held.get(0).path("gdr_reason").asText().contains("gdrkit.coll.cuda.gdr=false (property)"),
            held.get(0).toString());
    }

    @Test
    void collectivesOnARealGpuWhereThereIsOne() throws Exception {
        final io.gdrkit.gpu.cuda.CudaProbe probe = CudaGpu.probe();
        Assumptions.assumeTrue(probe.found(), "no CUDA GPU here: " + probe);
        final Path dir = Files.createDirectories(Path.of("target/cuda-coll").toAbsolutePath());
        // the default on a real GPU: the gates decide (GDR on an H200: DMA-BUF), every element right; held back, the
        // data bounces and is right too
        final List<JsonNode> rows = coll(java.util.Map.of(), dir.resolve("real.log"), null, "allreduce", "-b", "8",
            "-e", "1048576", "-f", "32", "-d", "half", "-o", "sum");
        for (final JsonNode r : rows) {
            assertEquals(0, r.path("wrong").asLong(-1), r.toString());
            assertEquals(0, r.path("inplace_wrong").asLong(-1), r.toString());
        }
        rightOnTheGpu(coll(java.util.Map.of(OPT_IN, "false"), dir.resolve("real-held.log"), null, "allreduce", "-b",
            "8", "-e", "1048576", "-f", "32", "-d", "half", "-o", "sum"), true, false);
    }
}
