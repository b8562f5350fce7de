/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.gdr.doctor.Check;
import io.gdrkit.gdr.doctor.DoctorReport;
import io.gdrkit.gdr.doctor.SettingRow;
import io.gdrkit.gdr.doctor.Status;
import io.gdrkit.gdr.gate.NcclSettings;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.devices.GpuDevices;
import io.gdrkit.labs.demo.VerbsTour;
import io.gdrkit.labs.doctor.DoctorLab;
import io.gdrkit.labs.gpupath.GpuPathLab;
import io.gdrkit.labs.ordering.OrderingExperiment;
import io.gdrkit.labs.perf.BwResult;
import io.gdrkit.labs.perf.LatResult;
import io.gdrkit.labs.perf.Loopback;
import io.gdrkit.labs.perf.PerfConfig;
import io.gdrkit.labs.perf.PerfKind;
import io.gdrkit.labs.perf.ShmLoopbackPerf;
import io.gdrkit.labs.report.ExperimentReports;
import io.gdrkit.labs.report.Report;
import io.gdrkit.labs.report.Section;
import io.gdrkit.labs.visibility.VisConfig;
import io.gdrkit.labs.visibility.VisConfig.Consumer;
import io.gdrkit.labs.visibility.VisConfig.Flag;
import io.gdrkit.labs.visibility.VisConfig.Injection;
import io.gdrkit.labs.visibility.VisConfig.Poll;
import io.gdrkit.labs.visibility.VisConfig.Readback;
import io.gdrkit.labs.visibility.VisConfig.Source;
import io.gdrkit.labs.visibility.VisResult;
import io.gdrkit.labs.visibility.VisibilityLab;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code demo}: the main job on the embedded default, in sections, each checked from the labs' result records (never
 * from printed text): every RC opcode and send flag once ({@link VerbsTour}), the doctor's report for the simulated
 * host and the GDR decision per direction ({@link DoctorLab}), a GDR transfer and its host-bounce twin
 * ({@link GpuPathLab}), the failable visibility baseline with the sender in another process (OFF fails, ON passes),
 * the ordering lab, a short perf table ({@link ShmLoopbackPerf}) and a 2-rank allreduce over shared memory with every
 * element checked ({@code gdrkit coll}'s own rows, read from its report file). Writes a report folder whose HTML page shows the
 * records as tables and charts, and prints its path. Exits 1 if any check is not as expected.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
    description = {"The main job on the embedded default (software NICs over shared memory, simulated GPUs): verbs "
        + "tour, doctor verdict, GDR decision per direction, GDR transfer and its host-bounce twin, the failable "
        + "visibility baseline, the ordering lab, a short perf table and a 2-rank allreduce over shared memory; "
        + "writes an HTML report."})
