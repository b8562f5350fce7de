/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class NetPropertiesTest {
    @Test
    void ptrSupportBitsAreNcclsAndPrintLikeNccl() {
        assertEquals(1, NetProperties.PTR_HOST);
        assertEquals(2, NetProperties.PTR_CUDA);
        assertEquals(4, NetProperties.PTR_DMABUF);
        assertEquals(128, NetTransport.HANDLE_MAXSIZE);
        assertEquals(32, NetTransport.MAX_REQUESTS);
        final NetProperties p = new NetProperties("soft0", "unknown", 7, 7, true, 100_000, 1, 0f, 65536, 8,
            NetProperties.NetDeviceType.HOST, true);
        assertEquals("HOST|CUDA|DMABUF", p.ptrSupportText());
        assertEquals("HOST", new NetProperties("s", "unknown", 0, 1, false, 1, 1, 0f, 1, 1,
            NetProperties.NetDeviceType.HOST, false).ptrSupportText());
        assertEquals("NET invalid usage: x", new NetTransportException(NetTransportException.Reason.INVALID_USAGE,
            "x").getMessage());
    }
}
