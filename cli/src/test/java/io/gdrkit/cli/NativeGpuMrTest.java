/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.gpu.cuda.CudaDriver;
import io.gdrkit.ibverbs.IbvLibrary;
import io.gdrkit.labs.provider.NativeReadiness;
import io.gdrkit.verbs.AccessFlags;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * GPUDirect on a real NIC, against test doubles only: the fake libcuda (src/test/c/fakecuda.c; its "device memory"
 * is host memory and its DMA-BUF fd is /dev/null) and the stub libibverbs (ibverbs/src/test/c/stubverbs.c; it
 * records what it is called with). Each runs in a child JVM, because both libraries are loaded once per process.
 * It shows that the fd cuMemGetHandleForAddressRange returned, offset 0, the buffer's length and its device
 * pointer as iova reach ibv_reg_dmabuf_mr; that where ibv_reg_dmabuf_mr is refused the registration falls back to
 * ibv_reg_mr on the device pointer with the reason recorded; and that perf --provider native --mem gpu:0 runs
 * that path. Also the commands on the doubles: perf -R --provider native through the stub librdmacm
 * (ibverbs/src/test/c/stubrdmacm.c) with the calls it made printed, and visibility --provider native, which
 * registers GPU memory and then ends named. Nothing here touches a NIC or a GPU.
 */
class NativeGpuMrTest {
    private static final Pattern FD = Pattern.compile("CUDA_SUCCESS, fd (\\d+)");
    private static Path dir;
    private static Path cuda;
    private static Path verbs;
    private static Path rdmacm;

    @BeforeAll
    static void build() throws Exception {
        dir = Files.createDirectories(Path.of("target/native-gpu").toAbsolutePath());
        Assumptions.assumeTrue(Files.exists(Path.of("/usr/include/infiniband/verbs.h")),
            "no rdma-core headers (/usr/include/infiniband/verbs.h, Debian's libibverbs-dev)");
        Assumptions.assumeTrue(Files.exists(Path.of("/usr/include/rdma/rdma_cma.h")),
            "no librdmacm headers (/usr/include/rdma/rdma_cma.h, Debian's librdmacm-dev): the librdmacm test double "
                + "includes them");
        cuda = dir.resolve("libfakecuda.so");
        verbs = dir.resolve("libibverbs.so.1.14.0.0"); // the ABI the binding was checked against
        FakeCudaLib.requireBuilt(run(List.of("cc", "-shared", "-fPIC", "-O1", "-o", cuda.toString(),
            Path.of("src/test/c/fakecuda.c").toAbsolutePath().toString()), dir.resolve("cc-cuda.log"), null));
        assertEquals(0, run(List.of("cc", "-shared", "-fPIC", "-O1", "-o", verbs.toString(),
            Path.of("../ibverbs/src/test/c/stubverbs.c").toAbsolutePath().toString()), dir.resolve("cc-verbs.log"),
            null), () -> read(dir.resolve("cc-verbs.log")));
        rdmacm = dir.resolve("librdmacm-stub.so");
        assertEquals(0, run(List.of("cc", "-shared", "-fPIC", "-O1", "-o", rdmacm.toString(),
            Path.of("../ibverbs/src/test/c/stubrdmacm.c").toAbsolutePath().toString()), dir.resolve("cc-cm.log"),
            null), () -> read(dir.resolve("cc-cm.log")));
    }

    @Test
    void perfDashRProviderNativeConnectsThroughLibrdmacm() throws Exception {
        final Path log = dir.resolve("perf-R.log");
        final List<String> cmd = javaCmd(Main.class.getName());
        cmd.add(2, "-Dgdrkit.rdmacm.library=" + rdmacm);
        cmd.addAll(List.of("perf", "write_bw", "--loopback", "--provider", "native", "-R", "-q", "2", "-n", "20",
            "--warmup", "0", "-s", "4096"));
        final int rc = run(cmd, log, null);
        final String out = read(log);
        assertEquals(0, rc, out);
        assertTrue(out.contains("; -R: librdmacm on 127.0.0.1"), out);
        final List<String> cm = out.lines().filter(l -> l.startsWith("# -R: ")).toList();
        assertEquals(1, cm.size(), out);
        final String calls = cm.getFirst();
        assertTrue(calls.startsWith("# -R: rdma_create_event_channel, rdma_create_event_channel, rdma_create_id, "
            + "rdma_bind_addr(/127.0.0.1:"), calls);
        for (final String c : List.of("rdma_listen", "rdma_resolve_addr(/127.0.0.1:",
            "rdma_get_cm_event (awaiting ROUTE_RESOLVED)", "38 bytes of private data)", "rdma_establish",
            "rdma_ack_cm_event (ESTABLISHED, 0 bytes of private data)")) {
            assertTrue(calls.contains(c), c + " in " + calls);
        }
        assertEquals(2, calls.split("rdma_establish").length - 1, "one CM connection per QP (-q 2): " + calls);
    }

    @Test
    void visibilityProviderNativeRegistersGpuMemoryThenEndsNamed() throws Exception {
        final Path log = dir.resolve("visibility.log");
        final List<String> cmd = javaCmd(Main.class.getName());
        cmd.addAll(List.of("visibility", "--provider", "native", "--gpu", "cuda:0"));
        final int rc = run(cmd, log, "eopnotsupp");
        final String out = read(log);
        assertEquals(1, rc, out);
        assertTrue(out.contains("# native provider (libibverbs through FFM): device stub0, port 1 ACTIVE, "
            + "InfiniBand, lid 4660"), out);
        assertTrue(out.contains("# GPU memory registered by PEERMEM: ibv_reg_dmabuf_mr(offset 0, length 2097152"),
            out);
        assertTrue(out.contains("gdrkit visibility: error: " + NativeReadiness.NOT_BUILT + ": visibility "
            + "--provider native"), out);
    }

