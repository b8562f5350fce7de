/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.doctor;

/**
 * One line of the doctor's checklist.
 *
 * @param layer    GPU, verbs, registration, topology, gates, connector, platform, end to end
 * @param name     what was checked, e.g. "GPUDirect RDMA (116)" or "soft1 port 1"
 * @param status   the outcome
 * @param evidence what was read or called and what it answered
 */
public record Check(String layer, String name, Status status, String evidence) {
    public Check {
        if (evidence == null || evidence.isBlank()) {
            throw new IllegalArgumentException("a check carries its evidence: " + layer + "/" + name);
        }
    }
}
