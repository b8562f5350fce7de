/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.gdr.topo.PathType;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The models recover known parameters from synthetic data, compute held-back errors exactly, and name bad input. */
class ModelTest {
    @TempDir
    Path dir;

    private static double rel(final double got, final double want) {
        return Math.abs(got - want) / Math.abs(want);
    }

    private static List<Measurement> qpCurve(final double a, final double b, final double c, final int... qs) {
        final List<Measurement> out = new ArrayList<>();
        for (final int q : qs) {
            out.add(new Measurement(q, 1 / (a + b / q + c * q), 1, "synthetic"));
        }
        return out;
    }

    @Test
    void aModelFitsOnlyWithinAQuarterOfItsHeldBackPointAndTheMeasuredBestWinsADisagreement() {
        assertTrue(new HeldBack(8, 100, 125).fits());
        assertTrue(new HeldBack(8, 100, 75).fits());
        assertFalse(new HeldBack(8, 100, 125.01).fits());
        assertFalse(new HeldBack(8, 100, 74.99).fits());
        // a curve that peaks at 4 QPs (1/bw = 1e-4 + 4e-4/q + 2.5e-5*q) fitted to 1, 2, 4, 8, with 16 measured highest
        final List<Measurement> in = new ArrayList<>();
        for (final int q : new int[] {1, 2, 4, 8}) {
            in.add(new Measurement(q, 1 / (1e-4 + 4e-4 / q + 2.5e-5 * q), 1, "synthetic"));
        }
        in.add(new Measurement(16, 10_000, 1, "synthetic"));
        final SaturationModel m = SaturationModel.fit(in, 16.0);
        assertEquals(4.0, m.bestQps(), 1e-6);
        assertEquals(16, m.measuredBest().x());
        assertFalse(m.bestAgrees());
        assertFalse(m.fits(), "16 QPs: predicted " + m.heldBack().predicted());
        // without the outlier, 8 held back is on the curve: it fits, and the best (4) is the measured best
        final SaturationModel onCurve = SaturationModel.fit(in.subList(0, 4), 8.0);
        assertTrue(onCurve.fits());
        assertEquals(4, onCurve.measuredBest().x());
        assertTrue(onCurve.bestAgrees());
    }

    @Test
    void saturationRecoversAllThreeParameters() {
        final double a = 1 / 20000.0;
        final double b = 3 / 20000.0;
        final double c = 0.002 / 20000.0;
        final SaturationModel m = SaturationModel.fit(qpCurve(a, b, c, 1, 2, 4, 8, 16), null);
        assertTrue(rel(m.a(), a) < 1e-9, "a " + m.a());
        assertTrue(rel(m.b(), b) < 1e-9, "b " + m.b());
        assertTrue(rel(m.c(), c) < 1e-9, "c " + m.c());
        assertEquals(16, m.heldBack().x());
        assertTrue(Math.abs(m.heldBack().relativeError()) < 1e-9);
        assertTrue(rel(m.bestQps(), Math.sqrt(b / c)) < 1e-9);
        assertTrue(rel(m.bestMibS(), 1 / (a + 2 * Math.sqrt(b * c))) < 1e-9);
        assertTrue(m.fit().rmsRelative() < 1e-9);
    }

    @Test
    void saturatingCurveWithoutPerQpCostDropsC() {
        // bw = 16000 q / (q + 2): a = 1/16000, b = 2/16000, c = 0 — c fits at ~0 or is dropped, never negative
        final SaturationModel m = SaturationModel.fit(qpCurve(1 / 16000.0, 2 / 16000.0, 0, 1, 2, 4, 8), 2.0);
        assertTrue(rel(m.a(), 1 / 16000.0) < 1e-6);
        assertTrue(rel(m.halfQps(), 2) < 1e-6);
        assertTrue(m.c() >= 0);
        assertTrue(rel(m.bestMibS(), 16000) < 1e-3 || m.c() > 0);
    }

    @Test
    void perQpCostWithoutAGainMakesOneQpBest() {
        // bw falls from the first QP on: b fits to zero (or is dropped), c > 0; the best is one QP, never 0.00
        final SaturationModel m = SaturationModel.fit(qpCurve(1 / 20000.0, 0, 0.01 / 20000.0, 1, 2, 4, 8, 16), null);
        assertTrue(m.c() > 0, "c " + m.c());
        assertEquals(1.0, m.bestQps());
        assertTrue(rel(m.bestMibS(), 1 / (m.a() + m.b() + m.c())) < 1e-9, "best " + m.bestMibS());
        assertTrue(rel(m.bestMibS(), 20000 / 1.01) < 1e-6, "best " + m.bestMibS());
    }

