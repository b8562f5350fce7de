/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * A row's tally over the ranks' gathered reports (time bits, wrong count): the slowest time and the sum of the
 * wrong elements; a report that is not a measurement (a peer's word) is a named error naming its rank, never a row.
 */
class CollRunTallyTest {
    private static MemorySegment reports(final Arena a, final double[] times, final long[] wrong) {
        final MemorySegment m = a.allocate(16L * times.length, 8);
        for (int r = 0; r < times.length; r++) {
            m.set(ValueLayout.JAVA_LONG, 16L * r, Double.doubleToRawLongBits(times[r]));
            m.set(ValueLayout.JAVA_LONG, 16L * r + 8, wrong[r]);
        }
        return m;
    }

    @Test
    void theSlowestTimeAndEveryRanksWrongElements() {
        try (Arena a = Arena.ofConfined()) {
            assertArrayEquals(new double[] {7.5, 5}, CollRun.Tally.worst(reports(a, new double[] {1.25, 7.5, 0, 3},
                new long[] {0, 2, 3, 0}), 4));
            assertArrayEquals(new double[] {0, 0}, CollRun.Tally.worst(reports(a, new double[] {0}, new long[] {0}),
                1));
        }
    }

    @Test
    void aReportThatIsNotAMeasurementIsNamedWithItsRank() {
        try (Arena a = Arena.ofConfined()) {
            final double[][] times = {{1, -0.5}, {1, Double.NaN}, {1, Double.POSITIVE_INFINITY}, {1, 2}};
            final long[][] wrong = {{0, 0}, {0, 0}, {0, 0}, {0, -1}};
            final String[] said = {"rank 1 reported a time of -0.5 us and 0 wrong elements: not a measurement",
                "rank 1 reported a time of NaN us and 0 wrong elements: not a measurement",
                "rank 1 reported a time of Infinity us and 0 wrong elements: not a measurement",
                "rank 1 reported a time of 2.0 us and -1 wrong elements: not a measurement"};
            for (int i = 0; i < times.length; i++) {
                final MemorySegment m = reports(a, times[i], wrong[i]);
                final CollException e = assertThrows(CollException.class, () -> CollRun.Tally.worst(m, 2));
                assertEquals(said[i], e.getMessage());
            }
        }
    }
}
