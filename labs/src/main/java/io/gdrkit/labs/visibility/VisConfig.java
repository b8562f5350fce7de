/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.visibility;

import io.gdrkit.gpu.sim.SimPreset;
import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.util.Locale;
import java.util.Objects;

/**
 * One configuration of the visibility matrix, the visibility lab's Context (Aeron's pattern): every value has a
 * default and is set by name; {@link #conclude()} validates the whole once, with a message that names the option, so
 * a bad combination is rejected before anything runs; a concluded config is frozen and is what the lab runs and
 * sends to its senders.
 *
 * <p>Values and defaults: {@code gpu} ({@code sim:<preset>} or {@code cuda:N}; sim:v100), {@code consumer}
 * (persistent), {@code flag} (receiver), {@code readback} (off), {@code wrSplit} WRITE WRs per round and sender, only
 * the last signaled (1, 16 or 256; 1), {@code size} bytes per round and sender (64 KiB), {@code rounds} (20),
 * {@code senders} each writing its own buffer (1..128; 1), {@code syncMemops} CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on
 * the receive buffers (false), {@code source} (host), {@code poll} (acquire), {@code seed} of the simulated GPU model
 * and the pattern (1), {@code inject} a negative control (none), {@code peerConsumer} the consumer runs on a
 * second GPU and reads the NIC-written GPU's memory through peer access, the case TO_ALL_DEVICES exists for (false),
 * {@code refill} the receiver refills the receive buffers with a synchronous copy before each round (false).
 */
public final class VisConfig {
    /** Largest size per sender the simulated GPU is given (its memory is host memory of this process). */
    public static final long MAX_SIM_BYTES = 2L << 30;

    /** What consumes the data on the GPU. */
    public enum Consumer { LAUNCH, PERSISTENT }

    /** What the receiver does after the notification and before the consumer may read. */
    public enum Readback {
        OFF,
        /** A 1-byte RDMA READ of the buffer on the receiver's loopback QP, waited for. */
        ON,
        /** cuFlushGPUDirectRDMAWrites(TO_OWNER). */
        FLUSH,
        /** cuFlushGPUDirectRDMAWrites(TO_ALL_DEVICES): also for consumers on other GPUs. */
        FLUSH_ALL;

        boolean isFlush() {
            return this == FLUSH || this == FLUSH_ALL;
        }
    }

    /** Who publishes the persistent consumer's flag. */
    public enum Flag {
        /** The receiver's CPU, after the sender's TCP notification and the readback (as NCCL's receive proxy). */
        RECEIVER,
        /** The sender: a flag WRITE after the data on the same QP (with ON: a READ, then a fenced flag WRITE). */
        SENDER_SAME_QP,
        /** The sender: the flag WRITE on a second QP (with ON: after the READ on the data QP has completed). */
        SENDER_OTHER_QP,
        /** The last data WR is a WRITE_WITH_IMM; the receiver's CPU publishes the flag on its receive completion. */
        IMM;

        boolean senderWritesFlag() {
            return this == SENDER_SAME_QP || this == SENDER_OTHER_QP;
        }
    }

    /** Where the sender's data comes from. */
    public enum Source { HOST, GPU }

    /** How the persistent kernel polls the flag (CUDA; the simulated GPU always uses acquire loads). */
    public enum Poll { ACQUIRE, VOLATILE, PLAIN }

    /** A negative control: what to break, in which round (sender 0). */
    public record Injection(Kind kind, int round) {
        public static final Injection NONE = new Injection(Kind.NONE, 0);

        public enum Kind {
            NONE,
            /** Sender 0 skips the data WRITEs of the round: must be reported stale, back to the sender. */
            SKIP_WRITE,
            /** Sender 0 uses a wrong rkey: an error completion, counted, and the configuration stops. */
            BAD_RKEY,
            /** The receiver launches the consumer with an invalid configuration: a launch failure, counted. */
            BAD_LAUNCH
        }

