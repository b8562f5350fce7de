/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * One rule for a GPU the command line names that this host lacks, in every command that takes one: exit code 3
 * ({@link Main#EXIT_NO_HARDWARE}), one line on stderr naming it, nothing on stdout, before any work. cuda:99 is
 * absent on every host this runs on (with or without CUDA).
 */
class HardwareAbsentTest {
    @ParameterizedTest
    @ValueSource(strings = {
        "perf write_bw --loopback --mem gpu --gpu cuda:99",
        "perf send_lat --loopback --mem gpu:99",
        "gpu-path --gpu cuda:99",
        "gpu-path --gpu sim:h200 --source-gpu cuda:99",
        "regtiming --gpu cuda:99 --max-pages 1",
        "visibility --gpu cuda:99 --fabric jvm",
        "shmem-perf put_lat --gpu cuda:99",
        "shmem-moe --gpu cuda:99",
        "coll allreduce --mem gpu --gpu cuda:99",
        "model crossover --gpu cuda:99"})
    void anAbsentGpuIsExitCode3InOneLine(final String line) {
        final Cli r = Cli.run(line.split(" "));
        assertEquals(Main.EXIT_NO_HARDWARE, r.exitCode(), r.toString());
        assertEquals("", r.out(), r.toString());
        final List<String> err = r.err().lines().toList();
        assertEquals(1, err.size(), r.toString());
        assertTrue(err.get(0).contains(":99: this host has"), r.toString());
        assertFalse(r.err().contains("Exception"), r.toString());
    }
}
