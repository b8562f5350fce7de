/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.verbs.Mtu;
import java.util.Objects;

/**
 * The perf engine's Context (Aeron's pattern): the settings of one perf run, for one message size at a time, set by
 * name; what is not set has perftest's default for the test; {@link #conclude()} validates the whole once and
 * freezes it. Problems are named as perftest's options ({@code -q/--qp}), the vocabulary of the engine and of the
 * {@code perf} command that feeds it.
 */
public final class PerfConfig {
    /** Default registered buffer per side: 8 MiB. */
    public static final long DEFAULT_BUFFER = 1L << 23;
    /** Default QPs (-q). */
    public static final int DEFAULT_QPS = 1;
    /** Default outstanding sends per QP (-t). */
    public static final int DEFAULT_TX_DEPTH = 128;
    /** Default receives posted per QP (-r). */
    public static final int DEFAULT_RX_DEPTH = 512;
    /** Default completion moderation (-Q). */
    public static final int DEFAULT_CQ_MOD = 64;
    /** Default path MTU. */
    public static final int DEFAULT_MTU = 4096;

    private final PerfKind test;
    private Integer size;
    private Long iters;
    private long warmup;
    private long warmupMs;
    private int numQps = DEFAULT_QPS;
    private int txDepth = DEFAULT_TX_DEPTH;
    private int rxDepth = DEFAULT_RX_DEPTH;
    private int cqMod = DEFAULT_CQ_MOD;
    private int mtu = DEFAULT_MTU;
    private Integer inlineSize;
    private Double durationSeconds;
    private long bufferBytes = DEFAULT_BUFFER;
    private SoftNicContext.ProgressMode progress = SoftNicContext.ProgressMode.INVOKER;
    private boolean events;
    private boolean bidirectional;
    private boolean check;
    private boolean concluded;

    /** A configuration of {@code test} with every default. */
    public PerfConfig(final PerfKind test) {
        this.test = Objects.requireNonNull(test, "test");
    }

    private PerfConfig(final PerfConfig from) {
        test = from.test;
        size = from.size;
        iters = from.iters;
        warmup = from.warmup;
        warmupMs = from.warmupMs;
        numQps = from.numQps;
        txDepth = from.txDepth;
        rxDepth = from.rxDepth;
        cqMod = from.cqMod;
        mtu = from.mtu;
        inlineSize = from.inlineSize;
        durationSeconds = from.durationSeconds;
        bufferBytes = from.bufferBytes;
        progress = from.progress;
        events = from.events;
        bidirectional = from.bidirectional;
        check = from.check;
    }

    /** The same configuration, concluded, for another message size and warm-up. */
    public PerfConfig withSize(final int newSize, final long newWarmup) {
        return new PerfConfig(this).size(newSize).warmup(newWarmup).conclude();
    }

    /** Message size in bytes (-s): default 65536 for bandwidth, 2 for latency, always 8 for atomics. */
    public PerfConfig size(final int bytes) {
        open();
        size = bytes;
        return this;
    }

    /** Measured iterations (-n): default 5000 for bandwidth, 1000 for latency; ignored when timed. */
    public PerfConfig iters(final long n) {
        open();
        iters = n;
        return this;
    }

    /**
     * Time-based warm-up (default 0: off): rounds of {@link #warmup()} iterations (at least 1000) are repeated,
     * unreported, until this many milliseconds have passed, so the JIT has compiled the loop before measuring.
     */
    public PerfConfig warmupMs(final long ms) {
        open();
        warmupMs = ms;
        return this;
    }

    public long warmupMs() {
        concluded();
        return warmupMs;
    }

    /** Unreported iterations before measuring (default 0). */
    public PerfConfig warmup(final long n) {
        open();
        warmup = n;
        return this;
    }

    /** QPs (-q), 1..1024; latency tests use one (default 1). */
    public PerfConfig numQps(final int qps) {
        open();
        numQps = qps;
        return this;
    }

    /** Outstanding sends per QP (-t), 1..16384 (default 128). */
    public PerfConfig txDepth(final int depth) {
        open();
        txDepth = depth;
        return this;
    }

