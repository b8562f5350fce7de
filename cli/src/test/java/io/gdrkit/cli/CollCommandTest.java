/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;

class CollCommandTest {
    private static String[] run(final String... args) {
        final StringWriter out = new StringWriter();
        final StringWriter err = new StringWriter();
        final int rc = Main.execute(args, new PrintWriter(out), new PrintWriter(err));
        return new String[] {Integer.toString(rc), out.toString(), err.toString()};
    }

    @Test
    void printsNcclTestsColumnsWithNothingWrong() {
        final String[] r = run("coll", "allreduce", "--np", "2", "-b", "8", "-e", "4096", "-f", "8", "-n", "1", "-w",
            "0", "--timeout-ms", "30000", "--jit-warmup-ms", "0");
        assertEquals("0", r[0], r[2]);
        assertTrue(r[1].contains("#       size         count      type   redop    root     time   algbw   busbw "
            + "#wrong     time   algbw   busbw #wrong"), r[1]);
        assertTrue(r[1].contains("software NICs (simulated)"), r[1]);
        // every rank on one host: no row goes over NET/IB; the header names both paths, each row its own, and the
        // summary the paths used with the tuning's reasons
        assertTrue(r[1].contains("# paths: shm (shared memory between the ranks of one host, no NIC; host buffers), "
            + "shm+net (shared memory within each host, the transport between hosts), net (NET/IB over software NICs (simulated), injvm fabric)"), r[1]);
        assertTrue(r[1].contains("#wrong    algo  proto path"), r[1]);
        assertTrue(r[1].contains("# direct rounds (rank 0): "), r[1]);
        assertTrue(r[1].contains("# paths used (rank 0): shm\n"), r[1]);
        assertTrue(r[1].contains("# from 8 B (rank 0): direct/LL/shm: auto: "), r[1]);
        r[1].lines().filter(l -> l.matches("\\s+\\d+\\s+\\d+\\s+float.*")).forEach(l ->
            assertTrue(l.endsWith("  direct     LL  shm"), l));
        assertTrue(r[1].contains("# Out of bounds values : 0 OK"), r[1]);
        // the in-JVM fabric keeps the path MTU unless gdrkit.ib.software.mtu says otherwise
        assertTrue(r[1].contains("# NIC MTU (rank 0): the path MTU (gdrkit.ib.software.mtu not set: the default)\n"),
            r[1]);
        // the reduce threads' choice below the table, as the NIC's progress
        assertTrue(r[1].contains("# Reduce threads (rank 0): " + new io.gdrkit.comm.CollContext()
            .conclude().chooseReduceThreadsBeside(2, 1).describe() + "\n"), r[1]);
        // 8, 64, 512, 4096: one row each, type float, redop sum, root -1, zero wrong out-of-place and in-place
        final long rows = r[1].lines().filter(l -> l.matches("\\s+\\d+\\s+\\d+\\s+float\\s+sum\\s+-1\\s.*")).count();
        assertEquals(4, rows, r[1]);
        r[1].lines().filter(l -> l.matches("\\s+\\d+\\s+\\d+\\s+float.*")).forEach(l -> {
            final String[] f = l.trim().split("\\s+");
            assertEquals("0", f[8], l);
            assertEquals("0", f[12], l);
        });
    }

    @Test
    void jsonHasTheIssuesFields() throws Exception {
        final String[] r = run("coll", "allgather", "--np", "3", "--transport", "socket", "-d", "half", "-b", "96",
            "-e", "96", "-n", "1", "-w", "0", "--json", "--jit-warmup-ms", "0");
        assertEquals("0", r[0], r[2]);
        final JsonNode o = new ObjectMapper().readTree(r[1].lines().filter(l -> l.startsWith("{")).findFirst()
            .orElseThrow());
        for (final String k : new String[] {"op", "bytes", "time_us", "algbw_gbs", "busbw_gbs", "wrong", "np",
            "transport", "fabric", "simulated"}) {
            assertTrue(o.has(k), k + " missing in " + o);
        }
        assertEquals("all_gather", o.get("op").asText());
        assertEquals(96, o.get("bytes").asLong());
        assertEquals(3, o.get("np").asInt());
        assertEquals("socket", o.get("transport").asText());
        assertEquals("none (SocketTransport: no software NIC)", o.get("nic_mtu").asText());
        assertEquals(0, o.get("wrong").asLong());
        assertFalse(o.has("gpu_shared_by") || o.has("mps"), "host memory: no GPU to share: " + o);
        final io.gdrkit.comm.ParallelReducer.Choice want = new io.gdrkit.comm.CollContext()
            .conclude().chooseReduceThreadsBeside(3, 1);
        assertEquals(want.threads(), o.get("reduce_threads").asInt(), o.toString());
        assertEquals(want.minBytes(), o.get("reduce_parallel_bytes").asInt(), o.toString());
        assertEquals(want.reason(), o.get("reduce_threads_why").asText(), o.toString());
        // the tuning's choice: every rank on one host, so the shm path, whatever the transport
        assertEquals("direct", o.get("algo").asText(), o.toString());
        assertEquals("LL", o.get("proto").asText(), o.toString());
        assertEquals("shm", o.get("path").asText(), o.toString());
        assertTrue(o.get("algo_why").asText().startsWith("auto: data moves in direct rounds"), o.toString());
    }

