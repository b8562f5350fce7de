/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.bootstrap;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * The bootstrap's frames on TCP, big-endian. Every field is checked on receipt: a peer is untrusted.
 *
 * <pre>
 *  0        4     5      6          10         14                22          26
 *  +--------+-----+------+----------+----------+-----------------+-----------+----------------
 *  | "GDRB" | ver | kind | seq u32  | rank u32 | run id u64      | len u32   | payload (len)
 *  +--------+-----+------+----------+----------+-----------------+-----------+----------------
 *  HELLO     payload: nranks u32 | rank nonce (16)                       (rank to root: no secret in it)
 *  CHALLENGE payload: root nonce (16) | root proof (32)                 (root to rank: the root proves first)
 *  PROOF     payload: rank proof (32)                                   (rank to root)
 *  WELCOME   empty (root to rank, once every rank joined)
 *
 *  root proof = HMAC-SHA256(token, "gdrkit-bootstrap-root" | run id | rank | nranks | rank nonce | root nonce)
 *  rank proof = HMAC-SHA256(token, "gdrkit-bootstrap-rank" | run id | rank | nranks | root nonce | rank nonce)
 *  (without a token the key is a fixed label: the proofs then show only the run id, which every header carries)
 *  ALLGATHER payload: this rank's blob;  RESULT: count u32, then count x (length u32 | bytes)
 *  BARRIER   empty;                      RESULT: empty
 *  BROADCAST payload: root u32 | data (data only from the root); RESULT: the root's data
 *  ABORT     payload: UTF-8 reason (root to rank, or rank to root)
 *  BYE       empty (a rank closes cleanly)
 * </pre>
 */
final class BootstrapWire {
    static final int MAGIC = 0x47445242; // "GDRB"
    /** 2: the token never travels; root and rank each prove it over the other's fresh nonce. */
    static final int VERSION = 2;
    static final int HEADER = 26;
    /** The largest blob one rank may contribute (fewer with many ranks: see {@link #maxBlob}). */
    static final int MAX_BLOB = 1 << 20;
    static final int MAX_RANKS = 4096;
    /**
     * The largest allgather result (count, then each length and blob): what a root holds for one operation and a
     * rank reads back. Without it, 4096 ranks x 1 MiB would be 4 GiB.
     */
    static final int MAX_GATHER = 1 << 26;
    /** Payloads are read in pieces of this size: memory follows what arrived, not what was announced. */
    static final int CHUNK = 1 << 16;
    static final int MAX_TOKEN = 256;

    static final int HELLO = 1;
    static final int WELCOME = 2;
    static final int ALLGATHER = 3;
    static final int BARRIER = 4;
    static final int BROADCAST = 5;
    static final int RESULT = 6;
    static final int ABORT = 7;
    static final int BYE = 8;
    static final int CHALLENGE = 9;
    static final int PROOF = 10;
    /** Bytes of a handshake nonce. */
    static final int NONCE = 16;
    /** Bytes of a proof (HMAC-SHA256). */
    static final int MAC = 32;
    private static final byte[] NO_TOKEN_KEY = "gdrkit-bootstrap-no-token".getBytes(StandardCharsets.UTF_8);
    private static final java.security.SecureRandom RANDOM = new java.security.SecureRandom();

    /** A fresh random nonce for one handshake. */
    static byte[] nonce() {
        final byte[] n = new byte[NONCE];
        RANDOM.nextBytes(n);
        return n;
    }

    /**
     * The proof of {@code side} ("root" or "rank") that it knows {@code token}, over both nonces (the other side's
     * first, so each proof answers the challenge it was given) and the run's identity: a proof seen on the wire
     * proves nothing in another handshake, and neither side's proof can be replayed as the other's.
     */
    static byte[] proof(final byte[] token, final String side, final long runId, final int rank, final int nranks,
                        final byte[] theirNonce, final byte[] ourNonce) {
        try {
            final javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
            mac.init(new javax.crypto.spec.SecretKeySpec(token.length == 0 ? NO_TOKEN_KEY : token, "HmacSHA256"));
            mac.update(("gdrkit-bootstrap-" + side).getBytes(StandardCharsets.UTF_8));
            mac.update(java.nio.ByteBuffer.allocate(16).putLong(runId).putInt(rank).putInt(nranks).array());
            mac.update(theirNonce);
            mac.update(ourNonce);
            return mac.doFinal();
        } catch (final java.security.GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available in this JVM", e);
        }
    }

    private BootstrapWire() {
    }

    record Frame(int kind, int seq, int rank, long runId, byte[] payload) {
    }

