/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/** Queue pair states; values equal libibverbs' {@code enum ibv_qp_state}. */
public final class QpState {
    public static final int RESET = 0;
    public static final int INIT = 1;
    public static final int RTR = 2;
    public static final int RTS = 3;
    public static final int SQD = 4;
    public static final int SQE = 5;
    public static final int ERR = 6;

    private static final String[] NAMES = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};

    private QpState() {
    }

    public static boolean isValid(final int state) {
        return state >= RESET && state <= ERR;
    }

    public static String name(final int state) {
        return isValid(state) ? NAMES[state] : "UNKNOWN(" + state + ")";
    }
}
