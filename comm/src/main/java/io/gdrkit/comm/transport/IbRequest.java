/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import static io.gdrkit.comm.transport.IbTransport.MAX_RECVS;
import static io.gdrkit.comm.transport.IbTransport.NOT_WAITED;

import io.gdrkit.comm.transport.NetTransport.Request;
import io.gdrkit.comm.transport.NetTransportException.Reason;

/** One request; pooled per comm (no allocation per message). */
final class IbRequest implements Request {
    final IbComm comm;
    final int index;
    int kind;
    boolean used;
    boolean done;
    int slot;
    int n;
    int expected;
    int arrived;
    int size;
    /** When test() first saw it in flight ({@link IbTransport#NOT_WAITED} before): the request's timeout runs from there. */
    long waitingSince;
    String error;
    Reason errorReason;
    final int[] capacity = new int[MAX_RECVS];
    final int[] tags = new int[MAX_RECVS];
    final int[] received = new int[MAX_RECVS];

    IbRequest(final IbComm comm, final int index) {
        this.comm = comm;
        this.index = index;
    }

    void reset(final int k) {
        kind = k;
        used = true;
        done = false;
        arrived = 0;
        expected = 0;
        error = null;
        errorReason = null;
        waitingSince = NOT_WAITED;
    }

    void fail(final Reason reason, final String why) {
        if (error == null) {
            error = why;
            errorReason = reason;
        }
    }
}
