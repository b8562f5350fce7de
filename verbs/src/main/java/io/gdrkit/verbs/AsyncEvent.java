/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/**
 * An asynchronous event (ibv_get_async_event).
 *
 * @param type    an {@link AsyncEventType} value
 * @param element the QP number for QP events, the CQ's handle for CQ events, the SRQ's handle for SRQ events,
 *                the port number (from 1) for PORT_ACTIVE / PORT_ERR, 0 for DEVICE_FATAL
 * @param detail  what happened, in words
 */
public record AsyncEvent(int type, int element, String detail) {
    @Override
    public String toString() {
        return AsyncEventType.name(type) + "(" + element + "): " + detail;
    }
}