        /** {@code none}, {@code skip-write@R}, {@code bad-rkey@R} or {@code bad-launch@R}. */
        public static Injection parse(final String s) {
            final String t = s.trim().toLowerCase(Locale.ROOT);
            if (t.equals("none")) {
                return NONE;
            }
            final int at = t.indexOf('@');
            try {
                if (at > 0) {
                    final Kind k = Kind.valueOf(t.substring(0, at).replace('-', '_').toUpperCase(Locale.ROOT));
                    final int r = Integer.parseInt(t.substring(at + 1));
                    if (k != Kind.NONE && r >= 1) {
                        return new Injection(k, r);
                    }
                }
            } catch (final IllegalArgumentException e) {
                // falls through to the message below
            }
            throw new IllegalArgumentException("--inject must be none, skip-write@R, bad-rkey@R or bad-launch@R"
                + " with a round R >= 1, not '" + s + "'");
        }

        boolean at(final Kind k, final int r) {
            return kind == k && round == r;
        }

        @Override
        public String toString() {
            return kind == Kind.NONE ? "none" : low(kind) + "@" + round;
        }
    }

    private String gpu = "sim:v100";
    private Consumer consumer = Consumer.PERSISTENT;
    private Flag flag = Flag.RECEIVER;
    private Readback readback = Readback.OFF;
    private int wrSplit = 1;
    private long size = 64 * 1024;
    private int rounds = 20;
    private int senders = 1;
    private boolean syncMemops;
    private Source source = Source.HOST;
    private Poll poll = Poll.ACQUIRE;
    private long seed = 1;
    private Injection inject = Injection.NONE;
    private boolean peerConsumer;
    private boolean refill;
    private boolean concluded;

    /** A configuration with every default; set what differs by name, then {@link #conclude()}. */
    public VisConfig() {
    }

    /** {@code sim:<preset>} or {@code cuda:N} */
    public String gpu() {
        return gpu;
    }

    public VisConfig gpu(final String value) {
        open();
        gpu = Objects.requireNonNull(value, "gpu");
        return this;
    }

    /** What consumes the data on the GPU. */
    public Consumer consumer() {
        return consumer;
    }

    public VisConfig consumer(final Consumer value) {
        open();
        consumer = Objects.requireNonNull(value, "consumer");
        return this;
    }

    /** Who publishes the persistent consumer's flag. */
    public Flag flag() {
        return flag;
    }

    public VisConfig flag(final Flag value) {
        open();
        flag = Objects.requireNonNull(value, "flag");
        return this;
    }

    /** What the receiver does between the notification and the consumer. */
    public Readback readback() {
        return readback;
    }

    public VisConfig readback(final Readback value) {
        open();
        readback = Objects.requireNonNull(value, "readback");
        return this;
    }

    /** WRITE WRs per round and sender: 1, 16 or 256. */
    public int wrSplit() {
        return wrSplit;
    }

    public VisConfig wrSplit(final int value) {
        open();
        wrSplit = value;
        return this;
    }

    /** Bytes per round and sender, from the WR split to 2 GiB. */
    public long size() {
        return size;
    }

    public VisConfig size(final long value) {
        open();
        size = value;
        return this;
    }

    /** Rounds, 1..2^24-1. */
    public int rounds() {
        return rounds;
    }

    public VisConfig rounds(final int value) {
        open();
        rounds = value;
        return this;
    }

    /** Senders into the one receiver, 1..128. */
    public int senders() {
        return senders;
    }

    public VisConfig senders(final int value) {
        open();
        senders = value;
        return this;
    }

    /** CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on the receive buffers. */
    public boolean syncMemops() {
        return syncMemops;
    }

    public VisConfig syncMemops(final boolean value) {
        open();
        syncMemops = value;
        return this;
    }

    /** Where the senders' data comes from. */
    public Source source() {
        return source;
    }

    public VisConfig source(final Source value) {
        open();
        source = Objects.requireNonNull(value, "source");
        return this;
    }

    /** How the persistent kernel loads its flag (CUDA only). */
    public Poll poll() {
        return poll;
    }

    public VisConfig poll(final Poll value) {
        open();
        poll = Objects.requireNonNull(value, "poll");
        return this;
    }

