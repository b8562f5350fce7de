/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.doctor;

import java.util.List;

/**
 * What the doctor found: the checks in order, the NCCL settings it honoured, and the verdict.
 *
 * @param simulated true when the probed host is the software provider and a simulated GPU
 * @param subject   what was probed, e.g. "this machine" or "software NIC and sim:h200"
 */
public record DoctorReport(boolean simulated, String subject, List<Check> checks, List<SettingRow> settings,
                           Verdict verdict) {
    public DoctorReport {
        checks = List.copyOf(checks);
        settings = List.copyOf(settings);
    }

    /** The first check with this name, or null. */
    public Check check(final String name) {
        for (final Check c : checks) {
            if (c.name().equals(name)) {
                return c;
            }
        }
        return null;
    }

    /** The settings row of {@code name}, or null. */
    public SettingRow setting(final String name) {
        for (final SettingRow s : settings) {
            if (s.name().equals(name)) {
                return s;
            }
        }
        return null;
    }
}
