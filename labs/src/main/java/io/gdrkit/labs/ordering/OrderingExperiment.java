/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.ordering;

import io.gdrkit.core.agent.Agent;
import io.gdrkit.core.agent.DeterministicRunner;
import io.gdrkit.core.agent.ManualClock;
import io.gdrkit.softnic.fabric.FaultInjector;
import io.gdrkit.gpu.Pattern;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The put-then-flag ordering lab, measured on two software NICs (simulated) on an in-JVM fabric whose links
 * reorder packets between QPs the way adaptive routing does ({@link FaultInjector}). Per trial the sender RDMA-WRITEs
 * a trial- and position-dependent pattern ({@link Pattern}) into the receiver's host memory and then publishes the
 * trial number (a flag WRITE, or the immediate of a WRITE_WITH_IMM); the receiver, on seeing it, reads the data and
 * counts a corrupted read when any byte is not this trial's.
 *
 * <p>Everything runs on one {@link DeterministicRunner} on virtual time: the NICs' engines and the sender's CPU are
 * agents stepped in a seeded order, so the counts replay exactly from the seed. The receiver's CPU polls its flag
 * word (an acquire load) or its receive CQ after <em>every</em> step of every agent: a flag that lands before the
 * data is seen before the data lands, as by a core that spins on the flag. Nothing here predicts the outcome; the
 * counts are what the consumer read.
 */
public final class OrderingExperiment {
    /** How the sender publishes "the data is there", and what (if anything) orders that after the data. */
    public enum Variant {
        TWO_QP("two-qp", false, "data WRITE on QP A, flag WRITE on QP B",
            "nothing orders two QPs: a data packet held on the fabric, or the sending NIC taking turns between "
                + "QPs every 32 packets, lets QP B's flag pass the data"),
        ONE_QP("one-qp", true, "data WRITE and flag WRITE on one QP",
            "RC executes a QP's requests in PSN order and this NIC places the bytes in that order; placement order "
                + "between WRITEs is a NIC property, not a verbs promise: out-of-order placement under adaptive "
                + "routing breaks it"),
        IMM("imm", true, "data as WRITE_WITH_IMM, the receiver polls its receive CQ for the immediate",
            "a receive completion is generated only after the whole message is placed"),
        FENCE("fence", true, "data WRITE, flag WRITE with IBV_SEND_FENCE, one QP",
            "FENCE waits only for earlier RDMA READ/ATOMIC and there is none: the order is one-qp's, not the fence's"),
        FENCE_TWO_QP("fence-two-qp", false, "data WRITE on QP A, flag WRITE with IBV_SEND_FENCE on QP B",
            "a fence orders WRs of its own QP only: QP B has no READ/ATOMIC to wait for, so the flag is as free "
                + "as in two-qp"),
        READ_FENCE("read-fence", true, "data WRITE, 1-byte RDMA READ of the data, fenced flag WRITE, one QP",
            "the flag is not sent before the READ's response is back, which the responder sends only after "
                + "executing the earlier WRITE; NCCL's flush pattern"),
        COMPLETION("completion", true, "data WRITE on QP A; the sender waits for its completion, then flag WRITE on "
            + "QP B",
            "the flag is posted only after the data WRITE was acknowledged, i.e. executed by the responder");

        private final String label;
        private final boolean ordered;
        private final String how;
        private final String why;

        Variant(final String label, final boolean ordered, final String how, final String why) {
            this.label = label;
            this.ordered = ordered;
            this.how = how;
            this.why = why;
        }

        public String label() {
            return label;
        }

        /** Whether the protocol orders the flag after the data on this NIC; {@link #why()} says what does. */
        public boolean ordered() {
            return ordered;
        }

        public String how() {
            return how;
        }

        public String why() {
            return why;
        }

        /** Parses a label such as {@code two-qp}; the message of a bad one lists the valid labels. */
        public static Variant parse(final String s) {
            for (final Variant v : values()) {
                if (v.label.equals(s.trim().toLowerCase(Locale.ROOT))) {
                    return v;
                }
            }
            throw new IllegalArgumentException("--variants: unknown variant '" + s + "' (valid: " + labels() + ")");
        }

        public static String labels() {
            return Arrays.stream(values()).map(Variant::label).collect(Collectors.joining(", "));
        }
    }

    /** Largest data buffer: the link rings and the fabric's hold queue carry a whole trial comfortably. */
    public static final int MAX_SIZE = 1 << 20;