    /** Seed of the simulated GPU model and of the pattern. */
    public long seed() {
        return seed;
    }

    public VisConfig seed(final long value) {
        open();
        seed = value;
        return this;
    }

    /** A negative control. */
    public Injection inject() {
        return inject;
    }

    public VisConfig inject(final Injection value) {
        open();
        inject = Objects.requireNonNull(value, "inject");
        return this;
    }

    /** The consumer reads through peer access from a second GPU. */
    public boolean peerConsumer() {
        return peerConsumer;
    }

    public VisConfig peerConsumer(final boolean value) {
        open();
        peerConsumer = value;
        return this;
    }

    /**
     * Before each round the receiver's CPU refills every receive buffer with the previous round's pattern by a
     * synchronous host-to-device copy, which the NIC then overwrites: without SYNC_MEMOPS the copy may land after
     * the NIC's writes, and the consumer sees the old round (stale).
     */
    public boolean refill() {
        return refill;
    }

    public VisConfig refill(final boolean value) {
        open();
        refill = value;
        return this;
    }

    /** Validates every value and their combinations, naming the option, and freezes the configuration. */
    public VisConfig conclude() {
        if (concluded) {
            throw new IllegalStateException("VisConfig already concluded");
        }
        if (gpu.startsWith("sim:")) {
            SimPreset.byLabel(gpu.substring(4)); // names the known presets when unknown
        } else if (!gpu.matches("cuda:\\d+")) {
            throw new IllegalArgumentException("a GPU spec is sim:<v100|h100|h200|all-devices> or cuda:N, not '"
                + gpu + "'");
        }
        if (wrSplit != 1 && wrSplit != 16 && wrSplit != 256) {
            throw new IllegalArgumentException("--wr-split must be 1, 16 or 256, not " + wrSplit);
        }
        if (size < wrSplit || size > MAX_SIM_BYTES) {
            throw new IllegalArgumentException("--size must be between the WR split (" + wrSplit + ") and 2 GiB, not "
                + size);
        }
        if (rounds < 1 || rounds > 0xFFFFFF) {
            throw new IllegalArgumentException("--rounds must be 1.." + 0xFFFFFF + ", not " + rounds);
        }
        if (senders < 1 || senders > 128) {
            throw new IllegalArgumentException("--senders must be 1..128, not " + senders);
        }
        if (consumer == Consumer.LAUNCH && flag.senderWritesFlag()) {
            throw new IllegalArgumentException("--consumer launch reads no flag: --flag " + low(flag)
                + " needs --consumer persistent");
        }
        if (flag.senderWritesFlag() && readback.isFlush()) {
            throw new IllegalArgumentException("--readback flush is the receiver's API, and with --flag " + low(flag)
                + " the receiver's CPU is not between the data and the flag: use off or on");
        }
        if (inject.kind() != Injection.Kind.NONE && inject.round() > rounds) {
            throw new IllegalArgumentException("--inject " + inject + ": round " + inject.round() + " is beyond --rounds "
                + rounds);
        }
        if (inject.kind() == Injection.Kind.BAD_LAUNCH && consumer == Consumer.PERSISTENT && inject.round() != 1) {
            throw new IllegalArgumentException("--inject " + inject + ": the persistent consumer is launched once,"
                + " before round 1: use bad-launch@1");
        }
        if (peerConsumer && source == Source.GPU && gpu.startsWith("cuda:")) {
            throw new IllegalArgumentException("--consumer-gpu peer with --source gpu needs three GPUs' worth of roles"
                + " on two: use --source host");
        }
        if (poll != Poll.ACQUIRE && consumer == Consumer.LAUNCH) {
            throw new IllegalArgumentException("--poll " + low(poll) + " is how the persistent consumer loads its flag;"
                + " a launched consumer polls nothing");
        }
        if (poll != Poll.ACQUIRE && gpu.startsWith("sim:")) {
            throw new IllegalArgumentException("--poll " + low(poll) + " is a CUDA experiment (how the compiled kernel"
                + " loads the flag); the simulated GPU's consumer always uses acquire loads");
        }
        concluded = true;
        return this;
    }

