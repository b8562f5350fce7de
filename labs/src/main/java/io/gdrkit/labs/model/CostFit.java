/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.model;

import java.util.ArrayList;
import java.util.List;
import java.util.function.DoubleUnaryOperator;

/**
 * A cost model linear in its coefficients, {@code cost(x) = sum_j c_j f_j(x)}, fitted to measured costs by least
 * squares on the relative error (weights {@code 1 / cost^2}), so a 64 MiB point does not drown a 64 KiB one. Every
 * term is a physical cost and cannot be negative: a term whose coefficient comes out negative is dropped and the
 * rest refitted (the data do not show that cost), down to one term. What was dropped is reported.
 *
 * @param names        every term's name, in order
 * @param coefficients fitted coefficient per term; 0 for a dropped term
 * @param dropped      which terms were dropped
 * @param residuals    relative error of the fit at each fitted point, in their order
 */
public record CostFit(List<String> names, double[] coefficients, boolean[] dropped, double[] residuals) {

    /** One basis function of a cost model. */
    public record Term(String name, DoubleUnaryOperator f) {
    }

    /** The fitted cost at {@code x}. */
    public double cost(final List<Term> terms, final double x) {
        double v = 0;
        for (int j = 0; j < terms.size(); j++) {
            v += coefficients[j] * terms.get(j).f().applyAsDouble(x);
        }
        return v;
    }

    /** Root mean square of the relative residuals. */
    public double rmsRelative() {
        double s = 0;
        for (final double r : residuals) {
            s += r * r;
        }
        return residuals.length == 0 ? 0 : Math.sqrt(s / residuals.length);
    }

    /**
     * @param xs    where each cost was measured
     * @param costs the measured costs (positive)
     * @throws IllegalArgumentException when the points cannot determine even one term
     */
    public static CostFit fit(final List<Term> terms, final double[] xs, final double[] costs) {
        final int k = terms.size();
        final boolean[] drop = new boolean[k];
        // no more terms than points: the last terms are the optional ones
        for (int j = k - 1, keep = k; j >= 0 && keep > xs.length; j--, keep--) {
            drop[j] = true;
        }
        while (true) {
            final List<Integer> cols = new ArrayList<>();
            for (int j = 0; j < k; j++) {
                if (!drop[j]) {
                    cols.add(j);
                }
            }
            if (cols.isEmpty()) {
                throw new IllegalArgumentException("no term of the model fits these points with a non-negative "
                    + "cost");
            }
            final double[][] x = new double[xs.length][cols.size()];
            final double[] w = new double[xs.length];
            for (int i = 0; i < xs.length; i++) {
                for (int c = 0; c < cols.size(); c++) {
                    x[i][c] = terms.get(cols.get(c)).f().applyAsDouble(xs[i]);
                }
                w[i] = 1 / (costs[i] * costs[i]);
            }
            final double[] sol = LeastSquares.fit(x, costs, w);
            int worst = -1;
            for (int c = 0; c < sol.length; c++) {
                if (sol[c] < 0 && (worst < 0 || sol[c] < sol[worst])) {
                    worst = c;
                }
            }
            if (worst >= 0) {
                drop[cols.get(worst)] = true;
                continue;
            }
            final double[] coef = new double[k];
            for (int c = 0; c < sol.length; c++) {
                // a term that adds under 1e-9 of every point's cost is rounding, not a measured cost: exactly 0
                double share = 0;
                for (int i = 0; i < xs.length; i++) {
                    share = Math.max(share, Math.abs(sol[c] * x[i][c]) / costs[i]);
                }
                coef[cols.get(c)] = share < 1e-9 ? 0 : sol[c];
            }
            final List<String> names = terms.stream().map(Term::name).toList();
            final CostFit partial = new CostFit(names, coef, drop, new double[0]);
            final double[] res = new double[xs.length];
            for (int i = 0; i < xs.length; i++) {
                res[i] = (partial.cost(terms, xs[i]) - costs[i]) / costs[i];
            }
            return new CostFit(names, coef, drop, res);
        }
    }
}
