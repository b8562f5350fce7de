/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.collectives;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class CollectivesTest {
    private static final SettingsReader NONE = SettingsReader.ofEnv(Map.of());

    private static CollRun.Config cfg(final CollOp op, final DataType t, final RedOp r, final int root,
                                      final long min, final long max, final String transport) {
        return new CollRun.Config(op, t, r, root, min, max, 4, 0, 2, 1, true, transport, "injvm", true);
    }

    private static List<CollResult> run(final int np, final CollWorld.TransportKind kind, final CollRun.Config c,
                                        final CollContext ctx) {
        return CollLocal.run(np, kind, c, ctx, NONE, Duration.ofSeconds(20), r -> { });
    }

    @ParameterizedTest(name = "{0} {1} {2} np={3} {4}")
    @CsvSource({
        "allreduce,float,sum,3,IB", "allreduce,int8,prod,2,SOCKET", "allreduce,bfloat16,max,4,IB",
        "allreduce,half,min,2,IB", "allreduce,int64,sum,3,SOCKET", "allreduce,double,prod,3,IB",
        "allgather,int32,sum,3,IB", "allgather,half,sum,2,SOCKET",
        "reduce-scatter,float,sum,4,IB", "reduce-scatter,int32,max,3,SOCKET",
        "broadcast,int8,sum,3,IB", "reduce,float,sum,3,IB", "reduce,int32,min,2,SOCKET",
        "alltoall,int32,sum,4,IB", "alltoall,double,sum,3,SOCKET", "sendrecv,float,sum,3,IB",
        "allreduce,float,sum,1,IB"})
    void everyElementIsRightOutOfPlaceAndInPlace(final String op, final String type, final String red,
                                                 final int np, final CollWorld.TransportKind kind) {
        final CollOp o = CollOp.parse(op);
        // small staging (4 KiB, 4 steps: 1 KiB chunks) so that sizes up to 40 KiB go through many chunks
        final List<CollResult> rows = run(np, kind, cfg(o, DataType.parse(type), RedOp.parse(red), np - 1, 0,
            40_000, kind.name().toLowerCase()), new CollContext().buffSize(4096).steps(4).channels(2)
            .settings(NONE));
        assertEquals(CollRun.sizes(cfg(o, DataType.parse(type), RedOp.parse(red), 0, 0, 40_000, "x"), np).size(),
            rows.size());
        for (final CollResult r : rows) {
            assertEquals(0, r.wrong(), r.toString());
            assertEquals(0, r.inPlaceWrong(), r.toString());
            assertEquals(np, r.np());
            assertTrue(r.timeUs() > 0 || r.bytes() == 0, r.toString());
        }
    }

    @Test
    void treeAllreduceIsRightToo() {
        final List<CollResult> rows = run(5, CollWorld.TransportKind.IB, cfg(CollOp.ALLREDUCE, DataType.INT32,
            RedOp.SUM, 0, 4, 100_000, "ib"), new CollContext().algo(CollContext.Algo.TREE).buffSize(8192).steps(2)
            .channels(1).settings(NONE));
        assertFalse(rows.isEmpty());
        for (final CollResult r : rows) {
            assertEquals(0, r.wrong() + r.inPlaceWrong(), r.toString());
        }
    }

    @Test
    void sizesFollowNcclTestsRounding() {
        final CollRun.Config c = cfg(CollOp.ALLGATHER, DataType.FLOAT32, RedOp.SUM, 0, 8, 100, "ib");
        assertEquals(List.of(0L, 24L), CollRun.sizes(c, 3)); // 8 and 32 bytes rounded down to 3 floats
        assertEquals(2.0 * 3 / 4, CollOp.ALLREDUCE.busFactor(4));
        assertEquals(3.0 / 4, CollOp.ALLGATHER.busFactor(4));
        assertEquals(1.0, CollOp.BROADCAST.busFactor(4));
        assertThrows(IllegalArgumentException.class, () -> CollOp.parse("allsum"));
        assertThrows(IllegalArgumentException.class, () -> DataType.parse("int16"));
    }

    @Test
    void bfloat16RoundsToNearestEven() {
        assertEquals((short) 0x3f80, DataType.toBf16(1.0f));
        assertEquals((short) 0x3f80, DataType.toBf16(Float.intBitsToFloat(0x3f808000))); // tie to even (down)
        assertEquals((short) 0x3f82, DataType.toBf16(Float.intBitsToFloat(0x3f818000))); // tie to even (up)
        assertEquals((short) 0x7fc0, DataType.toBf16(Float.NaN));
    }
}
