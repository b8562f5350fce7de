/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/** Memory region and QP access flags; values equal libibverbs' {@code enum ibv_access_flags}. */
public final class AccessFlags {
    public static final int LOCAL_WRITE = 1;
    public static final int REMOTE_WRITE = 1 << 1;
    public static final int REMOTE_READ = 1 << 2;
    public static final int REMOTE_ATOMIC = 1 << 3;
    /** Memory windows may be bound to the MR (IBV_ACCESS_MW_BIND). */
    public static final int MW_BIND = 1 << 4;
    /** Remote FLUSH to global visibility allowed (IBA 1.5, IBV_ACCESS_FLUSH_GLOBAL). */
    public static final int FLUSH_GLOBAL = 1 << 8;
    /** Remote FLUSH to persistence allowed (IBA 1.5, IBV_ACCESS_FLUSH_PERSISTENT). */
    public static final int FLUSH_PERSISTENT = 1 << 9;
    /** IBV_ACCESS_RELAXED_ORDERING = IBV_ACCESS_OPTIONAL_FIRST. */
    public static final int RELAXED_ORDERING = 1 << 20;

    public static final int ALL_REMOTE = REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC;
    public static final int FLUSH = FLUSH_GLOBAL | FLUSH_PERSISTENT;
    /** Bits an MR accepts (ibv_reg_mr, ibv_rereg_mr). */
    public static final int SUPPORTED = LOCAL_WRITE | ALL_REMOTE | MW_BIND | FLUSH | RELAXED_ORDERING;
    /**
     * Bits a QP accepts in qp_access_flags (ibv_modify_qp): the remote ones and FLUSH_*, as rdma-core's test
     * harness sets on every extended RC QP; LOCAL_WRITE too, as the kernel ignores it there.
     */
    public static final int QP_SUPPORTED = LOCAL_WRITE | ALL_REMOTE | FLUSH;

    private AccessFlags() {
    }

    /** Remote write or atomic access needs local write too (ibv_reg_mr rejects it otherwise). */
    public static boolean isValidForMr(final int access) {
        if ((access & ~SUPPORTED) != 0) {
            return false;
        }
        final boolean needsLocalWrite = (access & (REMOTE_WRITE | REMOTE_ATOMIC)) != 0;
        return !needsLocalWrite || (access & LOCAL_WRITE) != 0;
    }

    public static String describe(final int access) {
        final StringBuilder sb = new StringBuilder();
        if ((access & LOCAL_WRITE) != 0) sb.append("LOCAL_WRITE|");
        if ((access & REMOTE_WRITE) != 0) sb.append("REMOTE_WRITE|");
        if ((access & REMOTE_READ) != 0) sb.append("REMOTE_READ|");
        if ((access & REMOTE_ATOMIC) != 0) sb.append("REMOTE_ATOMIC|");
        if ((access & MW_BIND) != 0) sb.append("MW_BIND|");
        if ((access & FLUSH_GLOBAL) != 0) sb.append("FLUSH_GLOBAL|");
        if ((access & FLUSH_PERSISTENT) != 0) sb.append("FLUSH_PERSISTENT|");
        if ((access & RELAXED_ORDERING) != 0) sb.append("RELAXED_ORDERING|");
        final int unknown = access & ~SUPPORTED;
        if (unknown != 0) sb.append("0x").append(Integer.toHexString(unknown)).append('|');
        return sb.isEmpty() ? "0" : sb.substring(0, sb.length() - 1);
    }
}
