/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.comm.config.CommConfiguration;
import io.gdrkit.core.config.CoreConfiguration;
import io.gdrkit.core.config.Catalogues;
import io.gdrkit.core.config.SettingDef;
import io.gdrkit.core.config.SettingsCatalogue;
import io.gdrkit.gdr.config.GdrConfiguration;
import io.gdrkit.gpu.config.GpuConfiguration;
import io.gdrkit.ibverbs.config.IbverbsConfiguration;
import io.gdrkit.softnic.config.SoftNicConfiguration;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The registry finds every module's catalogue, each lists all its descriptors, and the --set hook checks values. */
class CataloguesTest {
    @Test
    void serviceLoaderFindsEveryModulesCatalogueInLayerOrder() {
        assertEquals(List.of("core", "softnic", "ibverbs", "gpu", "gdr", "comm"),
            Catalogues.all().stream().map(SettingsCatalogue::module).toList());
        assertEquals(List.of(CoreConfiguration.class, SoftNicConfiguration.class, IbverbsConfiguration.class,
            GpuConfiguration.class, GdrConfiguration.class, CommConfiguration.class),
            Catalogues.all().stream().map(SettingsCatalogue::configurationClass).toList());
    }

    @Test
    void eachCatalogueListsExactlyTheDescriptorsItsClassDeclares() throws IllegalAccessException {
        int total = 0;
        for (final SettingsCatalogue c : Catalogues.all()) {
            final Class<?> k = c.configurationClass();
            assertTrue(Modifier.isFinal(k.getModifiers()), k + " is final");
            final List<SettingDef<?>> declared = new ArrayList<>();
            for (final Field f : k.getDeclaredFields()) {
                if (f.getType() == SettingDef.class && Modifier.isStatic(f.getModifiers())) {
                    assertTrue(Modifier.isPublic(f.getModifiers()) && Modifier.isFinal(f.getModifiers()), f + "");
                    declared.add((SettingDef<?>) f.get(null));
                }
            }
            assertEquals(new HashSet<>(declared), new HashSet<>(c.settings()), k + ": ALL and the constants differ");
            assertEquals(declared.size(), c.settings().size(), k + ": a descriptor listed twice");
            assertTrue(k.getSimpleName().endsWith("Configuration"), k + " is a <Module>Configuration");
            total += declared.size();
        }
        assertEquals(total, Catalogues.byName().size(), "a name catalogued twice");
        assertEquals(94, total, "settings catalogued");
    }

    @Test
    void everyDefaultIsValidByItsOwnRule() {
        for (final SettingDef<?> d : Catalogues.byName().values()) {
            assertTrue(!d.doc().isBlank() && !d.valid().isBlank() && !d.readBy().isBlank(), d.name());
            if (d.defaultValue() != null && !"".equals(d.defaultValue()) && !d.name().equals("NCCL_NET_GDR_LEVEL")) {
                assertEquals(d.defaultValue(), given(d).value(), d.name());
            }
        }
    }

    /** The default as a setter would give it: formatted, parsed again by the setting's rule, recorded as a flag. */
    private static <T> io.gdrkit.core.config.Setting<T> given(final SettingDef<T> d) {
        return d.given(d.defaultValue());
    }

    @Test
    void findAnswersByName() {
        assertSame(SoftNicConfiguration.WINDOW, Catalogues.find("gdrkit.nic.window").orElseThrow());
        assertSame(GdrConfiguration.STEPS, Catalogues.find("NCCL_STEPS").orElseThrow());
        assertSame(CommConfiguration.COLL_NICS, Catalogues.find("gdrkit.coll.nics").orElseThrow());
        assertTrue(Catalogues.find("gdrkit.nic.windw").isEmpty());
        assertEquals(SettingDef.Origin.PROPERTY, SoftNicConfiguration.WINDOW.origin());
        assertEquals(SettingDef.Origin.ENVIRONMENT, GdrConfiguration.STEPS.origin());
        assertEquals(SettingDef.Origin.ENVIRONMENT, CommConfiguration.BOOTSTRAP_RANK.origin());
    }

    @Test
    void validateRefusesAnUnknownNameAndAValueOutOfRange() {
        assertEquals("unknown setting gdrkit.nic.windw: no module's catalogue lists it (docs/CONFIGURATION.md lists "
            + "them all)", assertThrows(IllegalArgumentException.class,
            () -> Catalogues.validate("gdrkit.nic.windw", "8")).getMessage());
        assertEquals("gdrkit.nic.window=0 is not an integer in [1, 4194304]", assertThrows(
            IllegalArgumentException.class, () -> Catalogues.validate("gdrkit.nic.window", "0")).getMessage());
        assertEquals("NCCL_STEPS=many is not an integer in [1, 32]", assertThrows(IllegalArgumentException.class,
            () -> Catalogues.validate("NCCL_STEPS", "many")).getMessage());
        assertEquals("gdrkit.coll.nics=17 is not auto or an integer in [1, 16]", assertThrows(
            IllegalArgumentException.class, () -> Catalogues.validate("gdrkit.coll.nics", "17")).getMessage());
        assertEquals("gdrkit.nic.link.capacity=65537 is not a power of two from 64 KiB to 1 GiB", assertThrows(
            IllegalArgumentException.class, () -> Catalogues.validate("gdrkit.nic.link.capacity", "65537"))
            .getMessage());
        assertEquals("NCCL_ALGO=collnet is not one of auto, ring, tree, direct, rsag, hier (gdrkit implements those)",
            assertThrows(IllegalArgumentException.class, () -> Catalogues.validate("NCCL_ALGO", "collnet"))
                .getMessage());
        assertEquals("NCCL_PROTO=LL128 is not one of auto, LL, Simple (gdrkit implements those)", assertThrows(
            IllegalArgumentException.class, () -> Catalogues.validate("NCCL_PROTO", "LL128")).getMessage());
        assertSame(SoftNicConfiguration.WINDOW, Catalogues.validate("gdrkit.nic.window", "4096"));
        assertSame(SoftNicConfiguration.PROGRESS, Catalogues.validate("gdrkit.nic.progress", "own-device"));
        assertEquals(0, CommConfiguration.COLL_NICS.validate("auto"));
        assertEquals(true, GdrConfiguration.NET_FORCE_FLUSH.validate("2"));
    }

    @Test
    void namesFollowTheirOriginsConvention() {
        final Set<String> seen = new HashSet<>();
        for (final String n : Catalogues.byName().keySet()) {
            assertTrue(n.matches("gdrkit(\\.[a-z0-9]+)+|(NCCL|GDRKIT)_[A-Z0-9_]+"), n);
            assertTrue(seen.add(n), n);
        }
        assertEquals("setting name gdrkit.Nic is neither gdrkit.<lower.dotted> nor NCCL_/GDRKIT_<UPPER>",
            assertThrows(IllegalArgumentException.class, () -> SettingDef.flag("gdrkit.Nic", false, "x"))
                .getMessage());
    }
}
