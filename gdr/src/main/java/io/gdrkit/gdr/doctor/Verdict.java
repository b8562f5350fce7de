/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.doctor;

/**
 * The doctor's end-to-end verdict.
 *
 * @param kind   GDR_READY (proven end to end), DEGRADED (a gate failed, named) or HARDWARE_BLOCKED
 * @param detail which direction and gate, with NCCL's log line; empty for GDR_READY
 * @param cause  the restrictive setting that turned GDR off where the hardware allowed it (e.g.
 *               {@code NCCL_NET_GDR_LEVEL=LOC (environment)}); empty when the hardware itself is the cause
 */
public record Verdict(Kind kind, String detail, String cause) {
    /** The three verdicts. */
    public enum Kind { GDR_READY, DEGRADED, HARDWARE_BLOCKED }

    public static Verdict ready() {
        return new Verdict(Kind.GDR_READY, "", "");
    }

    public static Verdict degraded(final String detail, final String cause) {
        return new Verdict(Kind.DEGRADED, detail, cause);
    }

    public static Verdict blocked(final String detail) {
        return new Verdict(Kind.HARDWARE_BLOCKED, detail, "");
    }

    public boolean isReady() {
        return kind == Kind.GDR_READY;
    }

    /** As printed and in JSON: {@code DEGRADED (receive, distance gate: ...; cause: NCCL_NET_GDR_LEVEL=LOC (flag))}. */
    public String text() {
        if (kind != Kind.DEGRADED) {
            return kind.name();
        }
        return kind.name() + " (" + detail + (cause.isEmpty() ? "" : "; cause: " + cause) + ")";
    }
}
