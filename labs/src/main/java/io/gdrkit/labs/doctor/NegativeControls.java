/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.doctor;

import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.gdr.doctor.Check;
import io.gdrkit.gdr.doctor.DoctorReport;
import io.gdrkit.gdr.doctor.NativeVerbs;
import io.gdrkit.gdr.doctor.Status;
import io.gdrkit.gdr.gate.NcclSettings;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The negative controls (no setting creates a capability): the baseline and six settings (NCCL_NET_GDR_LEVEL=LOC / SYS,
 * NCCL_NET_GDR_READ=0 / 1, NCCL_DMABUF_ENABLE=0 / 1), each set before and after the communicator-like setup, on
 * this host and on simulated hosts with and without the hardware for GDR. A row records what the doctor decided per
 * direction; the control passes when no row uses GDR on a host whose hardware does not allow it.
 *
 * <p>"Before setup": the settings are concluded, then the connector registers and connects with them. "After
 * setup": the connector was set up with the baseline; NCCL reads each parameter once (ncclParam caches it), so a
 * value set afterwards changes nothing, and the row shows the communicator's decision as it stands.
 */
public final class NegativeControls {
    /** The seven negative-control configurations, in their order. */
    public static final List<Map<String, String>> CONFIGS = List.of(Map.of(),
        Map.of(NcclSettings.NET_GDR_LEVEL, "LOC"), Map.of(NcclSettings.NET_GDR_LEVEL, "SYS"),
        Map.of(NcclSettings.NET_GDR_READ, "0"), Map.of(NcclSettings.NET_GDR_READ, "1"),
        Map.of(NcclSettings.DMABUF_ENABLE, "0"), Map.of(NcclSettings.DMABUF_ENABLE, "1"));

    /** The hosts: this machine and three simulated ones. */
    public enum Host {
        THIS_HOST("this host", null, null, null),
        SIM_CAPABLE("simulated: sim:h200, provider with DMA-BUF and peermem", "sim:h200", true, true),
        SIM_NO_REGISTRATION("simulated: sim:h200, provider with neither DMA-BUF nor peermem", "sim:h200", false,
            false),
        SIM_NO_GDR_GPU("simulated: sim:no-gdr (attribute 116 = 0)", "sim:no-gdr", true, true);

        private final String label;
        private final String gpu;
        private final Boolean dmaBuf;
        private final Boolean peermem;

        Host(final String label, final String gpu, final Boolean dmaBuf, final Boolean peermem) {
            this.label = label;
            this.gpu = gpu;
            this.dmaBuf = dmaBuf;
            this.peermem = peermem;
        }

        public String label() {
            return label;
        }
    }

    /**
     * One control.
     *
     * @param host           which host
     * @param setting        "baseline" or NAME=VALUE
     * @param order          "before setup" or "after setup"
     * @param receive        GDR, host bounce, or "-" when no connection could be made
     * @param send           likewise for the send side
     * @param verdict        the doctor's verdict
     * @param data           the end-to-end byte check, or "-"
     * @param hardwareAllows the host's hardware allows GDR (the most permissive settings use it)
     * @param created        this row uses GDR although the hardware does not allow it: a control failure
     */
    public record Row(Host host, String setting, String order, String receive, String send, String verdict,
                      String data, boolean hardwareAllows, boolean created) {
    }

    /** All rows; {@link #passed()} when no setting created a capability anywhere. */
    public record Result(List<Row> rows) {
        public boolean passed() {
            return rows.stream().noneMatch(Row::created);
        }
    }

    private NegativeControls() {
    }

    /** Runs every control on every host; {@code verbs} is what libibverbs answered on this host. */
    public static Result run(final Path root, final NativeVerbs verbs) {
        final List<Row> rows = new ArrayList<>();
        for (final Host h : Host.values()) {
            final DoctorReport open = doctor(h, root, verbs, Map.of(NcclSettings.NET_GDR_LEVEL, "SYS",
                NcclSettings.NET_GDR_READ, "1", NcclSettings.DMABUF_ENABLE, "1"));
            final boolean hardware = gdr(open, "receive") && gdr(open, "send");
            final DoctorReport baseline = doctor(h, root, verbs, Map.of());
            for (final Map<String, String> config : CONFIGS) {
                final String name = config.isEmpty() ? "baseline" : config.entrySet().iterator().next().getKey()
                    + "=" + config.values().iterator().next();
                final DoctorReport before = config.isEmpty() ? baseline : doctor(h, root, verbs, config);
                rows.add(row(h, name, "before setup", before, hardware));
                rows.add(row(h, name, "after setup", baseline, hardware));
            }
        }
        return new Result(List.copyOf(rows));
    }

    private static DoctorReport doctor(final Host h, final Path root, final NativeVerbs verbs,
                                       final Map<String, String> env) {
        final NcclSettings s = new NcclSettings.Context().reader(SettingsReader.ofEnv(env)).conclude();
        return h == Host.THIS_HOST ? DoctorLab.host(root, verbs, s) : DoctorLab.simulated(h.gpu, h.dmaBuf,
            h.peermem, s);
    }

    private static Row row(final Host h, final String setting, final String order, final DoctorReport r,
                           final boolean hardware) {
        final boolean gdr = gdr(r, "receive") || gdr(r, "send");
        final Check data = r.check("data over the connection");
        return new Row(h, setting, order, side(r, "receive"), side(r, "send"), r.verdict().text(), data == null ? "-"
            : data.status() == Status.PASS ? "byte-exact" : "FAIL", hardware, gdr && !hardware);
    }

    private static boolean gdr(final DoctorReport r, final String side) {
        final Check c = r.check(side);
        return c != null && c.status() == Status.PASS;
    }

    private static String side(final DoctorReport r, final String side) {
        final Check c = r.check(side);
        return c == null ? "-" : c.status() == Status.PASS ? "GDR" : "host bounce";
    }
}
