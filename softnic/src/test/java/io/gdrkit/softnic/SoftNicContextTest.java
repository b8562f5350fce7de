/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.Source;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The soft NIC's Context: defaults, properties, setters, each value's source, and a named error per bad value. */
class SoftNicContextTest {

    private static Setting<?> setting(final SoftNicContext c, final String name) {
        return c.settings().stream().filter(s -> s.name().equals(name)).findFirst().orElseThrow();
    }

    @Test
    void defaultsAreRecordedAsDefaults() {
        final SoftNicContext c = new SoftNicContext().properties(Map.of()).conclude();
        assertEquals(SoftNicContext.ProgressMode.INVOKER, c.progressMode());
        assertEquals("backoff", c.idleStrategy());
        assertEquals(4 << 20, c.linkCapacity());
        assertEquals(1.0, c.retransmitFactor());
        assertEquals(2, c.retransmitBackoff(), "the IBA's bound: one expiry at most 4x the QP's timeout");
        assertEquals(64, c.ackReqInterval());
        assertEquals(512, c.window());
        assertEquals(32, c.burst());
        assertEquals(false, c.linkCrc());
        assertEquals(true, c.dmaBuf());
        assertEquals(true, c.peermem());
        assertEquals(true, c.oneCopy());
        assertEquals(true, c.sourceRing());
        assertEquals(16, c.batch());
        assertEquals(false, c.shmBatch());
        assertEquals(1, c.copyEngines());
        assertEquals(SoftNicContext.DEFAULT_COPY_THRESHOLD, c.copyThreshold());
        assertEquals(SoftNicContext.DEFAULT_ONE_COPY_MIN, c.oneCopyMin());
        assertEquals(true, c.scanPark());
        assertEquals(SoftNicContext.MAX_QP_LIMIT, c.maxQp());
        assertEquals(0, c.backstopMicros());
        assertEquals(List.of(SoftNicContext.PROGRESS_PROP, SoftNicContext.IDLE_STRATEGY_PROP, SoftNicContext.BACKSTOP_PROP,
                SoftNicContext.LINK_CAPACITY_PROP, SoftNicContext.RETRANSMIT_FACTOR_PROP,
                SoftNicContext.RETRANSMIT_BACKOFF_PROP, SoftNicContext.ACK_REQ_INTERVAL_PROP, SoftNicContext.WINDOW_PROP, SoftNicContext.BURST_PROP,
                SoftNicContext.LINK_CRC_PROP, SoftNicContext.DMABUF_PROP, SoftNicContext.PEERMEM_PROP,
                SoftNicContext.ONE_COPY_PROP, io.gdrkit.softnic.config.SoftNicConfiguration.SOURCE_RING.name(),
                io.gdrkit.softnic.config.SoftNicConfiguration.SOURCE_AHEAD.name(),
                SoftNicContext.ONE_COPY_MIN_PROP, SoftNicContext.SCAN_PARK_PROP,
                SoftNicContext.UD_ONE_COPY_MIN_PROP, SoftNicContext.UD_REFERENCE_TIMEOUT_PROP,
                SoftNicContext.BATCH_PROP, SoftNicContext.REF_BATCH_PROP, SoftNicContext.SHM_CMA_PROP,
                SoftNicContext.SHM_CMA_THRESHOLD_PROP, SoftNicContext.SHM_BATCH_PROP, SoftNicContext.COPY_ENGINES_PROP,
                SoftNicContext.COPY_THRESHOLD_PROP, SoftNicContext.MAX_QP_PROP),
            c.settings().stream().map(Setting::name).toList());
        for (final Setting<?> s : c.settings()) {
            assertEquals(Source.DEFAULT, s.source(), s::describe);
            assertEquals(null, s.raw(), s::describe);
        }
    }

