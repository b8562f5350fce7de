/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

import io.gdrkit.core.Errno;

import static io.gdrkit.verbs.QpAttrMask.*;

/**
 * The InfiniBand QP state transition table for RC queue pairs (IB spec vol. 1, 10.3.1 and table 91; the Linux
 * kernel checks the same table in {@code ib_modify_qp_is_ok}). Provider independent: every provider validates a
 * modify against it before touching anything, so a rejected modify changes nothing.
 */
public final class QpStateTable {
    private static final int N = QpState.ERR + 1;
    private static final boolean[][] VALID = new boolean[N][N];
    private static final int[][] REQUIRED = new int[N][N];
    private static final int[][] OPTIONAL = new int[N][N];
    /** The UD table (same spec table, UD column): Q_Key instead of the connection's attributes. */
    private static final boolean[][] UD_VALID = new boolean[N][N];
    private static final int[][] UD_REQUIRED = new int[N][N];
    private static final int[][] UD_OPTIONAL = new int[N][N];

    static {
        for (int s = 0; s < N; s++) {
            allow(s, QpState.RESET, 0, 0);
            allow(s, QpState.ERR, 0, 0);
        }
        allow(QpState.RESET, QpState.INIT, PKEY_INDEX | PORT | ACCESS_FLAGS, 0);
        allow(QpState.INIT, QpState.INIT, 0, PKEY_INDEX | PORT | ACCESS_FLAGS);
        allow(QpState.INIT, QpState.RTR, AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER,
            ALT_PATH | ACCESS_FLAGS | PKEY_INDEX | SOFTWARE_MTU);
        allow(QpState.RTR, QpState.RTS, SQ_PSN | MAX_QP_RD_ATOMIC | RETRY_CNT | RNR_RETRY | TIMEOUT,
            CUR_STATE | ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE);
        allow(QpState.RTS, QpState.RTS, 0, CUR_STATE | ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE | MIN_RNR_TIMER);
        allow(QpState.RTS, QpState.SQD, 0, EN_SQD_ASYNC_NOTIFY);
        allow(QpState.SQD, QpState.RTS, 0, CUR_STATE | ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE);
        allow(QpState.SQD, QpState.SQD, 0, AV | ALT_PATH | ACCESS_FLAGS | PKEY_INDEX | MIN_RNR_TIMER
            | PATH_MIG_STATE | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC | MAX_DEST_RD_ATOMIC
            | PATH_MTU | SOFTWARE_MTU);
        // SQE -> RTS exists only for UC/UD; an RC QP never enters SQE, so only RESET/ERR leave it.
        for (int s = 0; s < N; s++) {
            allowUd(s, QpState.RESET, 0, 0);
            allowUd(s, QpState.ERR, 0, 0);
        }
        allowUd(QpState.RESET, QpState.INIT, PKEY_INDEX | PORT | QKEY, 0);
        allowUd(QpState.INIT, QpState.INIT, 0, PKEY_INDEX | PORT | QKEY);
        allowUd(QpState.INIT, QpState.RTR, 0, PKEY_INDEX | QKEY);
        allowUd(QpState.RTR, QpState.RTS, SQ_PSN, CUR_STATE | QKEY);
        allowUd(QpState.RTS, QpState.RTS, 0, CUR_STATE | QKEY);
        allowUd(QpState.RTS, QpState.SQD, 0, EN_SQD_ASYNC_NOTIFY);
        allowUd(QpState.SQD, QpState.RTS, 0, CUR_STATE | QKEY);
        allowUd(QpState.SQD, QpState.SQD, 0, PKEY_INDEX | QKEY);
    }

    private static void allowUd(final int from, final int to, final int required, final int optional) {
        UD_VALID[from][to] = true;
        UD_REQUIRED[from][to] = required;
        UD_OPTIONAL[from][to] = optional;
    }

    /** Validates a modify of a UD QP in state {@code current} (the UD column of the table); returns the target. */
    public static int validateUd(final int current, final QpAttr attr, final int mask) {
        return validate(current, attr, mask, 0, UD_VALID, UD_REQUIRED, UD_OPTIONAL);
    }

    private QpStateTable() {
    }

    private static void allow(final int from, final int to, final int required, final int optional) {
        VALID[from][to] = true;
        REQUIRED[from][to] = required;
        OPTIONAL[from][to] = optional;
    }

    public static boolean isValidTransition(final int from, final int to) {
        return QpState.isValid(from) && QpState.isValid(to) && VALID[from][to];
    }

    public static int requiredMask(final int from, final int to) {
        return REQUIRED[from][to];
    }

    public static int optionalMask(final int from, final int to) {
        return OPTIONAL[from][to];
    }

    /**
     * Validates a modify of an RC QP in state {@code current}; returns the target state.
     *
     * @throws VerbsException EINVAL naming the invalid transition, the missing or disallowed attributes, or
     *                        the out-of-range value
     */
    public static int validate(final int current, final QpAttr attr, final int mask, final int maxRdAtomic) {
        return validate(current, attr, mask, maxRdAtomic, VALID, REQUIRED, OPTIONAL);
    }

