/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Huge values in every size and count flag, as a typo or a hostile wrapper script would give them: each is refused
 * before anything is allocated or run, with exit 2 and one line naming the flag (no stack trace, nothing on
 * stdout), never an OutOfMemoryError, an overflowed size or a run of days. Before the count bounds, {@code perf -n
 * 1000000000} and {@code coll -n 1000000000} started runs that would not end (this test then times out).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class HugeValuesAttackTest {
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
        perf write_bw --loopback -n 1000000000             | -n/--iters must be at most 100000000, not 1000000000
        perf write_lat --loopback -n 9223372036854775807   | -n/--iters must be at most 100000000
        perf write_bw --loopback --warmup 1000000000000    | --warmup must be at most 100000000
        perf write_bw --loopback -D 1e12                   | -D/--duration must be at most 3600
        perf write_bw --loopback --warmup-ms 99999999999   | --warmup-ms must be at most 3600000
        perf write_bw --loopback -s 1T                     | is not a byte count
        perf write_bw --loopback -s 4G                     | is more than 2147483647 bytes
        perf write_bw --loopback -s 9999999999999999999999 | --size
        perf write_bw --loopback --max-buffer 1E           | is not a byte count
        perf write_bw --loopback --trials 1000000000       | --trials must be 1 .. 1000
        coll allreduce -n 1000000000                       | -n/--iters must be at most 100000000
        coll allreduce -w 1000000000                       | -w/--warmup_iters must be at most 100000000
        coll allreduce --jit-warmup-ms 99999999999         | --jit-warmup-ms
        coll allreduce -e 64G                              | over 2 GiB: too large for one buffer
        coll allreduce -e 1T                               | is not a byte count
        coll allreduce -n 99999999999                      | '--iters': '99999999999' is not an int
        shmem-perf put_bw -n 1000000000                    | -n/--iters must be at most 100000000
        shmem-perf put_bw -e 64G                           | must be 1 <= min <= max <= 64 MiB
        gpu-path -n 1000000000                             | -n/--iters must be at most 100000000
        gpu-path -s 2G                                     | is more than 2147483647 bytes
        socket-bw -s 1G                                    | -s must be 1 .. 67108864
        model qps -n 1000000000                            | -n/--iters must be at most 100000000
        model qps -s 1G                                    | -s must be 1 .. 67108864
        visibility --size 64G                              | --size must be between
        ordering --size 2G                                 | is more than 2147483647 bytes
        launch -n 1000000000 -- true                       | outside 1..4096
        devices --soft 1000000000                          | --soft 1000000000 must be 0 .. 64
        regtiming --max-pages 1000000000                   | max pages 1000000000 must be 1 .. 262144
        regtiming --reps 1000000000                        | reps 1000000000 must be 3 .. 100000
        """)
    void aHugeValueIsRefusedByNameWithExit2(final String line, final String named) {
        final Cli r = Cli.run(line.trim().split("\\s+"));
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(r.err().contains(named.trim()), () -> "stderr names '" + named.trim() + "': " + r);
        assertFalse(r.err().contains("\tat "), () -> "no stack trace: " + r);
        assertFalse(r.err().contains("OutOfMemoryError"), r::toString);
        assertEquals("", r.out(), () -> "nothing on stdout: " + r);
    }
}