    @Test
    void aLabsDefaultProgressAndItsBackstopAreDefaultsThatPropertiesAndSettersOverride() {
        final SoftNicContext.ProgressMode own = SoftNicContext.ProgressMode.OWN_DEVICE;
        final SoftNicContext lab = new SoftNicContext().properties(Map.of()).defaultProgress(own, 200).conclude();
        assertEquals(own, lab.progressMode());
        assertEquals(200, lab.backstopMicros());
        assertEquals(Source.DEFAULT, setting(lab, SoftNicContext.PROGRESS_PROP).source());
        assertEquals(Source.DEFAULT, setting(lab, SoftNicContext.BACKSTOP_PROP).source());
        // a backstop property overrides the lab's backstop, the mode stays the lab's
        final SoftNicContext bs = new SoftNicContext().properties(Map.of(SoftNicContext.BACKSTOP_PROP, "50"))
            .defaultProgress(own, 200).conclude();
        assertEquals(own, bs.progressMode());
        assertEquals(50, bs.backstopMicros());
        assertEquals(Source.PROPERTY, setting(bs, SoftNicContext.BACKSTOP_PROP).source());
        // a mode given by property or setter keeps the backstop's own default (0)
        final SoftNicContext prop = new SoftNicContext().properties(Map.of(SoftNicContext.PROGRESS_PROP, "dedicated"))
            .defaultProgress(own, 200).conclude();
        assertEquals(SoftNicContext.ProgressMode.DEDICATED, prop.progressMode());
        assertEquals(Source.PROPERTY, setting(prop, SoftNicContext.PROGRESS_PROP).source());
        assertEquals(0, prop.backstopMicros());
        final SoftNicContext flag = new SoftNicContext().properties(Map.of()).defaultProgress(own, 200)
            .progressMode(own).conclude();
        assertEquals(Source.FLAG, setting(flag, SoftNicContext.PROGRESS_PROP).source());
        assertEquals(0, flag.backstopMicros());
        assertThrows(IllegalArgumentException.class, () -> new SoftNicContext().defaultProgress(own, -1));
        assertThrows(IllegalStateException.class, () -> lab.defaultProgress(own, 1), "concluded");
    }

    @Test
    void propertiesOverrideDefaultsAndSettersOverrideProperties() {
        final SoftNicContext c = new SoftNicContext()
            .properties(Map.of(SoftNicContext.WINDOW_PROP, "128", SoftNicContext.PROGRESS_PROP, "own-device",
                SoftNicContext.LINK_CRC_PROP, "1", SoftNicContext.BURST_PROP, "8"))
            .burst(4)
            .conclude();
        assertEquals(new Setting<>(SoftNicContext.WINDOW_PROP, 128, Source.PROPERTY, "128"),
            setting(c, SoftNicContext.WINDOW_PROP));
        assertEquals(new Setting<>(SoftNicContext.PROGRESS_PROP, SoftNicContext.ProgressMode.OWN_DEVICE,
            Source.PROPERTY, "own-device"), setting(c, SoftNicContext.PROGRESS_PROP));
        assertEquals(new Setting<>(SoftNicContext.LINK_CRC_PROP, true, Source.PROPERTY, "1"),
            setting(c, SoftNicContext.LINK_CRC_PROP));
        assertEquals(new Setting<>(SoftNicContext.BURST_PROP, 4, Source.FLAG, "4"),
            setting(c, SoftNicContext.BURST_PROP));
        assertEquals(128, c.window());
        assertEquals(4, c.burst());
        assertEquals(SoftNicContext.ProgressMode.OWN_DEVICE, c.progressMode());
        assertEquals("gdrkit.nic.burst=4 (flag)", setting(c, SoftNicContext.BURST_PROP).describe());
    }

    @Test
    void systemPropertiesAreReadAtConclude() {
        final SoftNicContext c = new SoftNicContext();
        System.setProperty(SoftNicContext.ACK_REQ_INTERVAL_PROP, "16");
        try {
            c.conclude();
        } finally {
            System.clearProperty(SoftNicContext.ACK_REQ_INTERVAL_PROP);
        }
        assertEquals(new Setting<>(SoftNicContext.ACK_REQ_INTERVAL_PROP, 16, Source.PROPERTY, "16"),
            setting(c, SoftNicContext.ACK_REQ_INTERVAL_PROP));
    }

