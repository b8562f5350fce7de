/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.gdr.doctor.Check;
import io.gdrkit.gdr.doctor.DoctorReport;
import io.gdrkit.gdr.doctor.SettingRow;
import io.gdrkit.gdr.gate.NcclSettings;
import io.gdrkit.labs.doctor.DoctorLab;
import io.gdrkit.labs.doctor.NegativeControls;
import io.gdrkit.softnic.SoftNicContext;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code doctor}: parses, asks the doctor lab for a report ({@link DoctorLab}: this machine, or the simulated host
 * probed through verbs and GPU calls), and prints its checks, the NCCL settings it honoured and the verdict, as text
 * or JSON. {@code --negative-controls} runs the negative controls ({@link NegativeControls}) and prints their
 * table.
 */
@Command(name = "doctor", mixinStandardHelpOptions = true,
    description = "Layered GPUDirect RDMA checklist with evidence, the NCCL settings it honoured, and a verdict.")
final class DoctorCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    /**
     * host (probe this machine; its verbs layer through the native provider: devices, port 1, NCCL's DMA-BUF probe),
     * native (the same, by its provider's name) or soft (the software NIC, simulated).
     */
    @picocli.CommandLine.Mixin
    Mixins.Provider providerOption;

    /** With --provider soft: a simulated GPU. */
    @picocli.CommandLine.Mixin
    Mixins.Gpu gpuOption;

    @picocli.CommandLine.Mixin
    Mixins.Json jsonOption;

    @picocli.CommandLine.Mixin
    Mixins.SetValues set;

    private String provider;
    private String gpuSpec;
    private boolean json;

    @Option(names = "--soft-dmabuf", paramLabel = "on|off", description = "With --provider soft: the software "
        + "provider's DMA-BUF registration capability (default on; also -D" + SoftNicContext.DMABUF_PROP + ").")
    String softDmaBuf;

    @Option(names = "--soft-peermem", paramLabel = "on|off", description = "With --provider soft: the software "
        + "provider's peermem capability, GPU memory by pointer (default on; also -D" + SoftNicContext.PEERMEM_PROP
        + ").")
    String softPeermem;

    @Option(names = "--nccl", paramLabel = "NAME=VALUE", description = "An NCCL setting as a flag (wins over the "
        + "environment; its source is printed as 'flag'), e.g. --nccl NCCL_NET_GDR_LEVEL=LOC. Repeatable.")
    List<String> nccl = new ArrayList<>();

    @Option(names = "--negative-controls", description = "Run the negative controls (no setting may create a "
        + "capability): the baseline and "
        + "NCCL_NET_GDR_LEVEL=LOC/SYS, NCCL_NET_GDR_READ=0/1, NCCL_DMABUF_ENABLE=0/1, each set before and after "
        + "setup, on this host and on simulated hosts; exit 1 if any setting created a capability.")
    boolean negativeControls;

    @Option(names = "--strict", description = "Exit 1 unless GDR is proven end to end (GDR_READY).")
    boolean strict;

    @Option(names = "--sys", defaultValue = "/", hidden = true, description = "Root to probe (tests).")
    Path root;

    @Override
    public Integer call() throws IOException {
        final PrintWriter out = spec.commandLine().getOut();
        provider = providerOption.require(spec.commandLine(), java.util.EnumSet.of(Choices.Provider.HOST,
            Choices.Provider.NATIVE, Choices.Provider.SOFT)).toString();
        gpuSpec = gpuOption.spec == null ? null : gpuOption.spec.toString();
        json = jsonOption.json;
        if (negativeControls) {
            if (!provider.equals("host") || gpuSpec != null || !nccl.isEmpty()) {
                throw new ParameterException(spec.commandLine(), "--negative-controls sets the settings itself and "
                    + "probes this host and the simulated ones: give it alone (with --json)");
            }
            return negativeControls(out);
        }
        final boolean soft = switch (provider) {
            case "host", "native" -> false;
            case "soft" -> true;
            default -> throw new ParameterException(spec.commandLine(), "--provider must be host, native or soft, "
                + "not '" + provider + "'");
        };
        if (!soft && gpuSpec != null) {
            throw new ParameterException(spec.commandLine(), "--gpu is for --provider soft (a simulated GPU); the "
                + "host probe finds real GPUs itself");
        }
        if (!soft && (softDmaBuf != null || softPeermem != null)) {
            throw new ParameterException(spec.commandLine(), "--soft-dmabuf and --soft-peermem switch capabilities "
                + "of the software provider: use them with --provider soft");
        }
        if (soft && (gpuOption.spec == null || !gpuOption.spec.simulated())) {
            throw new ParameterException(spec.commandLine(), "--provider soft needs --gpu sim:<preset>");
        }
        final NcclSettings settings = settings();
        final DoctorReport report;
        try {
            report = soft ? DoctorLab.simulated(gpuSpec, onOff("--soft-dmabuf", softDmaBuf),
                onOff("--soft-peermem", softPeermem), settings)
                : DoctorLab.host(root, DoctorLab.nativeVerbs(), settings);
        } catch (final IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        if (json) {
            out.println(new ObjectMapper().writeValueAsString(json(report)));
        } else {
            print(out, report, soft ? "# gdrkit doctor: software NIC and " + gpuSpec + " (SIMULATED hardware)"
                : "# gdrkit doctor: probing this machine" + (provider.equals("native") ? " (verbs through the native "
                    + "provider)" : ""));
        }
        if (strict && !report.verdict().isReady()) {
            // the table went to stdout (perhaps into a file or a pipe): stderr says why the exit code is 1
            final PrintWriter err = spec.commandLine().getErr();
            err.println("gdrkit doctor: --strict: the verdict is " + report.verdict().text() + ", not GDR_READY");
            err.flush();
            return Main.EXIT_FAILURE;
        }
        return 0;
    }

    private NcclSettings settings() {
        final NcclSettings.Context ctx = new NcclSettings.Context();
        try {
            for (final String kv : nccl) {
                final int eq = kv.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("--nccl needs NAME=VALUE, not '" + kv + "'");
                }
                ctx.override(kv.substring(0, eq), kv.substring(eq + 1));
            }
            return ctx.conclude();
        } catch (final IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }


    private Boolean onOff(final String option, final String value) {
        if (value == null) {
            return null;
        }
        return switch (value) {
            case "on" -> true;
            case "off" -> false;
            default -> throw new ParameterException(spec.commandLine(), option + " must be on or off, not '" + value
                + "'");
        };
    }

    /** The report as the JSON document the doctor has always printed, with its settings added. */
    static Map<String, Object> json(final DoctorReport r) {
        final Map<String, Object> root = new LinkedHashMap<>();
        root.put("verdict", r.verdict().text());
        root.put("simulated", r.simulated());
        final List<Map<String, Object>> list = new ArrayList<>();
        for (final Check c : r.checks()) {
            final Map<String, Object> m = new LinkedHashMap<>();
            m.put("layer", c.layer());
            m.put("name", c.name());
            m.put("status", c.status().name());
            m.put("evidence", c.evidence());
            final String hint = io.gdrkit.gdr.doctor.Hints.of(c);
            if (hint != null) {
                m.put("hint", hint);
            }
            list.add(m);
        }
        root.put("checks", list);
        final List<Map<String, Object>> settings = new ArrayList<>();
        for (final SettingRow s : r.settings()) {
            final Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", s.name());
            m.put("value", s.value());
            m.put("source", s.source());
            m.put("effect", s.effect());
            settings.add(m);
        }
        root.put("settings", settings);
        root.put("cause", r.verdict().cause());
        return root;
    }

    /** The checklist, the settings section and the verdict, as text. */
    static void print(final PrintWriter out, final DoctorReport r, final String header) {
        out.println(header);
        String layer = "";
        for (final Check c : r.checks()) {
            if (!c.layer().equals(layer)) {
                layer = c.layer();
                out.println("[" + layer + "]");
            }
            out.println(String.format("  %-8s %-28s %s", c.status(), c.name(), c.evidence()));
            final String hint = io.gdrkit.gdr.doctor.Hints.of(c);
            if (hint != null) {
                out.println(String.format("  %-8s %-28s fix: %s", "", "", hint));
            }
        }
        out.println("[settings]");
        for (final SettingRow s : r.settings()) {
            out.println(String.format("  %-22s %-24s %-11s %s", s.name(), s.value(), s.source(), s.effect()));
        }
        out.println("verdict: " + r.verdict().text() + (r.simulated() ? " (simulated)" : ""));
    }

    private int negativeControls(final PrintWriter out) throws IOException {
        final NegativeControls.Result result;
        try {
            result = NegativeControls.run(root, DoctorLab.nativeVerbs());
        } catch (final IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        if (json) {
            final List<Map<String, Object>> rows = new ArrayList<>();
            for (final NegativeControls.Row row : result.rows()) {
                final Map<String, Object> m = new LinkedHashMap<>();
                m.put("host", row.host().label());
                m.put("simulated", row.host() != NegativeControls.Host.THIS_HOST);
                m.put("setting", row.setting());
                m.put("order", row.order());
                m.put("receive", row.receive());
                m.put("send", row.send());
                m.put("verdict", row.verdict());
                m.put("data", row.data());
                m.put("hardware_allows_gdr", row.hardwareAllows());
                m.put("capability_created", row.created());
                rows.add(m);
            }
            final Map<String, Object> root = new LinkedHashMap<>();
            root.put("negative_controls", rows);
            root.put("passed", result.passed());
            out.println(new ObjectMapper().writeValueAsString(root));
        } else {
            out.println("# gdrkit doctor --negative-controls: the negative controls' settings, each set before and after setup; "
                + "simulated hosts are labelled so");
            NegativeControls.Host host = null;
            for (final NegativeControls.Row row : result.rows()) {
                if (row.host() != host) {
                    host = row.host();
                    out.println("[" + host.label() + "] hardware allows GDR: " + (row.hardwareAllows() ? "yes" : "no"));
                    out.println(String.format("  %-24s %-13s %-12s %-12s %-10s %-9s %s", "setting", "set", "receive",
                        "send", "data", "created", "verdict"));
                }
                out.println(String.format("  %-24s %-13s %-12s %-12s %-10s %-9s %s", row.setting(), row.order(),
                    row.receive(), row.send(), row.data(), row.created() ? "YES" : "no", row.verdict()));
            }
            out.println("negative controls: " + (result.passed() ? "PASS, no setting created a capability"
                : "FAIL, a setting created a capability"));
        }
        return result.passed() ? 0 : Main.EXIT_FAILURE;
    }
}
