/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import io.gdrkit.softnic.SoftNicContext;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** atomic_bw executes every FETCH_AND_ADD exactly once; DataCheck finds a bad byte and says where. */
class AtomicBwAndCheckTest {

    @Test
    void atomicBwAddsOncePerOperation() {
        final PerfConfig cfg = new PerfConfig(PerfKind.ATOMIC_BW).iters(3000).warmup(0)
            .progress(SoftNicContext.ProgressMode.INVOKER).conclude();
        try (Loopback lb = new Loopback(cfg, null, null)) {
            lb.b.buf.set(ValueLayout.JAVA_LONG, 0, 1000);
            final BwResult r = new BwRun(lb, cfg).run();
            assertEquals(3000, r.iterations());
            assertEquals(8, r.bytes());
            // every add of 1 executed once, none twice (a retried atomic is answered from the responder's cache)
            assertEquals(4000, lb.b.buf.get(ValueLayout.JAVA_LONG, 0));
        }
    }

    @Test
    void dataCheckComparesTheMovedBytesAndNamesTheFirstDifference() {
        final PerfConfig cfg = new PerfConfig(PerfKind.WRITE_BW).size(5000).iters(50).warmup(0)
            .progress(SoftNicContext.ProgressMode.INVOKER).conclude();
        try (Loopback lb = new Loopback(cfg, null, null)) {
            DataCheck.prepare(lb, cfg, 42);
            assertEquals(-1, lb.b.buf.asSlice(0, 5000).mismatch(java.lang.foreign.MemorySegment.ofArray(
                new byte[5000])), "destination zeroed");
            new BwRun(lb, cfg).run();
            final DataCheck.Result ok = DataCheck.verify(lb, cfg, 42);
            assertTrue(ok.byteExact(), ok.evidence());
            assertEquals(5000, ok.bytes());
            lb.b.buf.set(ValueLayout.JAVA_BYTE, 4321, (byte) (lb.b.buf.get(ValueLayout.JAVA_BYTE, 4321) ^ 1));
            final DataCheck.Result bad = DataCheck.verify(lb, cfg, 42);
            assertFalse(bad.byteExact());
            assertEquals(4321, bad.mismatchAt());
            assertTrue(bad.evidence().startsWith("MISMATCH: A -> B first bad byte 4321: 5000 bytes per direction"), bad.evidence());
        }
    }
}
