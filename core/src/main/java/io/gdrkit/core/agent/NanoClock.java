package io.gdrkit.core.agent;

/** Time source for engines, so that a deterministic runner can substitute virtual time. */
@FunctionalInterface
public interface NanoClock {
    long nanoTime();

    NanoClock SYSTEM = System::nanoTime;
}