    /**
     * One variant's run, the ordering lab's Context (Aeron's pattern): the variant, then every other value by name
     * with the defaults below; {@link #conclude()} validates once, naming the option, and freezes it.
     */
    public static final class Config {
        /** Default trials per variant. */
        public static final int DEFAULT_TRIALS = 2000;
        /** Default data bytes per trial. */
        public static final int DEFAULT_SIZE = 16384;
        /** Default probability that a packet is held so packets of other QPs pass it. */
        public static final double DEFAULT_REORDER = 0.05;
        /** Default longest hold of a reordered packet, microseconds of virtual time. */
        public static final double DEFAULT_REORDER_MICROS = 10;
        /** Default seed. */
        public static final long DEFAULT_SEED = 1;

        private final Variant variant;
        private int trials = DEFAULT_TRIALS;
        private int size = DEFAULT_SIZE;
        private double reorder = DEFAULT_REORDER;
        private double reorderMicros = DEFAULT_REORDER_MICROS;
        private boolean reorderWithinQp;
        private long seed = DEFAULT_SEED;
        private boolean concluded;

        /** A run of {@code variant} with every default. */
        public Config(final Variant variant) {
            if (variant == null) {
                throw new IllegalArgumentException("--variants: no variant given");
            }
            this.variant = variant;
        }

        public Variant variant() {
            return variant;
        }

        /** Trials, at least 1. */
        public int trials() {
            return trials;
        }

        public Config trials(final int n) {
            open();
            trials = n;
            return this;
        }

        /** Data bytes per trial, 1..{@link #MAX_SIZE}. */
        public int size() {
            return size;
        }

        public Config size(final int bytes) {
            open();
            size = bytes;
            return this;
        }

        /** Probability that a packet is held so later packets of other QPs pass it, 0..1. */
        public double reorder() {
            return reorder;
        }

        public Config reorder(final double p) {
            open();
            reorder = p;
            return this;
        }

        /** How long at most a reordered packet is held, microseconds of virtual time, 0..1000. */
        public double reorderMicros() {
            return reorderMicros;
        }

        public Config reorderMicros(final double micros) {
            open();
            reorderMicros = micros;
            return this;
        }

        /** Whether packets of one QP may pass each other too (a multi-path QP). */
        public boolean reorderWithinQp() {
            return reorderWithinQp;
        }

        public Config reorderWithinQp(final boolean on) {
            open();
            reorderWithinQp = on;
            return this;
        }

        /** Seed of the fabric's reordering, the agents' interleaving and the pattern. */
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

        /** Validates every value, naming its option, and freezes the configuration. */
        public Config conclude() {
            open();
            if (trials < 1) {
                throw new IllegalArgumentException("--trials must be at least 1, not " + trials);
            }
            if (size < 1 || size > MAX_SIZE) {
                throw new IllegalArgumentException("--size must be between 1 and " + MAX_SIZE + " bytes, not " + size);
            }
            if (!(reorder >= 0 && reorder <= 1)) {
                throw new IllegalArgumentException("--reorder must be a probability within 0..1, not " + reorder);
            }
            if (!(reorderMicros >= 0 && reorderMicros <= 1000)) {
                throw new IllegalArgumentException("--reorder-us must be within 0..1000, not " + reorderMicros);
            }
            concluded = true;
            return this;
        }

        private void open() {
            if (concluded) {
                throw new IllegalStateException("ordering Config already concluded: it is frozen");
            }
        }

        @Override
        public boolean equals(final Object o) {
            return o instanceof Config c && variant == c.variant && trials == c.trials && size == c.size
                && Double.compare(reorder, c.reorder) == 0 && Double.compare(reorderMicros, c.reorderMicros) == 0
                && reorderWithinQp == c.reorderWithinQp && seed == c.seed;
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hash(variant, trials, size, reorder, reorderMicros, reorderWithinQp, seed);
        }

        @Override
        public String toString() {
            return "Config[variant=" + variant + ", trials=" + trials + ", size=" + size + ", reorder=" + reorder
                + ", reorderMicros=" + reorderMicros + ", reorderWithinQp=" + reorderWithinQp + ", seed=" + seed + "]";
        }
    }

    /** What the measured counts say, given whether the variant orders the flag after the data. */
    public enum Verdict {
        /** Ordered variant, no corrupted read. */
        PASS,
        /** Ordered variant, yet a corrupted read: the NIC broke an ordering it should keep. */
        FAIL,
        /** Unordered variant, corrupted reads seen (what it is there to show). */
        CORRUPTED,
        /** Unordered variant, no corrupted read in this run; the protocol is still unordered. */
        NOT_OBSERVED
    }

