/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RegMechanismDecisionTest {

    @ParameterizedTest(name = "dmabuf {0}/{1} peermem {2}/{3} -> {4}")
    @CsvSource({
        "true,  true,  true,  true,  DMABUF_FD",
        "true,  true,  false, false, DMABUF_FD",
        "true,  false, true,  true,  PEERMEM_POINTER",
        "false, true,  true,  true,  PEERMEM_POINTER",
        "false, false, true,  true,  PEERMEM_POINTER",
        "true,  false, true,  false, NONE",
        "false, true,  false, true,  NONE",
        "false, false, false, false, NONE",
        "false, true,  true,  false, NONE",
    })
    void branch(final boolean dmaSup, final boolean dmaEn, final boolean pmLoaded, final boolean pmEn,
                final RegMechanism expected) {
        final RegMechanismDecision d = RegMechanismDecision.decide(new RegCapabilities(dmaSup, dmaEn, pmLoaded, pmEn));
        assertEquals(expected, d.mechanism());
        assertTrue(d.evidence().startsWith(expected.name() + ": "), d.evidence());
    }

    @Test
    void bothBranchesCanBeSwitchedOffAndTheEvidenceSaysSo() {
        final RegCapabilities all = RegCapabilities.all();
        assertEquals(RegMechanism.DMABUF_FD, RegMechanismDecision.decide(all).mechanism());
        final RegMechanismDecision noDmaBuf = RegMechanismDecision.decide(all.withDmaBufDisabled());
        assertEquals(RegMechanism.PEERMEM_POINTER, noDmaBuf.mechanism());
        assertTrue(noDmaBuf.evidence().contains("DMA-BUF supported but disabled by setting"), noDmaBuf.evidence());
        final RegMechanismDecision none = RegMechanismDecision.decide(all.withDmaBufDisabled().withPeermemDisabled());
        assertEquals(RegMechanism.NONE, none.mechanism());
        assertTrue(none.evidence().contains("peermem loaded but disabled by setting"), none.evidence());
    }

    @Test
    void settingCannotEnableWhatIsMissing() {
        final RegMechanismDecision d = RegMechanismDecision.decide(new RegCapabilities(false, true, false, true));
        assertEquals(RegMechanism.NONE, d.mechanism());
        assertTrue(d.evidence().contains("DMA-BUF not supported"), d.evidence());
        assertTrue(d.evidence().contains("peermem not loaded"), d.evidence());
    }

    @Test
    void mergedNicRegistersOneMrPerPhysicalNic() {
        final CountingRegistrar a = new CountingRegistrar();
        final CountingRegistrar b = new CountingRegistrar();
        final CountingRegistrar c = new CountingRegistrar();
        final MergedNicMr mr = MergedNicMr.register(List.of(a, b, c), 0x10000, 8192);
        assertEquals(3, mr.nicCount());
        assertEquals(List.of(1, 1, 1), List.of(a.registers, b.registers, c.registers));
        assertEquals(new CountingRegistrar.Mr(1, 0x10000, 8192), mr.mrs().get(1));
        mr.deregister();
        assertEquals(List.of(1, 1, 1), List.of(a.deregisters, b.deregisters, c.deregisters));
    }

    @Test
    void singleNicIsOneMr() {
        final CountingRegistrar a = new CountingRegistrar();
        assertEquals(1, MergedNicMr.register(List.of(a), 0, 1).nicCount());
        assertThrows(IllegalArgumentException.class, () -> MergedNicMr.register(List.of(), 0, 1));
    }

    @Test
    void failedNicUndoesTheOthers() {
        final CountingRegistrar a = new CountingRegistrar();
        final CountingRegistrar b = new CountingRegistrar();
        final CountingRegistrar c = new CountingRegistrar();
        c.failNextRegister = 1;
        final List<Registrar> nics = new ArrayList<>(List.of(a, b, c));
        final IllegalStateException ex =
            assertThrows(IllegalStateException.class, () -> MergedNicMr.register(nics, 0, 4096));
        assertEquals("injected registration failure", ex.getMessage());
        assertEquals(0, a.live() + b.live() + c.live());
        assertEquals(1, a.deregisters);
    }
}
