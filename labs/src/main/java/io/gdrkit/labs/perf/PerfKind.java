/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import io.gdrkit.verbs.WrOpcode;
import java.util.Locale;

/** The perftest-style tests {@code perf} runs: what they post and whether they measure bandwidth or latency. */
public enum PerfKind {
    WRITE_BW(WrOpcode.RDMA_WRITE, true),
    WRITE_LAT(WrOpcode.RDMA_WRITE, false),
    READ_BW(WrOpcode.RDMA_READ, true),
    READ_LAT(WrOpcode.RDMA_READ, false),
    SEND_BW(WrOpcode.SEND, true),
    SEND_LAT(WrOpcode.SEND, false),
    ATOMIC_LAT(WrOpcode.ATOMIC_FETCH_AND_ADD, false),
    /** perftest's atomic_bw: FETCH_AND_ADD of 1 on one 8-byte word, as many in flight as the QP allows. */
    ATOMIC_BW(WrOpcode.ATOMIC_FETCH_AND_ADD, true);

    public final int opcode;
    public final boolean bandwidth;

    PerfKind(final int opcode, final boolean bandwidth) {
        this.opcode = opcode;
        this.bandwidth = bandwidth;
    }

    public String id() {
        return name().toLowerCase(Locale.ROOT);
    }

    public boolean isAtomic() {
        return opcode == WrOpcode.ATOMIC_FETCH_AND_ADD;
    }

    public boolean isSend() {
        return opcode == WrOpcode.SEND;
    }

    /** Write and send latency is reported one way (RTT/2), as perftest does; read and atomic are round trips. */
    public boolean halfRoundTrip() {
        return opcode == WrOpcode.RDMA_WRITE || opcode == WrOpcode.SEND;
    }

    public static PerfKind parse(final String id) {
        for (final PerfKind t : values()) {
            if (t.id().equals(id)) {
                return t;
            }
        }
        return null;
    }

    public static String valid() {
        final StringBuilder sb = new StringBuilder();
        for (final PerfKind t : values()) {
            sb.append(sb.isEmpty() ? "" : ", ").append(t.id());
        }
        return sb.toString();
    }
}
