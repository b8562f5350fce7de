/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.StructLayout;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The ABI self-check: every size and offset the FFM binding uses equals what gcc computes from the installed
 * rdma-core headers. .ci/run installs libibverbs-dev and gcc, so this runs on every fresh CI machine.
 */
class AbiCheckTest {
    private static AbiCheck.Probe probe;

    @BeforeAll
    static void probe() throws Exception {
        probe = AbiCheck.runProbe();
    }

    @Test
    void everyLayoutMatchesTheInstalledHeaders() {
        Assumptions.assumeTrue(probe.unavailable() == null, () -> "ABI check not run: " + probe.unavailable());
        final Map<String, Long> java = AbiCompare.layouts();
        final List<String> bad = AbiCheck.mismatches(probe.values(), java);
        assertTrue(bad.isEmpty(), String.join("\n", bad));
        assertTrue(AbiCompare.compare(probe.values()).passed());
        // every struct the binding defines was measured by the compiler, not only the members it printed
        for (final StructLayout l : IbvLayouts.ALL) {
            final String key = l.name().orElseThrow() + ".sizeof";
            assertEquals(probe.values().get(key), java.get(key), key);
        }
        // the ops-table slots the data path calls through
        assertEquals(probe.values().get("ibv_context.ops.post_send"), IbvLayouts.offset(IbvLayouts.CONTEXT, "ops",
            "post_send"));
        assertEquals(probe.values().get("ibv_context.ops.poll_cq"), IbvLayouts.offset(IbvLayouts.CONTEXT, "ops",
            "poll_cq"));
    }

    @Test
    void libibverbsConstantsMatchTheVerbsApi() {
        Assumptions.assumeTrue(probe.unavailable() == null, () -> "ABI check not run: " + probe.unavailable());
        final Map<String, Long> c = probe.values();
        assertEquals(c.get("IBV_WR_RDMA_WRITE.value"), (long) io.gdrkit.verbs.WrOpcode.RDMA_WRITE);
        assertEquals(c.get("IBV_WR_RDMA_WRITE_WITH_IMM.value"), (long) io.gdrkit.verbs.WrOpcode.RDMA_WRITE_WITH_IMM);
        assertEquals(c.get("IBV_WR_SEND.value"), (long) io.gdrkit.verbs.WrOpcode.SEND);
        assertEquals(c.get("IBV_WR_SEND_WITH_IMM.value"), (long) io.gdrkit.verbs.WrOpcode.SEND_WITH_IMM);
        assertEquals(c.get("IBV_WR_RDMA_READ.value"), (long) io.gdrkit.verbs.WrOpcode.RDMA_READ);
        assertEquals(c.get("IBV_WR_ATOMIC_CMP_AND_SWP.value"), (long) io.gdrkit.verbs.WrOpcode.ATOMIC_CMP_AND_SWP);
        assertEquals(c.get("IBV_WR_ATOMIC_FETCH_AND_ADD.value"),
            (long) io.gdrkit.verbs.WrOpcode.ATOMIC_FETCH_AND_ADD);
        assertEquals(c.get("IBV_QPT_RC.value"), (long) io.gdrkit.verbs.QpType.RC);
        assertEquals(c.get("IBV_QPS_RTS.value"), (long) io.gdrkit.verbs.QpState.RTS);
        if (c.containsKey("RDMA_PS_TCP.value")) {
            assertEquals(c.get("RDMA_PS_TCP.value"), (long) RdmaCm.PS_TCP);
            assertEquals("ESTABLISHED", RdmaCm.eventName(c.get("RDMA_CM_EVENT_ESTABLISHED.value").intValue()));
            assertEquals("TIMEWAIT_EXIT", RdmaCm.eventName(c.get("RDMA_CM_EVENT_TIMEWAIT_EXIT.value").intValue()));
        }
    }

    @Test
    void aStructThatNewerRdmaCoreGrewAtItsEndIsAcceptedOnlyWithinTheRoomAllocated() {
        // rdma-core 50 (the H200 host) prints ibv_port_attr.sizeof 56; rdma-core 44 prints 52; the binding allocates 68
        assertTrue(AbiCompare.mismatches(Map.of("ibv_port_attr.sizeof", 56L), AbiCompare.layouts()).isEmpty());
        assertEquals(List.of("ibv_port_attr.sizeof: C says 72, the FFM layout says 52"),
            AbiCompare.mismatches(Map.of("ibv_port_attr.sizeof", 72L), AbiCompare.layouts()));
        assertEquals(List.of("ibv_port_attr.sizeof: C says 48, the FFM layout says 52"),
            AbiCompare.mismatches(Map.of("ibv_port_attr.sizeof", 48L), AbiCompare.layouts()));
        assertEquals(List.of("ibv_wc.sizeof: C says 52, the FFM layout says 48"),
            AbiCompare.mismatches(Map.of("ibv_wc.sizeof", 52L), AbiCompare.layouts()));
    }

    @Test
    void aDeliberatelyWrongLayoutIsCaught() {
        Assumptions.assumeTrue(probe.unavailable() == null, () -> "ABI check not run: " + probe.unavailable());
        // planted: ibv_wc with vendor_err and byte_len swapped, and slid widened: the check must name each
        final StructLayout wrongWc = CLayout.struct("ibv_wc", JAVA_LONG.withName("wr_id"), JAVA_INT.withName("status"),
            JAVA_INT.withName("opcode"), JAVA_INT.withName("byte_len"), JAVA_INT.withName("vendor_err"),
            JAVA_INT.withName("imm_data"), JAVA_INT.withName("qp_num"), JAVA_INT.withName("src_qp"),
            JAVA_INT.withName("wc_flags"), JAVA_SHORT.withName("pkey_index"), JAVA_INT.withName("slid"),
            JAVA_BYTE.withName("sl"), JAVA_BYTE.withName("dlid_path_bits"));
        final List<String> bad = AbiCheck.mismatches(probe.values(), IbvLayouts.describeAll(List.of(wrongWc)));
        assertTrue(bad.contains("ibv_wc.vendor_err: C says 16, the FFM layout says 20"), String.join("\n", bad));
        assertTrue(bad.contains("ibv_wc.byte_len: C says 20, the FFM layout says 16"), String.join("\n", bad));
        assertTrue(bad.contains("ibv_wc.slid: C says 42, the FFM layout says 44"), String.join("\n", bad));
        assertTrue(bad.contains("ibv_wc.invalidated_rkey: C says 24, the FFM layout has no such member"),
            String.join("\n", bad));
        assertTrue(bad.stream().anyMatch(s -> s.startsWith("ibv_wc.sizeof: C says 48")), String.join("\n", bad));
    }
}