    private static JsonNode probe(final String dmabufMode) throws Exception {
        final Path log = dir.resolve("probe-" + dmabufMode + ".log");
        final int rc = run(javaCmd(NativeGpuMrProbe.class.getName()), log, dmabufMode);
        final String out = read(log);
        assertEquals(0, rc, out);
        final String json = out.lines().filter(l -> l.startsWith("{")).reduce((x, y) -> y).orElseThrow(
            () -> new AssertionError("no JSON line: " + out));
        return new ObjectMapper().readTree(json);
    }

    @Test
    void theExportedFdOffsetAndLengthReachIbvRegDmabufMr() throws Exception {
        final JsonNode r = probe("supported");
        assertEquals("stub0", r.get("device").asText());
        assertEquals("DMABUF", r.get("path").asText(), r::toString);
        assertTrue(r.get("fallbackReason").isNull(), r::toString);
        final Matcher m = FD.matcher(r.get("evidence").asText());
        assertTrue(m.find(), "the export's fd in the evidence: " + r);
        assertEquals(Integer.parseInt(m.group(1)), r.get("dmabufFd").asInt(), "the fd reached ibv_reg_dmabuf_mr");
        assertEquals(1, r.get("dmabufCalls").asInt());
        assertEquals(0, r.get("dmabufOffset").asLong());
        assertEquals(NativeReadiness.GPU_BYTES, r.get("dmabufLength").asLong());
        assertEquals(r.get("mrAddress").asLong(), r.get("dmabufIova").asLong(), "iova = the device pointer");
        assertEquals(0, r.get("dmabufIova").asLong() % 4096, "a cuMemAlloc pointer");
        assertEquals(AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE, r.get("dmabufAccess").asInt());
        assertEquals(0, r.get("regMrCalls").asInt(), "no ibv_reg_mr when DMA-BUF worked");
        assertTrue(r.get("evidence").asText().contains("ibv_reg_dmabuf_mr(offset 0, length 2097152, iova 0x"
            + Long.toHexString(r.get("dmabufIova").asLong()) + ", fd " + m.group(1) + ") = lkey 0x"), r::toString);
    }

    @Test
    void aRefusedDmabufFallsBackToIbvRegMrOnTheDevicePointerWithTheReason() throws Exception {
        final JsonNode r = probe("eopnotsupp");
        assertEquals("PEERMEM", r.get("path").asText(), r::toString);
        assertEquals(1, r.get("dmabufCalls").asInt(), "DMA-BUF was tried first");
        assertEquals(1, r.get("regMrCalls").asInt());
        assertEquals(r.get("dmabufIova").asLong(), r.get("regMrAddr").asLong(), "ibv_reg_mr got the device pointer");
        assertEquals(r.get("mrAddress").asLong(), r.get("regMrAddr").asLong());
        assertEquals(NativeReadiness.GPU_BYTES, r.get("regMrLength").asLong());
        assertEquals(AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE, r.get("regMrAccess").asInt());
        final String reason = r.get("fallbackReason").asText();
        assertTrue(reason.startsWith("ibv_reg_dmabuf_mr(offset 0, length 2097152, iova 0x"), reason);
        assertTrue(reason.contains("failed: EOPNOTSUPP"), reason);
        assertTrue(r.get("evidence").asText().contains("; fell back to ibv_reg_mr(device pointer 0x"
            + Long.toHexString(r.get("regMrAddr").asLong()) + ", 2097152) = lkey 0x"), r::toString);
    }

    /** The command runs the same path: a native loopback whose MRs are GPU memory (on the doubles, not hardware). */
    @Test
    void perfProviderNativeMemGpuRegistersThroughDmabuf() throws Exception {
        final Path log = dir.resolve("perf.log");
        final List<String> cmd = javaCmd(Main.class.getName());
        cmd.addAll(List.of("perf", "write_bw", "--loopback", "--provider", "native", "--mem", "gpu:0", "-n", "20",
            "--warmup", "0", "-s", "4096"));
        final int rc = run(cmd, log, "supported");
        final String out = read(log);
        assertEquals(0, rc, out);
        assertTrue(out.contains("# native provider (libibverbs through FFM): device stub0"), out);
        assertTrue(out.contains("# GPU memory: DMABUF: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED"), out);
        assertTrue(out.contains("ibv_reg_dmabuf_mr(offset 0, length "), out);
    }

    private static List<String> javaCmd(final String main) {
        final String java = ProcessHandle.current().info().command().orElse("java");
        return new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
            "-D" + CudaDriver.LIBRARY_PROPERTY + "=" + cuda, "-D" + IbvLibrary.LIBRARY_PROPERTY + "=" + verbs,
            "-cp", System.getProperty("java.class.path"), main));
    }

    private static String read(final Path p) {
        try {
            return Files.readString(p);
        } catch (final IOException e) {
            return "(unreadable " + p + ": " + e.getMessage() + ")";
        }
    }

    private static int run(final List<String> cmd, final Path log, final String dmabufMode)
        throws IOException, InterruptedException {
        final ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        if (dmabufMode != null) {
            pb.environment().put("STUBVERBS_DMABUF", dmabufMode);
        }
        final Process p;
        try {
            p = pb.start();
        } catch (final IOException e) {
            return 127;
        }
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("timed out after 120 s waiting for " + cmd.get(0) + " (" + log + ")");
        }
        return p.exitValue();
    }
}
