/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/** Queue pair capabilities (ibv_qp_cap). */
public final class QpCap {
    public int maxSendWr = 128;
    public int maxRecvWr = 128;
    public int maxSendSge = 4;
    public int maxRecvSge = 4;
    public int maxInlineData = 64;

    public QpCap maxSendWr(final int v) {
        maxSendWr = v;
        return this;
    }

    public QpCap maxRecvWr(final int v) {
        maxRecvWr = v;
        return this;
    }

    public QpCap maxSendSge(final int v) {
        maxSendSge = v;
        return this;
    }

    public QpCap maxRecvSge(final int v) {
        maxRecvSge = v;
        return this;
    }

    public QpCap maxInlineData(final int v) {
        maxInlineData = v;
        return this;
    }

    public QpCap copy() {
        return new QpCap().maxSendWr(maxSendWr).maxRecvWr(maxRecvWr).maxSendSge(maxSendSge)
            .maxRecvSge(maxRecvSge).maxInlineData(maxInlineData);
    }

    @Override
    public String toString() {
        return "QpCap{max_send_wr=" + maxSendWr + ", max_recv_wr=" + maxRecvWr + ", max_send_sge=" + maxSendSge
            + ", max_recv_sge=" + maxRecvSge + ", max_inline_data=" + maxInlineData + '}';
    }
}