    /** The largest blob each of {@code nranks} ranks may contribute, so the whole result fits {@link #MAX_GATHER}. */
    static int maxBlob(final int nranks) {
        return (int) Math.min(MAX_BLOB, (MAX_GATHER - 4L) / Math.max(1, nranks) - 4);
    }

    /** The largest allgather result for {@code nranks} ranks (at most {@link #MAX_GATHER}). */
    static int maxGather(final int nranks) {
        return 4 + nranks * (maxBlob(nranks) + 4);
    }

    static String kindName(final int kind) {
        return switch (kind) {
            case HELLO -> "hello";
            case WELCOME -> "welcome";
            case ALLGATHER -> "allGather";
            case BARRIER -> "barrier";
            case BROADCAST -> "broadcast";
            case RESULT -> "result";
            case ABORT -> "abort";
            case BYE -> "close";
            case CHALLENGE -> "challenge";
            case PROOF -> "proof";
            default -> "kind " + kind;
        };
    }

    static void write(final DataOutputStream out, final int kind, final int seq, final int rank, final long runId,
                      final byte[] payload) throws IOException {
        synchronized (out) {
            out.writeInt(MAGIC);
            out.writeByte(VERSION);
            out.writeByte(kind);
            out.writeInt(seq);
            out.writeInt(rank);
            out.writeLong(runId);
            out.writeInt(payload.length);
            out.write(payload);
            out.flush();
        }
    }

    /**
     * Reads one frame.
     *
     * @param maxPayload the largest payload accepted from this peer
     * @throws EOFException at a clean end of stream before a frame
     * @throws BootstrapException (PROTOCOL) for anything that is not a frame of this protocol and run
     */
    static Frame read(final DataInputStream in, final long runId, final int maxPayload, final String from)
        throws IOException {
        final int magic = in.readInt();
        if (magic != MAGIC) {
            throw new BootstrapException(BootstrapException.Reason.PROTOCOL, from + " sent 0x"
                + Integer.toHexString(magic) + ", not a gdrkit bootstrap frame");
        }
        final int ver = in.readUnsignedByte();
        if (ver != VERSION) {
            throw new BootstrapException(BootstrapException.Reason.PROTOCOL, from + " speaks bootstrap version "
                + ver + ", this is version " + VERSION);
        }
        final int kind = in.readUnsignedByte();
        if (kind < HELLO || kind > PROOF) {
            throw new BootstrapException(BootstrapException.Reason.PROTOCOL, from + " sent unknown frame kind "
                + kind);
        }
        final int seq = in.readInt();
        final int rank = in.readInt();
        final long run = in.readLong();
        // a rejection is sent before the peer is admitted, so it carries run 0: the run id is the secret of a run
        // without a token, and is never told to a peer that did not know it (nor named in any message)
        if (run != runId && !(kind == ABORT && run == 0)) {
            throw new BootstrapException(BootstrapException.Reason.PROTOCOL, from + " belongs to run "
                + java.util.HexFormat.of().toHexDigits(run) + ", not this run (a handle from another run?)");
        }
        final int len = in.readInt();
        if (len < 0 || len > maxPayload) {
            throw new BootstrapException(BootstrapException.Reason.PROTOCOL, from + " announced a "
                + kindName(kind) + " payload of " + Integer.toUnsignedString(len) + " bytes (at most " + maxPayload
                + ")");
        }
        return new Frame(kind, seq, rank, run, readPayload(in, len));
    }

    /**
     * Reads {@code len} bytes in pieces of {@link #CHUNK}, growing the array as they arrive: a peer that announces
     * a large payload and sends little costs what it sent (at most twice), not what it announced.
     */
    static byte[] readPayload(final DataInputStream in, final int len) throws IOException {
        byte[] b = new byte[Math.min(len, CHUNK)];
        int have = 0;
        while (have < len) {
            if (have == b.length) {
                b = java.util.Arrays.copyOf(b, (int) Math.min(len, 2L * b.length));
            }
            final int n = in.read(b, have, b.length - have);
            if (n < 0) {
                throw new EOFException("end of stream after " + have + " of " + len + " payload bytes");
            }
            have += n;
        }
        return b;
    }

    static byte[] text(final String s) {
        final byte[] b = s.getBytes(StandardCharsets.UTF_8);
        return b.length <= 4096 ? b : java.util.Arrays.copyOf(b, 4096);
    }

    static String text(final byte[] b) {
        final StringBuilder sb = new StringBuilder();
        for (final char c : new String(b, StandardCharsets.UTF_8).toCharArray()) {
            sb.append(c >= 0x20 && c != 0x7f ? c : '?'); // a peer's text never carries control characters to a log
        }
        return sb.toString();
    }
}
