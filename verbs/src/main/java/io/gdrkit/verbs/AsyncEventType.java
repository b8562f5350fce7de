/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/** Asynchronous event types; values equal libibverbs' {@code enum ibv_event_type}. */
public final class AsyncEventType {
    public static final int CQ_ERR = 0;
    public static final int QP_FATAL = 1;
    public static final int QP_REQ_ERR = 2;
    public static final int QP_ACCESS_ERR = 3;
    public static final int COMM_EST = 4;
    public static final int SQ_DRAINED = 5;
    public static final int PATH_MIG = 6;
    public static final int PATH_MIG_ERR = 7;
    /** The device failed (its NIC engine threw): every QP is in ERR and flushed; polls report it. */
    public static final int DEVICE_FATAL = 8;
    /** The port went from DOWN to ACTIVE (element: the port number). */
    public static final int PORT_ACTIVE = 9;
    /** The port went from ACTIVE to DOWN (element: the port number); its QPs stay in their state. */
    public static final int PORT_ERR = 10;
    public static final int LID_CHANGE = 11;
    public static final int PKEY_CHANGE = 12;
    public static final int SM_CHANGE = 13;
    public static final int SRQ_ERR = 14;
    /** The SRQ's WQE count fell below the armed limit (element: the SRQ handle); the limit disarms. */
    public static final int SRQ_LIMIT_REACHED = 15;
    /** A QP attached to an SRQ went to ERR and will consume no more SRQ WQEs (element: the QP number). */
    public static final int QP_LAST_WQE_REACHED = 16;

    private AsyncEventType() {
    }

    public static String name(final int type) {
        return switch (type) {
            case CQ_ERR -> "CQ_ERR";
            case QP_FATAL -> "QP_FATAL";
            case QP_REQ_ERR -> "QP_REQ_ERR";
            case QP_ACCESS_ERR -> "QP_ACCESS_ERR";
            case COMM_EST -> "COMM_EST";
            case SQ_DRAINED -> "SQ_DRAINED";
            case PATH_MIG -> "PATH_MIG";
            case PATH_MIG_ERR -> "PATH_MIG_ERR";
            case DEVICE_FATAL -> "DEVICE_FATAL";
            case PORT_ACTIVE -> "PORT_ACTIVE";
            case PORT_ERR -> "PORT_ERR";
            case LID_CHANGE -> "LID_CHANGE";
            case PKEY_CHANGE -> "PKEY_CHANGE";
            case SM_CHANGE -> "SM_CHANGE";
            case SRQ_ERR -> "SRQ_ERR";
            case SRQ_LIMIT_REACHED -> "SRQ_LIMIT_REACHED";
            case QP_LAST_WQE_REACHED -> "QP_LAST_WQE_REACHED";
            default -> "UNKNOWN(" + type + ")";
        };
    }
}