    @Test
    void badInputIsANamedErrorAndNonZero() {
        final String[] type = run("coll", "allreduce", "-d", "int16", "-b", "8", "-e", "8");
        assertEquals("2", type[0]);
        assertTrue(type[2].contains("'int16' is not one of int8, int32, int64, half, bfloat16, float, double"),
            type[2]);
        final String[] op = run("coll", "allsum");
        assertEquals("2", op[0]);
        assertTrue(op[2].contains("'allsum' is not one of allreduce, allgather, reduce-scatter, broadcast, reduce, "
            + "alltoall, sendrecv"), op[2]);
        final String[] size = run("coll", "allreduce", "-b", "8", "-e", "3G");
        assertEquals("2", size[0]);
        assertTrue(size[2].contains("over 2 GiB"), size[2]);
        final String[] mem = run("coll", "allreduce", "--mem", "gpu");
        assertEquals("2", mem[0]);
        assertTrue(mem[2].contains("--mem gpu needs --gpu SPEC"), mem[2]);
        final String[] gpu = run("coll", "allreduce", "--gpu", "sim:h200");
        assertEquals("2", gpu[0]);
        assertTrue(gpu[2].contains("--gpu needs --mem gpu"), gpu[2]);
        final String[] kind = run("coll", "allreduce", "--mem", "hbm");
        assertEquals("2", kind[0]);
        assertTrue(kind[2].contains("Invalid value for option '--mem': 'hbm' is not host, gpu or gpu:N"), kind[2]);
    }

    @Test
    void gpuBuffersOnASimulatedGpuSayWhatWasReal() throws Exception {
        final String[] r = run("coll", "reduce-scatter", "--np", "2", "--mem", "gpu", "--gpu", "sim:h200", "-b",
            "4096", "-e", "4096", "-n", "1", "-w", "0", "--json", "--jit-warmup-ms", "0");
        assertEquals("0", r[0], r[2]);
        final JsonNode o = new ObjectMapper().readTree(r[1].lines().filter(l -> l.startsWith("{")).findFirst()
            .orElseThrow());
        assertEquals(0, o.get("wrong").asLong());
        assertEquals(0, o.get("inplace_wrong").asLong());
        assertEquals("gpu", o.get("mem").asText());
        assertTrue(o.get("gpu_simulated").asBoolean());
        assertTrue(o.get("simulated").asBoolean());
        assertEquals("sim-sm-workers", o.get("reduce_on").asText());
        // a simulated H200 beside a software NIC with DMA-BUF: the gates allow GDR, nothing bounces
        assertEquals("gdr", o.get("data_path").asText());
        assertTrue(o.get("gdr").asBoolean(), o.toString());
        assertEquals("DMA-BUF", o.get("gdr_mechanism").asText());
        assertEquals("gpu", o.get("nic_mr").asText());
        assertEquals(0, o.get("bounced_bytes_rank0").asLong(-1));
        assertTrue(o.get("gdr_reason").asText().contains("GPU Direct RDMA Enabled"), o.toString());
        assertTrue(o.get("flush_evidence").asText().contains("9.0"), o.toString());
        assertTrue(o.get("gdr_settings").toString().contains("NCCL_NET_GDR_LEVEL=P2C (default)"), o.toString());
        assertTrue(o.get("gdr_evidence").size() > 4, o.toString());
        assertTrue(o.get("kernel_launches_rank0").asLong() > 0, o.toString());
        // each rank has its own simulated GPU and no CUDA context: sharing and MPS do not apply, and say so
        assertEquals("not applicable", o.get("gpu_shared_by").asText(), o.toString());
        assertEquals("not applicable", o.get("mps").asText(), o.toString());
        assertEquals("not-applicable", o.get("gpu_sharing").asText(), o.toString());
        assertTrue(o.get("gpu_sharing_evidence").asText().startsWith("not applicable: simulated GPU"), o.toString());
        assertFalse(o.has("gpu_sharing_note"), o.toString());
    }

    @Test
    void theTextOutputSaysWhetherTheNicTouchedGpuMemory() {
        final String[] r = run("coll", "allreduce", "--np", "2", "--mem", "gpu", "--gpu", "sim:h200", "-b", "4096",
            "-e", "4096", "-n", "1", "-w", "0", "--jit-warmup-ms", "0");
        assertEquals("0", r[0], r[2]);
        assertTrue(r[1].contains("# GDR (rank 0): on -- GDR on, DMA-BUF, no flush: GPU Direct RDMA Enabled"), r[1]);
        assertTrue(r[1].contains("data path gdr: NIC registrations over gpu memory, 0 bytes bounced"), r[1]);
        assertTrue(r[1].contains("#   settings: NCCL_NET_GDR_LEVEL=P2C (default)"), r[1]);
        assertTrue(r[1].contains("# GPU sharing (rank 0): not applicable: simulated GPU: each rank opens its own"),
            r[1]);
        assertFalse(r[1].contains("# note:"), r[1]);
        // NET/Socket has no GPU pointer support: the NET gate, and the bytes bounced are counted
        final String[] s = run("coll", "allreduce", "--np", "2", "--transport", "socket", "--mem", "gpu", "--gpu",
            "sim:h200", "-b", "4096", "-e", "4096", "-n", "1", "-w", "0", "--jit-warmup-ms", "0");
        assertEquals("0", s[0], s[2]);
        assertTrue(s[1].contains("# GDR (rank 0): off -- GDR off (NET)"), s[1]);
        assertTrue(s[1].contains("data path host-bounce: NIC registrations over host memory"), s[1]);
        assertFalse(s[1].contains(" 0 bytes bounced"), s[1]);
    }
}
