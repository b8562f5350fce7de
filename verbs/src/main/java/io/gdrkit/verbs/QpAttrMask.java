/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/** Attribute mask bits for modify_qp; values equal libibverbs' {@code enum ibv_qp_attr_mask}. */
public final class QpAttrMask {
    public static final int STATE = 1;
    public static final int CUR_STATE = 1 << 1;
    public static final int EN_SQD_ASYNC_NOTIFY = 1 << 2;
    public static final int ACCESS_FLAGS = 1 << 3;
    public static final int PKEY_INDEX = 1 << 4;
    public static final int PORT = 1 << 5;
    public static final int QKEY = 1 << 6;
    public static final int AV = 1 << 7;
    public static final int PATH_MTU = 1 << 8;
    public static final int TIMEOUT = 1 << 9;
    public static final int RETRY_CNT = 1 << 10;
    public static final int RNR_RETRY = 1 << 11;
    public static final int RQ_PSN = 1 << 12;
    public static final int MAX_QP_RD_ATOMIC = 1 << 13;
    public static final int ALT_PATH = 1 << 14;
    public static final int MIN_RNR_TIMER = 1 << 15;
    public static final int SQ_PSN = 1 << 16;
    public static final int MAX_DEST_RD_ATOMIC = 1 << 17;
    public static final int PATH_MIG_STATE = 1 << 18;
    public static final int CAP = 1 << 19;
    public static final int DEST_QPN = 1 << 20;
    /**
     * gdrkit extension, outside libibverbs' range: a software path MTU in bytes larger than 4096.
     * Only the software NIC accepts it; it is allowed wherever PATH_MTU is.
     */
    public static final int SOFTWARE_MTU = 1 << 30;

    private static final String[] NAMES = {
        "STATE", "CUR_STATE", "EN_SQD_ASYNC_NOTIFY", "ACCESS_FLAGS", "PKEY_INDEX", "PORT", "QKEY", "AV",
        "PATH_MTU", "TIMEOUT", "RETRY_CNT", "RNR_RETRY", "RQ_PSN", "MAX_QP_RD_ATOMIC", "ALT_PATH",
        "MIN_RNR_TIMER", "SQ_PSN", "MAX_DEST_RD_ATOMIC", "PATH_MIG_STATE", "CAP", "DEST_QPN"};

    private QpAttrMask() {
    }

    /** Names of the bits set in {@code mask}, joined with '|'. */
    public static String describe(final int mask) {
        final StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 31; i++) {
            if ((mask & (1 << i)) != 0) {
                if (!sb.isEmpty()) sb.append('|');
                sb.append(i < NAMES.length ? NAMES[i] : (1 << i) == SOFTWARE_MTU ? "SOFTWARE_MTU" : "BIT" + i);
            }
        }
        return sb.isEmpty() ? "0" : sb.toString();
    }
}
