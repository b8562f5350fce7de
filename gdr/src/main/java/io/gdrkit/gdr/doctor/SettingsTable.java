/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.doctor;

import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.Source;
import io.gdrkit.gdr.gate.GdrDecision;
import io.gdrkit.gdr.gate.NcclSettings;
import io.gdrkit.gdr.topo.IbHcaFilter;
import io.gdrkit.gdr.topo.PathType;
import java.util.ArrayList;
import java.util.List;

/**
 * The doctor's settings section: each NCCL variable with its effective value, its source and what it did on the
 * probed host; and the cause of a DEGRADED verdict when a restrictive setting, not the hardware, turned GDR off.
 * Nothing here creates a capability: each effect is stated against what the hardware answered.
 */
final class SettingsTable {
    private SettingsTable() {
    }

    static List<SettingRow> rows(final NcclSettings s, final Facts f) {
        final List<SettingRow> rows = new ArrayList<>();
        for (final Setting<?> setting : s.all()) {
            rows.add(new SettingRow(setting.name(), NcclSettings.display(setting), NcclSettings.source(setting),
                effect(s, setting, f)));
        }
        return rows;
    }

    private static String effect(final NcclSettings s, final Setting<?> setting, final Facts f) {
        final String hwGdr = f.gpuGdr() == null ? "no GPU: nothing to allow" : !f.gpuGdr()
            ? "the GPU has no GPUDirect RDMA (116 = 0): nothing to allow" : null;
        final String n = setting.name();
        if (n.equals(NcclSettings.NET_GDR_LEVEL)) {
            if (f.distance() == null) {
                return "not consulted: no GPU-NIC pair";
            }
            final boolean allows = s.gdrLevel().value().allows(f.distance());
            return "distance " + f.distance() + (allows ? " <= " : " > ") + s.gdrLevel().value().path()
                + (allows ? ": allows GDR" + (hwGdr != null ? ", but " + hwGdr : "") : ": GDR off by distance");
        }
        if (n.equals(NcclSettings.NET_GDR_READ)) {
            final int v = s.gdrRead().value();
            final String d = v == 0 ? "sends do not read GPU memory" : v > 0 ? "sends may read GPU memory"
                : "NCCL's rule: sends read GPU memory when cc >= 8.0 (or an NVLink peer)";
            return d + (f.send() == null ? "" : "; send decision: " + onOff(f.send()));
        }
        if (n.equals(NcclSettings.NET_GDR_C2C)) {
            return f.distance() == PathType.P2C || f.distance() == PathType.C2C
                ? (s.gdrC2c().value() ? "a P2C pair counts as C2C" : "a P2C pair stays P2C")
                : "no C2C or P2C GPU-NIC path here: no effect";
        }
        if (n.equals(NcclSettings.DMABUF_ENABLE)) {
            if (f.dmabufHardware() == null) {
                return "not consulted: no GPU and NET device pair";
            }
            if (!f.dmabufHardware()) {
                return "DMA-BUF not usable on this host (provider, driver or attribute 124): "
                    + (s.dmabufEnable().value() ? "enabling it creates nothing" : "nothing to disable");
            }
            return s.dmabufEnable().value() ? "DMA-BUF usable and enabled"
                : "DMA-BUF usable but disabled: " + (Boolean.TRUE.equals(f.peermem())
                ? "peermem registers instead" : "no other registration path");
        }
        if (n.equals(NcclSettings.GDRCOPY_ENABLE)) {
            if (f.gdrcopy() == null) {
                return (s.gdrcopyEnable().value() ? "requested, but " : "off; ")
                    + "GDRCopy is not modelled by the simulated host: not used";
            }
            return s.gdrcopyEnable().value() ? (f.gdrcopy() ? "GDRCopy present: host-mapped GPU flags"
                : "requested, but GDRCopy is absent (/dev/gdrdrv, libgdrapi): not used")
                : "off (NCCL's default): GDRCopy not used" + (f.gdrcopy() ? " although present" : "");
        }
        if (n.equals(NcclSettings.NET_FORCE_FLUSH)) {
            return f.flush() == null ? "not consulted: no receive decision" : f.flush().evidence();
        }
        if (n.equals(NcclSettings.LOCAL_REGISTER)) {
            return s.localRegister().value() ? "user buffers are registered (ncclCommRegister)"
                : "ncclCommRegister succeeds with a null handle; the connector's own buffers are unaffected";
        }
        if (n.equals(NcclSettings.IB_DISABLE) || n.equals(NcclSettings.NET)) {
            if (s.socketOnly()) {
                return "NET/Socket selected: no GPUDirect RDMA (ptrSupport host only)";
            }
            return f.ibDevices() ? "NET/IB" + (setting.name().equals(NcclSettings.NET) && s.net().value()
                .isEmpty() ? " (first found)" : "") : "no IB device: NCCL would fall back to NET/Socket";
        }
        if (n.equals(NcclSettings.P2P_LEVEL)) {
            return f.gpuCount() < 2 ? "not consulted: " + f.gpuCount() + " GPU(s), no GPU-GPU pair"
                : "GPU-GPU P2P level " + (s.p2pLevel().value() == null ? "NCCL's platform rule"
                : s.p2pLevel().value());
        }
        if (n.equals(NcclSettings.IB_HCA)) {
            final IbHcaFilter h = s.ibHca().value();
            return h.selectsAll() ? "every HCA and port" : h.describe() + (f.send() == null ? ""
                : "; send decision: " + onOff(f.send()));
        }
        return "";
    }

    private static String onOff(final GdrDecision d) {
        return d.enabled() ? "GDR" : "host bounce (" + d.failedGate() + " gate)";
    }

    /**
     * The setting that turned GDR off, when the same gates with NCCL's defaults would have allowed it: the gate that
     * failed names the settings it reads; of those, the ones not at their default are the cause.
     *
     * @param failed          the decision that is off
     * @param defaultsAllowed the same decision taken with NCCL's defaults was on
     */
    static String cause(final NcclSettings s, final GdrDecision failed, final boolean defaultsAllowed) {
        if (!defaultsAllowed) {
            return "";
        }
        final List<Setting<?>> candidates = switch (failed.failedGate()) {
            case "distance" -> List.of(s.gdrLevel(), s.gdrC2c());
            case "read policy" -> List.of(s.gdrRead());
            case "NET" -> List.of(s.dmabufEnable(), s.ibDisable(), s.net());
            case IbHcaFilter.ENV -> List.of(s.ibHca());
            default -> s.all();
        };
        final List<String> named = new ArrayList<>();
        for (final Setting<?> c : candidates) {
            if (c.source() != Source.DEFAULT) {
                named.add(c.name() + "=" + NcclSettings.display(c) + " (" + NcclSettings.source(c) + ")");
            }
        }
        return String.join(", ", named);
    }
}
