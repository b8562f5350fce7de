/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import java.lang.foreign.StructLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Compares what the C ABI probe ({@code ibverbs/src/test/c/abi_probe.c}, compiled against a host's rdma-core headers)
 * printed with the FFM layouts. The test suite runs it on every build; {@code gdrkit abi-check FILE} runs it on a
 * host that has no build tools for Java.
 */
public final class AbiCompare {
    private AbiCompare() {
    }

    /** The result: how many entries were compared and each disagreement as a line naming both values. */
    public record Result(int compared, List<String> mismatches) {
        public boolean passed() {
            return mismatches.isEmpty() && compared > 0;
        }
    }

    /** Every layout the binding uses, as the probe names them. */
    public static Map<String, Long> layouts() {
        final List<StructLayout> all = new ArrayList<>(IbvLayouts.ALL);
        all.add(RdmaCm.CONN_PARAM);
        all.add(RdmaCm.CM_EVENT);
        final Map<String, Long> java = new LinkedHashMap<>(IbvLayouts.describeAll(all));
        java.putAll(IbvLayouts.describeAll(List.of(RdmaCm.CM_ID_HEAD)));
        java.remove("rdma_cm_id.sizeof"); // only its head is bound
        java.putAll(IbvLayouts.describeAll(List.of(IbvLayouts.SRQ_HEAD)));
        java.remove("ibv_srq.sizeof"); // only its head is bound (an SRQ async event's handle)
        return java;
    }

    /** Parses the probe's {@code name value} lines. */
    public static Map<String, Long> parse(final List<String> lines) {
        final Map<String, Long> values = new LinkedHashMap<>();
        for (final String line : lines) {
            final String[] kv = line.trim().split(" ");
            if (kv.length != 2) {
                throw new IllegalArgumentException("not an ABI probe line: '" + line + "'");
            }
            try {
                values.put(kv[0], Long.parseLong(kv[1]));
            } catch (final NumberFormatException e) {
                throw new IllegalArgumentException("not an ABI probe line: '" + line + "'");
            }
        }
        return values;
    }

    /** Compares a probe's output with {@link #layouts()}. */
    public static Result compare(final Map<String, Long> probe) {
        final List<String> bad = mismatches(probe, layouts());
        return new Result((int) probe.keySet().stream().filter(k -> !k.endsWith(".value")).count(), bad);
    }

    private static boolean grewAtEnd(final String name, final long java, final long c) {
        final Long slack = IbvLayouts.GROWS_AT_END.get(name.substring(0, name.length() - ".sizeof".length()));
        return slack != null && c >= java && c <= java + slack;
    }

    /** Each C entry that the layouts disagree with or lack. */
    public static List<String> mismatches(final Map<String, Long> c, final Map<String, Long> java) {
        final List<String> bad = new ArrayList<>();
        c.forEach((name, value) -> {
            if (name.endsWith(".value")) {
                return;
            }
            final Long j = java.get(name);
            if (j == null) {
                bad.add(name + ": C says " + value + ", the FFM layout has no such member");
            } else if (name.endsWith(".sizeof") && grewAtEnd(name, j, value)) {
                return; // a newer rdma-core's larger struct: the binding allocates the room (IbvLayouts.GROWS_AT_END)
            } else if (!j.equals(value)) {
                bad.add(name + ": C says " + value + ", the FFM layout says " + j);
            }
        });
        return bad;
    }
}
