/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.doctor;

/**
 * One NCCL setting as the doctor honoured it.
 *
 * @param name   the variable, e.g. NCCL_NET_GDR_LEVEL
 * @param value  the effective value as NCCL prints it ("unset" when nobody set it and NCCL has no single default)
 * @param source default, environment or flag
 * @param effect what the value did on the probed host; a setting that narrows GDR says so, one that would need a
 *               capability the host lacks says that nothing changed
 */
public record SettingRow(String name, String value, String source, String effect) {
}
