/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.gpu.cuda.CudaDriver;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Checks the FFM bindings without a GPU: builds a test double of libcuda ({@code src/test/c/fakecuda.c}) with the
 * system C compiler and runs {@link CudaReport} against it in a child JVM (the driver is loaded once per process).
 * Every bound symbol must resolve, every downcall's types must match (invokeExact fails otherwise), and kernel
 * parameters must arrive where cuLaunchKernel's {@code void**} says. Skipped where no {@code cc} is installed.
 */
class CudaFakeDriverTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void cudaReportRunsAgainstTheFakeDriver() throws Exception {
        final Path lib = FakeCudaLib.build("libfakecuda.so");
        final Path dir = lib.getParent();
        final Path json = dir.resolve("report.json");
        Files.deleteIfExists(json);
        final Path log = dir.resolve("report.log");
        final int rc = run(jvm(lib, CudaReport.class, json.toString(), "--bytes", "1048576", "--iters", "2"), log);
        final String out = Files.readString(log);
        assertEquals(0, rc, out);
        final String report = Files.readString(json);
        final JsonNode r = JSON.readTree(report);
        assertTrue(r.path("probe").path("found").asBoolean(false), report);
        assertEquals(100, r.findValue("attr118_writesOrdering").asInt(), report);
        assertEquals("OWNER", r.findValue("attr118_decoded").asText(), report);
        // the double answers attribute 133 with 0 unless FAKECUDA_MPS says otherwise
        assertEquals("0", r.findValue("attr133_mpsEnabled").asText(), report);
        assertTrue(r.findValue("attr133_evidence").asText().contains("MPS_ENABLED = 133) = 0"), report);
        assertTrue(r.findValue("fillVerifyOk").asBoolean(false), report);
        assertTrue(r.findValue("pinnedDevicePointerIsHostAddress").asBoolean(false), report);
        assertEquals(0, r.findValue("verifySameRoundMismatches").asInt(-1), report);
        assertTrue(r.findValue("afterSet1").asBoolean(false), report);
        assertTrue(report.contains("cuFlushGPUDirectRDMAWrites(0, 200) = CUDA_SUCCESS"), report);
        assertTrue(r.findValue("noOpByRule").asBoolean(false), "TO_OWNER on an OWNER device is a no-op: " + report);
        assertTrue(report.contains("DMA_BUF_FD, 0) = CUDA_SUCCESS"), report);
        assertTrue(r.findValue("bar1Bytes") != null, report);
        assertTrue(out.contains("fake"), "the test double names itself: " + out);
    }

    /**
     * The shmem CUDA path end to end against the test double: the CPU runs kernels.cu's shmem device functions
     * (shmem_device.cuh, compiled into the double), writing WQEs into the software NIC's send queue (IBGDA) or
     * requests into the proxy ring (IBRC) through cuMemHostRegister'ed memory; the NIC moves the bytes and the run
     * checks them. Proves the layouts agree between the C device code and the Java NIC; says nothing about a GPU.
     */
    @Test
    void shmemKernelsRunAgainstTheFakeDriver() throws Exception {
        final Path lib = FakeCudaLib.build("libfakecuda-shmem.so");
        final Path dir = lib.getParent();
        for (final String[] args : new String[][] {
            {"put_lat", "--mode", "ibgda"}, {"put_lat", "--mode", "ibrc"}, {"get_lat", "--mode", "ibgda"},
            {"atomic_lat", "--mode", "ibrc"}, {"put_signal_lat", "--mode", "ibgda"}, {"put_bw", "--mode", "ibrc"},
            {"ring_rtt"}}) {
            final Path log = dir.resolve("shmem-" + String.join("-", args) + ".log");
            final List<String> cmd = jvm(lib, Main.class, "shmem-perf");
            cmd.addAll(List.of(args));
            cmd.addAll(List.of("--gpu", "cuda:0", "-b", "8", "-e", "16", "-n", "20", "--blocks", "2", "--threads",
                "2", "--json"));
            final int rc = run(cmd, log);
            final String out = Files.readString(log);
            assertEquals(0, rc, String.join(" ", args) + ": " + out);
            assertTrue(out.contains("\"simulated\":"), out);
            if (!args[0].equals("ring_rtt")) {
                assertTrue(out.contains("fake CUDA device"), "the double names itself: " + out);
                assertTrue(out.contains("\"verified\":true") && !out.contains("\"verified\":false"), out);
                final boolean gda = args[2].equals("ibgda");
                assertTrue(out.contains(gda ? "\"cpuDoorbells\":0" : "\"gpuDoorbells\":0"), out);
                assertTrue(out.contains("\"staleWqes\":0"), out);
            } else {
                assertTrue(out.contains("\"iters\":20"), out);
            }
        }
        // MoE dispatch/combine: the C kernel routes with moe_route, the Java check with MoeRun.route
        for (final String mode : new String[] {"ibgda", "ibrc"}) {
            final Path log = dir.resolve("shmem-moe-" + mode + ".log");
            final int rc = gdrkit(lib, log, Map.of(), "shmem-moe", "--gpu", "cuda:0", "--np", "3", "--mode", mode,
                "--tokens", "8", "--bytes", "256", "--json");
            final String out = Files.readString(log);
            assertEquals(0, rc, out);
            assertTrue(out.contains("\"verified\":true") && out.contains("\"mismatches\":0"), out);
            // the CUDA kernel stamps only its span: the split says communication is inside the kernel's time
            assertTrue(out.contains("\"commMs\":null") && out.contains("communication included"), out);
        }
    }

    /**
     * Kernels that wait for each other (the ping-pong's two PEs, MoE's experts) under a driver whose kernel loading
     * waits for running kernels, as CUDA's lazy loading may (FAKECUDA_LAZY=1 in the double): every PE resolves its
     * kernel before any PE launches, so the run passes; loading one while the peer's kernel spins hung on the H200
     * until the wait's timeout (TIMEOUT, wait site 5 / 3).
     */
    @Test
    void kernelsThatWaitForEachOtherSurviveLazyLoading() throws Exception {
        final Path lib = FakeCudaLib.build("libfakecuda-lazy.so");
        final Path dir = lib.getParent();
        for (final String mode : new String[] {"ibgda", "ibrc"}) {
            final Path log = dir.resolve("lazy-pingpong-" + mode + ".log");
            final int rc = gdrkit(lib, log, Map.of("FAKECUDA_LAZY", "1"), "shmem-perf", "put_signal_lat", "--mode",
                mode, "--gpu", "cuda:0", "-b", "8", "-e", "16", "-n", "20", "--json");
            final String out = Files.readString(log);
            assertEquals(0, rc, mode + ": " + out);
            assertTrue(out.contains("\"verified\":true") && !out.contains("\"verified\":false"), out);
            // the breakdown: landing and answer are stamps of one clock; no step is negative
            assertTrue(out.contains("\"name\":\"landing->answer seen\""), out);
            assertFalse(out.contains("\"us\":-"), out);
        }
        final Path log = dir.resolve("lazy-moe.log");
        final int rc = gdrkit(lib, log, Map.of("FAKECUDA_LAZY", "1"), "shmem-moe", "--gpu", "cuda:0", "--np", "3",
            "--mode", "ibgda", "--tokens", "8", "--bytes", "256", "--json");
        final String out = Files.readString(log);
        assertEquals(0, rc, out);
        assertTrue(out.contains("\"verified\":true") && out.contains("\"mismatches\":0"), out);
        // two PE processes on the one (fake) CUDA device, each with its own context, as on the H200
        final Path procs = dir.resolve("lazy-moe-procs.log");
        final int rc2 = gdrkit(lib, procs, Map.of("FAKECUDA_LAZY", "1"), "shmem-moe", "--gpu", "cuda:0", "--np", "2",
            "--fabric", "shm", "--mode", "ibgda", "--tokens", "8", "--bytes", "256", "--json");
        final String out2 = Files.readString(procs);
        assertEquals(0, rc2, out2);
        assertTrue(out2.contains("\"verified\":true") && out2.contains("\"mismatches\":0")
            && out2.contains("PEs are 2 processes"), out2);
    }

    /**
     * put_signal_lat's breakdown on both paths with more operations than the send queue holds (128 slots; a
     * put-with-signal is two WQEs): it reads NIC pick-up stamps only of WQEs still in their slots, so every step lies
     * within the total. Before issue 13's fix IBRC sampled 128 operations (256 WQEs) and half of them read the stamp
     * of a WQE 64 operations later: a "->NIC pick-up" step of 4,065-4,259 us inside a 62-66 us total on the H200.
     */
    @Test
    void putSignalBreakdownReadsOnlyTheStampsOfItsOwnWqes() throws Exception {
        final Path lib = FakeCudaLib.build("libfakecuda-breakdown.so");
        final Path dir = lib.getParent();
        for (final String mode : new String[] {"ibrc", "ibgda"}) {
            final Path log = dir.resolve("breakdown-" + mode + ".log");
            final int rc = gdrkit(lib, log, Map.of(), "shmem-perf", "put_signal_lat", "--mode", mode, "--gpu", "cuda:0",
                "-b", "8", "-e", "8", "-n", "200", "--json");
            final String out = Files.readString(log);
            assertEquals(0, rc, mode + ": " + out);
            final JsonNode b = JSON.readTree(out.lines().filter(l -> l.startsWith("{")).findFirst()
                .orElseThrow(() -> new AssertionError("no JSON: " + out))).path("result").path("breakdown");
            // the last 128 / 2 WQEs per operation / 2 (half the queue) = 32 operations
            assertEquals(32, b.path("samples").asInt(-1), mode + ": " + out);
            final double total = b.path("totalUs").asDouble(-1);
            assertTrue(total > 0, out);
            int steps = 0;
            for (final JsonNode st : b.path("steps")) {
                steps++;
                if (!st.path("us").isNull()) {
                    final double us = st.path("us").asDouble();
                    assertTrue(us >= 0 && us <= total, mode + ": step " + st + " outside the total " + total);
                }
            }
            assertEquals(mode.equals("ibrc") ? 4 : 3, steps, mode + ": " + b);
        }
    }

    /**
     * Two PEs of one process on one GPU share its primary context, and each has a delivery agent: a CUDA call that
     * waits for every running kernel of the context (here freeing pinned memory after the clock pairing, and
     * allocating) must pause the other PE's agent too, not only its own. The double plays such calls
     * (FAKECUDA_SERIALIZE=1: each waits while any agent runs, and fails with 999 after 3 s where a GPU would hang):
     * put_lat on both paths with the agent on ends with every operation checked. (Not the ping-pong: the double runs
     * a kernel inside cuLaunchKernel, under the device's launch lock, so a PE running a kernel there keeps its own
     * agent from starting, which a GPU does not.)
     */
    @Test
    void aCallThatWaitsForEveryKernelPausesEveryPesAgent() throws Exception {
        final Path lib = FakeCudaLib.build("libfakecuda-serialize.so");
        final Path dir = lib.getParent();
        for (final String[] t : new String[][] {{"put_lat", "ibgda"}, {"put_lat", "ibrc"}}) {
            final Path log = dir.resolve("serialize-" + t[0] + "-" + t[1] + ".log");
            final int rc = gdrkit(lib, log, Map.of("FAKECUDA_SERIALIZE", "1"), "shmem-perf", t[0], "--mode", t[1],
                "--gpu", "cuda:0", "-b", "8", "-e", "64", "-n", "20", "--json", "--set", "gdrkit.cuda.agent=on");
            final String out = Files.readString(log);
            assertEquals(0, rc, t[0] + ": " + out);
            final JsonNode rows = JSON.readTree(out.lines().filter(l -> l.startsWith("{")).findFirst()
                .orElseThrow(() -> new AssertionError("no JSON: " + out))).path("result").path("rows");
            assertEquals(4, rows.size(), rows.toString());
            for (final JsonNode row : rows) {
                assertTrue(row.path("verified").asBoolean(false), row.toString());
            }
        }
    }

    /**
     * On the CUDA path a small put's data travels with it (in the WQE on IBGDA up to 64 bytes, in the proxy request on
     * IBRC up to 16), so the NIC reads no GPU memory for it: the double logs every device-to-host copy's size
     * (FAKECUDA_DTOH_LOG). Per size the host reads the destination once to check it, the NIC would read each put's
     * source: IBGDA shows no source reads at 16, 32 or 64 bytes, IBRC none at 16 and one per put at 32 and 64.
     */
    @Test
    void smallPutsOnCudaReadNoGpuMemory() throws Exception {
        final Path lib = FakeCudaLib.build("libfakecuda-dtoh.so");
        final Path dir = lib.getParent();
        final int iters = 20;
        for (final String mode : new String[] {"ibgda", "ibrc"}) {
            final Path log = dir.resolve("dtoh-" + mode + ".log");
            final Path copies = dir.resolve("dtoh-" + mode + ".sizes");
            Files.deleteIfExists(copies);
            final int rc = gdrkit(lib, log, Map.of("FAKECUDA_DTOH_LOG", copies.toString()), "shmem-perf", "put_lat",
                "--mode", mode, "--gpu", "cuda:0", "-b", "16", "-e", "64", "-n", Integer.toString(iters), "--warmup-ms",
                "0", "--json");
            assertEquals(0, rc, mode + ": " + Files.readString(log));
            final List<String> sizes = Files.readAllLines(copies);
            for (final int bytes : new int[] {16, 32, 64}) {
                final long n = sizes.stream().filter(l -> l.equals(Integer.toString(bytes))).count();
                final boolean inline = bytes <= (mode.equals("ibgda") ? 64 : 16);
                assertTrue(inline ? n < iters : n >= iters, mode + ", " + bytes + " B: " + n + " device-to-host "
                    + "copies of that size for " + iters + " puts");
            }
        }
    }

    /**
     * The warm-up: every kernel of a shmem-perf sweep is launched at the smallest size before the first timed launch,
     * once with {@code --warmup-ms 0} and again and again for the time {@code --warmup-ms} gives, and no warm-up pass
     * is reported. Read from the libcuda double's launch log (FAKECUDA_LAUNCH_LOG: one line per launch, kernel and
     * message size, in launch order).
     */
    @Test
    void everyKernelIsLaunchedOnceBeforeTheFirstTimedSize() throws Exception {
        final Path lib = FakeCudaLib.build("libfakecuda-warm.so");
        final Path dir = lib.getParent();
        for (final String[] t : new String[][] {{"put_lat", "ibgda", "shmem_lat", "0"},
            {"put_signal_lat", "ibrc", "shmem_pingpong", "0"}, {"put_lat", "ibrc", "shmem_lat", "300"}}) {
            final Path log = dir.resolve("warm-" + t[0] + t[3] + ".log");
            final Path launches = dir.resolve("warm-" + t[0] + t[3] + ".launches");
            Files.deleteIfExists(launches);
            final int rc = gdrkit(lib, log, Map.of("FAKECUDA_LAUNCH_LOG", launches.toString()), "shmem-perf", t[0],
                "--mode", t[1], "--gpu", "cuda:0", "-b", "8", "-e", "32", "-n", "10", "--warmup-ms", t[3], "--json");
            final String out = Files.readString(log);
            assertEquals(0, rc, t[0] + ": " + out);
            final List<String> seen = Files.readAllLines(launches);
            // the ping-pong's two PEs each launch the kernel once per pass
            final int perPass = t[0].equals("put_signal_lat") ? 2 : 1;
            final List<String> measured = seen.stream().filter(l -> l.startsWith(t[2] + " ")).toList();
            if (!t[3].equals("0")) {
                // a timed warm-up: the smallest size again and again (a pass of 10 puts on the double takes far less
                // than 300 ms), then each size once
                final long warm = measured.stream().takeWhile(l -> l.equals(t[2] + " 8")).count() - 1;
                assertTrue(warm >= 2, "warm-up passes " + warm + ": " + seen);
                assertEquals(List.of(t[2] + " 16", t[2] + " 32"), measured.subList((int) warm + 1, measured.size()),
                    seen.toString());
                assertEquals(300, JSON.readTree(out.lines().filter(l -> l.startsWith("{")).findFirst().orElseThrow())
                    .path("warmup_ms").asInt(-1), out);
                continue;
            }
            final List<String> expected = new java.util.ArrayList<>();
            for (final int bytes : new int[] {8, 8, 16, 32}) {
                for (int i = 0; i < perPass; i++) {
                    expected.add(t[2] + " " + bytes);
                }
            }
            assertEquals(expected, measured, t[0] + ": " + seen);
            // the clock pairing's kernel ran before the warm-up, so before the first timed launch too
            assertTrue(seen.indexOf("shmem_clock_sync 0") < seen.indexOf(t[2] + " 8"), seen.toString());
            final JsonNode rows = JSON.readTree(out.lines().filter(l -> l.startsWith("{")).findFirst()
                .orElseThrow(() -> new AssertionError("no JSON: " + out))).path("result").path("rows");
            assertEquals(3, rows.size(), "the warm-up pass is not a row: " + rows);
            assertEquals(8, rows.get(0).path("bytes").asInt(-1), rows.toString());
            // each size's time split: its parts add up to the total; the proxy's share on IBRC only, with the
            // clock pairing's error (its pick-up is a host stamp, the issue a kernel one)
            for (final JsonNode row : rows) {
                final JsonNode x = row.path("split");
                final double total = x.path("totalUs").asDouble(-1);
                assertTrue(total > 0 && x.path("commUs").asDouble(-1) > 0, row.toString());
                assertEquals(total, x.path("kernelUs").asDouble() + x.path("commUs").asDouble()
                    + x.path("cpuWaitUs").asDouble(), 1e-9 * total, row.toString());
                assertEquals(t[1].equals("ibrc"), !x.path("proxyUs").isNull(), row.toString());
                assertEquals(t[0].equals("put_signal_lat") ? "half_rtt" : "op", row.path("latency").asText());
                assertTrue(x.path("method").asText().contains("%globaltimer"), row.toString());
            }
        }
    }

    /**
     * shmem-moe --json whose kernel reports a timed-out wait (FAKECUDA_MOE_WAIT_TIMEOUT=7 in the double, as PE 3's
     * wait site 7 on the H200): one JSON object with the named error on stdout, not a "# FAILED:" text line that
     * breaks a JSON-lines file; without --json the text line stays.
     */
    @Test
    void aFailedMoeRunIsJsonUnderJson() throws Exception {
        final Path lib = FakeCudaLib.build("libfakecuda-moefail.so");
        final Path dir = lib.getParent();
        for (final boolean json : new boolean[] {true, false}) {
            final Path log = dir.resolve("moe-fail-" + json + ".log");
            final Path err = dir.resolve("moe-fail-" + json + ".err");
            final List<String> cmd = jvm(lib, Main.class, "shmem-moe", "--gpu", "cuda:0", "--np", "2", "--mode",
                "ibgda", "--tokens", "4", "--bytes", "64");
            if (json) {
                cmd.add("--json");
            }
            final ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(log.toFile()).redirectError(err.toFile());
            pb.environment().put("FAKECUDA_MOE_WAIT_TIMEOUT", "7");
            final Process p = pb.start();
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("shmem-moe did not end in 120 s: " + Files.readString(log));
            }
            final String out = Files.readString(log);
            assertEquals(Main.EXIT_FAILURE, p.exitValue(), out + Files.readString(err));
            final List<String> lines = out.lines().filter(l -> !l.isBlank()).toList();
            assertEquals(1, lines.size(), "one line on stdout: " + out);
            if (json) {
                final JsonNode r = JSON.readTree(lines.get(0));
                assertEquals("TIMEOUT", r.path("reason").asText(), out);
                assertTrue(r.path("error").asText().startsWith("TIMEOUT: kernel shmem_moe on PE ")
                    && r.path("error").asText().contains("wait site 7 in shmem_device.cuh"), out);
                // what the kernel left (here: it ended before posting anything): counts against what they wait for,
                // and every queue's counters
                assertTrue(r.path("error").asText().contains("state after the kernel: recv_sig 0: 0/"), out);
                assertTrue(r.path("error").asText().contains("done_sig 0/4"), out);
                assertTrue(r.path("error").asText().contains("queue to PE 1: WQEs 0, doorbell 0 rung / 0 retired, CQ 0 "
                    + "produced / 0 reaped, stale 0"), out);
                assertTrue(r.path("simulated").asBoolean(false), out);
            } else {
                assertTrue(lines.get(0).startsWith("# FAILED: TIMEOUT: kernel shmem_moe on PE ")
                    && lines.get(0).contains("wait site 7"), out);
            }
        }
    }

    /**
     * Device memory that is not clear when allocated (FAKECUDA_DIRTY_ALLOC=1: 0xff bytes, as reused CUDA memory may
     * hold anything): the runs clear their signal words and counters before any kernel counts on them. Before issue
     * 13's fix MoE's counts started at -1 and every PE's wait for its tokens timed out (wait site 7), the symptom of
     * the H200's one failed MoE run.
     */
    @Test
    void signalWordsStartAtZeroInDirtyDeviceMemory() throws Exception {
        final Path lib = FakeCudaLib.build("libfakecuda-dirty.so");
        final Path dir = lib.getParent();
        for (final String[] args : new String[][] {
            {"shmem-moe", "--np", "3", "--mode", "ibgda", "--tokens", "8", "--bytes", "256"},
            {"shmem-moe", "--np", "2", "--mode", "ibrc", "--tokens", "8", "--bytes", "256"},
            {"shmem-perf", "put_signal_lat", "--mode", "ibgda", "-b", "8", "-e", "8", "-n", "10"},
            {"shmem-perf", "atomic_lat", "--mode", "ibrc", "-n", "10"}}) {
            final Path log = dir.resolve("dirty-" + String.join("-", args).replace("--", "") + ".log");
            final List<String> cmd = jvm(lib, Main.class, args);
            cmd.addAll(List.of("--gpu", "cuda:0", "--json"));
            final int rc = run(cmd, log, Map.of("FAKECUDA_DIRTY_ALLOC", "1"));
            final String out = Files.readString(log);
            assertEquals(0, rc, String.join(" ", args) + ": " + out);
            assertTrue(out.contains("\"verified\":true") && !out.contains("\"verified\":false"), out);
        }
    }

    @Test
    void missingDriverIsReportedAsNotFound() throws Exception {
        final Path dir = Files.createDirectories(Path.of("target/fakecuda").toAbsolutePath());
        final Path json = dir.resolve("missing.json");
        final Path log = dir.resolve("missing.log");
        final int rc = run(jvm(dir.resolve("no-such-libcuda.so"), CudaReport.class, json.toString()), log);
        assertEquals(3, rc, Files.readString(log));
        final String report = Files.readString(json);
        final JsonNode r = JSON.readTree(report);
        assertFalse(r.path("probe").path("found").asBoolean(true), report);
        assertTrue(r.path("probe").path("library").asText().endsWith("no-such-libcuda.so"), report);
        assertTrue(Files.readString(log).startsWith("CUDA not found"), Files.readString(log));
    }

    /** A child JVM on this classpath with {@code lib} as libcuda, running {@code main} with {@code args}. */
    private static List<String> jvm(final Path lib, final Class<?> main, final String... args) {
        final List<String> cmd = new java.util.ArrayList<>(List.of(ProcessHandle.current().info().command()
            .orElse("java"), "--enable-native-access=ALL-UNNAMED", "-D" + CudaDriver.LIBRARY_PROPERTY + "=" + lib,
            "-cp", System.getProperty("java.class.path"), main.getName()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** gdrkit's command line in a child JVM with {@code lib} as libcuda: its exit status, its output in {@code log}. */
    private static int gdrkit(final Path lib, final Path log, final Map<String, String> env, final String... args)
        throws IOException, InterruptedException {
        return run(jvm(lib, Main.class, args), log, env);
    }

    private static int run(final List<String> cmd, final Path log) throws IOException, InterruptedException {
        return run(cmd, log, Map.of());
    }

    private static int run(final List<String> cmd, final Path log, final Map<String, String> env)
        throws IOException, InterruptedException {
        final Process p;
        try {
            final ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
            pb.environment().putAll(env);
            p = pb.start();
        } catch (final IOException e) {
            return 127; // the command does not exist
        }
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("timed out after 120 s waiting for " + cmd.get(0) + " (" + log + ")");
        }
        return p.exitValue();
    }
}
