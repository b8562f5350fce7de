/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.model;

import java.util.ArrayList;
import java.util.List;

/**
 * Bandwidth against the number of QPs. The time per MiB is modelled as
 * {@code 1/bw(q) = a + b/q + c*q}: {@code a} the work no QP count parallelizes (the copy, the one engine thread),
 * {@code b/q} the round trip that more QPs in flight hide, {@code c*q} what each further QP costs (scanning,
 * ACKs, one PSN window each). With {@code c = 0} it is the saturating curve {@code bw = (1/a) q / (q + b/a)}; with
 * {@code c > 0} it peaks at {@code q = sqrt(b/c)}. a, b and c are fitted to the measurements (none assumed), one
 * measurement held back and predicted.
 *
 * @param inputs    every measurement, x = QPs
 * @param fit       the fit on all but the held-back point
 * @param heldBack  the held-back point and its prediction
 */
public record SaturationModel(List<Measurement> inputs, CostFit fit, HeldBack heldBack) {
    /** The terms, time per MiB in seconds. */
    public static final List<CostFit.Term> TERMS = List.of(
        new CostFit.Term("a (s/MiB, not parallelized by QPs)", q -> 1),
        new CostFit.Term("b (s*QP/MiB, hidden by more QPs: b/q)", q -> 1 / q),
        new CostFit.Term("c (s/(MiB*QP), cost of each QP: c*q)", q -> q));

    /**
     * @param holdBack the QP count held back; null: the largest (the model must extrapolate)
     * @throws ModelInputException for fewer than 3 QP counts or a held-back count that was not measured
     */
    public static SaturationModel fit(final List<Measurement> inputs, final Double holdBack) {
        if (inputs.size() < 3) {
            throw new ModelInputException("the QP model needs at least 3 QP counts (2 to fit, 1 held back); got "
                + inputs.size());
        }
        final double hb = holdBack != null ? holdBack : inputs.stream().mapToDouble(Measurement::x).max()
            .orElseThrow();
        final List<Measurement> fitOn = new ArrayList<>();
        Measurement held = null;
        for (final Measurement m : inputs) {
            if (m.x() == hb && held == null) {
                held = m;
            } else {
                fitOn.add(m);
            }
        }
        if (held == null) {
            throw new ModelInputException("held-back QP count " + fmt(hb) + " was not measured (have "
                + inputs.stream().map(m -> fmt(m.x())).toList() + ")");
        }
        final double[] xs = fitOn.stream().mapToDouble(Measurement::x).toArray();
        final double[] cost = fitOn.stream().mapToDouble(m -> 1 / m.mibS()).toArray();
        final CostFit f;
        try {
            f = CostFit.fit(TERMS, xs, cost);
        } catch (final IllegalArgumentException e) {
            throw new ModelInputException("the QP model cannot be fitted: " + e.getMessage());
        }
        return new SaturationModel(inputs, f, new HeldBack(held.x(), held.mibS(), 1 / f.cost(TERMS, held.x())));
    }

    /** The model recommends only when its held-back error is within {@link HeldBack#FIT_LIMIT}. */
    public boolean fits() {
        return heldBack.fits();
    }

    /** The measurement with the highest bandwidth (the first of equals), held-back point included. */
    public Measurement measuredBest() {
        Measurement best = inputs.get(0);
        for (final Measurement m : inputs) {
            if (m.mibS() > best.mibS()) {
                best = m;
            }
        }
        return best;
    }

    /**
     * The model's best QP count agrees with the measurements: it lies within a factor of 2 of the measured best
     * count (QP counts are usually measured in powers of 2, so a neighbour of the measured best agrees). A
     * saturating model (no best count) agrees when the measured best is the largest count measured.
     */
    public boolean bestAgrees() {
        final double measured = measuredBest().x();
        final double model = bestQps();
        if (Double.isInfinite(model)) {
            return measured == inputs.stream().mapToDouble(Measurement::x).max().orElseThrow();
        }
        return model >= measured / 2 && model <= measured * 2;
    }

    /** Predicted MiB/s at {@code q} QPs. */
    public double predict(final double q) {
        return 1 / fit.cost(TERMS, q);
    }

    /** a: seconds per MiB that no QP count removes; its inverse is the ceiling when each QP is free. */
    public double a() {
        return fit.coefficients()[0];
    }

    public double b() {
        return fit.coefficients()[1];
    }

    public double c() {
        return fit.coefficients()[2];
    }

    /**
     * The QP count of the model's best bandwidth: sqrt(b/c), at least 1 (a QP count below one means every added QP
     * costs: with b dropped, one QP is best), or infinity when c = 0 (it saturates).
     */
    public double bestQps() {
        return c() > 0 ? Math.max(1, Math.sqrt(b() / c())) : Double.POSITIVE_INFINITY;
    }

    /** The model's best bandwidth, MiB/s: 1/(a + b/q + c*q) at {@link #bestQps()}, or the asymptote 1/a. */
    public double bestMibS() {
        if (c() > 0) {
            final double q = bestQps();
            return 1 / (a() + b() / q + c() * q);
        }
        return a() > 0 ? 1 / a() : Double.POSITIVE_INFINITY;
    }

    /** QPs to reach half the asymptote (b/a) when the curve saturates. */
    public double halfQps() {
        return a() > 0 ? b() / a() : Double.POSITIVE_INFINITY;
    }

    static String fmt(final double v) {
        return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
    }
}
