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
     * @param drop            probability a packet is lost
     * @param duplicate       probability a packet arrives twice
     * @param delay           probability a packet is held up to {@code delayNanos}
     * @param corrupt         probability one byte of a packet is flipped
     * @param reorder         probability a packet is held up to {@code reorderNanos} so others pass it
     * @param reorderWithinQp whether packets of one QP may overtake each other (a multi-path QP)
     */
    public record Config(double drop, double duplicate, double delay, long delayNanos, double corrupt,
                         double reorder, long reorderNanos, boolean reorderWithinQp, long seed) {
        public Config {
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
        }

        public static final Config NONE = new Config(0, 0, 0, 0, 0, 0, 0, false, 1);

        /**
         * Parses "drop=0.1,dup=0.05,delay=0.01,delay-us=200,corrupt=0.01,reorder=0.05,reorder-us=20,
         * reorder-within-qp=true,seed=42"; absent keys are 0 (delay-us 100, reorder-us 10, seed 1).
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
            final Config c;
            try {
                c = new Config(d(kv, "drop"), d(kv, "dup"), d(kv, "delay"),
                    (long) (Double.parseDouble(kv.getOrDefault("delay-us", "100")) * 1000), d(kv, "corrupt"),
                    d(kv, "reorder"), (long) (Double.parseDouble(kv.getOrDefault("reorder-us", "10")) * 1000),
                    Boolean.parseBoolean(kv.getOrDefault("reorder-within-qp", "false")),
                    Long.parseLong(kv.getOrDefault("seed", "1")));
            } catch (final NumberFormatException e) {
                throw new IllegalArgumentException("fault spec '" + spec + "': " + e.getMessage(), e);
            }
            kv.keySet().removeAll(java.util.List.of("drop", "dup", "delay", "delay-us", "corrupt", "reorder",
                "reorder-us", "reorder-within-qp", "seed"));
            if (!kv.isEmpty()) {
                throw new IllegalArgumentException("unknown fault keys " + kv.keySet()
                    + " (drop, dup, delay, delay-us, corrupt, reorder, reorder-us, reorder-within-qp, seed)");
            }
            return c;
        }

        private static double d(final Map<String, String> kv, final String k) {
            return Double.parseDouble(kv.getOrDefault(k, "0"));
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

    public FaultInjector(final Config config, final NanoClock clock) {
        this.config = config;
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
