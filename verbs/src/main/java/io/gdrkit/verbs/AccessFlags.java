package io.gdrkit.verbs;

/** Memory region and QP access flags; values equal libibverbs' {@code enum ibv_access_flags}. */
public final class AccessFlags {
    public static final int LOCAL_WRITE = 1;
    public static final int REMOTE_WRITE = 1 << 1;
    public static final int REMOTE_READ = 1 << 2;
    public static final int REMOTE_ATOMIC = 1 << 3;
    /** IBV_ACCESS_RELAXED_ORDERING = IBV_ACCESS_OPTIONAL_FIRST. */
    public static final int RELAXED_ORDERING = 1 << 20;

    public static final int ALL_REMOTE = REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC;
    public static final int SUPPORTED = LOCAL_WRITE | ALL_REMOTE | RELAXED_ORDERING;

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
        if ((access & RELAXED_ORDERING) != 0) sb.append("RELAXED_ORDERING|");
        if ((access & ~SUPPORTED) != 0) sb.append("0x").append(Integer.toHexString(access & ~SUPPORTED)).append('|');
        return sb.isEmpty() ? "0" : sb.substring(0, sb.length() - 1);
    }
}