    /** Receives posted per QP (-r), 1..16384 (default 512). */
    public PerfConfig rxDepth(final int depth) {
        open();
        rxDepth = depth;
        return this;
    }

    /** Signal every N-th send (-Q), at least 1 (default 64; the engine uses at most tx-depth). */
    public PerfConfig cqMod(final int mod) {
        open();
        cqMod = mod;
        return this;
    }

    /** Path MTU 256..4096, or a software MTU up to {@link Mtu#MAX_SOFTWARE_BYTES} (default 4096). */
    public PerfConfig mtu(final int bytes) {
        open();
        mtu = bytes;
        return this;
    }

    /** Max inline bytes (-I), 0..4096: default 0 for bandwidth, 220 for latency. */
    public PerfConfig inlineSize(final int bytes) {
        open();
        inlineSize = bytes;
        return this;
    }

    /** Run each size this many seconds instead of counting iterations (-D), (0, 3600]; default: not timed. */
    public PerfConfig durationSeconds(final double seconds) {
        open();
        durationSeconds = seconds;
        return this;
    }

    /** Registered buffer per side, 64 B..1 GiB (default {@link #DEFAULT_BUFFER}). */
    public PerfConfig bufferBytes(final long bytes) {
        open();
        bufferBytes = bytes;
        return this;
    }

    /** Who moves the in-JVM NIC pair (default invoker). */
    public PerfConfig progress(final SoftNicContext.ProgressMode mode) {
        open();
        progress = Objects.requireNonNull(mode, "progress");
        return this;
    }

    /**
     * send_lat waits for receive completions with completion events (reqNotifyCq, getCqEvent, ackCqEvents) instead
     * of polling, as perftest's {@code -e} (default false).
     */
    public PerfConfig events(final boolean on) {
        open();
        events = on;
        return this;
    }

    /**
     * Both sides post at once (perftest's {@code -b}): A writes/reads/sends to B in the lower half of the buffers
     * and B to A in the upper half (default false). write_bw, read_bw and send_bw only.
     */
    /**
     * --check across processes: the data is validated after the run, the server checking what the client wrote
     * (write_bw, send_bw) and the client what it read (read_bw). The in-JVM fabric checks in the CLI instead.
     */
    public PerfConfig check(final boolean on) {
        open();
        check = on;
        return this;
    }

    public boolean check() {
        concluded();
        return check;
    }

    public PerfConfig bidirectional(final boolean on) {
        open();
        bidirectional = on;
        return this;
    }

