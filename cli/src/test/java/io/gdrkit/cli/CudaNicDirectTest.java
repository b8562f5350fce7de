/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.gpu.cuda.CudaDriver;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The NIC's direct path into a CUDA GPU: a WRITE from pinned host memory (the requester's MR, pinned with
 * {@code cuMemHostRegister} when it was registered) is one copy-engine read of the source where it is, no CPU copy,
 * and it keeps RDMA's rules: the completion comes only after the copies landed, the source is not read after the
 * completion (the application may reuse it), a deregistration while copies are in flight fences before it unpins,
 * and a refused pin falls back to staging with its reason. Runs {@link NicDirectProbe} in a child JVM against the
 * libcuda test double in its deferred mode. Skipped where no {@code cc} is installed.
 */
class CudaNicDirectTest {

    @Test
    void writesFromPinnedHostMemoryAreDirectAndLandBeforeTheirCompletion() throws Exception {
        final String out = probe("direct", Map.of());
        assertTrue(out.contains("hazard control: unregistered under a queued direct copy (rc 0), hazards 2"), out);
        assertTrue(out.contains("requester buffer pinned: true"), out);
        // two reads land in the pinned buffer (the second through the remembered range), the third, after the unpin,
        // is staged: the remembered range was forgotten with the pin
        final java.util.regex.Matcher r = java.util.regex.Pattern.compile("reads into pinned memory: pinned true, wrong "
            + "0; before: NIC reads: (\\d+) into pinned memory, (\\d+) through staging; after: NIC reads: (\\d+) into "
            + "pinned memory, (\\d+) through staging").matcher(out);
        assertTrue(r.find(), out);
        assertEquals(2, Long.parseLong(r.group(3)) - Long.parseLong(r.group(1)), out);
        assertEquals(1, Long.parseLong(r.group(4)) - Long.parseLong(r.group(2)), out);
        for (final String size : List.of("17", "4096", "4097", "300000", "1048576", "3145733")) {
            assertTrue(out.contains("WRITE " + size + " B: byte-exact at completion"), size + ": " + out);
            assertTrue(out.contains("WRITE " + size + " B, source reused after its completion: byte-exact at "
                + "completion"), size + ": " + out);
        }
        assertTrue(out.contains("24 x 1 MiB WRITE in flight: byte-exact at completion"), out);
        // a packet with less than the single-copy minimum (1 KiB) left of its message carries its bytes, so they are
        // staged: the 17 B WRITE and the 5 B tail of 3 MiB + 5 (after whole 1 MiB reference records); all else direct
        final long all = 17 + 4096 + 4097 + 300_000 + 1048576 + 3145733 + 24L * 1048576;
        final java.util.regex.Matcher m = java.util.regex.Pattern.compile("counters: staged (\\d+) B, direct (\\d+) B "
            + "in (\\d+) spans, pins 1, refused 0").matcher(out);
        assertTrue(m.find(), out);
        final long staged = Long.parseLong(m.group(1));
        assertEquals(all, staged + Long.parseLong(m.group(2)), out);
        assertTrue(staged >= 17 && staged < 100, out);
        assertTrue(out.lines().anyMatch(l -> l.startsWith("deregistered with ") && !l.startsWith("deregistered with 0 B")
            && l.contains("none acknowledged (0 completions); hazards at the unpin 0; still pinned false")), out);
        assertTrue(out.lines().anyMatch(l -> l.matches("deregistered in flight: the WRITE completed with "
            + "(SUCCESS|LOC_PROT_ERR|WR_FLUSH_ERR)")), out);
        assertTrue(out.contains("requester buffer pinned after the loopback closed: false"), out);
        assertTrue(out.contains("hazards: 0 "), out);
        assertTrue(out.contains("all checks passed"), out);
    }