    /**
     * One variant's measured counts. {@code firstCorruptedTrial} and {@code firstBadOffset} are -1 when no read was
     * corrupted. Stale: no byte of the trial had landed; partial: some had; other: bytes of neither this trial nor
     * the one before (never expected).
     */
    public record Result(Config config, int corruptedReads, int firstCorruptedTrial, long firstBadOffset,
                         int staleReads, int partialReads, int otherReads, long reorderedPackets, long runnerSteps,
                         Verdict verdict) {
    }

    private static final VarHandle FLAG = ValueLayout.JAVA_LONG.varHandle();
    private static final long MAX_ROUNDS_PER_TRIAL = 2_000_000;
    private static final long TICK_NS = 100;
    private static final long IDLE_JUMP_NS = 1_000;
    private static final long TRIAL_GAP_NS = 2_000_000;
    private static final int DATA = 1;
    private static final int READ = 2;
    private static final int FLAG_WR = 3;

    private OrderingExperiment() {
    }

    /**
     * Runs one variant on its own pair of software NICs (a fresh fabric, clock and runner, all seeded); concludes
     * {@code c} if it is not yet.
     */
    public static Result run(final Config c) {
        if (!c.isConcluded()) {
            c.conclude();
        }
        final ManualClock clock = new ManualClock(0);
        final FaultInjector faults = new FaultInjector(new FaultInjector.Config().reorder(c.reorder())
            .reorderNanos(Math.round(c.reorderMicros() * 1000)).reorderWithinQp(c.reorderWithinQp())
            .seed(c.seed() ^ 0x5DEECE66DL), clock);
        // the NIC's tunables are set here, not taken from system properties, so that a seed replays anywhere
        final SoftNicContext ctx = new SoftNicContext().progressMode(SoftNicContext.ProgressMode.DETERMINISTIC)
            .clock(clock).linkHook(faults).linkCapacity(4 << 20).burst(32).window(512).ackReqInterval(64);
        final int flagOff = (c.size() + 63) & ~63;
        final int readOff = flagOff + 64;
        try (SoftNicDriver driver = SoftNicDriver.launch(ctx); Arena arena = Arena.ofConfined()) {
            final SoftDevice sDev = driver.addDevice("soft-put");
            final SoftDevice rDev = driver.addDevice("soft-flag");
            final VerbsContext sCtx = sDev.open();
            final VerbsContext rCtx = rDev.open();
            try {
                final ProtectionDomain sPd = sCtx.allocPd();
                final ProtectionDomain rPd = rCtx.allocPd();
                final MemorySegment src = arena.allocate(readOff + 64, 4096);
                final MemorySegment dst = arena.allocate(readOff, 4096);
                final MemoryRegion srcMr = sPd.registerMr(src, AccessFlags.LOCAL_WRITE);
                final MemoryRegion dstMr = rPd.registerMr(dst, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
                final CompletionQueue sCq = sCtx.createCq(64);
                final CompletionQueue rCq = rCtx.createCq(64);
                final QpInitAttr init = new QpInitAttr().cqs(sCq, sCq);
                init.cap.maxSendWr(8).maxRecvWr(8).maxInlineData(0);
                final QueuePair qpA = sPd.createQp(init);
                final QueuePair qpB = sPd.createQp(init);
                final QpInitAttr rInit = new QpInitAttr().cqs(rCq, rCq);
                rInit.cap.maxSendWr(8).maxRecvWr(8).maxInlineData(0);
                final QueuePair rA = rPd.createQp(rInit);
                final QueuePair rB = rPd.createQp(rInit);
                QpBringUp.connect(qpA, sDev.lid(), 1000, rA, rDev.lid(), 2000, QpBringUp.rcDefaults());
                QpBringUp.connect(qpB, sDev.lid(), 3000, rB, rDev.lid(), 4000, QpBringUp.rcDefaults());

                final int patternSeed = (int) (c.seed() * 0x9E3779B1L);
                Pattern.fill(dst, 0, c.size(), 0, 0, patternSeed); // the buffer holds "trial 0" before trial 1
                final Sender sender = new Sender(c, src, srcMr, dstMr, sCq, qpA, qpB, flagOff, readOff, patternSeed);
                final Consumer consumer = new Consumer(c, dst, rCq, rA, flagOff, patternSeed, arena);
                final DeterministicRunner runner = new DeterministicRunner(c.seed(), clock, TICK_NS, IDLE_JUMP_NS);
                for (final Agent a : driver.agents()) {
                    runner.add(observed(a, consumer));
                }
                runner.add(observed(sender, consumer));
                for (int t = 1; t <= c.trials(); t++) {
                    consumer.expect(t);
                    sender.start(t);
                    final int trial = t;
                    runner.runUntil(() -> consumer.consumed == trial && sender.pending == 0, MAX_ROUNDS_PER_TRIAL,
                        "trial " + t + " of " + c.variant().label());
                    // trials are independent: the injector keeps a path's later packets behind a held one until
                    // 1 ms past its release, which would queue the next trial's flag behind this trial's holds
                    clock.advance(TRIAL_GAP_NS);
                }
                final boolean corrupted = consumer.corrupted > 0;
                final Verdict verdict = c.variant().ordered() ? (corrupted ? Verdict.FAIL : Verdict.PASS)
                    : (corrupted ? Verdict.CORRUPTED : Verdict.NOT_OBSERVED);
                return new Result(c, consumer.corrupted, consumer.firstTrial, consumer.firstOffset, consumer.stale,
                    consumer.partial, consumer.other, faults.reordered(), runner.steps(), verdict);
            } finally {
                rCtx.close();
                sCtx.close();
            }
        }
    }

    /** The agent, followed by one poll of the consumer: the receiver's CPU sees memory between any two steps. */
    private static Agent observed(final Agent agent, final Consumer consumer) {
        return new Agent() {
            @Override
            public int doWork() {
                final int work = agent.doWork();
                consumer.poll();
                return work;
            }

            @Override
            public String roleName() {
                return agent.roleName();
            }
        };
    }

    /** The sender's CPU: posts a trial's WRs, and reaps (and checks) their completions as an agent. */
    private static final class Sender implements Agent {
        private final Config c;
        private final MemorySegment src;
        private final MemoryRegion srcMr;
        private final MemoryRegion dstMr;
        private final CompletionQueue cq;
        private final QueuePair qpA;
        private final QueuePair qpB;
        private final int flagOff;
        private final int readOff;
        private final int patternSeed;
        private final SendWorkRequest wr = new SendWorkRequest();
        private final WorkCompletion[] wc = {new WorkCompletion(), new WorkCompletion(), new WorkCompletion()};
        private int trial;
        /** Completions of this trial not reaped yet; the trial is over for the sender at 0. */
        int pending;

        Sender(final Config c, final MemorySegment src, final MemoryRegion srcMr, final MemoryRegion dstMr,
               final CompletionQueue cq, final QueuePair qpA, final QueuePair qpB, final int flagOff,
               final int readOff, final int patternSeed) {
            this.c = c;
            this.src = src;
            this.srcMr = srcMr;
            this.dstMr = dstMr;
            this.cq = cq;
            this.qpA = qpA;
            this.qpB = qpB;
            this.flagOff = flagOff;
            this.readOff = readOff;
            this.patternSeed = patternSeed;
        }

        /** The put, then the flag. The source is rewritten only here, after the last trial's WRs completed. */
        void start(final int t) {
            trial = t;
            Pattern.fill(src, 0, c.size(), 0, t, patternSeed);
            src.set(ValueLayout.JAVA_LONG, flagOff, t);
            final int dataOp = c.variant() == Variant.IMM ? WrOpcode.RDMA_WRITE_WITH_IMM : WrOpcode.RDMA_WRITE;
            qpA.postSend(wr.clear().opcode(dataOp).wrId(id(DATA)).flags(SendFlags.SIGNALED)
                .imm(dataOp == WrOpcode.RDMA_WRITE_WITH_IMM ? t : 0).sge(srcMr, 0, c.size())
                .remote(dstMr.address(), dstMr.rkey()));
            pending = 1;
            switch (c.variant()) {
                case TWO_QP -> postFlag(qpB, 0);
                case ONE_QP -> postFlag(qpA, 0);
                case FENCE -> postFlag(qpA, SendFlags.FENCE);
                case FENCE_TWO_QP -> postFlag(qpB, SendFlags.FENCE);
                case READ_FENCE -> {
                    // the last byte of the data, read back on the same QP; the fence holds the flag behind it
                    qpA.postSend(wr.clear().opcode(WrOpcode.RDMA_READ).wrId(id(READ)).flags(SendFlags.SIGNALED)
                        .sge(srcMr, readOff, 1).remote(dstMr.address() + c.size() - 1, dstMr.rkey()));
                    pending++;
                    postFlag(qpA, SendFlags.FENCE);
                }
                case IMM, COMPLETION -> {
                    // IMM: the immediate is the flag; COMPLETION: the flag waits for the data's completion
                }
            }
        }

        private long id(final int kind) {
            return ((long) trial << 4) | kind;
        }

        private void postFlag(final QueuePair qp, final int flags) {
            qp.postSend(wr.clear().opcode(WrOpcode.RDMA_WRITE).wrId(id(FLAG_WR)).flags(SendFlags.SIGNALED | flags)
                .sge(srcMr, flagOff, 8).remote(dstMr.address() + flagOff, dstMr.rkey()));
            pending++;
        }

        @Override
        public int doWork() {
            final int n = cq.poll(wc);
            for (int i = 0; i < n; i++) {
                final WorkCompletion w = wc[i];
                final int kind = (int) (w.wrId & 15);
                final int expectOp = kind == READ ? WcOpcode.RDMA_READ : WcOpcode.RDMA_WRITE;
                if (w.status != WcStatus.SUCCESS || w.opcode != expectOp || (w.wrId >>> 4) != trial) {
                    throw new IllegalStateException(c.variant().label() + " trial " + trial + ": unexpected "
                        + "completion " + w + " (expected SUCCESS, " + WcOpcode.name(expectOp) + ", this trial)");
                }
                pending--;
                if (kind == DATA && c.variant() == Variant.COMPLETION) {
                    postFlag(qpB, 0);
                }
            }
            return n;
        }

        @Override
        public String roleName() {
            return "sender-cpu";
        }
    }

    /** The receiver's CPU: waits for the flag (or the immediate), then reads and checks every byte. */
    private static final class Consumer {
        private final Config c;
        private final MemorySegment data;
        private final MemorySegment dst;
        private final MemorySegment expected;
        private final CompletionQueue cq;
        private final QueuePair qp;
        private final int flagOff;
        private final int patternSeed;
        private final WorkCompletion[] wc = {new WorkCompletion()};
        private final RecvWorkRequest recv = new RecvWorkRequest();
        private int trial;
        int consumed;
        int corrupted;
        int firstTrial = -1;
        long firstOffset = -1;
        int stale;
        int partial;
        int other;

        Consumer(final Config c, final MemorySegment dst, final CompletionQueue cq, final QueuePair qp,
                 final int flagOff, final int patternSeed, final Arena arena) {
            this.c = c;
            this.dst = dst;
            this.data = dst.asSlice(0, c.size());
            this.expected = arena.allocate(c.size());
            this.cq = cq;
            this.qp = qp;
            this.flagOff = flagOff;
            this.patternSeed = patternSeed;
        }

        /** Arms trial {@code t}: the pattern to compare with and, for IMM, the receive the immediate consumes. */
        void expect(final int t) {
            trial = t;
            Pattern.fill(expected, 0, c.size(), 0, t, patternSeed);
            if (c.variant() == Variant.IMM) {
                qp.postRecv(recv.wrId(t));
            }
        }

        void poll() {
            if (consumed == trial) {
                return;
            }
            if (c.variant() == Variant.IMM) {
                if (cq.poll(wc) == 0) {
                    return;
                }
                final WorkCompletion w = wc[0];
                if (w.status != WcStatus.SUCCESS || w.opcode != WcOpcode.RECV_RDMA_WITH_IMM || !w.hasImm()
                    || w.immData != trial) {
                    throw new IllegalStateException("imm trial " + trial + ": unexpected receive completion " + w);
                }
            } else if ((long) FLAG.getAcquire(dst, (long) flagOff) != trial) {
                // acquire: the data reads below cannot be hoisted above the flag read
                return;
            }
            consumed = trial;
            final long bad = data.mismatch(expected);
            if (bad < 0) {
                return;
            }
            corrupted++;
            if (firstTrial < 0) {
                firstTrial = trial;
                firstOffset = bad;
            }
            classify();
        }

        /** Stale: every byte still the previous trial's; partial: some of this trial's, the rest the previous. */
        private void classify() {
            long current = 0;
            long previous = 0;
            for (long i = 0; i < c.size(); i++) {
                final byte b = data.get(ValueLayout.JAVA_BYTE, i);
                if (b == expected.get(ValueLayout.JAVA_BYTE, i)) {
                    current++;
                } else if (b == Pattern.at(i, trial - 1, patternSeed)) {
                    previous++;
                }
            }
            if (previous == c.size()) {
                stale++;
            } else if (current + previous == c.size()) {
                partial++;
            } else {
                other++;
            }
        }
    }
}
