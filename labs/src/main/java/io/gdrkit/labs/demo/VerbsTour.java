/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.demo;

import io.gdrkit.labs.perf.Deadline;
import io.gdrkit.labs.perf.Loopback;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The demo's verbs tour: two software NICs in this JVM, every RC opcode and send flag once, each result checked byte
 * for byte and by its completion (status, opcode, wr_id, length, immediate). Returns one {@link Step} record per
 * step; the CLI prints them.
 */
public final class VerbsTour {
    private static final long TIMEOUT_NS = 10_000_000_000L;
    private static final long BUF = 1 << 20;

    /**
     * One step of the tour.
     *
     * @param name   the opcode and flags, e.g. "RDMA_WRITE 48 B, INLINE|SIGNALED"
     * @param ok     every check held
     * @param detail what was verified, or what failed
     */
    public record Step(String name, boolean ok, String detail) {
    }

    /**
     * What the tour showed the NICs do, each flag set only when a step observed it (never assumed): the demo's
     * sentences about CQ events come from here, so they cannot outlive the behaviour they describe.
     *
     * @param completionEvents a CQ armed with reqNotifyCq raised one event on its completion channel, returned by
     *                         getCqEvent and acknowledged
     * @param solicitedEvents  a CQ armed for solicited completions only stayed silent for an unsolicited SEND and
     *                         raised its event for a SOLICITED one
     */
    public record Capabilities(boolean completionEvents, boolean solicitedEvents) {
        /** The sentences the demo prints about CQ events, one per capability, true to the flags. */
        public List<String> claims() {
            return List.of(
                completionEvents
                    ? "CQ events: reqNotifyCq arms a CQ, its completion channel reports it (getCqEvent, ackCqEvents)"
                    : "CQ events: no completion-channel event was observed",
                solicitedEvents
                    ? "solicited events: a CQ armed for solicited completions wakes on SOLICITED only"
                    : "solicited events: no solicited-only event was observed");
        }
    }

    /**
     * The tour's outcome.
     *
     * @param setup        the two NICs and QPs, as set up
     * @param steps        each step in order
     * @param capabilities what the steps observed about CQ events
     */
    public record Result(String setup, List<Step> steps, Capabilities capabilities) {
        public long passed() {
            return steps.stream().filter(Step::ok).count();
        }

        public boolean allPassed() {
            return passed() == steps.size();
        }
    }

