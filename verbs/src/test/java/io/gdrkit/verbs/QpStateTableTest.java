/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

import io.gdrkit.core.Errno;

import static io.gdrkit.verbs.QpAttrMask.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The RC modify_qp table of the IB spec (vol. 1, 10.3.1) and the value checks of QpStateTable.validate. */
class QpStateTableTest {
    private static final int MAX_RD_ATOMIC = 16;
    private static final int[] STATES = {QpState.RESET, QpState.INIT, QpState.RTR, QpState.RTS, QpState.SQD,
        QpState.SQE, QpState.ERR};

    /** from*10+to of the valid transitions other than "any -> RESET" and "any -> ERR". */
    private static final Set<Integer> VALID = Set.of(
        QpState.RESET * 10 + QpState.INIT,
        QpState.INIT * 10 + QpState.INIT,
        QpState.INIT * 10 + QpState.RTR,
        QpState.RTR * 10 + QpState.RTS,
        QpState.RTS * 10 + QpState.RTS,
        QpState.RTS * 10 + QpState.SQD,
        QpState.SQD * 10 + QpState.RTS,
        QpState.SQD * 10 + QpState.SQD);

    static boolean specValid(final int from, final int to) {
        return to == QpState.RESET || to == QpState.ERR || VALID.contains(from * 10 + to);
    }

    static Stream<Arguments> allPairs() {
        return IntStream.of(STATES).boxed()
            .flatMap(from -> IntStream.of(STATES).mapToObj(to -> Arguments.of(from, to)));
    }

