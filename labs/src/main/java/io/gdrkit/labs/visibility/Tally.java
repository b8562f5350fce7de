/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.visibility;

/** The receiver's per-round bookkeeping of one configuration: what {@link VisResult} reports. */
final class Tally {
    long checks;
    long failures;
    int firstRound = -1;
    long firstPos = -1;
    String what = "none";
    long stale;
    long partial;
    long reordered;
    long corrupt;
    long timeouts;
    long errorCompletions;
    long launchFailures;
    String aborted;

    void fail(final int round, final long pos, final String kind) {
        failures++;
        switch (kind) {
            case "stale" -> stale++;
            case "partial" -> partial++;
            case "reordered" -> reordered++;
            case "corrupt" -> corrupt++;
            case "timeout" -> timeouts++;
            case "launch-failed" -> launchFailures++;
            case "error-completion" -> errorCompletions++;
            default -> { }
        }
        if (firstRound < 0) {
            firstRound = round;
            firstPos = pos;
            what = kind;
        }
    }
}