    @Test
    void aRefusedPinFallsBackToStagingWithItsReason() throws Exception {
        final String out = probe("refused", Map.of("FAKECUDA_HOSTREGISTER", "refuse"));
        assertTrue(out.contains("requester buffer pinned: false"), out);
        assertTrue(out.contains("WRITE 3145733 B, source reused after its completion: byte-exact at completion"), out);
        assertTrue(out.contains("24 x 1 MiB WRITE in flight: byte-exact at completion"), out);
        final long all = 17 + 4096 + 4097 + 300_000 + 1048576 + 3145733 + 24L * 1048576;
        assertTrue(out.contains("counters: staged " + all + " B, direct 0 B in 0 spans, pins 0, refused 1"), out);
        assertTrue(out.contains("refused 1 (cuMemHostRegister_v2(0x"), out);
        assertTrue(out.contains("= CUDA_ERROR_NOT_SUPPORTED (801))"), out);
        assertTrue(out.contains("all checks passed"), out);
    }

    /**
     * With the delivery agent on, staged spans go to the agent and direct ones to the copy engine, ordered through
     * the stream memory operations (the double's agent slowed down): still byte-exact at each completion.
     */
    @Test
    void directSpansKeepTheirOrderWithTheDeliveryAgent() throws Exception {
        final String out = probe("agent", Map.of("FAKECUDA_AGENT_DELAY_US", "20"), "-Dgdrkit.cuda.agent=on",
            "-Dgdrkit.cuda.agent.stall.ms=20000");
        assertTrue(out.contains("24 x 1 MiB WRITE in flight: byte-exact at completion"), out);
        assertTrue(out.contains("WRITE 3145733 B, source reused after its completion: byte-exact at completion"), out);
        assertTrue(out.lines().anyMatch(l -> l.matches(".*agent: [1-9][0-9]* spans by the agent.*, [1-9][0-9]* by the "
            + "copy engine")), out);
        assertTrue(out.contains("hazards: 0 "), out);
        assertTrue(out.contains("all checks passed"), out);
    }

