/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class VerbsTourTest {
    @Test
    void everyOpcodeAndFlagPassesAndEachStepIsReportedAsItFinishes() {
        final List<VerbsTour.Step> heard = new ArrayList<>();
        final List<String> setup = new ArrayList<>();
        final VerbsTour.Result r = VerbsTour.run(s -> {
            assertTrue(heard.isEmpty(), "the setup comes before the first step");
            setup.add(s);
        }, heard::add);
        assertEquals(r.steps(), heard);
        assertEquals(List.of(r.setup()), setup);
        assertEquals(10, r.steps().size());
        assertTrue(r.allPassed(), r::toString);
        assertEquals(10, r.passed());
        for (final String op : List.of("RDMA_WRITE ", "INLINE", "FENCE", "SOLICITED", "RDMA_WRITE_WITH_IMM",
            "SEND ", "SEND_WITH_IMM", "RDMA_READ", "ATOMIC_FETCH_AND_ADD", "ATOMIC_CMP_AND_SWP", "unsignaled")) {
            assertTrue(r.steps().stream().anyMatch(s -> s.name().contains(op)), () -> "no step with " + op);
        }
        assertTrue(r.setup().contains("in RTS, MTU 4096"), r.setup());
        final VerbsTour.Step atomic = r.steps().get(8);
        assertEquals("ATOMIC_FETCH_AND_ADD", atomic.name());
        assertTrue(atomic.detail().endsWith("fetched 40, remote 40 -> 42"), atomic.detail());
        // CQ events: a completion-channel wait, and a solicited-only arm that ignores an unsolicited SEND
        final VerbsTour.Step send = r.steps().get(4);
        assertEquals("SEND 5000 B, completion-channel event", send.name());
        assertTrue(send.detail().contains("B: getCqEvent returned the receive CQ (event acknowledged), then wc "
            + "SUCCESS/RECV wr_id=601 byte_len=5000"), send.detail());
        final VerbsTour.Step solicited = r.steps().get(5);
        assertTrue(solicited.detail().startsWith("unsolicited SEND: B's completion (wr_id=700) raised no event; "),
            solicited.detail());
        assertTrue(solicited.detail().contains("B: getCqEvent returned the receive CQ (event acknowledged), then wc "
            + "SUCCESS/RECV wr_id=701 byte_len=100 imm=0xcafebabe"), solicited.detail());
        assertEquals(new VerbsTour.Capabilities(true, true), r.capabilities());
        // no step says a capability is missing that the tour just showed
        for (final VerbsTour.Step s : r.steps()) {
            assertFalse(s.detail().contains("not modelled"), s::toString);
        }
    }

    @Test
    void claimsFollowTheCapabilitiesNeverAFixedSentence() {
        assertEquals(List.of(
            "CQ events: reqNotifyCq arms a CQ, its completion channel reports it (getCqEvent, ackCqEvents)",
            "solicited events: a CQ armed for solicited completions wakes on SOLICITED only"),
            new VerbsTour.Capabilities(true, true).claims());
        assertEquals(List.of("CQ events: no completion-channel event was observed",
            "solicited events: no solicited-only event was observed"), new VerbsTour.Capabilities(false, false).claims());
        assertEquals(List.of(
            "CQ events: reqNotifyCq arms a CQ, its completion channel reports it (getCqEvent, ackCqEvents)",
            "solicited events: no solicited-only event was observed"), new VerbsTour.Capabilities(true, false).claims());
    }
}
