/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.visibility;

import io.gdrkit.gpu.sim.SimPreset;
import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.util.Locale;

/**
 * One configuration of the visibility matrix. Validated on construction, so a bad combination is rejected before
 * anything runs, with a message that names the option.
 *
 * @param gpu            {@code sim:<preset>} or {@code cuda:N}
 * @param wrSplit        WRITE WRs per round and sender (1, 16 or 256); only the last is signaled
 * @param size           bytes per round and sender
 * @param senders        senders writing into the receiver, each into its own buffer (1..128)
 * @param syncMemops     CU_POINTER_ATTRIBUTE_SYNC_MEMOPS set on the receive buffers
 * @param seed           seed of the simulated GPU model and of the pattern
 * @param inject         negative controls (D4), {@link Injection#NONE} for none
 * @param peerConsumer   the consumer runs on a second GPU and reads the NIC-written GPU's memory through peer
 *                       access (the case the TO_ALL_DEVICES flush scope exists for)
 */
public record VisConfig(String gpu, Consumer consumer, Flag flag, Readback readback, int wrSplit, long size,
                        int rounds, int senders, boolean syncMemops, Source source, Poll poll, long seed,
                        Injection inject, boolean peerConsumer) {
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

    public VisConfig {
        if (gpu.startsWith("sim:")) {
            SimPreset.byLabel(gpu.substring(4)); // names the known presets when unknown
        } else if (!gpu.matches("cuda:\\d+")) {
            throw new IllegalArgumentException("--gpu must be sim:<v100|h100|h200|all-devices> or cuda:N, not '"
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
    }

    static VisConfig read(final DataInput in) throws IOException {
        return new VisConfig(in.readUTF(), Consumer.values()[in.readByte()], Flag.values()[in.readByte()],
            Readback.values()[in.readByte()], in.readInt(), in.readLong(), in.readInt(), in.readInt(),
            in.readBoolean(), Source.values()[in.readByte()], Poll.values()[in.readByte()], in.readLong(),
            new Injection(Injection.Kind.values()[in.readByte()], in.readInt()), in.readBoolean());
    }
}
