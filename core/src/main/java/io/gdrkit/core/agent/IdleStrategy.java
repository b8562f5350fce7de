/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.agent;

/** What a thread does after a duty cycle: spin, yield or park, depending on how much work it found. */
public interface IdleStrategy {
    void idle(int workCount);

    void reset();

    /** Parses "spin", "yield", "backoff" or "sleep:<micros>". */
    static IdleStrategy parse(final String spec) {
        return switch (spec) {
            case "spin" -> new BusySpinIdleStrategy();
            case "yield" -> new YieldingIdleStrategy();
            case "backoff" -> new BackoffIdleStrategy();
            default -> {
                if (spec.startsWith("sleep:")) {
                    yield new SleepingIdleStrategy(Long.parseLong(spec.substring(6)) * 1000L);
                }
                throw new IllegalArgumentException("unknown idle strategy '" + spec
                    + "' (spin, yield, backoff, sleep:<micros>)");
            }
        };
    }
}
