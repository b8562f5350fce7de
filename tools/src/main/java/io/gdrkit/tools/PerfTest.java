/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.tools;

import io.gdrkit.verbs.WrOpcode;
import java.util.Locale;

/** The perftest-style tests {@code perf} runs: what they post and whether they measure bandwidth or latency. */
enum PerfTest {
    WRITE_BW(WrOpcode.RDMA_WRITE, true),
    WRITE_LAT(WrOpcode.RDMA_WRITE, false),
    READ_BW(WrOpcode.RDMA_READ, true),
    READ_LAT(WrOpcode.RDMA_READ, false),
    SEND_BW(WrOpcode.SEND, true),
    SEND_LAT(WrOpcode.SEND, false),
    ATOMIC_LAT(WrOpcode.ATOMIC_FETCH_AND_ADD, false);

    final int opcode;
    final boolean bandwidth;

    PerfTest(final int opcode, final boolean bandwidth) {
        this.opcode = opcode;
        this.bandwidth = bandwidth;
    }

    String id() {
        return name().toLowerCase(Locale.ROOT);
    }

    boolean isAtomic() {
        return opcode == WrOpcode.ATOMIC_FETCH_AND_ADD;
    }

    boolean isSend() {
        return opcode == WrOpcode.SEND;
    }

    /** Write and send latency is reported one way (RTT/2), as perftest does; read and atomic are round trips. */
    boolean halfRoundTrip() {
        return opcode == WrOpcode.RDMA_WRITE || opcode == WrOpcode.SEND;
    }

    static PerfTest parse(final String id) {
        for (final PerfTest t : values()) {
            if (t.id().equals(id)) {
                return t;
            }
        }
        return null;
    }

    static String valid() {
        final StringBuilder sb = new StringBuilder();
        for (final PerfTest t : values()) {
            sb.append(sb.isEmpty() ? "" : ", ").append(t.id());
        }
        return sb.toString();
    }
}
