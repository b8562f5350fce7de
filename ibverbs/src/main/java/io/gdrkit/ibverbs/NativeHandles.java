/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.VerbsContext;
import java.lang.invoke.MethodHandle;
import java.lang.foreign.MemorySegment;

/**
 * The libibverbs objects behind the native provider's queue pairs and completion queues, for code that calls the
 * provider's ops table itself (the call-path benchmark does, to time FFM against C on the same pointers).
 */
public final class NativeHandles {
    private NativeHandles() {
    }

    /**
     * The {@code struct ibv_qp *} of a native queue pair.
     *
     * @param qp a queue pair the native provider created
     * @return its libibverbs pointer
     * @throws IllegalArgumentException when the queue pair is not the native provider's
     */
    public static MemorySegment qpPointer(final QueuePair qp) {
        if (!(qp instanceof NativeQp n)) {
            throw new IllegalArgumentException("not a native provider queue pair: " + qp.getClass().getName());
        }
        return n.qpPointer();
    }

    /**
     * The {@code struct ibv_cq *} of a native completion queue.
     *
     * @param cq a completion queue the native provider created
     * @return its libibverbs pointer
     * @throws IllegalArgumentException when the completion queue is not the native provider's
     */
    public static MemorySegment cqPointer(final CompletionQueue cq) {
        if (!(cq instanceof NativeCq n)) {
            throw new IllegalArgumentException("not a native provider completion queue: " + cq.getClass().getName());
        }
        return n.cq;
    }

    /**
     * The provider's {@code post_send} entry of a native context's ops table.
     *
     * @param ctx a context the native provider opened
     * @return the function pointer
     * @throws IllegalArgumentException when the context is not the native provider's
     */
    public static MemorySegment postSendFn(final VerbsContext ctx) {
        return nativeContext(ctx).postSendFn;
    }

    /**
     * The provider's {@code poll_cq} entry of a native context's ops table.
     *
     * @param ctx a context the native provider opened
     * @return the function pointer
     * @throws IllegalArgumentException when the context is not the native provider's
     */
    public static MemorySegment pollCqFn(final VerbsContext ctx) {
        return nativeContext(ctx).pollCqFn;
    }

    /**
     * The downcall the provider uses for an ops-table {@code post_send}: {@code (fn, qp, wr, bad_wr) -> int}, all
     * addresses as {@code long}.
     *
     * @return the method handle
     */
    public static MethodHandle postSendHandle() {
        return IbvLibrary.OPS_POST_SEND;
    }

    /**
     * The downcall the provider uses for an ops-table {@code poll_cq}: {@code (fn, cq, n, wc) -> int}, addresses as
     * {@code long}.
     *
     * @return the method handle
     */
    public static MethodHandle pollCqHandle() {
        return IbvLibrary.OPS_POLL_CQ;
    }

    private static NativeContext nativeContext(final VerbsContext ctx) {
        if (!(ctx instanceof NativeContext n)) {
            throw new IllegalArgumentException("not a native provider context: " + ctx.getClass().getName());
        }
        return n;
    }
}