    @Test
    void aNegativeCostIsDroppedAndTheRestRefitted() {
        // time per MiB that keeps falling past b/q's reach: the exact fit needs c < 0, a negative cost
        final SaturationModel m = SaturationModel.fit(qpCurve(1e-3, 1e-3, -2e-5, 1, 2, 4, 8), null);
        assertArrayEquals(new boolean[] {false, false, true}, m.fit().dropped());
        assertEquals(0, m.c());
        assertTrue(m.a() > 0 && m.b() > 0);
        assertTrue(m.fit().rmsRelative() > 0); // two terms cannot follow three points exactly
        // flat data: only a is needed, b and c fit to zero
        final SaturationModel flat = SaturationModel.fit(List.of(new Measurement(1, 1000, 1, "s"),
            new Measurement(2, 1000, 1, "s"), new Measurement(4, 1000, 1, "s"), new Measurement(8, 1000, 1, "s")),
            null);
        assertTrue(rel(flat.a(), 1e-3) < 1e-9);
        assertEquals(0, flat.b(), 1e-12);
        assertEquals(0, flat.c(), 1e-12);
        assertTrue(Math.abs(flat.heldBack().relativeError()) < 1e-9);
    }

    @Test
    void heldBackErrorIsPredictedOverMeasuredMinusOne() {
        final List<Measurement> in = new ArrayList<>(qpCurve(1e-4, 2e-4, 0, 1, 2, 4));
        final double truth = 1 / (1e-4 + 2e-4 / 8);
        in.add(new Measurement(8, truth * 1.1, 1, "synthetic, 10 % above the curve"));
        final SaturationModel m = SaturationModel.fit(in, 8.0);
        assertTrue(rel(m.heldBack().predicted(), truth) < 1e-9);
        assertEquals(truth * 1.1, m.heldBack().measured());
        assertTrue(Math.abs(m.heldBack().relativeError() - (1 / 1.1 - 1)) < 1e-9, "" + m.heldBack().relativeError());
    }

    @Test
    void saturationRefusesTooFewPointsAndAnUnmeasuredHoldBack() {
        assertTrue(assertThrows(ModelInputException.class, () -> SaturationModel.fit(qpCurve(1, 1, 0, 1, 2), null))
            .getMessage().contains("at least 3 QP counts"));
        assertTrue(assertThrows(ModelInputException.class, () -> SaturationModel.fit(qpCurve(1, 1, 0, 1, 2, 4), 3.0))
            .getMessage().contains("held-back QP count 3 was not measured"));
    }

    private static List<Measurement> pathCurve(final double alpha, final double beta, final long... sizes) {
        final List<Measurement> out = new ArrayList<>();
        for (final long s : sizes) {
            out.add(new Measurement(s, s / (alpha + s / beta) / (1 << 20), 1, "synthetic"));
        }
        return out;
    }

    @Test
    void crossoverRecoversAlphaBetaAndTheThreshold() {
        // gdr: 5 us, 2 GB/s; bounce: 40 us, 8 GB/s -> equal at s* = 35e-6 / (1/2e9 - 1/8e9) = 93333.3 B
        final long[] sizes = {4096, 65536, 1 << 20, 4 << 20};
        final CrossoverModel m = CrossoverModel.fit("synthetic", Map.of("gdr", pathCurve(5e-6, 2e9, sizes),
            "bounce", pathCurve(40e-6, 8e9, sizes)), null);
        assertTrue(rel(m.gdr().alphaSeconds(), 5e-6) < 1e-9);
        assertTrue(rel(m.gdr().betaBytesPerSecond(), 2e9) < 1e-9);
        assertTrue(rel(m.bounce().alphaSeconds(), 40e-6) < 1e-9);
        assertTrue(rel(m.bounce().betaBytesPerSecond(), 8e9) < 1e-9);
        final double want = 35e-6 / (1 / 2e9 - 1 / 8e9);
        assertTrue(rel(m.crossoverBytes(), want) < 1e-9, "" + m.crossoverBytes());
        assertEquals("gdr", m.smallWinner());
        assertEquals("use gdr below 93334 B and bounce from 93334 B on", m.hybridRule());
        assertEquals(4 << 20, m.gdr().heldBack().x());
        assertTrue(Math.abs(m.bounce().heldBack().relativeError()) < 1e-9);
    }

