/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import io.gdrkit.core.agent.NanoClock;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * A {@link LinkHook} that drops, duplicates, delays, corrupts and reorders packets at given rates, drawn from a
 * seeded RNG so a run can be repeated. Reordering holds a packet briefly so later ones overtake it, as adaptive
 * routing does between paths; packets of one QP keep their order unless {@link Config#reorderWithinQp()}.
 * Corruption flips one byte after the link CRC was computed: the receiver must catch it.
 */
public final class FaultInjector implements LinkHook {
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    /**
     * The fault injector's Context (Aeron's pattern): every rate is 0 by default and set by name; {@link #conclude()}
     * validates the whole once and freezes it; {@link #parse} builds one from a command line's spec.
     */
    public static final class Config {
        private double drop;
        private double duplicate;
        private double delay;
        private long delayNanos = 100_000;
        private double corrupt;
        private double reorder;
        private long reorderNanos = 10_000;
        private boolean reorderWithinQp;
        private long seed = 1;
        private boolean concluded;

        /** Probability a packet is lost. */
        public double drop() {
            return drop;
        }

        public Config drop(final double p) {
            open();
            drop = p;
            return this;
        }

        /** Probability a packet arrives twice. */
        public double duplicate() {
            return duplicate;
        }

        public Config duplicate(final double p) {
            open();
            duplicate = p;
            return this;
        }

        /** Probability a packet is held up to {@link #delayNanos()}. */
        public double delay() {
            return delay;
        }

        public Config delay(final double p) {
            open();
            delay = p;
            return this;
        }

        /** Longest hold of a delayed packet (default 100 us). */
        public long delayNanos() {
            return delayNanos;
        }

        public Config delayNanos(final long nanos) {
            open();
            delayNanos = nanos;
            return this;
        }

        /** Probability one byte of a packet is flipped. */
        public double corrupt() {
            return corrupt;
        }

        public Config corrupt(final double p) {
            open();
            corrupt = p;
            return this;
        }

        /** Probability a packet is held up to {@link #reorderNanos()} so others pass it. */
        public double reorder() {
            return reorder;
        }

        public Config reorder(final double p) {
            open();
            reorder = p;
            return this;
        }

        /** Longest hold of a reordered packet (default 10 us). */
        public long reorderNanos() {
            return reorderNanos;
        }

        public Config reorderNanos(final long nanos) {
            open();
            reorderNanos = nanos;
            return this;
        }

        /** Whether packets of one QP may overtake each other (a multi-path QP). */
        public boolean reorderWithinQp() {
            return reorderWithinQp;
        }

        public Config reorderWithinQp(final boolean on) {
            open();
            reorderWithinQp = on;
            return this;
        }

        /** Seed of the injector's RNG (default 1). */
        public long seed() {
            return seed;
        }

        public Config seed(final long s) {
            open();
            seed = s;
            return this;
        }

        public boolean isConcluded() {
            return concluded;
        }

        /** Validates the rates (each within 0..1, together at most 1) and the holds, and freezes the config. */
        public Config conclude() {
            if (concluded) {
                return this;
            }
            for (final double r : new double[] {drop, duplicate, delay, corrupt, reorder}) {
                if (!(r >= 0 && r <= 1)) {
                    throw new IllegalArgumentException("fault rates must be within 0..1, got " + r);
                }
            }
            if (drop + duplicate + delay + corrupt + reorder > 1) {
                throw new IllegalArgumentException("fault rates add up to more than 1");
            }
            if (delayNanos < 0 || reorderNanos < 0) {
                throw new IllegalArgumentException("delays must be >= 0");
            }
            concluded = true;
            return this;
        }

        private void open() {
            if (concluded) {
                throw new IllegalStateException("FaultInjector.Config already concluded: it is frozen");
            }
        }

        /**
         * Parses "drop=0.1,dup=0.05,delay=0.01,delay-us=200,corrupt=0.01,reorder=0.05,reorder-us=20,
         * reorder-within-qp=true,seed=42"; absent keys keep their defaults (rates 0, delay-us 100, reorder-us 10,
         * seed 1). The result is concluded.
         */
        public static Config parse(final String spec) {
            final Map<String, String> kv = new HashMap<>();
            if (spec != null && !spec.isBlank()) {
                for (final String part : spec.split(",")) {
                    final int eq = part.indexOf('=');
                    if (eq <= 0) {
                        throw new IllegalArgumentException("fault spec '" + part + "' is not key=value");
                    }
                    kv.put(part.substring(0, eq).trim().toLowerCase(Locale.ROOT), part.substring(eq + 1).trim());
                }
            }
            final Config c = new Config();
            try {
                c.drop(d(kv, "drop", c.drop)).duplicate(d(kv, "dup", c.duplicate)).delay(d(kv, "delay", c.delay))
                    .delayNanos(micros(kv, "delay-us", c.delayNanos)).corrupt(d(kv, "corrupt", c.corrupt))
                    .reorder(d(kv, "reorder", c.reorder)).reorderNanos(micros(kv, "reorder-us", c.reorderNanos))
                    .reorderWithinQp(Boolean.parseBoolean(kv.getOrDefault("reorder-within-qp", "false")))
                    .seed(Long.parseLong(kv.getOrDefault("seed", Long.toString(c.seed))));
            } catch (final NumberFormatException e) {
                throw new IllegalArgumentException("fault spec '" + spec + "': " + e.getMessage(), e);
            }
            kv.keySet().removeAll(java.util.List.of("drop", "dup", "delay", "delay-us", "corrupt", "reorder",
                "reorder-us", "reorder-within-qp", "seed"));
            if (!kv.isEmpty()) {
                throw new IllegalArgumentException("unknown fault keys " + kv.keySet()
                    + " (drop, dup, delay, delay-us, corrupt, reorder, reorder-us, reorder-within-qp, seed)");
            }
            return c.conclude();
        }

        private static double d(final Map<String, String> kv, final String k, final double dflt) {
            return kv.containsKey(k) ? Double.parseDouble(kv.get(k)) : dflt;
        }

        private static long micros(final Map<String, String> kv, final String k, final long dfltNanos) {
            return kv.containsKey(k) ? (long) (Double.parseDouble(kv.get(k)) * 1000) : dfltNanos;
        }

        @Override
        public boolean equals(final Object o) {
            return o instanceof Config c && Double.compare(drop, c.drop) == 0
                && Double.compare(duplicate, c.duplicate) == 0 && Double.compare(delay, c.delay) == 0
                && delayNanos == c.delayNanos && Double.compare(corrupt, c.corrupt) == 0
                && Double.compare(reorder, c.reorder) == 0 && reorderNanos == c.reorderNanos
                && reorderWithinQp == c.reorderWithinQp && seed == c.seed;
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hash(drop, duplicate, delay, delayNanos, corrupt, reorder, reorderNanos,
                reorderWithinQp, seed);
        }

        @Override
        public String toString() {
            return "Config[drop=" + drop + ", duplicate=" + duplicate + ", delay=" + delay + ", delayNanos="
                + delayNanos + ", corrupt=" + corrupt + ", reorder=" + reorder + ", reorderNanos=" + reorderNanos
                + ", reorderWithinQp=" + reorderWithinQp + ", seed=" + seed + "]";
        }
    }

    private static final long KEEP_ORDER_MARGIN_NS = 1_000_000;
    private final Config config;
    private final NanoClock clock;
    private final SplittableRandom random;
    private final Map<Long, Long> heldUntil = new HashMap<>();
    private long pendingDelay;
    private long dropped;
    private long duplicated;
    private long delayed;
    private long corrupted;
    private long reordered;

    /** Concludes {@code config} if it is not yet. */
    public FaultInjector(final Config config, final NanoClock clock) {
        this.config = config.conclude();
        this.clock = clock;
        this.random = new SplittableRandom(config.seed());
    }

    public Config config() {
        return config;
    }

    @Override
    public synchronized int onPacket(final int srcLid, final int dstLid, final MemorySegment buffer,
                                     final long offset, final int length) {
        final long now = clock.nanoTime();
        // BTH dest QP at offset 12 of the packet (after the 8-byte link header)
        final long path = ((long) dstLid << 32) | (length >= 16 ? buffer.get(U32, offset + 12) & 0xFFFFFF : 0);
        final double r = random.nextDouble();
        double edge = config.drop();
        if (r < edge) {
            dropped++;
            return DROP;
        }
        if (r < (edge += config.duplicate())) {
            duplicated++;
            return keepOrder(path, now, DUPLICATE);
        }
        if (r < (edge += config.corrupt())) {
            corrupted++;
            final long at = offset + random.nextInt(length);
            buffer.set(ValueLayout.JAVA_BYTE, at, (byte) (buffer.get(ValueLayout.JAVA_BYTE, at) ^ (1 << random.nextInt(8))));
            return keepOrder(path, now, DELIVER);
        }
        if (r < (edge += config.delay())) {
            delayed++;
            return hold(path, now, 1 + random.nextLong(Math.max(1, config.delayNanos())));
        }
        if (r < edge + config.reorder()) {
            reordered++;
            return hold(path, now, 1 + random.nextLong(Math.max(1, config.reorderNanos())));
        }
        return keepOrder(path, now, DELIVER);
    }

    private int hold(final long path, final long now, final long delay) {
        final Long until = heldUntil.get(path);
        final long release = Math.max(now + delay, until == null ? 0 : until);
        if (!config.reorderWithinQp()) {
            heldUntil.put(path, release);
        }
        pendingDelay = release - now;
        return DELAY;
    }

    /** A packet behind a held one of the same QP is held too (no overtaking within a QP's single path). */
    private int keepOrder(final long path, final long now, final int verdict) {
        if (config.reorderWithinQp()) {
            return verdict;
        }
        final Long until = heldUntil.get(path);
        if (until == null) {
            return verdict;
        }
        // a margin past the release time: the held packet leaves the hold queue only at the sender's next duty
        // cycle, and a packet sent before that must not overtake it
        if (now - until > KEEP_ORDER_MARGIN_NS) {
            heldUntil.remove(path);
            return verdict;
        }
        pendingDelay = Math.max(1, until - now);
        return DELAY;
    }

    @Override
    public synchronized long delayNanos() {
        return pendingDelay;
    }

    public synchronized String counters() {
        return "dropped=" + dropped + " duplicated=" + duplicated + " delayed=" + delayed + " corrupted="
            + corrupted + " reordered=" + reordered;
    }

    public synchronized long dropped() {
        return dropped;
    }

    public synchronized long duplicated() {
        return duplicated;
    }

    public synchronized long corrupted() {
        return corrupted;
    }

    public synchronized long reordered() {
        return reordered;
    }

    public synchronized long delayed() {
        return delayed;
    }
}