    @Test
    void everyMalformedValueIsANamedError() {
        final Map<String, String> expected = new java.util.LinkedHashMap<>();
        expected.put(SoftNicContext.PROGRESS_PROP + "=sometimes",
            "is not one of [INVOKER, OWN_DEVICE, DEDICATED, DETERMINISTIC]");
        expected.put(SoftNicContext.IDLE_STRATEGY_PROP + "=nap", "is not spin, yield, backoff or sleep:<micros>");
        expected.put(SoftNicContext.LINK_CAPACITY_PROP + "=100000", "is not a power of two from 64 KiB to 1 GiB");
        expected.put(SoftNicContext.LINK_CAPACITY_PROP + "=4M", "is not a power of two from 64 KiB to 1 GiB");
        expected.put(SoftNicContext.RETRANSMIT_FACTOR_PROP + "=0", "is not a number > 0 and <= 1e6");
        expected.put(SoftNicContext.RETRANSMIT_FACTOR_PROP + "=NaN", "is not a number > 0 and <= 1e6");
        expected.put(SoftNicContext.RETRANSMIT_FACTOR_PROP + "=x", "is not a number > 0 and <= 1e6");
        expected.put(SoftNicContext.ACK_REQ_INTERVAL_PROP + "=0", "is not an integer in [1, 2147483647]");
        expected.put(SoftNicContext.WINDOW_PROP + "=4194305", "is not an integer in [1, 4194304]");
        expected.put(SoftNicContext.BURST_PROP + "=-1", "is not an integer in [1, 2147483647]");
        expected.put(SoftNicContext.LINK_CRC_PROP + "=yes", "is not 0, 1, true or false");
        expected.put(SoftNicContext.ONE_COPY_PROP + "=on", "is not 0, 1, true or false");
        expected.put(SoftNicContext.SHM_BATCH_PROP + "=yes", "is not 0, 1, true or false");
        expected.put(SoftNicContext.COPY_ENGINES_PROP + "=0", "is not auto or an integer in [1, 64]");
        expected.put(SoftNicContext.COPY_ENGINES_PROP + "=two", "is not auto or an integer in [1, 64]");
        expected.put(SoftNicContext.COPY_THRESHOLD_PROP + "=4095", "is not an integer in [4096, 1073741824]");
        expected.put(SoftNicContext.UD_ONE_COPY_MIN_PROP + "=4097", "is not an integer in [1, 4096]");
        expected.put(SoftNicContext.UD_REFERENCE_TIMEOUT_PROP + "=0", "is not an integer in [1, 3600000]");
        for (final Map.Entry<String, String> e : expected.entrySet()) {
            final String[] kv = e.getKey().split("=", 2);
            final IllegalArgumentException x = assertThrows(IllegalArgumentException.class,
                () -> new SoftNicContext().properties(Map.of(kv[0], kv[1])).conclude(), e.getKey());
            assertEquals(e.getKey() + " " + e.getValue(), x.getMessage());
        }
        // a setter's bad value is named the same way
        final IllegalArgumentException x = assertThrows(IllegalArgumentException.class,
            () -> new SoftNicContext().properties(Map.of()).window(0).conclude());
        assertEquals(SoftNicContext.WINDOW_PROP + "=0 is not an integer in [1, 4194304]", x.getMessage());
    }

    @Test
    void concludedOnceAndReadOnlyAfter() {
        final SoftNicContext fresh = new SoftNicContext();
        final IllegalStateException before = assertThrows(IllegalStateException.class, fresh::window);
        assertEquals("SoftNicContext is not concluded: conclude() it before reading its values (SoftNicDriver.launch "
            + "concludes it)", before.getMessage());
        fresh.properties(Map.of()).conclude();
        assertEquals("SoftNicContext is already concluded: conclude() runs once per context",
            assertThrows(IllegalStateException.class, fresh::conclude).getMessage());
        final IllegalStateException after = assertThrows(IllegalStateException.class, () -> fresh.burst(2));
        assertEquals("SoftNicContext is concluded: burst(...) is refused; configure a new SoftNicContext",
            after.getMessage());
        assertThrows(NullPointerException.class, () -> new SoftNicContext().progressMode(null));
    }

    @Test
    void theCataloguesLimitsAreTheEnginesOwn() {
        final Map<String, String> none = Map.of();
        final SoftNicContext c = new SoftNicContext().properties(none).conclude();
        assertEquals(SoftNicContext.MAX_QP_LIMIT, io.gdrkit.softnic.config.SoftNicConfiguration.MAX_QP_LIMIT);
        assertEquals(SoftNicContext.MAX_QP_LIMIT, c.maxQp());
        assertEquals(SoftQp.MAX_BACKOFF, c.retransmitBackoff());
        assertEquals(SoftNicContext.DEFAULT_ONE_COPY_MIN, c.oneCopyMin());
        assertEquals(SoftNicContext.DEFAULT_UD_ONE_COPY_MIN, c.udOneCopyMin());
        assertEquals(SoftNicContext.DEFAULT_UD_REFERENCE_TIMEOUT_MS, c.udReferenceTimeoutMs());
        assertEquals(SoftNicContext.DEFAULT_COPY_THRESHOLD, c.copyThreshold());
        assertEquals("gdrkit.nic.retransmit.backoff=" + (SoftQp.MAX_BACKOFF + 1) + " is not an integer in [0, "
            + SoftQp.MAX_BACKOFF + "]",
            assertThrows(IllegalArgumentException.class, () -> new SoftNicContext().properties(none)
                .retransmitBackoff(SoftQp.MAX_BACKOFF + 1).conclude()).getMessage());
        assertEquals("gdrkit.nic.ud.onecopy.min=4097 is not an integer in [1, " + UdEngine.MTU + "]",
            assertThrows(IllegalArgumentException.class, () -> new SoftNicContext().properties(none)
                .udOneCopyMin(UdEngine.MTU + 1).conclude()).getMessage());
        assertEquals("gdrkit.nic.batch=1025 is not an integer in [1, " + SoftNicContext.MAX_BATCH + "]",
            assertThrows(IllegalArgumentException.class, () -> new SoftNicContext().properties(none)
                .batch(SoftNicContext.MAX_BATCH + 1).conclude()).getMessage());
    }
}