final class DemoCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    PrintWriter out; // set by call(); tests of one section set it

    /** Where the demo writes its report folder. */
    @picocli.CommandLine.Mixin
    Mixins.Report reportOption;

    @picocli.CommandLine.Mixin
    Mixins.SetValues set;

    Path reportDir;

    @Option(names = "--skip-processes", description = "Run the visibility senders as threads of this JVM instead of "
        + "separate processes (for machines that cannot start processes).")
    boolean skipProcesses;

    @Override
    public Integer call() {
        reportOption.check(spec.commandLine());
        reportDir = reportOption.dir;
        out = spec.commandLine().getOut();
        out.println(Loopback.SIMULATED_HEADER);
        out.println("# gdrkit demo: the embedded default — software NICs (simulated), processes joined by shared memory,"
            + " simulated GPUs. Nothing here is hardware.");
        final long start = System.nanoTime();
        final Report report = new Report("gdrkit demo");
        report.command("gdrkit", "demo").simulated(true, "software NICs (simulated) on the in-JVM and shared-memory "
            + "fabrics; simulated GPUs (V100/H200 models)");
        int failed = verbsTour(report);
        failed += doctor(report);
        failed += gdrTransfer(report);
        failed += visibility(report);
        failed += ordering(report);
        failed += perf(report);
        failed += collectives(report);
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

    private int expect(final String what, final boolean ok, final String detail) {
        out.println((ok ? "  PASS   " : "  FAIL   ") + what + (detail.isEmpty() ? "" : ": " + detail));
        out.flush();
        return ok ? 0 : 1;
    }

    /** Section 1: every RC opcode and flag on two software NICs in this JVM. */
    private int verbsTour(final Report report) {
        out.println("== 1. verbs: every opcode and flag, byte-checked ==");
        final VerbsTour.Result r = VerbsTour.run(setup -> out.println("setup: " + setup), step -> {
            out.println((step.ok() ? "[ok]   " : "[FAIL] ") + step.name() + ": " + step.detail());
            out.flush();
        });
        out.println("verbs: " + r.passed() + "/" + r.steps().size() + " steps passed");
        // the sentences about CQ events come from what the steps observed, never from a fixed text
        final List<String> claims = r.capabilities().claims();
        for (final String claim : claims) {
            out.println("verbs: " + claim);
        }
        final Section s = report.section("1. Verbs: every opcode and flag").text("Two software NICs in this JVM, "
            + "every RC opcode and send flag once, each result checked byte for byte. Setup: " + r.setup() + ". "
            + String.join("; ", claims) + ".")
            .table("step", "result", "verified").statusColumn("result");
        for (final VerbsTour.Step step : r.steps()) {
            s.row(step.name(), step.ok() ? "ok" : "FAIL", step.detail());
        }
        return (int) (r.steps().size() - r.passed());
    }

    /** Sections 2 and 3: the doctor's report for the simulated host and the GDR decision per direction. */
    private int doctor(final Report report) {
        out.println("== 2. doctor: the simulated host (--provider soft --gpu sim:h200) ==");
        // NCCL's defaults, whatever this shell sets: the demo shows the embedded default
        final NcclSettings defaults = NcclSettings.DEFAULTS;
        final DoctorReport d;
        try {
            d = DoctorLab.simulated("sim:h200", null, null, defaults);
        } catch (final RuntimeException e) {
            return expect("doctor ran", false, e.getMessage());
        }
        int failed = expect("doctor verdict", d.verdict().isReady(), "verdict: " + d.verdict().text()
            + (d.simulated() ? " (simulated)" : ""));
        out.println("== 3. GDR decision per direction ==");
        final List<Check> gates = d.checks().stream().filter(c -> c.layer().equals("gates")).toList();
        gates.forEach(g -> out.println(String.format("  %-8s %-28s %s", g.status(), g.name(), g.evidence())));
        failed += expect("both directions decided with evidence", pass(d, "receive (NIC writes GPU)")
            && pass(d, "send (NIC reads GPU)"), "");
        final Section s = report.section("2-3. Doctor and the GDR decision").text("gdrkit doctor --provider soft "
            + "--gpu sim:h200: the layered checklist against the software provider and a simulated H200, every line "
            + "from a call (port query, simulated driver, path engine, gates, connector, transfer, flush). Verdict: "
            + d.verdict().text() + (d.simulated() ? " (simulated)." : "."))
            .table("layer", "check", "status", "evidence").statusColumn("status");
        for (final Check c : d.checks()) {
            s.row(c.layer(), c.name(), c.status().name(), c.evidence());
        }
        final Section st = report.section("2b. NCCL settings the doctor honoured").text("Each NCCL variable with its "
            + "effective value, where the value came from and what it did on the simulated host (the demo runs with "
            + "NCCL's defaults).").table("setting", "value", "source", "effect");
        for (final SettingRow r : d.settings()) {
            st.row(r.name(), r.value(), r.source(), r.effect());
        }
        return failed;
    }

    private static boolean pass(final DoctorReport d, final String check) {
        final Check c = d.check(check);
        return c != null && c.status() == Status.PASS;
    }

    /** Section 4: a byte-checked GDR transfer and its host-bounce twin. */
    private int gdrTransfer(final Report report) {
        out.println("== 4. a GDR transfer and its host-bounce twin (gpu-path --gpu sim:h200) ==");
        final GpuPathLab.Result r;
        try (GpuDevice gpu = GpuDevices.open("sim:h200")) {
            r = GpuPathLab.run(gpu, null, 1 << 20, 50, true, true);
        } catch (final RuntimeException e) {
            return expect("GDR and bounce ran", false, e.getMessage());
        }
        r.runs().forEach(run -> out.println("  " + GpuPathCommand.row(run)));
        final Section s = report.section("4. GDR and host bounce").text("RDMA WRITEs into simulated GPU memory through"
            + " BAR1 (GDR) and through a host buffer plus a copy (bounce), both checked byte for byte. GPU: " + r.gpu()
            + ". Timings are of the simulation, not of hardware.")
            .table("path", "bytes", "iterations", "MiB/s", "check").statusColumn("check");
        final var chart = s.barChart("WRITE throughput into GPU memory (simulated)", "MiB/s");
        for (final GpuPathLab.PathRun run : r.runs()) {
            s.row(run.path(), run.bytes(), run.iters(), run.mibPerSecond(), GpuPathCommand.check(run));
            chart.bar(run.path(), run.mibPerSecond());
        }
        return expect("GDR and bounce both byte-exact", r.runs().stream().filter(p -> p.path().equals("gdr")
            || p.path().equals("bounce")).count() == 2 && r.allByteExact(), "");
    }

    /** Section 5: the failable visibility baseline, the receiver here and the sender in another process. */
    private int visibility(final Report report) {
        out.println("== 5. visibility: the failable baseline ==");
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
                final VisConfig c = new VisConfig().gpu((String) k[0]).consumer((Consumer) k[1]).flag(Flag.RECEIVER)
                    .readback((Readback) k[2]).wrSplit(16).size(65536).rounds(10).senders(1).syncMemops(false)
                    .source(Source.HOST).poll(Poll.ACQUIRE).seed(1).inject(Injection.NONE).peerConsumer(false)
                    .conclude();
                final VisResult v = lab.run(c, null);
                results.add(v);
                final boolean expectPass = (Boolean) k[3];
                failed += expect(String.format(Locale.ROOT, "%-8s ordering=%-5s %-10s readback=%-5s -> %s (expected %s)",
                    c.gpu(), v.ordering(), c.consumer().name().toLowerCase(Locale.ROOT),
                    c.readback().name().toLowerCase(Locale.ROOT), v.passed() ? "PASS" : "FAIL " + v.failures() + "/"
                        + v.checks() + " " + v.what(), expectPass ? "pass" : "fail"), v.passed() == expectPass, "");
            }
            ExperimentReports.visibility(report, "5. Visibility", lab.processes(), results);
        } catch (final RuntimeException e) {
            failed += expect("visibility experiment ran", false, e.getMessage());
        }
        return failed;
    }

    /** Section 6: the ordering lab. */
    private int ordering(final Report report) {
        out.println("== 6. ordering lab: put-then-flag under inter-QP reordering ==");
        final List<OrderingExperiment.Result> results = new ArrayList<>();
        int failed = 0;
        for (final OrderingExperiment.Variant v : OrderingExperiment.Variant.values()) {
            final OrderingExperiment.Result r = OrderingExperiment.run(new OrderingExperiment.Config(v).trials(500)
                .size(16384).reorder(0.05).reorderMicros(10).reorderWithinQp(false).seed(1).conclude());
            results.add(r);
            final boolean ok = v.ordered() ? r.corruptedReads() == 0 : r.verdict() != OrderingExperiment.Verdict.FAIL;
            failed += expect(String.format(Locale.ROOT, "%-13s corrupted reads %3d / %d -> %s", v.label(),
                r.corruptedReads(), r.config().trials(), r.verdict()), ok, "");
        }
        ExperimentReports.ordering(report, "6. Ordering (put-then-flag)", results);
        return failed;
    }

    /** Section 7: a short perf table between two processes over the shared-memory fabric. */
    private int perf(final Report report) {
        out.println("== 7. perf: a short table (write_bw and write_lat; server process over the shm fabric) ==");
        final Section bwSection = report.section("7. perf: bandwidth").text("perftest-style write_bw between two "
            + "software NICs (simulated) in two processes joined by the shared-memory fabric (perf --fabric shm "
            + "--loopback), perftest's columns.").table("test", "#bytes", "#iterations", "BW peak[MiB/sec]",
            "BW average[MiB/sec]", "MsgRate[Mpps]");
        final var bwChart = bwSection.barChart("write_bw average by message size (simulated)", "MiB/s");
        final Section latSection = report.section("7. perf: latency").text("write_lat, the same two processes; "
            + "one-way latency as perftest reports it.").table("test", "#bytes", "#iterations", "t_min[usec]",
            "t_max[usec]", "t_typical[usec]", "t_avg[usec]", "t_stdev[usec]", "99% percentile[usec]",
            "99.9% percentile[usec]");
        int failed = 0;
        final Object[][] runs = {{PerfKind.WRITE_BW, 65536, 2000L}, {PerfKind.WRITE_BW, 1048576, 500L},
            {PerfKind.WRITE_LAT, 8, 5000L}};
        boolean latHeader = false;
        boolean bwHeader = false;
        for (final Object[] k : runs) {
            final PerfConfig cfg = ShmLoopbackPerf.defaults((PerfKind) k[0], (Integer) k[1], (Long) k[2]);
            final String id = cfg.test().id();
            final ShmLoopbackPerf.Run r;
            try {
                r = ShmLoopbackPerf.run(cfg);
            } catch (final RuntimeException e) {
                failed += expect("perf " + id + " -s " + cfg.size(), false, e.getMessage());
                continue;
            }
            final StringWriter w = new StringWriter();
            final PerfPrinter printer = new PerfPrinter(new PrintWriter(w, true), false, false);
            if (cfg.test().bandwidth ? !bwHeader : !latHeader) {
                printer.header(cfg.test());
                bwHeader |= cfg.test().bandwidth;
                latHeader |= !cfg.test().bandwidth;
            }
            for (final BwResult b : r.bw()) {
                printer.bw(cfg, b);
                bwSection.row(id, b.bytes(), b.iterations(), b.bwPeakMibS(), b.bwAvgMibS(), b.msgRateMpps());
                bwChart.bar(b.bytes() + " B", b.bwAvgMibS());
            }
            for (final LatResult l : r.lat()) {
                printer.lat(cfg, l);
                latSection.row(id, l.bytes(), l.iterations(), l.tMinUs(), l.tMaxUs(), l.tTypicalUs(), l.tAvgUs(),
                    l.tStdevUs(), l.p99Us(), l.p999Us());
            }
            w.toString().lines().forEach(l -> out.println("  " + id + "  " + l.strip()));
            final boolean ok = cfg.test().bandwidth ? r.bw().size() == 1 && r.bw().get(0).bytes() == cfg.size()
                && r.bw().get(0).iterations() == cfg.iters() && r.bw().get(0).bwAvgMibS() > 0
                : r.lat().size() == 1 && r.lat().get(0).bytes() == cfg.size() && r.lat().get(0).tMinUs() > 0;
            if (!ok) {
                failed += expect("perf " + id + " -s " + cfg.size() + " returned its row", false, r.toString());
            }
        }
        return failed;
    }

    /** Section 8's sizes: 8 B .. 2 MiB, factor 8 (coll's -b, -e, -f), one row each. */
    static final List<Long> COLL_SIZES = List.of(8L, 64L, 512L, 4096L, 32768L, 262144L, 2097152L);
    /** What section 8 runs (float sum over {@link #COLL_SIZES}); the demo waits at most COLL_WAIT_SECONDS. */
    static final List<String> COLL_ARGS = List.of("coll", "allreduce", "--np", "2", "--fabric", "shm", "-b",
        String.valueOf(COLL_SIZES.get(0)), "-e", String.valueOf(COLL_SIZES.get(COLL_SIZES.size() - 1)), "-f", "8",
        "-n", "20", "-w", "5", "--jit-warmup-ms", "3000", "--timeout-ms", "60000", "--json");
    static final long COLL_WAIT_SECONDS = 180;
    static final List<String> COLL_COLUMNS = List.of("size", "count", "type", "redop", "time(us)", "algbw(GB/s)",
        "busbw(GB/s)", "#wrong", "in-place time(us)", "in-place busbw(GB/s)", "in-place #wrong");

    /**
     * Section 8: {@code gdrkit coll allreduce} with 2 rank processes over the shared-memory fabric, run as a child
     * process (its output goes to a log beside its report); checked from the rows rank 0 writes to coll.json: one row
     * per size, each with 0 wrong elements out-of-place and in-place, on 2 simulated ranks over shm.
     */
    private int collectives(final Report report) {
        out.println("== 8. collectives: allreduce, 2 rank processes over the shm fabric, every element checked ==");
        final Section section = report.section("8. Collectives: allreduce over shared memory").text("gdrkit coll "
            + "allreduce --np 2 --fabric shm: two rank processes, IbTransport over software NICs (simulated), "
            + "float sum, 8 B to 2 MiB; every element of every run checked against the expected sum (#wrong). "
            + "nccl-tests' columns.").table(COLL_COLUMNS);
        final java.nio.file.Path dir;
        try {
            dir = java.nio.file.Files.createTempDirectory("gdrkit-demo-coll");
        } catch (final java.io.IOException e) {
            return expect("collectives: a folder for the run", false, e.getMessage());
        }
        try {
            final List<String> cmd = ForwardedProperties.gdrkitCommand();
            cmd.addAll(COLL_ARGS);
            cmd.addAll(Settings.childArgs()); // the demo's --set values hold in the ranks too
            cmd.add("--report");
            cmd.add(dir.toString());
            final java.io.File log = dir.resolve("coll.log").toFile();
            final Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log).start();
            if (!p.waitFor(COLL_WAIT_SECONDS, java.util.concurrent.TimeUnit.SECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                return expect("collectives", false, "no result within " + COLL_WAIT_SECONDS + " s from the coll run "
                    + "(ranks killed)");
            }
            final java.nio.file.Path rowsFile = dir.resolve("coll.json");
            if (p.exitValue() != 0 || !java.nio.file.Files.exists(rowsFile)) {
                final List<String> tail = java.nio.file.Files.readAllLines(log.toPath());
                return expect("collectives", false, "coll exited with " + p.exitValue() + ": "
                    + String.join(" | ", tail.subList(Math.max(0, tail.size() - 3), tail.size())));
            }
            final com.fasterxml.jackson.databind.ObjectMapper m = new com.fasterxml.jackson.databind.ObjectMapper();
            final List<com.fasterxml.jackson.databind.JsonNode> rows = new ArrayList<>();
            for (final String l : java.nio.file.Files.readAllLines(rowsFile)) {
                if (!l.isBlank()) {
                    rows.add(m.readTree(l));
                }
            }
            return collectivesChecked(rows, section);
        } catch (final java.io.IOException e) {
            return expect("collectives", false, Errors.describeWithInput(e));
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
            return expect("collectives", false, "interrupted");
        } finally {
            try (var files = java.nio.file.Files.walk(dir)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            } catch (final java.io.IOException e) {
                out.println("  note: could not remove " + dir + ": " + e.getMessage());
            }
        }
    }

    /** Section 8's checks and rows, from coll's JSON rows (one per size). */
    int collectivesChecked(final List<com.fasterxml.jackson.databind.JsonNode> rows, final Section section) {
        out.println(String.format(Locale.ROOT, "  %10s %8s %10s %8s %7s %10s %8s %7s", "size", "count", "time(us)",
            "busbw", "#wrong", "in-place", "busbw", "#wrong"));
        long wrong = 0;
        boolean shape = true;
        final io.gdrkit.labs.report.LineChart chart = section.lineChart("allreduce busbw by message size (simulated)",
            "bytes", "busbw (GB/s)").log2X().logY();
        for (final com.fasterxml.jackson.databind.JsonNode r : rows) {
            // a log axis: a size that moved nothing measurable has no point rather than a zero
            final double bytes = r.path("bytes").asDouble();
            if (bytes > 0 && r.path("busbw_gbs").asDouble() > 0) {
                chart.point("out-of-place", bytes, r.path("busbw_gbs").asDouble());
            }
            if (bytes > 0 && r.path("inplace_busbw_gbs").asDouble() > 0) {
                chart.point("in-place", bytes, r.path("inplace_busbw_gbs").asDouble());
            }
            wrong += r.path("wrong").asLong(-1) == 0 ? 0 : 1;
            wrong += r.path("inplace_wrong").asLong(-1) == 0 ? 0 : 1;
            shape &= r.path("np").asInt() == 2 && "shm".equals(r.path("fabric").asText())
                && r.path("simulated").asBoolean(false) && "all_reduce".equals(r.path("op").asText());
            out.println(String.format(Locale.ROOT, "  %10d %8d %10.2f %8.2f %7d %10.2f %8.2f %7d",
                r.path("bytes").asLong(), r.path("count").asLong(), r.path("time_us").asDouble(),
                r.path("busbw_gbs").asDouble(), r.path("wrong").asLong(-1), r.path("inplace_time_us").asDouble(),
                r.path("inplace_busbw_gbs").asDouble(), r.path("inplace_wrong").asLong(-1)));
            section.row(r.path("bytes").asLong(), r.path("count").asLong(), r.path("type").asText(),
                r.path("redop").asText(), r.path("time_us").asDouble(), r.path("algbw_gbs").asDouble(),
                r.path("busbw_gbs").asDouble(), r.path("wrong").asLong(-1), r.path("inplace_time_us").asDouble(),
                r.path("inplace_busbw_gbs").asDouble(), r.path("inplace_wrong").asLong(-1));
        }
        final List<Long> sizes = rows.stream().map(r -> r.path("bytes").asLong()).toList();
        int failed = expect("collectives: one row per size", sizes.equals(COLL_SIZES), sizes + " B");
        failed += expect("collectives: 2 simulated ranks over shm, allreduce", shape && !rows.isEmpty(), "");
        failed += expect("collectives: every element checked, none wrong", wrong == 0 && !rows.isEmpty(),
            wrong == 0 ? "" : wrong + " row(s) with wrong elements or no count");
        return failed;
    }
}
