/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.labs.ordering.OrderingExperiment;
import io.gdrkit.labs.perf.Deadline;
import io.gdrkit.labs.perf.Loopback;
import io.gdrkit.labs.report.ExperimentReports;

import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import io.gdrkit.labs.visibility.VisConfig;
import io.gdrkit.labs.visibility.VisConfig.Consumer;
import io.gdrkit.labs.visibility.VisConfig.Flag;
import io.gdrkit.labs.visibility.VisConfig.Injection;
import io.gdrkit.labs.visibility.VisConfig.Poll;
import io.gdrkit.labs.visibility.VisConfig.Readback;
import io.gdrkit.labs.visibility.VisConfig.Source;
import io.gdrkit.labs.visibility.VisResult;
import io.gdrkit.labs.visibility.VisibilityLab;
import io.gdrkit.labs.report.Report;
import io.gdrkit.labs.report.Section;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code demo}: the main job on the embedded default, in sections, each checked: every RC opcode and send flag once
 * (byte-checked), the doctor's verdict for the simulated host and the GDR decision per direction, a GDR transfer and
 * its host-bounce twin, the failable visibility baseline with the sender in another process (OFF fails, ON passes),
 * the ordering lab and a short perf table. Writes a report folder and prints the path of its HTML page. Exits 1 if
 * any check is not as expected.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
    description = {"The main job on the embedded default (software NICs over shared memory, simulated GPUs): verbs "
        + "tour, doctor verdict, GDR decision per direction, GDR transfer and its host-bounce twin, the failable "
        + "visibility baseline, the ordering lab and a short perf table; writes an HTML report."})
final class DemoCommand implements Callable<Integer> {
    private static final long TIMEOUT_NS = 10_000_000_000L;
    private static final long BUF = 1 << 20;

    @Spec
    CommandSpec spec;

    private Loopback lb;
    private PrintWriter out;
    private final WorkCompletion[] wcs = {new WorkCompletion()};
    private long nextWrId = 1;