    /** Whether {@link #conclude()} validated and froze this configuration. */
    public boolean isConcluded() {
        return concluded;
    }

    private void open() {
        if (concluded) {
            throw new IllegalStateException("VisConfig already concluded: it is frozen");
        }
    }

    public boolean simulated() {
        return gpu.startsWith("sim:");
    }

    /**
     * The pattern seed of every sender's buffer. One seed for all senders: the persistent kernel takes one; a write
     * into the wrong sender's buffer is still caught by the round, which every byte depends on.
     */
    int patternSeed() {
        return (int) (seed * 0x9E3779B1L);
    }

    static String low(final Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    void write(final DataOutput out) throws IOException {
        out.writeUTF(gpu);
        out.writeByte(consumer.ordinal());
        out.writeByte(flag.ordinal());
        out.writeByte(readback.ordinal());
        out.writeInt(wrSplit);
        out.writeLong(size);
        out.writeInt(rounds);
        out.writeInt(senders);
        out.writeBoolean(syncMemops);
        out.writeByte(source.ordinal());
        out.writeByte(poll.ordinal());
        out.writeLong(seed);
        out.writeByte(inject.kind().ordinal());
        out.writeInt(inject.round());
        out.writeBoolean(peerConsumer);
        out.writeBoolean(refill);
    }

    /** Reads what {@link #write} wrote, from a peer: every value is checked as if set by hand. */
    static VisConfig read(final DataInput in) throws IOException {
        try {
            return new VisConfig().gpu(in.readUTF()).consumer(at(Consumer.values(), in.readByte(), "consumer"))
                .flag(at(Flag.values(), in.readByte(), "flag")).readback(at(Readback.values(), in.readByte(), "readback"))
                .wrSplit(in.readInt()).size(in.readLong()).rounds(in.readInt()).senders(in.readInt())
                .syncMemops(in.readBoolean()).source(at(Source.values(), in.readByte(), "source"))
                .poll(at(Poll.values(), in.readByte(), "poll")).seed(in.readLong())
                .inject(new Injection(at(Injection.Kind.values(), in.readByte(), "inject"), in.readInt()))
                .peerConsumer(in.readBoolean()).refill(in.readBoolean()).conclude();
        } catch (final IllegalArgumentException e) {
            throw new IOException("bad configuration from the receiver: " + e.getMessage(), e);
        }
    }

    private static <E extends Enum<E>> E at(final E[] values, final int ordinal, final String what) {
        if (ordinal < 0 || ordinal >= values.length) {
            throw new IllegalArgumentException(what + " ordinal " + ordinal + " is not one of 0.." + (values.length - 1));
        }
        return values[ordinal];
    }

    @Override
    public boolean equals(final Object o) {
        return o instanceof VisConfig c && gpu.equals(c.gpu) && consumer == c.consumer && flag == c.flag
            && readback == c.readback && wrSplit == c.wrSplit && size == c.size && rounds == c.rounds
            && senders == c.senders && syncMemops == c.syncMemops && source == c.source && poll == c.poll
            && seed == c.seed && inject.equals(c.inject) && peerConsumer == c.peerConsumer && refill == c.refill;
    }

    @Override
    public int hashCode() {
        return Objects.hash(gpu, consumer, flag, readback, wrSplit, size, rounds, senders, syncMemops, source, poll,
            seed, inject, peerConsumer, refill);
    }

    @Override
    public String toString() {
        return "VisConfig[gpu=" + gpu + ", consumer=" + consumer + ", flag=" + flag + ", readback=" + readback
            + ", wrSplit=" + wrSplit + ", size=" + size + ", rounds=" + rounds + ", senders=" + senders
            + ", syncMemops=" + syncMemops + ", source=" + source + ", poll=" + poll + ", seed=" + seed
            + ", inject=" + inject + ", peerConsumer=" + peerConsumer + ", refill=" + refill + "]";
    }
}
