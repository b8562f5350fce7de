/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class BufferPlacementTest {

    @ParameterizedTest(name = "gdr={0} shared={1} gdrcopy={2} -> {3}/{4}")
    @CsvSource({
        "true,  false, false, DEVMEM,         HOSTMEM",
        "true,  false, true,  DEVMEM,         GDCMEM",
        "true,  true,  false, SHARED_DEVMEM,  HOSTMEM",
        "true,  true,  true,  SHARED_DEVMEM,  GDCMEM",
        "false, false, false, HOSTMEM,        HOSTMEM",
        "false, false, true,  HOSTMEM,        HOSTMEM",
        "false, true,  false, SHARED_HOSTMEM, HOSTMEM",
        "false, true,  true,  SHARED_HOSTMEM, HOSTMEM",
    })
    void placementFollowsGdrSharedAndGdrCopy(
        final boolean gdr, final boolean shared, final boolean gdrCopy, final BufferKind data, final BufferKind sync) {
        final BufferPlacement p = BufferPlacement.decide(gdr, shared, gdrCopy);
        assertEquals(data, p.data());
        assertEquals(sync, p.sync());
        assertEquals(!gdr, p.hostBounce());
        assertEquals(shared, p.data().shared());
        assertTrue(p.evidence().contains("gdr=" + gdr + " shared=" + shared + " gdrcopy=" + gdrCopy), p.evidence());
    }

    @ParameterizedTest
    @CsvSource({"true,true", "true,false", "false,true", "false,false"})
    void gdcMemOnlyWithGdrCopy(final boolean gdr, final boolean shared) {
        assertFalse(BufferPlacement.decide(gdr, shared, false).sync() == BufferKind.GDCMEM);
    }

    @org.junit.jupiter.api.Test
    void evidenceNamesTheHostBounce() {
        final BufferPlacement p = BufferPlacement.decide(false, false, true);
        assertTrue(p.evidence().contains("host bounce"), p.evidence());
        assertTrue(p.evidence().contains("GDRCopy present but unused"), p.evidence());
    }

    @org.junit.jupiter.api.Test
    void bankOrdinalsMatchNccl() {
        assertEquals(0, BufferKind.HOSTMEM.ordinal());
        assertEquals(1, BufferKind.DEVMEM.ordinal());
        assertEquals(2, BufferKind.SHARED_HOSTMEM.ordinal());
        assertEquals(3, BufferKind.SHARED_DEVMEM.ordinal());
        assertEquals(4, BufferKind.GDCMEM.ordinal());
    }
}