    /** Attributes that satisfy every check, so only the mask decides. */
    static QpAttr goodAttr(final int to) {
        return new QpAttr().state(to).access(AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE).dlid(3)
            .destQpNum(17).rqPsn(5).sqPsn(6).timeout(14).retryCnt(7).rnrRetry(7).minRnrTimer(12)
            .maxRdAtomic(4).maxDestRdAtomic(4).pathMtu(Mtu.MTU_1024);
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @MethodSource("allPairs")
    void transitionTableMatchesSpec(final int from, final int to) {
        final boolean expected = specValid(from, to);
        assertEquals(expected, QpStateTable.isValidTransition(from, to),
            QpState.name(from) + " -> " + QpState.name(to));
        final int mask = STATE | QpStateTable.requiredMask(from, to);
        if (expected) {
            assertEquals(to, QpStateTable.validate(from, goodAttr(to), mask, MAX_RD_ATOMIC));
        } else {
            final VerbsException e = assertThrows(VerbsException.class,
                () -> QpStateTable.validate(from, goodAttr(to), mask, MAX_RD_ATOMIC));
            assertEquals(Errno.EINVAL, e.errno());
            assertTrue(e.getMessage().contains("invalid QP state transition"), e.getMessage());
            assertTrue(e.getMessage().contains(QpState.name(from) + " -> " + QpState.name(to)), e.getMessage());
        }
    }

    @Test
    void sqeToRtsIsInvalidForRc() {
        assertEquals(false, QpStateTable.isValidTransition(QpState.SQE, QpState.RTS));
        assertThrows(VerbsException.class,
            () -> QpStateTable.validate(QpState.SQE, goodAttr(QpState.RTS), STATE, MAX_RD_ATOMIC));
    }

    @Test
    void invalidStatesAreRejected() {
        assertEquals(false, QpStateTable.isValidTransition(-1, QpState.INIT));
        assertEquals(false, QpStateTable.isValidTransition(QpState.INIT, 7));
        final VerbsException e = assertThrows(VerbsException.class,
            () -> QpStateTable.validate(QpState.INIT, goodAttr(7), STATE, MAX_RD_ATOMIC));
        assertEquals(Errno.EINVAL, e.errno());
    }

    static Stream<Arguments> requiredAttributes() {
        return Stream.of(
            Arguments.of(QpState.RESET, QpState.INIT, PKEY_INDEX, "PKEY_INDEX"),
            Arguments.of(QpState.RESET, QpState.INIT, PORT, "PORT"),
            Arguments.of(QpState.RESET, QpState.INIT, ACCESS_FLAGS, "ACCESS_FLAGS"),
            Arguments.of(QpState.INIT, QpState.RTR, AV, "AV"),
            Arguments.of(QpState.INIT, QpState.RTR, PATH_MTU, "PATH_MTU"),
            Arguments.of(QpState.INIT, QpState.RTR, DEST_QPN, "DEST_QPN"),
            Arguments.of(QpState.INIT, QpState.RTR, RQ_PSN, "RQ_PSN"),
            Arguments.of(QpState.INIT, QpState.RTR, MAX_DEST_RD_ATOMIC, "MAX_DEST_RD_ATOMIC"),
            Arguments.of(QpState.INIT, QpState.RTR, MIN_RNR_TIMER, "MIN_RNR_TIMER"),
            Arguments.of(QpState.RTR, QpState.RTS, SQ_PSN, "SQ_PSN"),
            Arguments.of(QpState.RTR, QpState.RTS, MAX_QP_RD_ATOMIC, "MAX_QP_RD_ATOMIC"),
            Arguments.of(QpState.RTR, QpState.RTS, RETRY_CNT, "RETRY_CNT"),
            Arguments.of(QpState.RTR, QpState.RTS, RNR_RETRY, "RNR_RETRY"),
            Arguments.of(QpState.RTR, QpState.RTS, TIMEOUT, "TIMEOUT"));
    }

    @ParameterizedTest(name = "{0} -> {1} without {3}")
    @MethodSource("requiredAttributes")
    void missingRequiredAttributeIsNamed(final int from, final int to, final int bit, final String name) {
        final int full = STATE | QpStateTable.requiredMask(from, to);
        assertTrue((full & bit) != 0, name + " is required");
        assertEquals(to, QpStateTable.validate(from, goodAttr(to), full, MAX_RD_ATOMIC));
        final VerbsException e = assertThrows(VerbsException.class,
            () -> QpStateTable.validate(from, goodAttr(to), full & ~bit, MAX_RD_ATOMIC));
        assertEquals(Errno.EINVAL, e.errno());
        assertTrue(e.getMessage().contains("requires"), e.getMessage());
        assertTrue(e.getMessage().contains(name), e.getMessage());
    }

    static Stream<Arguments> disallowedAttributes() {
        return Stream.of(
            Arguments.of(QpState.RESET, QpState.INIT, SQ_PSN, "SQ_PSN"),
            Arguments.of(QpState.RESET, QpState.INIT, AV, "AV"),
            Arguments.of(QpState.INIT, QpState.RTR, SQ_PSN, "SQ_PSN"),
            Arguments.of(QpState.INIT, QpState.RTR, TIMEOUT, "TIMEOUT"),
            Arguments.of(QpState.RTR, QpState.RTS, RQ_PSN, "RQ_PSN"),
            Arguments.of(QpState.RTR, QpState.RTS, DEST_QPN, "DEST_QPN"),
            Arguments.of(QpState.RTS, QpState.RTS, PATH_MTU, "PATH_MTU"),
            Arguments.of(QpState.RTS, QpState.RTS, SQ_PSN, "SQ_PSN"),
            Arguments.of(QpState.RTS, QpState.SQD, ACCESS_FLAGS, "ACCESS_FLAGS"),
            Arguments.of(QpState.INIT, QpState.ERR, PATH_MTU, "PATH_MTU"),
            Arguments.of(QpState.RTS, QpState.RESET, TIMEOUT, "TIMEOUT"));
    }

    @ParameterizedTest(name = "{0} -> {1} with {3}")
    @MethodSource("disallowedAttributes")
    void disallowedAttributeIsRejected(final int from, final int to, final int bit, final String name) {
        final int mask = STATE | QpStateTable.requiredMask(from, to) | bit;
        final VerbsException e = assertThrows(VerbsException.class,
            () -> QpStateTable.validate(from, goodAttr(to), mask, MAX_RD_ATOMIC));
        assertEquals(Errno.EINVAL, e.errno());
        assertTrue(e.getMessage().contains("does not allow"), e.getMessage());
        assertTrue(e.getMessage().contains(name), e.getMessage());
    }

    @Test
    void optionalAttributesAreAccepted() {
        assertEquals(QpState.RTS, QpStateTable.validate(QpState.RTS, goodAttr(QpState.RTS),
            STATE | ACCESS_FLAGS | MIN_RNR_TIMER, MAX_RD_ATOMIC));
        assertEquals(QpState.RTR, QpStateTable.validate(QpState.INIT, goodAttr(QpState.RTR),
            STATE | QpStateTable.requiredMask(QpState.INIT, QpState.RTR) | ACCESS_FLAGS, MAX_RD_ATOMIC));
        assertEquals(QpState.SQD, QpStateTable.validate(QpState.SQD, goodAttr(QpState.SQD),
            STATE | TIMEOUT | RETRY_CNT | PATH_MTU, MAX_RD_ATOMIC));
        // no STATE bit: the state stays, and must be a valid self-transition
        assertEquals(QpState.RTS, QpStateTable.validate(QpState.RTS, goodAttr(0), MIN_RNR_TIMER, MAX_RD_ATOMIC));
        assertThrows(VerbsException.class,
            () -> QpStateTable.validate(QpState.RTR, goodAttr(0), MIN_RNR_TIMER, MAX_RD_ATOMIC));
    }

    @Test
    void unknownMaskBitsAreRejected() {
        final VerbsException e = assertThrows(VerbsException.class,
            () -> QpStateTable.validate(QpState.RTS, goodAttr(QpState.RTS), STATE | (1 << 25), MAX_RD_ATOMIC));
        assertEquals(Errno.EINVAL, e.errno());
    }

    interface Setter {
        void set(QpAttr a);
    }

    static Stream<Arguments> outOfRange() {
        return Stream.of(
            Arguments.of("timeout", QpState.RTR, TIMEOUT, (Setter) a -> a.timeout = 32),
            Arguments.of("timeout", QpState.RTR, TIMEOUT, (Setter) a -> a.timeout = -1),
            Arguments.of("retry_cnt", QpState.RTR, RETRY_CNT, (Setter) a -> a.retryCnt = 8),
            Arguments.of("rnr_retry", QpState.RTR, RNR_RETRY, (Setter) a -> a.rnrRetry = 8),
            Arguments.of("min_rnr_timer", QpState.INIT, MIN_RNR_TIMER, (Setter) a -> a.minRnrTimer = 32),
            Arguments.of("path_mtu", QpState.INIT, PATH_MTU, (Setter) a -> a.pathMtu = 6),
            Arguments.of("path_mtu", QpState.INIT, PATH_MTU, (Setter) a -> a.pathMtu = 0),
            Arguments.of("rq_psn", QpState.INIT, RQ_PSN, (Setter) a -> a.rqPsn = 1 << 24),
            Arguments.of("sq_psn", QpState.RTR, SQ_PSN, (Setter) a -> a.sqPsn = 1 << 24),
            Arguments.of("sq_psn", QpState.RTR, SQ_PSN, (Setter) a -> a.sqPsn = -1),
            Arguments.of("dest_qp_num", QpState.INIT, DEST_QPN, (Setter) a -> a.destQpNum = 1 << 24),
            Arguments.of("max_rd_atomic", QpState.RTR, MAX_QP_RD_ATOMIC, (Setter) a -> a.maxRdAtomic = 17),
            Arguments.of("max_dest_rd_atomic", QpState.INIT, MAX_DEST_RD_ATOMIC,
                (Setter) a -> a.maxDestRdAtomic = 17),
            Arguments.of("ah_attr.dlid", QpState.INIT, AV, (Setter) a -> a.dlid = 0),
            Arguments.of("port_num", QpState.RESET, PORT, (Setter) a -> a.portNum = 2),
            Arguments.of("pkey_index", QpState.RESET, PKEY_INDEX, (Setter) a -> a.pkeyIndex = 1),
            Arguments.of("qp_access_flags", QpState.RESET, ACCESS_FLAGS, (Setter) a -> a.qpAccessFlags = 1 << 5));
    }

    @ParameterizedTest(name = "{0} #{index}")
    @MethodSource("outOfRange")
    void outOfRangeValueIsRejected(final String name, final int from, final int bit, final Setter setter) {
        final int to = from + 1;
        final int mask = STATE | QpStateTable.requiredMask(from, to);
        assertTrue((mask & bit) != 0);
        final QpAttr ok = goodAttr(to);
        assertEquals(to, QpStateTable.validate(from, ok, mask, MAX_RD_ATOMIC));
        final QpAttr a = goodAttr(to);
        setter.set(a);
        final VerbsException e = assertThrows(VerbsException.class,
            () -> QpStateTable.validate(from, a, mask, MAX_RD_ATOMIC));
        assertEquals(Errno.EINVAL, e.errno());
        assertTrue(e.getMessage().contains(name + " = "), e.getMessage());
        assertTrue(e.getMessage().contains("out of range"), e.getMessage());
    }

    @Test
    void boundaryValuesAreAccepted() {
        final QpAttr a = goodAttr(QpState.RTS).timeout(31).retryCnt(7).rnrRetry(7).sqPsn(0xFFFFFF)
            .maxRdAtomic(16);
        assertEquals(QpState.RTS, QpStateTable.validate(QpState.RTR, a,
            STATE | QpStateTable.requiredMask(QpState.RTR, QpState.RTS), MAX_RD_ATOMIC));
        final QpAttr b = goodAttr(QpState.RTR).minRnrTimer(31).rqPsn(0xFFFFFF).pathMtu(Mtu.MTU_4096)
            .maxDestRdAtomic(0);
        assertEquals(QpState.RTR, QpStateTable.validate(QpState.INIT, b,
            STATE | QpStateTable.requiredMask(QpState.INIT, QpState.RTR), MAX_RD_ATOMIC));
        final QpAttr c = goodAttr(QpState.RTS).timeout(0).retryCnt(0).rnrRetry(0);
        assertEquals(QpState.RTS, QpStateTable.validate(QpState.RTR, c,
            STATE | QpStateTable.requiredMask(QpState.RTR, QpState.RTS), MAX_RD_ATOMIC));
    }

    @Test
    void curStateMismatchIsRejected() {
        final QpAttr a = goodAttr(QpState.RTS);
        a.curQpState = QpState.RTS;
        assertEquals(QpState.RTS, QpStateTable.validate(QpState.RTS, a, STATE | CUR_STATE, MAX_RD_ATOMIC));
        a.curQpState = QpState.RTR;
        final VerbsException e = assertThrows(VerbsException.class,
            () -> QpStateTable.validate(QpState.RTS, a, STATE | CUR_STATE, MAX_RD_ATOMIC));
        assertEquals(Errno.EINVAL, e.errno());
        assertTrue(e.getMessage().contains("cur_qp_state"), e.getMessage());
    }

    @Test
    void rnrTimerEncoding() {
        assertEquals(655_360_000L, QpStateTable.rnrTimerNanos(0));
        assertEquals(10_000L, QpStateTable.rnrTimerNanos(1));
        assertEquals(491_520_000L, QpStateTable.rnrTimerNanos(31));
        for (int c = 2; c < 32; c++) {
            assertTrue(QpStateTable.rnrTimerNanos(c) > QpStateTable.rnrTimerNanos(c - 1), "code " + c);
        }
    }
}
