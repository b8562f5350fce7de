/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.gdrkit.core.config.CoreConfiguration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A descriptor reads through SettingsReader (the source recorded), checks a setter's value by the same rule. */
class SettingDefTest {
    private static final SettingDef<Integer> STEPS = SettingDef.integer("NCCL_STEPS", 8, 1, 32, "chunks in flight");
    private static final SettingDef<Integer> WINDOW = SettingDef.integer("gdrkit.nic.window", 512, 1, 1 << 22,
        "unacknowledged PSNs");

    @Test
    void aReadIsRecordedWithItsSource() {
        final SettingsReader r = new SettingsReader(Map.of("NCCL_STEPS", "4", "gdrkit.nic.window", "9"),
            Map.of("gdrkit.nic.window", "64", "NCCL_STEPS", "16"), Map.of());
        assertEquals(new Setting<>("NCCL_STEPS", 4, Source.ENVIRONMENT, "4"), STEPS.read(r));
        assertEquals(new Setting<>("gdrkit.nic.window", 64, Source.PROPERTY, "64"), WINDOW.read(r));
        final SettingsReader none = SettingsReader.ofEnv(Map.of());
        assertEquals(new Setting<>("NCCL_STEPS", 8, Source.DEFAULT, null), STEPS.read(none));
        assertEquals(new Setting<>("NCCL_STEPS", 2, Source.DEFAULT, null), STEPS.read(none, 2));
        assertEquals(List.of("NCCL_STEPS", "NCCL_STEPS"), none.recorded().stream().map(Setting::name).toList());
        assertEquals(new Setting<>("NCCL_STEPS", 3, Source.FLAG, "3"),
            STEPS.read(none.withOverrides(Map.of("NCCL_STEPS", "3"))));
    }

    @Test
    void aSettersValueIsCheckedByTheSameRuleAndRecordedAsAFlag() {
        assertEquals(new Setting<>("NCCL_STEPS", 32, Source.FLAG, "32"), STEPS.given(32));
        assertEquals("NCCL_STEPS=33 is not an integer in [1, 32]",
            assertThrows(IllegalArgumentException.class, () -> STEPS.given(33)).getMessage());
        assertEquals("NCCL_STEPS=0 is not an integer in [1, 32]", assertThrows(IllegalArgumentException.class,
            () -> STEPS.read(SettingsReader.ofEnv(Map.of("NCCL_STEPS", "0")))).getMessage());
    }

    @Test
    void validateParsesWithoutRecording() {
        assertEquals(12, STEPS.validate(" 12 "));
        assertEquals("NCCL_STEPS=x is not an integer in [1, 32]",
            assertThrows(IllegalArgumentException.class, () -> STEPS.validate("x")).getMessage());
        final SettingDef<Boolean> f = SettingDef.flag("gdrkit.some.flag", false, "a flag");
        assertEquals(true, f.validate("1"));
        assertEquals("gdrkit.some.flag=yes is not 0, 1, true or false",
            assertThrows(IllegalArgumentException.class, () -> f.validate("yes")).getMessage());
        final SettingDef<Source> c = SettingDef.choice("gdrkit.some.choice", Source.DEFAULT, Source.class, "a choice");
        assertEquals(Source.FLAG, c.validate("flag"));
        assertEquals("default", c.defaultText());
        assertEquals("default, environment, property, flag", c.valid());
        assertEquals(new Setting<>("gdrkit.some.choice", Source.PROPERTY, Source.FLAG, "property"),
            c.given(Source.PROPERTY));
    }

    @Test
    void originFollowsTheReadersRule() {
        assertEquals(SettingDef.Origin.ENVIRONMENT, STEPS.origin());
        assertEquals(SettingDef.Origin.ENVIRONMENT, CoreConfiguration.TOKEN_ENV.origin());
        assertEquals(SettingDef.Origin.PROPERTY, WINDOW.origin());
        assertEquals("1..32", STEPS.valid());
        assertEquals("8", STEPS.defaultText());
        assertEquals("x", STEPS.readBy("x").readBy());
    }

    @Test
    void aDescriptionIsOneLineAndANameFollowsTheConvention() {
        assertEquals("gdrkit.a: the description must be one non-blank line", assertThrows(
            IllegalArgumentException.class, () -> SettingDef.flag("gdrkit.a", true, "two\nlines")).getMessage());
        assertEquals("setting name nccl_steps is neither gdrkit.<lower.dotted> nor NCCL_/GDRKIT_<UPPER>",
            assertThrows(IllegalArgumentException.class, () -> SettingDef.flag("nccl_steps", true, "x"))
                .getMessage());
    }

    @Test
    void aNameCataloguedTwiceIsRefused() {
        final SettingsCatalogue a = catalogue("a", 1, STEPS);
        final SettingsCatalogue b = catalogue("b", 0, WINDOW, SettingDef.integer("NCCL_STEPS", 1, 1, 2, "again"));
        assertEquals("setting NCCL_STEPS is catalogued twice: by b and by a", assertThrows(
            IllegalStateException.class, () -> Catalogues.of(List.of(a, b))).getMessage());
        final Catalogues.Registry r = Catalogues.of(List.of(a, catalogue("b", 0, WINDOW)));
        assertEquals(List.of("b", "a"), r.catalogues().stream().map(SettingsCatalogue::module).toList());
        assertEquals(List.of("gdrkit.nic.window", "NCCL_STEPS"), List.copyOf(r.byName().keySet()));
    }

    @Test
    void theProcessRegistryHoldsTheCoreCatalogue() {
        assertEquals(CoreConfiguration.TOKEN, Catalogues.find("gdrkit.token").orElseThrow());
        assertEquals("unknown setting gdrkit.nope: no module's catalogue lists it (docs/CONFIGURATION.md lists them "
            + "all)", assertThrows(IllegalArgumentException.class, () -> Catalogues.validate("gdrkit.nope", "1"))
            .getMessage());
    }

    private static SettingsCatalogue catalogue(final String module, final int order, final SettingDef<?>... defs) {
        return new SettingsCatalogue() {
            @Override
            public String module() {
                return module;
            }

            @Override
            public Class<?> configurationClass() {
                return SettingDefTest.class;
            }

            @Override
            public int order() {
                return order;
            }

            @Override
            public List<SettingDef<?>> settings() {
                return List.of(defs);
            }

            @Override
            public String description() {
                return module;
            }
        };
    }
}
