/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.Errno;
import io.gdrkit.verbs.AhAttr;
import io.gdrkit.verbs.GlobalRoute;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpAttrMask;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WrOpcode;
import org.junit.jupiter.api.Test;

/**
 * The address vector's GRH on the software NIC: GID 0 is the link-local GID of the port GUID; an RC connection
 * with is_global keeps the GRH (queryQp reports it) and still moves bytes, routed on the LID as inside an IB subnet;
 * a GRH out of the IB spec's ranges is EINVAL naming the field; a UD address handle with a GRH is refused with why.
 */
class GrhTest {
    @Test
    void anRcConnectionWithAGrhKeepsItAndMovesBytes() {
        try (Fixture f = new Fixture(new SoftNicContext(), 4096, new QpInitAttr(), QpBringUp.rcDefaults())) {
            final byte[] gidA = f.a.ctx.queryGid(1, 0);
            final byte[] gidB = f.b.ctx.queryGid(1, 0);
            assertEquals((byte) 0xfe, gidA[0]);
            assertEquals((byte) 0x80, gidA[1]);
            final long guid = f.a.dev.guid();
            for (int i = 0; i < 8; i++) {
                assertEquals((byte) (guid >>> (56 - 8 * i)), gidA[8 + i], "GID byte " + (8 + i));
            }
            assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> f.a.ctx.queryGid(1, 1)).errno());
            assertEquals(1, f.a.ctx.queryPort(1).gidTblLen());

            final QueuePair qa = f.a.pd.createQp(new QpInitAttr().cqs(f.a.scq, f.a.rcq));
            final QueuePair qb = f.b.pd.createQp(new QpInitAttr().cqs(f.b.scq, f.b.rcq));
            QpBringUp.connectGlobal(qa, f.a.dev.lid(), gidA, 10, qb, f.b.dev.lid(), gidB, 20, 0,
                QpBringUp.rcDefaults().sl(3));
            final QpAttr q = qa.queryQp();
            assertTrue(q.isGlobal);
            assertArrayEquals(gidB, q.grh.dgid);
            assertEquals(1, q.grh.hopLimit);
            assertEquals(3, q.sl);

            Fixture.fill(f.a.buf.asSlice(0, 256), 42);
            qa.postSend(new SendWorkRequest(1).wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .remote(f.b.mr.address() + 512, f.b.mr.rkey()).sge(f.a.mr, 0, 256));
            f.awaitSuccess(f.a.scq, "the WRITE over a QP with a GRH");
            Fixture.assertBytes(f.a.buf.asSlice(0, 256), f.b.buf.asSlice(512, 256), "written bytes");
        }
    }

    @Test
    void aGrhOutOfRangeIsEinvalNamingTheField() {
        try (Fixture f = new Fixture(new SoftNicContext(), 4096)) {
            final QueuePair qp = f.a.pd.createQp(new QpInitAttr().cqs(f.a.scq, f.a.rcq));
            final QpAttr init = new QpAttr().state(QpState.INIT);
            qp.modify(init, QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
            final int mask = QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN
                | QpAttrMask.RQ_PSN | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER;
            final byte[] gid = f.b.ctx.queryGid(1, 0);
            expect(qp, mask, new GlobalRoute().dgid(gid).sgidIndex(1), "grh.sgid_index = 1 is out of range (0..0");
            expect(qp, mask, new GlobalRoute().dgid(gid).flowLabel(0x100000), "grh.flow_label = 1048576");
            expect(qp, mask, new GlobalRoute().dgid(gid).hopLimit(256), "grh.hop_limit = 256");
            expect(qp, mask, new GlobalRoute().dgid(gid).trafficClass(-1), "grh.traffic_class = -1");
            expect(qp, mask, new GlobalRoute(), "grh.dgid is all zeros");
            assertEquals(QpState.INIT, qp.state(), "a refused modify leaves the QP where it was");
            assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> new GlobalRoute().dgid(new byte[4]))
                .errno());
            final VerbsException sl = assertThrows(VerbsException.class, () -> qp.modify(new QpAttr()
                .state(QpState.RTR).destQpNum(17).dlid(f.b.dev.lid()).sl(16), mask));
            assertTrue(sl.getMessage().contains("ah_attr.sl = 16"), sl.getMessage());

            // UD: a well-formed GRH is refused (no GRH crosses the fabric), a malformed one is EINVAL first
            final VerbsException ud = assertThrows(VerbsException.class, () -> f.a.pd.createAh(new AhAttr().dlid(
                f.b.dev.lid()).grh(new GlobalRoute().dgid(gid))));
            assertEquals(Errno.EOPNOTSUPP, ud.errno());
            assertTrue(ud.getMessage().contains("carry no GRH"), ud.getMessage());
            assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> f.a.pd.createAh(new AhAttr().dlid(
                f.b.dev.lid()).grh(new GlobalRoute().dgid(gid).sgidIndex(2)))).errno());
        }
    }

    private static void expect(final QueuePair qp, final int mask, final GlobalRoute grh, final String what) {
        final QpAttr a = new QpAttr().state(QpState.RTR).destQpNum(17).dlid(5).grh(grh);
        final VerbsException e = assertThrows(VerbsException.class, () -> qp.modify(a, mask), what);
        assertEquals(Errno.EINVAL, e.errno());
        assertTrue(e.getMessage().contains(what), e.getMessage());
    }
}