    /** A failed check: reported on the step's line. */
    static final class CheckFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        CheckFailed(final String message) {
            super(message, null, false, false);
        }
    }

    /** One step: does its work and returns what it verified. */
    @FunctionalInterface
    interface Step {
        String run();
    }

    @Option(names = "--report", paramLabel = "DIR", defaultValue = "gdrkit-reports/demo",
        description = "Where the demo writes its report folder (default ${DEFAULT-VALUE}).")
    Path reportDir;

    @Option(names = "--skip-processes", description = "Run the visibility senders as threads of this JVM instead of "
        + "separate processes (for machines that cannot start processes).")
    boolean skipProcesses;

    private final List<String[]> verbsRows = new ArrayList<>();

    @Override
    public Integer call() {
        out = spec.commandLine().getOut();
        out.println(Loopback.SIMULATED_HEADER);
        out.println("# gdrkit demo: the embedded default — software NICs (simulated), processes joined by shared memory,"
            + " simulated GPUs. Nothing here is hardware.");
        final long start = System.nanoTime();
        final Report report = new Report("gdrkit demo");
        report.command("gdrkit", "demo").simulated(true, "software NICs (simulated) on the in-JVM and shared-memory "
            + "fabrics; simulated GPUs (V100/H200 models)");
        int failed = verbsTour();
        final Section verbs = report.section("1. Verbs: every opcode and flag").text("Two software NICs in this JVM,"
            + " every RC opcode and send flag once, each result checked byte for byte.").table("step", "result");
        verbsRows.forEach(r -> verbs.row(r[0], r[1]));
        failed += doctor(report);
        failed += gdrTransfer(report);
        failed += visibility(report);
        failed += ordering(report);
        failed += perf(report);
        try {
            final var files = report.write(reportDir);
            out.println("report: " + files.html().toAbsolutePath());
        } catch (final java.io.IOException e) {
            out.println("[FAIL] report: " + e.getMessage());
            failed++;
        }
        final long ms = (System.nanoTime() - start) / 1_000_000;
        out.println("summary: " + (failed == 0 ? "every check as expected" : failed + " check(s) FAILED") + " in " + ms
            + " ms (software NICs and GPUs simulated)");
        out.flush();
        return failed == 0 ? 0 : Main.EXIT_FAILURE;
    }

    /** Section 1: every RC opcode and flag on two software NICs in this JVM. */
    private int verbsTour() {
        out.println("== 1. verbs: every opcode and flag, byte-checked ==");
        int passed = 0;
        int failed = 0;
        try (Loopback l = new Loopback(SoftNicContext.ProgressMode.INVOKER, 1, BUF, 128, 128, 256, 4096)) {
            lb = l;
            out.println("setup: " + l.a.dev.name() + " (lid " + l.a.dev.lid() + ") <-> " + l.b.dev.name() + " (lid "
                + l.b.dev.lid() + "), RC QP " + l.a.qps[0].qpNum() + " <-> " + l.b.qps[0].qpNum()
                + " in RTS, MTU 4096, 1 MiB MR per side");
            final Object[][] steps = {
                {"RDMA_WRITE 65536 B, SIGNALED", (Step) this::write},
                {"RDMA_WRITE 48 B, INLINE|SIGNALED", (Step) this::writeInline},
                {"RDMA_WRITE unsignaled + RDMA_WRITE SIGNALED", (Step) this::unsignaled},
                {"RDMA_WRITE_WITH_IMM 5000 B", (Step) this::writeWithImm},
                {"SEND 5000 B", (Step) this::send},
                {"SEND_WITH_IMM 100 B, SOLICITED", (Step) this::sendImmSolicited},
                {"RDMA_READ 300000 B", (Step) this::read},
                {"RDMA_READ then RDMA_WRITE|FENCE on the same bytes", (Step) this::fence},
                {"ATOMIC_FETCH_AND_ADD", (Step) this::fetchAdd},
                {"ATOMIC_CMP_AND_SWP (match, then mismatch)", (Step) this::cmpSwap},
            };
            for (final Object[] s : steps) {
                final String name = (String) s[0];
                try {
                    final String result = ((Step) s[1]).run();
                    out.println("[ok]   " + name + ": " + result);
                    verbsRows.add(new String[] {name, "ok: " + result});
                    passed++;
                } catch (final CheckFailed | IllegalStateException | Deadline.TimeoutError e) {
                    out.println("[FAIL] " + name + ": " + e.getMessage());
                    verbsRows.add(new String[] {name, "FAIL: " + e.getMessage()});
                    failed++;
                }
                out.flush();
            }
        }
        out.println("verbs: " + passed + "/" + (passed + failed) + " steps passed");
        return failed;
    }

    /** Runs a gdrkit subcommand in this JVM and returns its exit code and standard output lines. */
    private static Map.Entry<Integer, List<String>> sub(final String... args) {
        final StringWriter w = new StringWriter();
        final CommandLine cl = new CommandLine(new Main());
        cl.setOut(new PrintWriter(w, true));
        cl.setErr(new PrintWriter(new StringWriter(), true));
        final int rc = cl.execute(args);
        return Map.entry(rc, w.toString().lines().toList());
    }

    private int expect(final String what, final boolean ok, final String detail) {
        out.println((ok ? "  PASS   " : "  FAIL   ") + what + (detail.isEmpty() ? "" : ": " + detail));
        out.flush();
        return ok ? 0 : 1;
    }

    /** Sections 2 and 3: the doctor's verdict for the simulated host and the GDR decision per direction. */
    private int doctor(final Report report) {
        out.println("== 2. doctor: the simulated host (--provider soft --gpu sim:h200) ==");
        final var r = sub("doctor", "--provider", "soft", "--gpu", "sim:h200");
        final String verdict = r.getValue().stream().filter(l -> l.startsWith("verdict:")).findFirst()
            .orElse("verdict: (none printed)");
        int failed = expect("doctor verdict", r.getKey() == 0 && verdict.contains("GDR_READY"), verdict);
        out.println("== 3. GDR decision per direction ==");
        final List<String> gates = r.getValue().stream().map(String::strip)
            .filter(l -> l.matches("^(PASS|FAIL|BLOCKED|UNKNOWN)\\s+(receive|send|flush)\\b.*")).toList();
        gates.forEach(g -> out.println("  " + g));
        failed += expect("both directions decided with evidence", gates.stream().anyMatch(g -> g.startsWith("PASS")
            && g.contains("receive")) && gates.stream().anyMatch(g -> g.startsWith("PASS") && g.contains("send")),
            "");
        final Section s = report.section("2-3. Doctor and the GDR decision").text("gdrkit doctor --provider soft "
            + "--gpu sim:h200: the layered checklist against the software provider and a simulated H200.")
            .table("line");
        r.getValue().forEach(l -> s.row(l));
        return failed;
    }

    /** Section 4: a byte-checked GDR transfer and its host-bounce twin. */
    private int gdrTransfer(final Report report) {
        out.println("== 4. a GDR transfer and its host-bounce twin (gpu-path --gpu sim:h200) ==");
        final var r = sub("gpu-path", "--gpu", "sim:h200", "-s", "1048576", "-n", "50");
        final List<String> rows = r.getValue().stream().filter(l -> l.startsWith("gdr ") || l.startsWith("bounce "))
            .toList();
        rows.forEach(l -> out.println("  " + l));
        final boolean ok = r.getKey() == 0 && rows.size() >= 2 && rows.stream().allMatch(l -> l.contains("byte-exact"));
        final Section s = report.section("4. GDR and host bounce").text("RDMA WRITEs into simulated GPU memory through"
            + " BAR1 (GDR) and through a host buffer plus a copy (bounce), both checked byte for byte.")
            .table("line");
        r.getValue().forEach(l -> s.row(l));
        return expect("GDR and bounce both byte-exact", ok, "");
    }

    /** Section 5: the failable visibility baseline (D6), the receiver here and the sender in another process. */
    private int visibility(final Report report) {
        out.println("== 5. visibility: the failable baseline (D6) ==");
        final List<VisResult> results = new ArrayList<>();
        int failed = 0;
        try (VisibilityLab lab = VisibilityLab.start(skipProcesses ? VisibilityLab.Transport.JVM
            : VisibilityLab.Transport.SHM, 1, 0, false)) {
            out.println("  " + lab.processes() + "; notifications over TCP");
            final Object[][] cases = {
                {"sim:v100", Consumer.PERSISTENT, Readback.OFF, false},
                {"sim:v100", Consumer.PERSISTENT, Readback.ON, true},
                {"sim:v100", Consumer.PERSISTENT, Readback.FLUSH, true},
                {"sim:v100", Consumer.LAUNCH, Readback.OFF, true},
                {"sim:h200", Consumer.PERSISTENT, Readback.OFF, true},
            };
            for (final Object[] k : cases) {
                final VisConfig c = new VisConfig((String) k[0], (Consumer) k[1], Flag.RECEIVER, (Readback) k[2], 16,
                    65536, 10, 1, false, Source.HOST, Poll.ACQUIRE, 1, Injection.NONE, false);
                final VisResult v = lab.run(c, null);
                results.add(v);
                final boolean expectPass = (Boolean) k[3];
                failed += expect(String.format(Locale.ROOT, "%-8s ordering=%-5s %-10s readback=%-5s -> %s (expected %s)",
                    c.gpu(), v.ordering(), c.consumer().name().toLowerCase(Locale.ROOT),
                    c.readback().name().toLowerCase(Locale.ROOT), v.passed() ? "PASS" : "FAIL " + v.failures() + "/"
                        + v.checks() + " " + v.what(), expectPass ? "pass" : "fail"), v.passed() == expectPass, "");
            }
            ExperimentReports.visibility(report, lab.processes(), results);
        } catch (final RuntimeException e) {
            failed += expect("visibility experiment ran", false, e.getMessage());
        }
        return failed;
    }

    /** Section 6: the ordering lab (D7). */
    private int ordering(final Report report) {
        out.println("== 6. ordering lab: put-then-flag under inter-QP reordering (D7) ==");
        final List<OrderingExperiment.Result> results = new ArrayList<>();
        int failed = 0;
        for (final OrderingExperiment.Variant v : OrderingExperiment.Variant.values()) {
            final OrderingExperiment.Result r = OrderingExperiment.run(new OrderingExperiment.Config(v, 500, 16384,
                0.05, 10, false, 1));
            results.add(r);
            final boolean ok = v.ordered() ? r.corruptedReads() == 0 : r.verdict() != OrderingExperiment.Verdict.FAIL;
            failed += expect(String.format(Locale.ROOT, "%-13s corrupted reads %3d / %d -> %s", v.label(),
                r.corruptedReads(), r.config().trials(), r.verdict()), ok, "");
        }
        ExperimentReports.ordering(report, results);
        return failed;
    }

    /** Section 7: a short perf table on the in-JVM fabric. */
    private int perf(final Report report) {
        out.println("== 7. perf: a short table (write_bw and write_lat; server process over the shm fabric) ==");
        final Section s = report.section("7. perf").text("perftest-style runs between two software NICs (simulated)"
            + " in two processes joined by the shared-memory fabric (perf --fabric shm --loopback).")
            .table("test", "line");
        int failed = 0;
        for (final String[] args : new String[][] {
            {"perf", "write_bw", "--fabric", "shm", "--loopback", "-s", "65536", "-n", "2000"},
            {"perf", "write_bw", "--fabric", "shm", "--loopback", "-s", "1048576", "-n", "500"},
            {"perf", "write_lat", "--fabric", "shm", "--loopback", "-s", "8", "-n", "5000"}}) {
            final var r = sub(args);
            final List<String> rows = r.getValue().stream().filter(l -> l.startsWith("#bytes")
                || !l.startsWith("#") && !l.isBlank()).toList();
            for (final String l : rows) {
                out.println("  " + args[1] + "  " + l.strip());
                s.row(args[1], l.strip());
            }
            failed += r.getKey() == 0 ? 0 : expect("perf " + String.join(" ", args), false, "exit " + r.getKey());
        }
        return failed;
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
        final long id = post(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
            .sge(lb.a.mr, 0, n));
        final String wc = expect(lb.a.scq, id, WcOpcode.SEND, "SEND completion");
        final WorkCompletion r = await(lb.b.rcq, "B's RECV completion");
        check(r.status == WcStatus.SUCCESS && r.opcode == WcOpcode.RECV && r.wrId == 601 && r.byteLen == n
            && !r.hasImm(), "B's completion " + r);
        same(lb.a.buf.asSlice(0, n), lb.b.buf.asSlice(500_000, n), "B's receive buffer");
        return wc + "; B: " + desc(r) + "; " + n + " bytes verified in the receive buffer";
    }

    private String sendImmSolicited() {
        final int n = 100;
        lb.b.qps[0].postRecv(new RecvWorkRequest().wrId(701).sge(lb.b.mr, 520_000, 4096));
        fill(lb.a.buf.asSlice(0, n), 6);
        final long id = post(new SendWorkRequest().opcode(WrOpcode.SEND_WITH_IMM)
            .flags(SendFlags.SIGNALED | SendFlags.SOLICITED).imm(0xCAFEBABE).sge(lb.a.mr, 0, n));
        final String wc = expect(lb.a.scq, id, WcOpcode.SEND, "SEND_WITH_IMM completion");
        final WorkCompletion r = await(lb.b.rcq, "B's RECV completion");
        check(r.status == WcStatus.SUCCESS && r.opcode == WcOpcode.RECV && r.wrId == 701 && r.byteLen == n
            && r.hasImm() && r.immData == 0xCAFEBABE, "B's completion " + r);
        same(lb.a.buf.asSlice(0, n), lb.b.buf.asSlice(520_000, n), "B's receive buffer");
        return wc + "; B: " + desc(r) + " imm=0xcafebabe; " + n + " bytes verified (SOLICITED carried in the "
            + "BTH; CQ event notification is not modelled)";
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
