/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/** Queue pair transport types; values equal libibverbs' {@code enum ibv_qp_type}. */
public final class QpType {
    public static final int RC = 2;
    public static final int UC = 3;
    public static final int UD = 4;

    private QpType() {
    }

    public static String name(final int type) {
        return switch (type) {
            case RC -> "RC";
            case UC -> "UC";
            case UD -> "UD";
            default -> "UNKNOWN(" + type + ")";
        };
    }
}
