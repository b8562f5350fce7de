/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class TopoGdrLevelTest
{
    @Test
    void pathTypesHaveNcclOrderAndValues()
    {
        assertEquals(
            List.of("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS"),
            Arrays.stream(PathType.values()).map(Enum::name).toList());
        for (int v = 0; v <= 11; v++)
        {
            assertEquals(v, PathType.ofValue(v).value());
        }
        assertThrows(IllegalArgumentException.class, () -> PathType.ofValue(12));
    }

    @Test
    void defaultIsNccl230Rule()
    {
        // NCCL 2.30 paths.cc: netGdrLevel = NCCL_NET_GDR_C2C ? P2C : PXB unless NCCL_NET_GDR_LEVEL is set.
        assertEquals(PathType.P2C, GdrLevel.NCCL_DEFAULT.path());
        assertEquals(PathType.P2C, io.gdrkit.gdr.gate.NcclSettings.ofEnv(Map.of()).gdrLevel().value().path());
        assertEquals(PathType.PXB, io.gdrkit.gdr.gate.NcclSettings.ofEnv(Map.of("NCCL_NET_GDR_C2C", "0"))
            .gdrLevel().value().path());
        assertEquals(PathType.PXB, io.gdrkit.gdr.gate.NcclSettings.ofEnv(Map.of("NCCL_NET_GDR_LEVEL", "PXB"))
            .gdrLevel().value().path());
        assertEquals(PathType.PHB, io.gdrkit.gdr.gate.NcclSettings.ofEnv(Map.of("NCCL_NET_GDR_LEVEL", "PHB"))
            .gdrLevel().value().path());
    }

    @ParameterizedTest
    @CsvSource({
        "LOC,LOC", "NVL,NVL", "NVB,NVB", "C2C,C2C", "PIX,PIX", "PXB,PXB", "P2C,P2C", "PXN,PXN", "PHB,PHB", "SYS,SYS",
        // NCCL's old numbering: levelsOldToNew = LOC, PIX, PXB, PHB, SYS, SYS; larger numbers clamp to the last.
        "0,LOC", "1,PIX", "2,PXB", "3,PHB", "4,SYS", "5,SYS", "6,SYS", "99,SYS", "99999999999999999999,SYS",
        // strtol(str, NULL, 0): hexadecimal and octal as NCCL reads them
        "0x2,PXB", "0X3,PHB", "03,PHB", "010,SYS"
    })
    void parsesNamesAndOldNumbers(final String value, final PathType expected)
    {
        final GdrLevel level = GdrLevel.parse(value, GdrLevel.ENV);
        assertEquals(expected, level.path());
        assertEquals("NCCL_NET_GDR_LEVEL=" + value, level.origin());
    }

    @ParameterizedTest
    @ValueSource(strings = { "pxb", "Phb", "", " ", " PXB", "NET", "DIS", "foo", "-1", "2x", "0x", "08", "3.0" })
    void refusesBadValuesWithAClearMessage(final String value)
    {
        final IllegalArgumentException ex =
            assertThrows(IllegalArgumentException.class, () -> GdrLevel.parse(value, GdrLevel.ENV));
        assertTrue(ex.getMessage().startsWith("NCCL_NET_GDR_LEVEL=\"" + value + "\" is not a GDR level"),
            ex.getMessage());
        assertTrue(ex.getMessage().contains("LOC, NVL, NVB, C2C, PIX, PXB, P2C, PXN, PHB, SYS"), ex.getMessage());
        assertTrue(ex.getMessage().contains(Character.isDigit(value.isEmpty() ? 'x' : value.charAt(0)) ?
            "NCCL would read only its leading number" :
            "NCCL would ignore this value and use its default level, P2C (NCCL_NET_GDR_C2C=1"), ex.getMessage());
    }

    @Test
    void badValuesSayWhatNcclWouldUseInstead()
    {
        // NCCL's ncclGetLevel leaves -2 for a value it does not understand: the default, P2C or PXB by C2C.
        final IllegalArgumentException c2cOff = assertThrows(IllegalArgumentException.class,
            () -> io.gdrkit.gdr.gate.NcclSettings.ofEnv(Map.of("NCCL_NET_GDR_LEVEL", "pxb", "NCCL_NET_GDR_C2C", "0")));
        assertTrue(c2cOff.getMessage().contains("use its default level, PXB (NCCL_NET_GDR_C2C=0)"),
            c2cOff.getMessage());
        // strtol base 0 reads "08" as octal 0 and stops at 8: LOC, not SYS
        final IllegalArgumentException octal =
            assertThrows(IllegalArgumentException.class, () -> GdrLevel.parse("08", GdrLevel.ENV));
        assertTrue(octal.getMessage().contains("that is LOC"), octal.getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> GdrLevel.parse("3abc", GdrLevel.ENV))
            .getMessage().contains("that is PHB"));
    }

    @Test
    void caseMistakeGetsAHint()
    {
        final IllegalArgumentException ex =
            assertThrows(IllegalArgumentException.class, () -> GdrLevel.parse("phb", GdrLevel.ENV));
        assertTrue(ex.getMessage().contains("did you mean PHB?"), ex.getMessage());
        final IllegalArgumentException net =
            assertThrows(IllegalArgumentException.class, () -> GdrLevel.parse("NET", GdrLevel.ENV));
        assertTrue(net.getMessage().contains("NET and DIS are path types but not levels"), net.getMessage());
    }

    @ParameterizedTest
    @CsvSource({
        "LOC,PXB,true", "NVL,PXB,true", "C2C,PXB,true", "PIX,PXB,true", "PXB,PXB,true", "P2C,PXB,false",
        "PXN,PXB,false", "PHB,PXB,false", "SYS,PXB,false", "PHB,PHB,true", "SYS,PHB,false", "SYS,SYS,true",
        "NET,SYS,false", "DIS,SYS,false", "PIX,LOC,false", "LOC,LOC,true"
    })
    void distanceAllowsIsPathAtMostLevel(final PathType path, final PathType level, final boolean allowed)
    {
        assertEquals(allowed, GdrLevel.distanceAllows(path, level));
        assertEquals(allowed, new GdrLevel(level, "test").allows(path));
        assertEquals(path.value() <= level.value(), GdrLevel.distanceAllows(path, level));
    }

    @Test
    void nullValueRefused()
    {
        assertFalse(assertThrows(IllegalArgumentException.class, () -> GdrLevel.parse(null, "X"))
            .getMessage().isEmpty());
    }
}
