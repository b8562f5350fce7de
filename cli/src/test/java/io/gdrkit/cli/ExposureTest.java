/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** Listening beyond loopback without a token is said on stderr, and refused with --strict, before anything listens. */
class ExposureTest {
    @Test
    void anOpenListenerWithoutATokenIsWarnedAboutOrRefused() throws Exception {
        Assumptions.assumeTrue(System.getenv("GDRKIT_TOKEN") == null, "GDRKIT_TOKEN is set in this environment");
        final Cli strict = Cli.run("perf", "write_bw", "--fabric", "tcp", "--bind", "0.0.0.0", "--strict");
        assertEquals(2, strict.exitCode(), strict.toString());
        assertTrue(strict.err().contains("--strict: listening on 0.0.0.0 without a token: anyone who reaches it "
            + "can join (give --token or set GDRKIT_TOKEN; docs/SECURITY.md)"), strict.toString());
        final Cli warned = Cli.run("launch", "-n", "1", "--bind", "0.0.0.0", "--", "true");
        assertEquals(0, warned.exitCode(), warned.toString());
        assertTrue(warned.err().startsWith("gdrkit launch: warning: listening on 0.0.0.0 without a token"),
            warned.toString());
        final Cli withToken = Cli.run("launch", "-n", "1", "--bind", "0.0.0.0", "--token", "a-long-token", "--",
            "true");
        assertEquals(0, withToken.exitCode(), withToken.toString());
        assertFalse(withToken.err().contains("warning"), withToken.toString());
        final Cli loopback = Cli.run("launch", "-n", "1", "--strict", "--", "true");
        assertEquals(0, loopback.exitCode(), loopback.toString());
        assertFalse(loopback.err().contains("warning"), loopback.toString());
    }
}
