/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 *
 * The Vector API (jdk.incubator.vector) for the float32 SUM reduction, beside gdrkit's shipped kernel and
 * MemorySegment.copy in the same JVM, 8 MiB of output, native segments. Not shipped: the module is an incubator, and
 * using it prints "WARNING: Using incubator modules" on every command. Run against a built bench jar:
 *   java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED \
 *        -cp bench/target/gdrkit-bench.jar bench/ReducerVectorApi.java
 * Prints, per kernel and case, min / median / max GB/s of output over 7 rounds (each the best of 20 calls) after
 * warm-up.
 */
import io.gdrkit.comm.DataType;
import io.gdrkit.comm.RedOp;
import io.gdrkit.comm.Reducer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

public class ReducerVectorApi {
    static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    static final ByteOrder NO = ByteOrder.nativeOrder();

    /** out = a + b, float32, with the Vector API; the tail element by element. */
    static void vsum(MemorySegment o, long oo, MemorySegment a, long ao, MemorySegment b, long bo, long n) {
        final long step = S.length();
        final long bound = n - n % step;
        long i = 0;
        for (; i < bound; i += step) {
            FloatVector x = FloatVector.fromMemorySegment(S, a, ao + i * 4, NO);
            FloatVector y = FloatVector.fromMemorySegment(S, b, bo + i * 4, NO);
            x.add(y).intoMemorySegment(o, oo + i * 4, NO);
        }
        for (; i < n; i++) {
            o.set(ValueLayout.JAVA_FLOAT_UNALIGNED, oo + i * 4, a.get(ValueLayout.JAVA_FLOAT_UNALIGNED, ao + i * 4)
                + b.get(ValueLayout.JAVA_FLOAT_UNALIGNED, bo + i * 4));
        }
    }

    interface K { void run(); }

    static String stats(K k, long bytes) {
        for (int w = 0; w < 200; w++) {
            k.run();
        }
        double[] r = new double[7];
        for (int round = 0; round < r.length; round++) {
            long best = Long.MAX_VALUE;
            for (int c = 0; c < 20; c++) {
                long t = System.nanoTime();
                k.run();
                best = Math.min(best, System.nanoTime() - t);
            }
            r[round] = bytes / (double) best;
        }
        Arrays.sort(r);
        return String.format("%.2f / %.2f / %.2f", r[0], r[r.length / 2], r[r.length - 1]);
    }

    public static void main(String[] args) {
        final int bytes = args.length > 0 ? Integer.parseInt(args[0]) : 8 << 20;
        final long n = bytes / 4;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment a = arena.allocate(bytes, 4096);
            MemorySegment b = arena.allocate(bytes, 4096);
            MemorySegment o = arena.allocate(bytes, 4096);
            for (long i = 0; i < n; i++) {
                a.setAtIndex(ValueLayout.JAVA_FLOAT, i, 1 + (i % 1000) / 1000f);
                b.setAtIndex(ValueLayout.JAVA_FLOAT, i, 1 + (i % 999) / 999f);
            }
            System.out.println("species " + S + ", " + bytes + " B of output, GB/s min / median / max");
            for (boolean inPlace : new boolean[] {false, true}) {
                final MemorySegment out = inPlace ? a : o;
                final String c = inPlace ? "in place " : "distinct ";
                System.out.println(c + "copy        " + stats(() -> MemorySegment.copy(b, 0, out, 0, bytes), bytes));
                System.out.println(c + "vector api  " + stats(() -> vsum(out, 0, a, 0, b, 0, n), bytes));
                System.out.println(c + "gdrkit      " + stats(() -> Reducer.reduce(out, 0, a, 0, b, 0, n,
                    DataType.FLOAT32, RedOp.SUM), bytes));
            }
        }
    }
}
