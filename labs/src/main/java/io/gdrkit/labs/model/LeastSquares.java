/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.model;

/**
 * Weighted linear least squares on a few basis functions: minimizes {@code sum w_i (y_i - sum_j c_j x_ij)^2} by the
 * normal equations, solved by Gaussian elimination with partial pivoting. The models have two or three terms and a
 * handful of points, so the normal equations' conditioning is not the limit; a singular system (fewer distinct
 * points than terms) is refused by name.
 */
final class LeastSquares {
    private LeastSquares() {
    }

    /**
     * @param x rows of basis values, one row per point
     * @param y observed values
     * @param w weights, one per point (relative error: {@code 1 / y^2})
     * @return the coefficients, one per basis column
     * @throws IllegalArgumentException when the points do not determine the coefficients
     */
    static double[] fit(final double[][] x, final double[] y, final double[] w) {
        final int n = x.length;
        final int k = x[0].length;
        if (n < k) {
            throw new IllegalArgumentException(n + " points cannot determine " + k + " coefficients");
        }
        final double[][] a = new double[k][k + 1];
        for (int i = 0; i < n; i++) {
            for (int r = 0; r < k; r++) {
                for (int c = 0; c < k; c++) {
                    a[r][c] += w[i] * x[i][r] * x[i][c];
                }
                a[r][k] += w[i] * x[i][r] * y[i];
            }
        }
        for (int col = 0; col < k; col++) {
            int piv = col;
            for (int r = col + 1; r < k; r++) {
                if (Math.abs(a[r][col]) > Math.abs(a[piv][col])) {
                    piv = r;
                }
            }
            final double scale = Math.abs(a[col][col]) + Math.abs(a[piv][col]);
            if (Math.abs(a[piv][col]) <= 1e-12 * Math.max(scale, Double.MIN_NORMAL) || a[piv][col] == 0) {
                throw new IllegalArgumentException("the points do not determine the " + k
                    + " coefficients (singular system: too few distinct x values)");
            }
            final double[] t = a[col];
            a[col] = a[piv];
            a[piv] = t;
            for (int r = 0; r < k; r++) {
                if (r != col) {
                    final double f = a[r][col] / a[col][col];
                    for (int c = col; c <= k; c++) {
                        a[r][c] -= f * a[col][c];
                    }
                }
            }
        }
        final double[] out = new double[k];
        for (int r = 0; r < k; r++) {
            out[r] = a[r][k] / a[r][r];
        }
        return out;
    }
}
