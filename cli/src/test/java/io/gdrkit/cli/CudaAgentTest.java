/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.gpu.cuda.CudaDriver;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The delivery agent's protocol against the libcuda test double, which plays the agent kernel with a host thread
 * over the same descriptor ring ({@link AgentProbe} in a child JVM, {@code gdrkit.cuda.agent=on}): deliveries
 * byte-exact at their completions, the ring wrapping, FENCE on writes that do not continue the one before, a pause
 * and restart around a free, and each fault as its named error, sticky, within the stall time, never a hang; through
 * the NIC a stalled agent is DEVICE_FATAL. Skipped where no {@code cc} builds the double.
 */
class CudaAgentTest {
    private static Path lib;

    @BeforeAll
    static void build() throws Exception {
        lib = FakeCudaLib.build("libfakecuda-agent.so");
    }

    @Test
    void deliveriesAreByteExactAtTheirCompletionsAndTheRingWraps() throws Exception {
        final String out = probe(Map.of("FAKECUDA_AGENT_DELAY_US", "50", "FAKECUDA_DEFER", "1"), "deliver",
            "-Dgdrkit.cuda.agent.stall.ms=20000");
        for (final String check : List.of("WRITE 17 B", "WRITE 4097 B", "WRITE 3145733 B", "24 x 1 MiB WRITE",
            "READ 1048579 B", "READ 2097152 B", "SEND 200000 B", "3000 scattered 64 B writes", "97 writes of 1 to 97 B",
            "a write after a pause")) {
            assertTrue(out.lines().anyMatch(l -> l.startsWith(check)) && out.lines().filter(l -> l.startsWith(check))
                .allMatch(l -> l.contains("byte-exact at completion")), check + ": " + out);
        }
        assertTrue(out.contains("scattered: 3000 of 3000 descriptors fenced")
            || out.contains("scattered: 2999 of 3000 descriptors fenced"), out);
        assertTrue(out.lines().anyMatch(l -> l.matches("pause: stops [1-9][0-9]*, launches [1-9][0-9]*")), out);
        assertTrue(out.contains("small: 96 of 97 writes inline"), out);
        // every span went to the agent (the crossover is above the 128 KiB issue size), none to the copy engine
        assertTrue(out.lines().anyMatch(l -> l.matches(".*agent: [1-9][0-9]* spans by the agent (running|stopped), 16 "
            + "blocks x 256 threads, 1024 slots, [0-9]+ descriptors \\([1-9][0-9]* inline\\), [2-9][0-9]* launches, "
            + "0 by the copy engine")),
            out);
        assertTrue(out.contains("all checks passed"), out);
    }

    @Test
    void largeSpansGoToTheCopyEngineInStreamOrderWithTheAgent() throws Exception {
        final String out = probe(Map.of("FAKECUDA_AGENT_DELAY_US", "20", "FAKECUDA_DEFER", "1"), "deliver",
            "-Dgdrkit.cuda.agent.crossover.bytes=65536", "-Dgdrkit.cuda.agent.stall.ms=20000");
        assertTrue(out.lines().anyMatch(l -> l.matches(".*agent: [1-9][0-9]* spans by the agent.*, [1-9][0-9]* "
            + "by the copy engine")), out);
        assertTrue(out.contains("all checks passed"), out);
    }

    @Test
    void aStalledAgentIsANamedErrorWithinTheStallTimeAndStaysOne() throws Exception {
        final String out = probe(Map.of("FAKECUDA_AGENT", "stall"), "error");
        assertTrue(out.contains("fence 0: GDRKIT_AGENT_STALLED: GDRKIT_AGENT_STALLED: delivery 1 not complete after "
            + "300 ms (gdrkit.cuda.agent.stall.ms)"), out);
        assertTrue(out.contains("fence 1: GDRKIT_AGENT_STALLED"), out);
    }

    @Test
    void aFaultWordIsANamedFault() throws Exception {
        final String out = probe(Map.of("FAKECUDA_AGENT", "fault"), "error");
        assertTrue(out.contains("fence 0: GDRKIT_AGENT_FAULT: GDRKIT_AGENT_FAULT: the delivery agent refused "
            + "descriptor 1 (flags, length or addresses invalid) on CUDA device 0"), out);
        assertTrue(out.contains("fence 1: GDRKIT_AGENT_FAULT"), out);
    }

    @Test
    void aKernelThatDiesIsANamedFaultWithCudasError() throws Exception {
        final String out = probe(Map.of("FAKECUDA_AGENT", "die"), "error");
        assertTrue(out.contains("fence 0: GDRKIT_AGENT_FAULT: GDRKIT_AGENT_FAULT (700): the agent kernel failed: "
            + "CUDA_ERROR_ILLEGAL_ADDRESS with delivery 1 pending"), out);
        assertTrue(out.contains("fence 1: GDRKIT_AGENT_FAULT"), out);
    }

    @Test
    void aCompletionWordOfAnotherSlotIsCorrupt() throws Exception {
        final String out = probe(Map.of("FAKECUDA_AGENT", "corrupt"), "error");
        assertTrue(out.contains("fence 0: GDRKIT_AGENT_CORRUPT: GDRKIT_AGENT_CORRUPT: completion word of slot 0 "
            + "reads 2 (0x2): not a seq of that slot posted so far (last posted 1) on CUDA device 0"), out);
        assertTrue(out.contains("fence 1: GDRKIT_AGENT_CORRUPT"), out);
    }

    @Test
    void throughTheNicAStalledAgentIsDeviceFatal() throws Exception {
        final String out = probe(Map.of("FAKECUDA_AGENT", "stall"), "fatal");
        assertTrue(out.lines().anyMatch(l -> l.contains("DEVICE_FATAL") && l.contains("GDRKIT_AGENT_STALLED")), out);
    }

    @Test
    void autoIsTheAgentAndOffTheCopyEngine() throws Exception {
        final String auto = probe(Map.of(), "deliver", "-Dgdrkit.cuda.agent=auto", "-Dgdrkit.cuda.agent.stall.ms=20000");
        assertTrue(auto.contains("spans by the agent "), auto);
        final String off = probe(Map.of(), "deliver", "-Dgdrkit.cuda.agent=off");
        assertTrue(!off.contains("spans by the agent") && off.contains("fake agent: descriptors 0"), off);
    }

    private static String probe(final Map<String, String> env, final String mode, final String... props)
        throws Exception {
        final Path log = lib.resolveSibling("agent-" + mode + "-" + env.hashCode() + "-" + props.length + ".log");
        final String java = ProcessHandle.current().info().command().orElse("java");
        final List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
            "-D" + CudaDriver.LIBRARY_PROPERTY + "=" + lib, "-Dgdrkit.cuda.agent=on",
            "-Dgdrkit.cuda.agent.stall.ms=300",
            // the agent delivers what the NIC stages: GPU-to-GPU packets out of the NIC's source ring would go to the
            // copy engine instead, so the ring is off here (CudaNicDirectTest runs it)
            "-Dgdrkit.nic.source.ring=false"));
        cmd.addAll(List.of(props));
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), AgentProbe.class.getName(), mode));
        final ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
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