    /** A failed check inside a step. */
    static final class CheckFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        CheckFailed(final String message) {
            super(message, null, false, false);
        }
    }

    @FunctionalInterface
    private interface Body {
        String run();
    }

    private Loopback lb;
    private final WorkCompletion[] wcs = {new WorkCompletion()};
    private long nextWrId = 1;
    private boolean sawCompletionEvent;
    private boolean sawSolicitedEvent;

    private VerbsTour() {
    }

    /** Runs the tour; {@code each} (may be null) hears of every step as it finishes, for progress. */
    public static Result run(final Consumer<Step> each) {
        return run(null, each);
    }

    /** Also tells {@code setupDone} (may be null) the setup line once both QPs are in RTS, before the first step. */
    public static Result run(final Consumer<String> setupDone, final Consumer<Step> each) {
        return new VerbsTour().tour(setupDone, each);
    }

    private Result tour(final Consumer<String> setupDone, final Consumer<Step> each) {
        final List<Step> steps = new ArrayList<>();
        try (Loopback l = new Loopback(SoftNicContext.ProgressMode.INVOKER, 1, BUF, 128, 128, 256, 4096)) {
            lb = l;
            final String setup = l.a.dev.name() + " (lid " + l.a.dev.lid() + ") <-> " + l.b.dev.name() + " (lid "
                + l.b.dev.lid() + "), RC QP " + l.a.qps[0].qpNum() + " <-> " + l.b.qps[0].qpNum()
                + " in RTS, MTU 4096, 1 MiB MR per side";
            if (setupDone != null) {
                setupDone.accept(setup);
            }
            final Object[][] bodies = {
                {"RDMA_WRITE 65536 B, SIGNALED", (Body) this::write},
                {"RDMA_WRITE 48 B, INLINE|SIGNALED", (Body) this::writeInline},
                {"RDMA_WRITE unsignaled + RDMA_WRITE SIGNALED", (Body) this::unsignaled},
                {"RDMA_WRITE_WITH_IMM 5000 B", (Body) this::writeWithImm},
                {"SEND 5000 B, completion-channel event", (Body) this::send},
                {"SEND, then SEND_WITH_IMM 100 B, SOLICITED, on a CQ armed for solicited events",
                    (Body) this::sendImmSolicited},
                {"RDMA_READ 300000 B", (Body) this::read},
                {"RDMA_READ then RDMA_WRITE|FENCE on the same bytes", (Body) this::fence},
                {"ATOMIC_FETCH_AND_ADD", (Body) this::fetchAdd},
                {"ATOMIC_CMP_AND_SWP (match, then mismatch)", (Body) this::cmpSwap},
            };
            for (final Object[] b : bodies) {
                final String name = (String) b[0];
                Step step;
                try {
                    step = new Step(name, true, ((Body) b[1]).run());
                } catch (final CheckFailed | IllegalStateException | Deadline.TimeoutError e) {
                    step = new Step(name, false, e.getMessage());
                }
                steps.add(step);
                if (each != null) {
                    each.accept(step);
                }
            }
            return new Result(setup, List.copyOf(steps), new Capabilities(sawCompletionEvent, sawSolicitedEvent));
        }
    }

    // ---------------- steps ----------------

    private String write() {
        final int n = 65536;
        fill(lb.a.buf.asSlice(0, n), 1);
        final long id = post(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
            .sge(lb.a.mr, 0, n).remote(lb.b.mr.address() + 4096, lb.b.mr.rkey()));
        final String wc = expect(lb.a.scq, id, WcOpcode.RDMA_WRITE, "WRITE completion");
        same(lb.a.buf.asSlice(0, n), lb.b.buf.asSlice(4096, n), "B+4096");
        return wc + "; " + n + " bytes verified at B+4096";
    }

    private String writeInline() {
        final int n = 48;
        fill(lb.a.buf.asSlice(0, n), 2);
        final MemorySegment expected = copyOf(lb.a.buf.asSlice(0, n));
        final long id = post(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE)
            .flags(SendFlags.SIGNALED | SendFlags.INLINE).sge(lb.a.mr, 0, n)
            .remote(lb.b.mr.address() + 200_000, lb.b.mr.rkey()));
        // Inline data is copied at post time, so the source may change right after postSend returns.
        fill(lb.a.buf.asSlice(0, n), 99);
        final String wc = expect(lb.a.scq, id, WcOpcode.RDMA_WRITE, "inline WRITE completion");
        same(expected, lb.b.buf.asSlice(200_000, n), "B+200000");
        return wc + "; " + n + " bytes verified (source overwritten after post: inline copied at post time)";
    }

    private String unsignaled() {
        fill(lb.a.buf.asSlice(0, 1000), 3);
        final long quiet = nextWrId++;
        lb.a.qps[0].postSend(new SendWorkRequest().wrId(quiet).opcode(WrOpcode.RDMA_WRITE).flags(0)
            .sge(lb.a.mr, 0, 500).remote(lb.b.mr.address() + 300_000, lb.b.mr.rkey()));
        final long id = post(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
            .sge(lb.a.mr, 500, 500).remote(lb.b.mr.address() + 300_500, lb.b.mr.rkey()));
        final String wc = expect(lb.a.scq, id, WcOpcode.RDMA_WRITE, "signaled WRITE completion");
        same(lb.a.buf.asSlice(0, 1000), lb.b.buf.asSlice(300_000, 1000), "B+300000");
        settle();
        if (lb.a.scq.poll(wcs) != 0) {
            throw new CheckFailed("unexpected extra completion " + wcs[0] + " for the unsignaled WRITE");
        }
        return "one completion (" + wc + ") for two WRITEs; 1000 bytes verified";
    }

    private String writeWithImm() {
        final int n = 5000;
        lb.b.qps[0].postRecv(new RecvWorkRequest().wrId(501).sge(lb.b.mr, 0, 0));
        fill(lb.a.buf.asSlice(0, n), 4);
        final long id = post(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
            .imm(0x1234ABCD).sge(lb.a.mr, 0, n).remote(lb.b.mr.address() + 400_000, lb.b.mr.rkey()));
        final String wc = expect(lb.a.scq, id, WcOpcode.RDMA_WRITE, "WRITE_WITH_IMM completion");
        final WorkCompletion r = await(lb.b.rcq, "B's RECV_RDMA_WITH_IMM completion");
        check(r.status == WcStatus.SUCCESS && r.opcode == WcOpcode.RECV_RDMA_WITH_IMM && r.wrId == 501,
            "B's completion " + r);
        check(r.hasImm() && r.immData == 0x1234ABCD && r.byteLen == n, "B's completion imm/len " + r);
        same(lb.a.buf.asSlice(0, n), lb.b.buf.asSlice(400_000, n), "B+400000");
        return wc + "; B: " + desc(r) + " imm=0x1234abcd; " + n + " bytes verified";
    }

    private String send() {
        final int n = 5000;
        lb.b.qps[0].postRecv(new RecvWorkRequest().wrId(601).sge(lb.b.mr, 500_000, 8192));
        fill(lb.a.buf.asSlice(0, n), 5);
        // armed before the SEND: an event reports completions added after reqNotifyCq only
        lb.b.rcq.reqNotifyCq(false);
        final long id = post(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
            .sge(lb.a.mr, 0, n));
        final String wc = expect(lb.a.scq, id, WcOpcode.SEND, "SEND completion");
        final String event = awaitEvent("B's completion event");
        final WorkCompletion r = await(lb.b.rcq, "B's RECV completion");
        check(r.status == WcStatus.SUCCESS && r.opcode == WcOpcode.RECV && r.wrId == 601 && r.byteLen == n
            && !r.hasImm(), "B's completion " + r);
        same(lb.a.buf.asSlice(0, n), lb.b.buf.asSlice(500_000, n), "B's receive buffer");
        sawCompletionEvent = true;
        return wc + "; B: " + event + ", then " + desc(r) + "; " + n + " bytes verified in the receive buffer";
    }

    private String sendImmSolicited() {
        final int n = 100;
        lb.b.qps[0].postRecv(new RecvWorkRequest().wrId(700).sge(lb.b.mr, 516_000, 4096));
        lb.b.qps[0].postRecv(new RecvWorkRequest().wrId(701).sge(lb.b.mr, 520_000, 4096));
        lb.b.rcq.reqNotifyCq(true);
        // an unsolicited SEND first: its completion must not wake a CQ armed for solicited completions
        fill(lb.a.buf.asSlice(0, n), 16);
        final long plain = post(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
            .sge(lb.a.mr, 0, n));
        expect(lb.a.scq, plain, WcOpcode.SEND, "unsolicited SEND completion");
        final WorkCompletion quiet = await(lb.b.rcq, "B's RECV completion of the unsolicited SEND");
        check(quiet.status == WcStatus.SUCCESS && quiet.wrId == 700, "B's completion " + quiet);
        final io.gdrkit.verbs.CompletionQueue early = lb.b.channel.getCqEvent(0);
        if (early != null) {
            early.ackCqEvents(1);
            throw new CheckFailed("a completion event for the unsolicited SEND on a CQ armed for solicited only");
        }
        fill(lb.a.buf.asSlice(0, n), 6);
        final long id = post(new SendWorkRequest().opcode(WrOpcode.SEND_WITH_IMM)
            .flags(SendFlags.SIGNALED | SendFlags.SOLICITED).imm(0xCAFEBABE).sge(lb.a.mr, 0, n));
        final String wc = expect(lb.a.scq, id, WcOpcode.SEND, "SEND_WITH_IMM completion");
        final String event = awaitEvent("B's solicited completion event");
        final WorkCompletion r = await(lb.b.rcq, "B's RECV completion");
        check(r.status == WcStatus.SUCCESS && r.opcode == WcOpcode.RECV && r.wrId == 701 && r.byteLen == n
            && r.hasImm() && r.immData == 0xCAFEBABE, "B's completion " + r);
        same(lb.a.buf.asSlice(0, n), lb.b.buf.asSlice(520_000, n), "B's receive buffer");
        sawSolicitedEvent = true;
        return "unsolicited SEND: B's completion (wr_id=700) raised no event; " + wc + "; B: " + event + ", then "
            + desc(r) + " imm=0xcafebabe; " + n + " bytes verified";
    }

    /** Waits on B's completion channel for its receive CQ's event and acknowledges it. */
    private String awaitEvent(final String what) {
        final io.gdrkit.verbs.CompletionQueue cq = lb.b.channel.getCqEvent(TIMEOUT_NS);
        if (cq == null) {
            throw new Deadline.TimeoutError("timed out after 10 s waiting for " + what);
        }
        cq.ackCqEvents(1);
        check(cq == lb.b.rcq, what + ": the event names another CQ");
        return "getCqEvent returned the receive CQ (event acknowledged)";
    }

    private String read() {
        final int n = 300_000;
        fill(lb.b.buf.asSlice(600_000, n), 7);
        final long id = post(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
            .sge(lb.a.mr, 100_000, n).remote(lb.b.mr.address() + 600_000, lb.b.mr.rkey()));
        final WorkCompletion wc = awaitFor(lb.a.scq, id, "READ completion");
        check(wc.status == WcStatus.SUCCESS && wc.opcode == WcOpcode.RDMA_READ && wc.byteLen == n, "" + wc);
        same(lb.b.buf.asSlice(600_000, n), lb.a.buf.asSlice(100_000, n), "A+100000");
        return desc(wc) + "; " + n + " bytes verified at A+100000";
    }

    private String fence() {
        final int n = 4096;
        final long region = 950_000;
        fill(lb.b.buf.asSlice(region, n), 8);
        final MemorySegment before = copyOf(lb.b.buf.asSlice(region, n));
        fill(lb.a.buf.asSlice(0, n), 9);
        final long readId = nextWrId++;
        final long writeId = nextWrId++;
        final SendWorkRequest write = new SendWorkRequest().wrId(writeId).opcode(WrOpcode.RDMA_WRITE)
            .flags(SendFlags.SIGNALED | SendFlags.FENCE).sge(lb.a.mr, 0, n)
            .remote(lb.b.mr.address() + region, lb.b.mr.rkey());
        lb.a.qps[0].postSend(new SendWorkRequest().wrId(readId).opcode(WrOpcode.RDMA_READ)
            .flags(SendFlags.SIGNALED).sge(lb.a.mr, 8192, n).remote(lb.b.mr.address() + region, lb.b.mr.rkey())
            .next(write));
        final WorkCompletion r = awaitFor(lb.a.scq, readId, "READ completion");
        check(r.status == WcStatus.SUCCESS && r.opcode == WcOpcode.RDMA_READ, "READ " + r);
        final WorkCompletion w = awaitFor(lb.a.scq, writeId, "fenced WRITE completion");
        check(w.status == WcStatus.SUCCESS && w.opcode == WcOpcode.RDMA_WRITE, "WRITE " + w);
        same(before, lb.a.buf.asSlice(8192, n), "READ result (old bytes)");
        same(lb.a.buf.asSlice(0, n), lb.b.buf.asSlice(region, n), "B+950000 (new bytes)");
        return "READ returned the " + n + " old bytes, then the fenced WRITE replaced them; both completions "
            + "SUCCESS, in order";
    }

    private String fetchAdd() {
        lb.b.buf.set(ValueLayout.JAVA_LONG, 1_000_000, 40);
        final long id = post(new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).flags(SendFlags.SIGNALED)
            .sge(lb.a.mr, 16_384, 8).remote(lb.b.mr.address() + 1_000_000, lb.b.mr.rkey()).atomic(2, 0));
        final String wc = expect(lb.a.scq, id, WcOpcode.FETCH_ADD, "FETCH_ADD completion");
        final long fetched = lb.a.buf.get(ValueLayout.JAVA_LONG, 16_384);
        final long now = lb.b.buf.get(ValueLayout.JAVA_LONG, 1_000_000);
        check(fetched == 40 && now == 42, "fetched " + fetched + " (want 40), remote now " + now + " (want 42)");
        return wc + "; fetched 40, remote 40 -> 42";
    }

    private String cmpSwap() {
        lb.b.buf.set(ValueLayout.JAVA_LONG, 1_000_008, 42);
        final long id = post(new SendWorkRequest().opcode(WrOpcode.ATOMIC_CMP_AND_SWP).flags(SendFlags.SIGNALED)
            .sge(lb.a.mr, 16_392, 8).remote(lb.b.mr.address() + 1_000_008, lb.b.mr.rkey()).atomic(42, 99));
        final String wc = expect(lb.a.scq, id, WcOpcode.COMP_SWAP, "CMP_AND_SWP completion");
        long fetched = lb.a.buf.get(ValueLayout.JAVA_LONG, 16_392);
        long now = lb.b.buf.get(ValueLayout.JAVA_LONG, 1_000_008);
        check(fetched == 42 && now == 99, "match: fetched " + fetched + " (want 42), remote " + now + " (want 99)");
        final long id2 = post(new SendWorkRequest().opcode(WrOpcode.ATOMIC_CMP_AND_SWP).flags(SendFlags.SIGNALED)
            .sge(lb.a.mr, 16_400, 8).remote(lb.b.mr.address() + 1_000_008, lb.b.mr.rkey()).atomic(1, 5));
        expect(lb.a.scq, id2, WcOpcode.COMP_SWAP, "second CMP_AND_SWP completion");
        fetched = lb.a.buf.get(ValueLayout.JAVA_LONG, 16_400);
        now = lb.b.buf.get(ValueLayout.JAVA_LONG, 1_000_008);
        check(fetched == 99 && now == 99, "mismatch: fetched " + fetched + " (want 99), remote " + now
            + " (want 99, untouched)");
        return wc + "; 42 == 42: swapped to 99; then 1 != 99: fetched 99, remote untouched";
    }

    // ---------------- helpers ----------------

    private long post(final SendWorkRequest wr) {
        final long id = nextWrId++;
        lb.a.qps[0].postSend(wr.wrId(id));
        return id;
    }

    private String expect(final io.gdrkit.verbs.CompletionQueue cq, final long wrId, final int opcode,
                          final String what) {
        final WorkCompletion wc = awaitFor(cq, wrId, what);
        check(wc.status == WcStatus.SUCCESS && wc.opcode == opcode, what + ": " + wc);
        return desc(wc);
    }

    private WorkCompletion awaitFor(final io.gdrkit.verbs.CompletionQueue cq, final long wrId, final String what) {
        final WorkCompletion wc = await(cq, what);
        check(wc.wrId == wrId, what + ": expected wr_id " + wrId + ", got " + wc);
        return wc;
    }

    private WorkCompletion await(final io.gdrkit.verbs.CompletionQueue cq, final String what) {
        final long deadline = System.nanoTime() + TIMEOUT_NS;
        while (cq.poll(wcs) == 0) {
            lb.progress();
            if (System.nanoTime() > deadline) {
                throw new Deadline.TimeoutError("timed out after 10 s waiting for " + what);
            }
        }
        final WorkCompletion copy = new WorkCompletion();
        copy.copyFrom(wcs[0]);
        return copy;
    }

    /** Runs the NICs a while so that a completion that should not exist would have shown up. */
    private void settle() {
        for (int i = 0; i < 1000; i++) {
            lb.driver.progress();
        }
    }

    private static String desc(final WorkCompletion wc) {
        return "wc " + WcStatus.name(wc.status) + "/" + WcOpcode.name(wc.opcode) + " wr_id=" + wc.wrId
            + (wc.opcode >= WcOpcode.RECV ? " byte_len=" + wc.byteLen : "");
    }

    private static void check(final boolean ok, final String what) {
        if (!ok) {
            throw new CheckFailed(what);
        }
    }

    private static void same(final MemorySegment expected, final MemorySegment actual, final String where) {
        final long mismatch = expected.mismatch(actual);
        if (mismatch != -1) {
            throw new CheckFailed("bytes differ at " + where + " offset " + mismatch + " of " + expected.byteSize());
        }
    }

    private static MemorySegment copyOf(final MemorySegment seg) {
        final MemorySegment copy = java.lang.foreign.Arena.ofAuto().allocate(seg.byteSize());
        MemorySegment.copy(seg, 0, copy, 0, seg.byteSize());
        return copy;
    }

    private static void fill(final MemorySegment seg, final long seed) {
        long x = seed * 0x9E3779B97F4A7C15L;
        for (long i = 0; i < seg.byteSize(); i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) (x >>> 56));
        }
    }
}
