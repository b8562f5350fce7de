/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.softnic.SoftNicContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** How a collective's software NICs are driven: chosen by the host's processors, and said in every row. */
class NicProgressTest {

    @Test
    void withFourProcessorsPerRankEachNicGetsASpinningThread() {
        Assumptions.assumeTrue(System.getProperty(SoftNicContext.PROGRESS_PROP) == null
            && System.getProperty(SoftNicContext.IDLE_STRATEGY_PROP) == null, "gdrkit.nic.* given to the test JVM");
        final CollWorld.NicProgress p = CollWorld.nicProgress(2, 16);
        final SoftNicContext c = p.context().conclude();
        assertEquals(SoftNicContext.ProgressMode.DEDICATED, c.progressMode());
        assertEquals("spin", c.idleStrategy());
        assertEquals("dedicated, idle spin (auto: 16 processors >= 4 x 2 ranks on this host)", p.description());
    }

    @Test
    void withFewerTheRanksOwnPollingDrivesItWithTheBackstop() {
        Assumptions.assumeTrue(System.getProperty(SoftNicContext.PROGRESS_PROP) == null
            && System.getProperty(SoftNicContext.BACKSTOP_PROP) == null, "gdrkit.nic.* given to the test JVM");
        for (final int[] rc : new int[][] {{2, 2}, {2, 7}, {4, 15}}) {
            final CollWorld.NicProgress p = CollWorld.nicProgress(rc[0], rc[1]);
            final SoftNicContext c = p.context().conclude();
            assertEquals(SoftNicContext.ProgressMode.OWN_DEVICE, c.progressMode(), p.description());
            assertEquals(CollWorld.BACKSTOP_MICROS, c.backstopMicros(), p.description());
            assertEquals("own_device, backstop 200 us (auto: " + rc[1] + " processors < 4 x " + rc[0]
                + " ranks on this host)", p.description());
        }
        // the edge: exactly 4 per rank is enough
        assertEquals(SoftNicContext.ProgressMode.DEDICATED, CollWorld.nicProgress(2, 8).context().conclude()
            .progressMode());
    }

    @Test
    void nonsenseCountsAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> CollWorld.nicProgress(0, 16));
        assertThrows(IllegalArgumentException.class, () -> CollWorld.nicProgress(2, 0));
    }

    @Test
    void everyRowSaysHowRankZerosNicWasDriven() {
        final List<CollResult> rows = new ArrayList<>();
        CollLocal.run(2, CollWorld.TransportKind.IB, new CollRun.Config(CollOp.ALLREDUCE, DataType.FLOAT32,
                RedOp.SUM, 0, 8, 64, 8, 0, 1, 1, true, "ib", "injvm", true),
            new CollContext(), SettingsReader.ofProcess(), Duration.ofSeconds(60), rows::add, (r, c) -> { }, null);
        assertEquals(2, rows.size());
        final String expected = CollWorld.nicProgress(2).description();
        for (final CollResult r : rows) {
            assertEquals(expected, r.nicProgress());
            assertEquals(0, r.wrong() + r.inPlaceWrong());
        }
        assertTrue(expected.contains("auto: " + Runtime.getRuntime().availableProcessors() + " processors"),
            expected);
    }
}