    /**
     * {@code perf write_bw --mem gpu --client-mem host} on the test double: the client's host buffer pinned, the
     * WRITEs direct (counted in the run's {@code nic_writes} object), the data checked on the "GPU"; {@code read_bw}
     * the other way, into the pinned host buffer, checked byte by byte.
     */
    @Test
    void perfWithTheClientOnHostWritesDirectAndChecksTheData() throws Exception {
        final String w = perf("write_bw");
        assertTrue(w.contains("\"check\":\"byte-exact\""), w);
        final java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"nic_writes\":\"host_to_device\","
            + "\"test\":\"write_bw\",\"bytes\":1048576,\"direct_bytes\":(\\d+),\"direct_copies\":\\d+,"
            + "\"staged_bytes\":0,\"pins_refused\":0").matcher(w);
        assertTrue(m.find() && Long.parseLong(m.group(1)) >= 50L * 1048576, w);
        final String r = perf("read_bw");
        assertTrue(r.contains("\"check\":\"byte-exact\""), r);
    }

    /**
     * {@code perf write_bw --mem gpu} with both buffers on the GPU (perftest's {@code --use_cuda} on both sides), on
     * the test double with deferred copies: the requester reads the client's GPU buffer into the NIC's pinned ring
     * and its packets reference it, so the server's copy engine reads the ring directly (counted direct, nothing
     * staged), and the data checked on the "GPU" is byte-exact.
     */
    @Test
    void perfWithBothBuffersOnTheGpuWritesFromTheNicsRingDirectly() throws Exception {
        final String w = run("perf", "write_bw", "--loopback", "--mem", "gpu", "--gpu", "cuda:0", "-s", "1M", "-n",
            "50", "--check", "--json");
        assertTrue(w.contains("\"check\":\"byte-exact\""), w);
        final java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"nic_writes\":\"host_to_device\","
            + "\"test\":\"write_bw\",\"bytes\":1048576,\"direct_bytes\":(\\d+),\"direct_copies\":\\d+,"
            + "\"staged_bytes\":0,\"pins_refused\":0").matcher(w);
        assertTrue(m.find() && Long.parseLong(m.group(1)) >= 50L * 1048576, w);
    }

    /**
     * {@code gpu-path --gpu cuda:0} on the test double: the GDR row's source (the NICs' host MR) is pinned for the
     * GPU as a GPUDirect stack pins registered memory, so every byte the NIC writes into the GPU is direct, none
     * staged (its JSON says so), and every row is byte-exact after the copy back.
     */
    @Test
    void gpuPathsGdrRowWritesFromThePinnedSourceDirectly() throws Exception {
        final String out = run("gpu-path", "--gpu", "cuda:0", "-s", "1M", "-n", "20", "--json");
        final java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\{\"path\":\"gdr\",\"bytes\":1048576,"
            + "\"iters\":20,\"mib_s\":[0-9.]+,\"check\":\"byte-exact\",.*\"direct_bytes\":(\\d+),"
            + "\"staged_bytes\":0\\}").matcher(out);
        assertTrue(m.find(), out);
        assertTrue(Long.parseLong(m.group(1)) >= 20L * 1048576, out);
        for (final String path : List.of("bounce", "bounce-pipelined")) {
            assertTrue(out.contains("{\"path\":\"" + path + "\",\"bytes\":1048576,\"iters\":20,"), out);
        }
        assertTrue(out.lines().filter(l -> l.startsWith("{")).noneMatch(l -> l.contains("mismatch")), out);
    }

    private static String perf(final String test) throws Exception {
        return run("perf", test, "--loopback", "--mem", "gpu", "--gpu", "cuda:0", "--client-mem", "host", "-s", "1M",
            "-n", "50", "--check", "--json");
    }

    /** A gdrkit command in a child JVM against the test double with deferred copies. */
    private static String run(final String... args) throws Exception {
        final String name = String.join("-", args).replaceAll("[^A-Za-z0-9_-]", "");
        final String test = name.substring(0, Math.min(40, name.length()));
        final Path lib = FakeCudaLib.build("libfakecuda-direct-perf.so");
        final String java = ProcessHandle.current().info().command().orElse("java");
        final Path log = lib.resolveSibling(test + ".log");
        final List<String> cmd = new java.util.ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
            "-D" + CudaDriver.LIBRARY_PROPERTY + "=" + lib, "-cp", System.getProperty("java.class.path"),
            Main.class.getName()));
        cmd.addAll(List.of(args));
        final ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put("FAKECUDA_DEFER", "1");
        final Process p = pb.start();
        if (!p.waitFor(180, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("timed out after 180 s waiting for " + String.join(" ", args) + ": "
                + Files.readString(log));
        }
        final String out = Files.readString(log);
        assertEquals(0, p.exitValue(), out);
        return out;
    }

    private static Path built;

    private static String probe(final String mode, final Map<String, String> env, final String... jvm)
        throws Exception {
        final Path lib;
        synchronized (CudaNicDirectTest.class) {
            // built once per run, never taken from an earlier build: a stale double would test the old protocol
            if (built == null) {
                built = FakeCudaLib.build("libfakecuda-direct.so");
            }
            lib = built;
        }
        final Path dir = lib.getParent();
        final String java = ProcessHandle.current().info().command().orElse("java");
        final Path log = dir.resolve("direct-" + mode + ".log");
        final List<String> cmd = new java.util.ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
            "-D" + CudaDriver.LIBRARY_PROPERTY + "=" + lib));
        cmd.addAll(List.of(jvm));
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), NicDirectProbe.class.getName(), mode));
        final ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put("FAKECUDA_DEFER", "1");
        pb.environment().putAll(env);
        final Process p = pb.start();
        if (!p.waitFor(180, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("timed out after 180 s waiting for the probe: " + Files.readString(log));
        }
        final String out = Files.readString(log);
        assertEquals(0, p.exitValue(), out);
        return out;
    }
}
