/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/** Send flags; values equal libibverbs' {@code enum ibv_send_flags}. */
public final class SendFlags {
    public static final int FENCE = 1;
    public static final int SIGNALED = 1 << 1;
    public static final int SOLICITED = 1 << 2;
    public static final int INLINE = 1 << 3;

    public static final int ALL = FENCE | SIGNALED | SOLICITED | INLINE;

    private SendFlags() {
    }
}
