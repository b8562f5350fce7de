/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import static io.gdrkit.ibverbs.IbvLayouts.QP_INIT_ATTR;
import static io.gdrkit.ibverbs.IbvLayouts.offset;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.VerbsException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** {@code struct ibv_pd}: registers memory and creates QPs. */
final class NativePd implements ProtectionDomain {
    final NativeContext ctx;
    final MemorySegment pd;
    private boolean closed;

    NativePd(final NativeContext ctx, final MemorySegment pd) {
        this.ctx = ctx;
        this.pd = pd;
    }

    @Override
    public VerbsContext context() {
        return ctx;
    }

    @Override
    public MemoryRegion registerMr(final MemorySegment segment, final int accessFlags) {
        if (!segment.isNative()) {
            throw new VerbsException(io.gdrkit.core.Errno.EINVAL, "ibv_reg_mr: a heap segment has no stable address; "
                + "register native memory");
        }
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment st = ctx.lib.captureState(a);
            final MemorySegment mr = Native.call(() -> (MemorySegment) ctx.lib.regMr.invokeExact(st, pd, segment,
                segment.byteSize(), accessFlags));
            if (mr.equals(MemorySegment.NULL)) {
                throw IbvLibrary.error("ibv_reg_mr(" + segment.byteSize() + " bytes)", IbvLibrary.errnoOf(st));
            }
            return new NativeMr(this, mr.reinterpret(IbvLayouts.MR.byteSize()), segment, accessFlags);
        }
    }

    @Override
    public MemoryRegion registerDmaBufMr(final long offset, final long length, final long iova, final int fd,
                                         final int accessFlags) {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment st = ctx.lib.captureState(a);
            final MemorySegment mr = Native.call(() -> (MemorySegment) ctx.lib.regDmabufMr.invokeExact(st, pd, offset,
                length, iova, fd, accessFlags));
            if (mr.equals(MemorySegment.NULL)) {
                throw IbvLibrary.error("ibv_reg_dmabuf_mr(fd " + fd + ")", IbvLibrary.errnoOf(st));
            }
            return new NativeMr(this, mr.reinterpret(IbvLayouts.MR.byteSize()), null, accessFlags);
        }
    }

    @Override
    public QueuePair createQp(final QpInitAttr attr) {
        if (!(attr.sendCq instanceof NativeCq scq) || !(attr.recvCq instanceof NativeCq rcq)) {
            throw new VerbsException(io.gdrkit.core.Errno.EINVAL, "ibv_create_qp: the CQs must come from this native "
                + "provider");
        }
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment init = a.allocate(QP_INIT_ATTR);
            init.set(ADDRESS, offset(QP_INIT_ATTR, "send_cq"), scq.cq);
            init.set(ADDRESS, offset(QP_INIT_ATTR, "recv_cq"), rcq.cq);
            init.set(JAVA_INT, offset(QP_INIT_ATTR, "cap", "max_send_wr"), attr.cap.maxSendWr);
            init.set(JAVA_INT, offset(QP_INIT_ATTR, "cap", "max_recv_wr"), attr.cap.maxRecvWr);
            init.set(JAVA_INT, offset(QP_INIT_ATTR, "cap", "max_send_sge"), attr.cap.maxSendSge);
            init.set(JAVA_INT, offset(QP_INIT_ATTR, "cap", "max_recv_sge"), attr.cap.maxRecvSge);
            init.set(JAVA_INT, offset(QP_INIT_ATTR, "cap", "max_inline_data"), attr.cap.maxInlineData);
            init.set(JAVA_INT, offset(QP_INIT_ATTR, "qp_type"), attr.qpType);
            init.set(JAVA_INT, offset(QP_INIT_ATTR, "sq_sig_all"), attr.sqSigAll ? 1 : 0);
            final MemorySegment st = ctx.lib.captureState(a);
            final MemorySegment qp = Native.call(() -> (MemorySegment) ctx.lib.createQp.invokeExact(st, pd, init));
            if (qp.equals(MemorySegment.NULL)) {
                throw IbvLibrary.error("ibv_create_qp", IbvLibrary.errnoOf(st));
            }
            return new NativeQp(this, qp.reinterpret(IbvLayouts.QP.byteSize()), attr.qpType, attr.cap.maxSendWr,
                attr.cap.maxSendSge, attr.cap.maxRecvWr, attr.cap.maxRecvSge);
        }
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            Native.check("ibv_dealloc_pd", Native.call(() -> (int) ctx.lib.deallocPd.invokeExact(pd)));
        }
    }
}