    private static int validate(final int current, final QpAttr attr, final int mask, final int maxRdAtomic,
                                final boolean[][] valid, final int[][] requiredBy, final int[][] optionalBy) {
        if ((mask & ~(SOFTWARE_MTU | (DEST_QPN << 1) - 1)) != 0) {
            throw new VerbsException(Errno.EINVAL, "unknown attribute mask bits 0x" + Integer.toHexString(mask));
        }
        if ((mask & CUR_STATE) != 0 && attr.curQpState != current) {
            throw new VerbsException(Errno.EINVAL, "cur_qp_state " + QpState.name(attr.curQpState)
                + " does not match the QP's state " + QpState.name(current));
        }
        final int next = (mask & STATE) != 0 ? attr.qpState : current;
        if (!QpState.isValid(next)) {
            throw new VerbsException(Errno.EINVAL, "invalid target state " + next);
        }
        if (!valid[current][next]) {
            throw new VerbsException(Errno.EINVAL, "invalid QP state transition " + QpState.name(current) + " -> "
                + QpState.name(next));
        }
        final int attrs = mask & ~STATE;
        final int required = requiredBy[current][next];
        final int missing = required & ~attrs;
        if (missing != 0) {
            throw new VerbsException(Errno.EINVAL, "transition " + QpState.name(current) + " -> "
                + QpState.name(next) + " requires " + QpAttrMask.describe(missing));
        }
        final int extra = attrs & ~(required | optionalBy[current][next]);
        if (extra != 0) {
            throw new VerbsException(Errno.EINVAL, "transition " + QpState.name(current) + " -> "
                + QpState.name(next) + " does not allow " + QpAttrMask.describe(extra));
        }
        validateValues(attr, attrs, maxRdAtomic);
        return next;
    }

    private static void validateValues(final QpAttr a, final int m, final int maxRdAtomic) {
        if ((m & PATH_MTU) != 0 && !Mtu.isValid(a.pathMtu)) {
            bad("path_mtu", a.pathMtu, "1 (256) .. 5 (4096)");
        }
        if ((m & SOFTWARE_MTU) != 0 && !Mtu.isValidSoftwareBytes(a.softwareMtu)) {
            bad("software_mtu", a.softwareMtu, "a power of two from 256 to " + Mtu.MAX_SOFTWARE_BYTES);
        }
        if ((m & ACCESS_FLAGS) != 0 && (a.qpAccessFlags & ~AccessFlags.QP_SUPPORTED) != 0) {
            bad("qp_access_flags", a.qpAccessFlags,
                "LOCAL_WRITE|REMOTE_WRITE|REMOTE_READ|REMOTE_ATOMIC|FLUSH_GLOBAL|FLUSH_PERSISTENT");
        }
        if ((m & PORT) != 0 && a.portNum != 1) {
            bad("port_num", a.portNum, "1");
        }
        if ((m & PKEY_INDEX) != 0 && a.pkeyIndex != 0) {
            bad("pkey_index", a.pkeyIndex, "0");
        }
        if ((m & DEST_QPN) != 0 && (a.destQpNum & ~0xFFFFFF) != 0) {
            bad("dest_qp_num", a.destQpNum, "24 bits");
        }
        if ((m & RQ_PSN) != 0 && (a.rqPsn & ~0xFFFFFF) != 0) {
            bad("rq_psn", a.rqPsn, "24 bits");
        }
        if ((m & SQ_PSN) != 0 && (a.sqPsn & ~0xFFFFFF) != 0) {
            bad("sq_psn", a.sqPsn, "24 bits");
        }
        if ((m & TIMEOUT) != 0 && (a.timeout < 0 || a.timeout > 31)) {
            bad("timeout", a.timeout, "0..31");
        }
        if ((m & RETRY_CNT) != 0 && (a.retryCnt < 0 || a.retryCnt > 7)) {
            bad("retry_cnt", a.retryCnt, "0..7");
        }
        if ((m & RNR_RETRY) != 0 && (a.rnrRetry < 0 || a.rnrRetry > 7)) {
            bad("rnr_retry", a.rnrRetry, "0..7 (7 = infinite)");
        }
        if ((m & MIN_RNR_TIMER) != 0 && (a.minRnrTimer < 0 || a.minRnrTimer > 31)) {
            bad("min_rnr_timer", a.minRnrTimer, "0..31");
        }
        if ((m & MAX_QP_RD_ATOMIC) != 0 && (a.maxRdAtomic < 0 || a.maxRdAtomic > maxRdAtomic)) {
            bad("max_rd_atomic", a.maxRdAtomic, "0.." + maxRdAtomic);
        }
        if ((m & MAX_DEST_RD_ATOMIC) != 0 && (a.maxDestRdAtomic < 0 || a.maxDestRdAtomic > maxRdAtomic)) {
            bad("max_dest_rd_atomic", a.maxDestRdAtomic, "0.." + maxRdAtomic);
        }
        if ((m & AV) != 0 && (a.dlid <= 0 || a.dlid > 0xFFFF)) {
            bad("ah_attr.dlid", a.dlid, "1..65535");
        }
        if ((m & AV) != 0 && (a.sl < 0 || a.sl > 15)) {
            bad("ah_attr.sl", a.sl, "0..15");
        }
    }

    private static void bad(final String name, final int value, final String range) {
        throw new VerbsException(Errno.EINVAL, name + " = " + value + " is out of range (" + range + ")");
    }

    /** The min_rnr_timer encoding of the IB spec (table 45), in microseconds; code 0 is 655.36 ms. */
    public static long rnrTimerNanos(final int code) {
        return RNR_TIMER_NS[code & 31];
    }

    private static final long[] RNR_TIMER_NS = {
        655_360_000L, 10_000L, 20_000L, 30_000L, 40_000L, 60_000L, 80_000L, 120_000L,
        160_000L, 240_000L, 320_000L, 480_000L, 640_000L, 960_000L, 1_280_000L, 1_920_000L,
        2_560_000L, 3_840_000L, 5_120_000L, 7_680_000L, 10_240_000L, 15_360_000L, 20_480_000L, 30_720_000L,
        40_960_000L, 61_440_000L, 81_920_000L, 122_880_000L, 163_840_000L, 245_760_000L, 327_680_000L,
        491_520_000L};
}
