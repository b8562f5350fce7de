/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.visibility;

/**
 * The result of one configuration. A check is one (round, sender) verification on the device; a failure is a check
 * that did not see exactly this round's data, or could not run (error completion, launch failure, timeout).
 *
 * @param rounds               rounds run (fewer than configured when the configuration was aborted)
 * @param firstFailingRound    -1 when nothing failed
 * @param firstFailingPosition first bad byte of the first failure, -1 when none or unknown
 * @param what                 what was wrong first: stale, partial, reordered, corrupt, timeout, launch-failed,
 *                             error-completion; "none" when nothing failed
 * @param failuresToldSenders  failures the receiver reported back to the senders
 * @param aborted              why the configuration stopped early, or null
 * @param roundMicrosMedian    median wall time of a round at the receiver (grant to results sent); NaN if none ran
 * @param readbackMicrosMedian median wall time of the readback step (OFF: nothing; ON: the READs; FLUSH: the call)
 */
public record VisResult(VisConfig config, String gpuName, String ordering, boolean simulated, String processes,
                        int rounds, long checks, long failures, int firstFailingRound, long firstFailingPosition,
                        String what, long stale, long partial, long reordered, long corrupt, long timeouts,
                        long errorCompletions, long launchFailures, long failuresToldSenders, String aborted,
                        double roundMicrosMedian, double readbackMicrosMedian) {

    public boolean passed() {
        return failures == 0 && aborted == null;
    }
}