    @Test
    void noCrossoverWhenOnePathWinsEverywhere() {
        final long[] sizes = {65536, 1 << 20, 4 << 20};
        final CrossoverModel m = CrossoverModel.fit("synthetic", Map.of("gdr", pathCurve(50e-6, 1.5e9, sizes),
            "bounce", pathCurve(20e-6, 4e9, sizes)), 65536.0);
        assertTrue(Double.isNaN(m.crossoverBytes()));
        assertEquals("no crossover: bounce is faster at every size in the model; use bounce always", m.hybridRule());
        assertEquals(65536, m.gdr().heldBack().x());
    }

    @Test
    void topologyPricesSameSwitchWithGdrAndAcrossSocketsWithStaging() {
        final long[] sizes = {65536, 1 << 20, 4 << 20};
        final CrossoverModel c = CrossoverModel.fit("synthetic", Map.of("gdr", pathCurve(5e-6, 2e9, sizes),
            "bounce", pathCurve(40e-6, 20e9, sizes)), null);
        final TopologyCostModel t = TopologyCostModel.of(c, 90, List.of(1L << 20));
        final TopologyCostModel.Placement same = t.placements().get(0);
        final TopologyCostModel.Placement cross = t.placements().get(1);
        assertEquals(PathType.PIX, same.path().type());
        assertTrue(same.gdr().allowed());
        assertEquals("gdr", same.dataPath());
        assertFalse(same.linkBinds()); // 2 GB/s path under a 12 GB/s link
        assertEquals((1 << 20) / (5e-6 + (1 << 20) / 2e9) / (1 << 20), same.mibS().get(0), 1e-6);
        assertEquals(PathType.SYS, cross.path().type());
        assertFalse(cross.gdr().allowed());
        assertEquals("bounce", cross.dataPath());
        // the fitted bounce streams at 20 GB/s, above the 10 GB/s SYS link: the link sets the price
        assertTrue(cross.linkBinds());
        assertEquals((1 << 20) / (40e-6 + (1 << 20) / 10e9) / (1 << 20), cross.mibS().get(0), 1e-6);
    }

    private Path write(final String name, final String text) throws IOException {
        final Path p = dir.resolve(name);
        Files.writeString(p, text);
        return p;
    }

    @Test
    void readsPerfJsonLinesTakingTheMedianPerQpCount() throws IOException {
        final Path f = write("q.jsonl", """
            {"label":"x","run":1,"test":"write_bw","fabric":"injvm","qps":1,"bytes":65536,"bw_avg_mib_s":100}
            {"test":"write_bw","fabric":"injvm","qps":1,"bytes":65536,"bw_avg_mib_s":300}
            {"test":"write_bw","fabric":"injvm","qps":1,"bytes":65536,"bw_avg_mib_s":200}
            # a comment
            {"check":"byte-exact","test":"write_bw"}
            {"test":"write_bw","fabric":"tcp","qps":2,"bytes":65536,"bw_avg_mib_s":50}
            {"test":"read_bw","fabric":"injvm","qps":2,"bytes":65536,"bw_avg_mib_s":50}
            {"test":"write_bw","fabric":"injvm","qps":2,"bytes":65536,"bw_avg_mib_s":400}
            """);
        final List<Measurement> m = ModelInputs.qpScaling(f, "write_bw", "injvm", null);
        assertEquals(2, m.size());
        assertEquals(1, m.get(0).x());
        assertEquals(200, m.get(0).mibS());
        assertEquals(3, m.get(0).runs());
        assertEquals(400, m.get(1).mibS());
        assertTrue(assertThrows(ModelInputException.class, () -> ModelInputs.qpScaling(f, "write_bw", null, null))
            .getMessage().endsWith("lines of several fabrics [injvm, tcp]; pick one (--fabric)"));
    }

    @Test
    void readsGpuPathTextAndJson() throws IOException {
        final Path text = write("g.txt", """
            == run 1 gpu-path -s 65536 -n 2000
            # software NIC (simulated), in-JVM fabric; GPU: ...
            #path   bytes      iters  MiB/s      check
            gdr     65536      2000   663.6      byte-exact
            bounce  65536      2000   2166.6     byte-exact
            pinned  65536      2000   6579.0     limit: host-to-device copy from pinned memory
            gdr     65536      2000   600.0      byte-exact
            bounce  1048576    400    4277.2     byte-exact
            """);
        final Map<String, List<Measurement>> p = ModelInputs.paths(text);
        assertEquals(631.8, p.get("gdr").get(0).mibS(), 1e-9);
        assertEquals(2, p.get("gdr").get(0).runs());
        assertEquals(2, p.get("bounce").size());
        assertEquals(6579.0, p.get("pinned").get(0).mibS());
        final Path json = write("g.jsonl", """
            {"path":"gdr","bytes":4096,"iters":10,"mib_s":10.5,"check":"byte-exact"}
            {"path":"bounce","bytes":4096,"iters":10,"mib_s":20.5,"check":"byte-exact"}
            """);
        assertEquals(20.5, ModelInputs.paths(json).get("bounce").get(0).mibS());
    }

