/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.core.config.Source;
import io.gdrkit.gdr.topo.PathType;
import java.util.Map;
import org.junit.jupiter.api.Test;

class NcclSettingsTest {
    @Test
    void defaultsAreNcclsAndRecordedAsDefaults() {
        final NcclSettings s = NcclSettings.ofEnv(Map.of());
        assertEquals(NcclSettings.NAMES, s.all().stream().map(Setting::name).toList());
        s.all().forEach(x -> assertEquals(Source.DEFAULT, x.source(), x.name()));
        assertEquals(GdrSettings.DEFAULTS, s.gdr());
        assertTrue(s.reg().localRegister());
        assertTrue(s.pathOptions().netGdrC2c());
        assertFalse(s.socketOnly());
        assertNull(s.p2pLevel().value());
        assertEquals("unset", NcclSettings.display(s.net()));
        assertEquals("P2C", NcclSettings.display(s.gdrLevel()), "NCCL 2.30: P2C with NCCL_NET_GDR_C2C=1");
    }

    @Test
    void environmentValuesAreParsedOnceWithTheirSourceAndFlagsWin() {
        final Map<String, String> env = Map.of("NCCL_NET_GDR_LEVEL", "LOC", "NCCL_NET_GDR_READ", "0",
            "NCCL_DMABUF_ENABLE", "0", "NCCL_LOCAL_REGISTER", "0", "NCCL_NET_GDR_C2C", "0", "NCCL_NET", "socket",
            "NCCL_P2P_LEVEL", "2", "NCCL_NET_FORCE_FLUSH", "1", "NCCL_GDRCOPY_ENABLE", "1");
        final NcclSettings s = new NcclSettings.Context().reader(SettingsReader.ofEnv(env))
            .override("NCCL_NET_GDR_LEVEL", "SYS").conclude();
        assertEquals(PathType.SYS, s.gdr().gdrLevel().path());
        assertEquals(Source.FLAG, s.gdrLevel().source());
        assertEquals("SYS", s.gdrLevel().raw());
        assertEquals(0, s.gdr().gdrRead());
        assertEquals(Source.ENVIRONMENT, s.gdrRead().source());
        assertFalse(s.gdr().dmabufEnable());
        assertTrue(s.gdr().forceFlush());
        assertFalse(s.reg().localRegister());
        assertFalse(s.gdr().localRegister());
        assertFalse(s.pathOptions().netGdrC2c());
        assertEquals("Socket", s.net().value());
        assertTrue(s.socketOnly());
        assertEquals(PathType.PXB, s.p2pLevel().value(), "old level 2 = PXB");
        assertTrue(s.gdrcopyEnable().value());
        assertEquals("NCCL_NET_GDR_READ=0 (environment)", NcclSettings.describe(s.gdrRead()));
        // the compatibility readers go through the same place
        assertEquals(0, GdrSettings.fromEnvironment(env).gdrRead());
        assertTrue(NcclSettings.ofEnv(Map.of("NCCL_IB_DISABLE", "1")).socketOnly());
    }

    @Test
    void malformedValuesAreNamed() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> NcclSettings.ofEnv(Map.of("NCCL_IB_DISABLE",
            "yes"))).getMessage().contains("NCCL_IB_DISABLE=yes is not an integer"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> NcclSettings.ofEnv(Map.of("NCCL_NET",
            "verbs"))).getMessage().contains("NCCL_NET=verbs names no network"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> NcclSettings.ofEnv(Map.of("NCCL_P2P_LEVEL",
            "far"))).getMessage().startsWith("NCCL_P2P_LEVEL=\"far\" is not a GDR level"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new NcclSettings.Context()
            .override("NCCL_SOCKET_IFNAME", "eth0")).getMessage().contains("not a setting gdrkit reads"));
    }
}
