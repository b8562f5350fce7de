package io.gdrkit.verbs;

/** Asynchronous event types; values equal libibverbs' {@code enum ibv_event_type}. */
public final class AsyncEventType {
    public static final int CQ_ERR = 0;
    public static final int QP_FATAL = 1;
    public static final int QP_REQ_ERR = 2;
    public static final int QP_ACCESS_ERR = 3;
    public static final int COMM_EST = 4;
    public static final int SQ_DRAINED = 5;
    /** The device failed (its NIC engine threw): every QP is in ERR and flushed; polls report it. */
    public static final int DEVICE_FATAL = 8;
    public static final int PORT_ACTIVE = 9;
    public static final int PORT_ERR = 10;

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
            case DEVICE_FATAL -> "DEVICE_FATAL";
            case PORT_ACTIVE -> "PORT_ACTIVE";
            case PORT_ERR -> "PORT_ERR";
            default -> "UNKNOWN(" + type + ")";
        };
    }
}