    @Test
    void badInputFilesGetNamedErrors() throws IOException {
        assertEquals(dir.resolve("none") + ": no such file", assertThrows(ModelInputException.class,
            () -> ModelInputs.paths(dir.resolve("none"))).getMessage());
        assertEquals(dir + ": is a directory, not a measurement file", assertThrows(ModelInputException.class,
            () -> ModelInputs.paths(dir)).getMessage());
        final Path bin = dir.resolve("bin");
        Files.write(bin, new byte[] {'{', 0, '}'});
        assertEquals(bin + ": binary content (NUL byte at offset 1)", assertThrows(ModelInputException.class,
            () -> ModelInputs.paths(bin)).getMessage());
        final Path latin = dir.resolve("latin");
        Files.write(latin, new byte[] {'a', (byte) 0xe9, '\n'});
        assertEquals(latin + ": not UTF-8 text", assertThrows(ModelInputException.class,
            () -> ModelInputs.paths(latin)).getMessage());
        final Path broken = write("broken.jsonl", "{\"path\":\"gdr\"}\n{\"path\": gdr\n");
        assertTrue(assertThrows(ModelInputException.class, () -> ModelInputs.paths(broken)).getMessage()
            .startsWith(broken + ":2: malformed JSON"));
        final Path notNum = write("n.jsonl", "{\"path\":\"gdr\",\"bytes\":\"big\",\"mib_s\":1}\n");
        assertEquals(notNum + ":1: field 'bytes' is not a number (\"big\")", assertThrows(ModelInputException.class,
            () -> ModelInputs.paths(notNum)).getMessage());
        final Path neg = write("neg.jsonl", "{\"test\":\"write_bw\",\"qps\":1,\"bytes\":8,\"bw_avg_mib_s\":-3}\n");
        assertEquals(neg + ":1: field 'bw_avg_mib_s' must be positive, not -3", assertThrows(
            ModelInputException.class, () -> ModelInputs.qpScaling(neg, "write_bw", null, null)).getMessage());
        final Path onlyGdr = write("o.jsonl", "{\"path\":\"gdr\",\"bytes\":8,\"mib_s\":1}\n");
        assertEquals(onlyGdr + ": needs gdr and bounce rows (gpu-path --json lines or its table); found [gdr]",
            assertThrows(ModelInputException.class, () -> ModelInputs.paths(onlyGdr)).getMessage());
        final Path wrong = write("w.txt", "gdr     65536      2000   663.6      MISMATCH at byte 7\n");
        assertTrue(assertThrows(ModelInputException.class, () -> ModelInputs.paths(wrong)).getMessage()
            .contains(":1: the gdr run delivered wrong bytes (MISMATCH at byte 7)"));
        final Path empty = write("e.jsonl", "\n# nothing\n");
        assertEquals(empty + ": no write_bw line with qps and bw_avg_mib_s", assertThrows(ModelInputException.class,
            () -> ModelInputs.qpScaling(empty, "write_bw", null, null)).getMessage());
        final Path sizes = write("s.jsonl", """
            {"test":"write_bw","qps":1,"bytes":8,"bw_avg_mib_s":3}
            {"test":"write_bw","qps":1,"bytes":16,"bw_avg_mib_s":3}
            """);
        assertTrue(assertThrows(ModelInputException.class, () -> ModelInputs.qpScaling(sizes, "write_bw", null, null))
            .getMessage().endsWith("lines of several sizes [8, 16]; pick one (--size)"));
        final Path two = write("two.txt", "gdr 8 1 1.0 byte-exact\nbounce 8 1 2.0 byte-exact\n"
            + "gdr 16 1 1.0 byte-exact\nbounce 16 1 2.0 byte-exact\n");
        assertEquals("the gdr path needs at least 3 sizes (2 to fit, 1 held back); got 2", assertThrows(
            ModelInputException.class, () -> CrossoverModel.fit("t", ModelInputs.paths(two), null)).getMessage());
    }

    @Test
    void liveQpScalingMeasuresEachCount() {
        final List<Measurement> m = ModelLab.qpScaling(4096, new int[] {1, 2}, 500, 1);
        assertEquals(2, m.size());
        assertEquals(1, m.get(0).x());
        assertEquals(2, m.get(1).x());
        assertTrue(m.get(0).mibS() > 0 && m.get(1).mibS() > 0);
        assertTrue(m.get(0).source().contains("simulated"));
    }
}
