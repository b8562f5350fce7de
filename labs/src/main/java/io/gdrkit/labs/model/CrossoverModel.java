/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.model;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * GPUDirect (the NIC writes GPU memory) against host staging (the NIC writes host memory, then a copy to the GPU),
 * by message size. Each path's time per message is modelled as {@code t(s) = alpha + s / beta}: alpha the fixed
 * cost of a message (post, completion, fence, the bounce's copy launch), beta the streaming rate. Both are fitted
 * per path to gdrkit's measurements (gpu-path's {@code gdr} and {@code bounce} rows), one size held back in both.
 * The crossover is where the two lines meet, {@code s* = (alpha_b - alpha_g) / (1/beta_g - 1/beta_b)}; the hybrid
 * threshold follows: below s* the path with the smaller alpha, from s* on the one with the larger beta. When the
 * lines do not meet at a positive size, one path is faster at every size and the threshold says so.
 *
 * @param source   where the measurements came from (a file, or "measured live on ...")
 * @param gdr      the GPUDirect path's model
 * @param bounce   the host-staging path's model
 * @param pinned   the pinned host-to-device copy at the same sizes (the link's limit), empty when not measured
 */
public record CrossoverModel(String source, Path gdr, Path bounce, List<Measurement> pinned) {
    /** Time per message in seconds: alpha (s) + bytes * gamma (s/B), gamma = 1/beta. */
    public static final List<CostFit.Term> TERMS = List.of(
        new CostFit.Term("alpha (s per message)", s -> 1),
        new CostFit.Term("gamma (s per byte, 1/beta)", s -> s));

    /** One path's inputs, fit and held-back check. */
    public record Path(String name, List<Measurement> inputs, CostFit fit, HeldBack heldBack) {
        public double alphaSeconds() {
            return fit.coefficients()[0];
        }

        /** Streaming rate in bytes/s; infinity when the fit dropped the per-byte term. */
        public double betaBytesPerSecond() {
            return fit.coefficients()[1] > 0 ? 1 / fit.coefficients()[1] : Double.POSITIVE_INFINITY;
        }

        /** Seconds per message of {@code bytes}. */
        public double seconds(final double bytes) {
            return fit.cost(TERMS, bytes);
        }

        /** Predicted MiB/s at {@code bytes}. */
        public double mibS(final double bytes) {
            return bytes / seconds(bytes) / (1 << 20);
        }
    }

    /**
     * @param paths    path -> measurements (x = bytes), as {@link ModelInputs#paths} returns them
     * @param holdBack the size held back in both paths; null: the largest size both have
     * @throws ModelInputException for fewer than 3 sizes in a path or a held-back size not measured in both
     */
    public static CrossoverModel fit(final String source, final Map<String, List<Measurement>> paths,
                                     final Double holdBack) {
        final List<Measurement> g = paths.get("gdr");
        final List<Measurement> b = paths.get("bounce");
        if (g == null || b == null) {
            throw new ModelInputException("the crossover model needs gdr and bounce measurements; have "
                + paths.keySet());
        }
        final double hb;
        if (holdBack != null) {
            hb = holdBack;
        } else {
            hb = g.stream().mapToDouble(Measurement::x).filter(x -> b.stream().anyMatch(m -> m.x() == x)).max()
                .orElseThrow(() -> new ModelInputException("gdr and bounce share no size to hold back"));
        }
        return new CrossoverModel(source, path("gdr", g, hb), path("bounce", b, hb),
            paths.getOrDefault("pinned", List.of()));
    }

    private static Path path(final String name, final List<Measurement> in, final double hb) {
        if (in.size() < 3) {
            throw new ModelInputException("the " + name + " path needs at least 3 sizes (2 to fit, 1 held back); got "
                + in.size());
        }
        final List<Measurement> fitOn = new ArrayList<>();
        Measurement held = null;
        for (final Measurement m : in) {
            if (m.x() == hb && held == null) {
                held = m;
            } else {
                fitOn.add(m);
            }
        }
        if (held == null) {
            throw new ModelInputException("held-back size " + SaturationModel.fmt(hb) + " B was not measured on the "
                + name + " path (have " + in.stream().map(m -> SaturationModel.fmt(m.x())).toList() + ")");
        }
        final double[] xs = fitOn.stream().mapToDouble(Measurement::x).toArray();
        final double[] t = fitOn.stream().mapToDouble(m -> m.x() / (m.mibS() * (1 << 20))).toArray();
        final CostFit f;
        try {
            f = CostFit.fit(TERMS, xs, t);
        } catch (final IllegalArgumentException e) {
            throw new ModelInputException("the " + name + " path cannot be fitted: " + e.getMessage());
        }
        final Path p = new Path(name, in, f, null);
        return new Path(name, in, f, new HeldBack(held.x(), held.mibS(), p.mibS(held.x())));
    }

    /** Both paths' held-back errors are within {@link HeldBack#FIT_LIMIT}: only then are the crossover and the
     *  hybrid threshold recommendations. */
    public boolean fits() {
        return gdr.heldBack().fits() && bounce.heldBack().fits();
    }

    /** Why the model does not fit (the paths whose held-back error exceeds the limit), or null when it fits. */
    public String misfit() {
        final List<String> bad = new java.util.ArrayList<>();
        for (final Path p : List.of(gdr, bounce)) {
            if (!p.heldBack().fits()) {
                bad.add(String.format(java.util.Locale.ROOT, "%s held-back error %+.1f %%", p.name(),
                    100 * p.heldBack().relativeError()));
            }
        }
        return bad.isEmpty() ? null : String.join(", ", bad) + String.format(java.util.Locale.ROOT,
            " exceeds %.0f %%", 100 * HeldBack.FIT_LIMIT);
    }

    /** The size where both paths take equal time, or NaN when the lines do not meet at a positive size. */
    public double crossoverBytes() {
        final double dg = gdr.fit.coefficients()[1] - bounce.fit.coefficients()[1];
        final double s = (bounce.alphaSeconds() - gdr.alphaSeconds()) / dg;
        return dg != 0 && s > 0 && Double.isFinite(s) ? s : Double.NaN;
    }

    /** The faster path for small messages (the smaller alpha; ties: the faster at 1 byte). */
    public String smallWinner() {
        return gdr.seconds(1) <= bounce.seconds(1) ? "gdr" : "bounce";
    }

    /** The hybrid rule that follows, in words. */
    public String hybridRule() {
        final double s = crossoverBytes();
        final String small = smallWinner();
        final String other = small.equals("gdr") ? "bounce" : "gdr";
        if (Double.isNaN(s)) {
            return "no crossover: " + small + " is faster at every size in the model; use " + small + " always";
        }
        return String.format(java.util.Locale.ROOT, "use %s below %d B and %s from %d B on", small, (long) Math.ceil(s),
            other, (long) Math.ceil(s));
    }
}
