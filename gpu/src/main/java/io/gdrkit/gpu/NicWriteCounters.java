/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

/**
 * How a GPU's NIC path moved the bytes written into it ({@link GpuDmaTarget#nicWriteCounters}), counted since the
 * device was opened: what the CPU copied into staging first, and what the copy engine read straight from the sender's
 * pinned host memory (no CPU copy); host memory pinned for the NIC, and pins refused with the last reason.
 *
 * @param stagedBytes bytes copied by the CPU into pinned staging, then by the copy engine
 * @param directBytes bytes the copy engine read directly from pinned memory of the sender
 * @param directSpans copy-engine calls that carried the direct bytes
 * @param pins        host ranges pinned for the NIC
 * @param pinsRefused pins the driver refused (the bytes are then staged)
 * @param pinNote     the last refusal's reason, or ""
 */
public record NicWriteCounters(long stagedBytes, long directBytes, long directSpans, long pins, long pinsRefused,
                               String pinNote) {
    /** The counts since {@code before} (the note stays this one's). */
    public NicWriteCounters since(final NicWriteCounters before) {
        return new NicWriteCounters(stagedBytes - before.stagedBytes, directBytes - before.directBytes,
            directSpans - before.directSpans, pins - before.pins, pinsRefused - before.pinsRefused, pinNote);
    }
}