    /** Validates every setting and their combinations, fills the test's defaults and freezes the configuration. */
    public PerfConfig conclude() {
        open();
        if (bufferBytes < 64 || bufferBytes > (1L << 30)) {
            throw new IllegalArgumentException("--buffer " + bufferBytes + " must be 64 .. 1073741824 bytes");
        }
        if (test.isAtomic()) {
            if (size != null && size != 8) {
                throw new IllegalArgumentException("-s/--size " + size + " is invalid for " + test.id()
                    + ": atomics operate on exactly 8 bytes");
            }
            size = 8;
        } else {
            final int sz = size != null ? size : test.bandwidth ? 65536 : 2;
            if (sz < 1) {
                throw new IllegalArgumentException("-s/--size " + sz + " must be at least 1 byte");
            }
            if (sz > bufferBytes) {
                throw new IllegalArgumentException("-s/--size " + sz + " exceeds the registered buffer ("
                    + bufferBytes + " bytes); raise --buffer");
            }
            size = sz;
        }
        final long n = iters != null ? iters : test.bandwidth ? 5000 : 1000;
        if (n < 1) {
            throw new IllegalArgumentException("-n/--iters " + n + " must be at least 1");
        }
        iters = n;
        if (warmup < 0) {
            throw new IllegalArgumentException("--warmup " + warmup + " must not be negative");
        }
        if (warmupMs < 0 || warmupMs > 600_000) {
            throw new IllegalArgumentException("--warmup-ms " + warmupMs + " must be 0 .. 600000");
        }
        if (numQps < 1 || numQps > 1024) {
            throw new IllegalArgumentException("-q/--qp " + numQps + " must be 1 .. 1024");
        }
        if (!test.bandwidth && numQps != 1) {
            throw new IllegalArgumentException("latency tests use one QP (got -q " + numQps + ")");
        }
        if (txDepth < 1 || txDepth > 16384) {
            throw new IllegalArgumentException("-t/--tx-depth " + txDepth + " must be 1 .. 16384");
        }
        if (rxDepth < 1 || rxDepth > 16384) {
            throw new IllegalArgumentException("-r/--rx-depth " + rxDepth + " must be 1 .. 16384");
        }
        if (cqMod < 1) {
            throw new IllegalArgumentException("-Q/--cq-mod " + cqMod + " must be at least 1");
        }
        if (!(Mtu.fromBytes(mtu) > 0 || Mtu.isValidSoftwareBytes(mtu))) {
            throw new IllegalArgumentException("--mtu " + mtu + " must be a power of two from 256 to 4096 (IB path "
                + "MTU) or up to " + Mtu.MAX_SOFTWARE_BYTES + " (software MTU)");
        }
        final int inline = inlineSize != null ? inlineSize : test.bandwidth ? 0 : 220;
        if (inline < 0 || inline > 4096) {
            throw new IllegalArgumentException("-I/--inline_size " + inline + " must be 0 .. 4096");
        }
        inlineSize = inline;
        if (durationSeconds != null && !(durationSeconds > 0 && durationSeconds <= 3600)) {
            throw new IllegalArgumentException("-D/--duration " + durationSeconds + " must be > 0 and <= 3600 "
                + "seconds");
        }
        if (events && test != PerfKind.SEND_LAT) {
            throw new IllegalArgumentException("-e/--events applies to send_lat (the test that waits on a receive "
                + "CQ), not " + test.id());
        }
        if (bidirectional && (!test.bandwidth || test.isAtomic())) {
            throw new IllegalArgumentException("-b/--bidirectional applies to write_bw, read_bw and send_bw, not "
                + test.id());
        }
        concluded = true;
        return this;
    }

    public PerfKind test() {
        return test;
    }

    public int size() {
        concluded();
        return size;
    }

    public long iters() {
        concluded();
        return iters;
    }

    public long warmup() {
        concluded();
        return warmup;
    }

    public int numQps() {
        concluded();
        return numQps;
    }

    public int txDepth() {
        concluded();
        return txDepth;
    }

    public int rxDepth() {
        concluded();
        return rxDepth;
    }

    public int cqMod() {
        concluded();
        return cqMod;
    }

    public int mtu() {
        concluded();
        return mtu;
    }

    public int inlineSize() {
        concluded();
        return inlineSize;
    }

    /** Seconds per size, 0 when the run counts iterations. */
    public double durationSeconds() {
        concluded();
        return durationSeconds == null ? 0 : durationSeconds;
    }

    public long bufferBytes() {
        concluded();
        return bufferBytes;
    }

    public SoftNicContext.ProgressMode progress() {
        concluded();
        return progress;
    }

    /** send_lat with completion events instead of polling. */
    public boolean events() {
        concluded();
        return events;
    }

    /** Both directions at once (-b). */
    public boolean bidirectional() {
        concluded();
        return bidirectional;
    }

    /** Each size runs for {@link #durationSeconds()} instead of {@link #iters()}. */
    public boolean timed() {
        concluded();
        return durationSeconds != null;
    }

    private void open() {
        if (concluded) {
            throw new IllegalStateException("PerfConfig already concluded; withSize() makes a new one");
        }
    }

    private void concluded() {
        if (!concluded) {
            throw new IllegalStateException("PerfConfig not concluded: call conclude() first");
        }
    }

    @Override
    public String toString() {
        return "PerfConfig[test=" + test.id() + ", size=" + size + ", iters=" + iters + ", warmup=" + warmup
            + (warmupMs > 0 ? ", warmupMs=" + warmupMs : "")
            + ", numQps=" + numQps + ", txDepth=" + txDepth + ", rxDepth=" + rxDepth + ", cqMod=" + cqMod + ", mtu="
            + mtu + ", inlineSize=" + inlineSize + ", durationSeconds=" + durationSeconds + ", bufferBytes="
            + bufferBytes + ", progress=" + progress + (events ? ", events=true" : "")
            + (bidirectional ? ", bidirectional=true" : "") + "]";
    }
}
