/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import java.lang.foreign.MemorySegment;

/**
 * A device's attachment to a fabric. The NIC writes outgoing packets in place (claim, fill, commit) and reads
 * incoming packets in place. Only the thread that currently holds the device's duty calls these.
 */
public interface FabricPort {
    int lid();

    /** Largest packet (headers included) the fabric carries. */
    int maxPacket();

    /**
     * Claims room for a packet of {@code length} bytes to {@code dlid}. Returns the offset in
     * {@link #claimBuffer()} to write it at; -1 when the link is full (try again later); -2 when no such
     * destination exists (the packet is lost, as on a real network).
     */
    long tryClaim(int dlid, int length);

    /**
     * {@link #tryClaim(int, int)} with the packet's destination QP number (the BTH dest QP it will carry), so a
     * fabric with several links to one peer can keep each QP's packets in order on one of them.
     */
    default long tryClaim(final int dlid, final int destQpn, final int length) {
        return tryClaim(dlid, length);
    }

    MemorySegment claimBuffer();

    /** Sends the claimed packet; the link hook may still drop it. */
    void commit();

    /** Drops the claimed packet without sending it. */
    void abort();

    /**
     * Housekeeping the sender side owes the link: releases packets a fault injector delayed, flushes
     * buffered bytes to sockets. Called by the NIC every duty cycle with the current time.
     */
    default int doWork(final long nowNanos) {
        return 0;
    }

    /**
     * Called by the NIC at the end of a duty cycle in which none of its engines found work. A port whose links
     * can wake a waiting thread (sockets) may wait here for traffic, bounded by a short timeout of its own; the
     * default returns at once.
     */
    default void idle(final long nowNanos) {
        // nothing to wait on: the caller's idle strategy decides
    }

    /** Packets received with a bad link CRC (dropped). */
    default long crcErrors() {
        return 0;
    }

    /** Reads up to {@code limit} incoming packets. */
    int poll(SpscRingBuffer.RecordHandler handler, int limit);

    /**
     * Whether a packet claimed now may carry a <em>reference</em> to host memory of the sending NIC (address,
     * length, key) instead of the payload bytes, for the receiver to copy from directly (the single-copy path).
     * True only where that is safe: sender and receiver in this JVM, no link CRC (it would cover the reference,
     * not the bytes), and a link hook that {@linkplain LinkHook#passesReferences() never looks at payloads}.
     * Asked per packet: the hook may be replaced at any time. Default false (the bytes travel).
     */
    default boolean carriesReferences() {
        return false;
    }

    /**
     * {@link #carriesReferences()} for a packet of {@code payload} bytes to {@code dlid}. A fabric between processes
     * answers per link: the shared-memory fabric carries a <em>cross-process</em> reference (the sender's address,
     * read by the receiver with {@code process_vm_readv}) only to a peer that proved it can read this process, and
     * only for payloads of at least its threshold. Default: {@link #carriesReferences()}.
     */
    default boolean carriesReferences(final int dlid, final int payload) {
        return carriesReferences();
    }

    /**
     * The RefETH token a reference packet of this port carries: 0 (in-JVM), or this process's id on a fabric whose
     * receiver {@linkplain #pullsReferences() pulls} the bytes, which it checks against the peer it probed.
     */
    default long referenceToken() {
        return 0;
    }

    /**
     * Whether a reference packet received here is resolved by {@link #pull} (another process's memory) rather than
     * against a NIC of this JVM ({@link #peer}). Default false.
     */
    default boolean pullsReferences() {
        return false;
    }

    /**
     * Copies {@code length} bytes at {@code remoteAddress} of the process behind {@code slid}, which must be process
     * {@code token} (the packet's RefETH token) and must have been probed and granted, into {@code dst} at
     * {@code dstOffset} (a range the caller checked against its MR). Returns {@code length}, or a negative code whose
     * meaning {@link #pullError()} names (a short read, EFAULT, ESRCH, EPERM, a token that is not the peer, a link
     * not granted). Only the NIC's duty thread calls it. Default: nothing pulls here.
     */
    default long pull(final int slid, final long token, final long remoteAddress, final MemorySegment dst,
                      final long dstOffset, final int length) {
        return -1;
    }

    /**
     * {@link #pull} of at least {@code required} and up to {@code wanted} bytes (a pull ahead of the packets that
     * will reference them: one system call for a whole message). Returns the bytes read, {@code >= required}, or a
     * negative code as {@link #pull}. Default: exactly {@code required}.
     */
    default long pullAhead(final int slid, final long token, final long remoteAddress, final MemorySegment dst,
                           final long dstOffset, final int required, final long wanted) {
        return pull(slid, token, remoteAddress, dst, dstOffset, required);
    }

    /** What the last failed {@link #pull} met, in words ("" if none). */
    default String pullError() {
        return "this fabric does not carry cross-process references";
    }

    /**
     * The NIC's settings for the cross-process single copy ({@code SoftNicContext}'s {@code gdrkit.nic.shm.cma}
     * and threshold): whether this port sends and grants cross-process references, and the smallest payload sent
     * so. A no-op on fabrics without it.
     */
    default void crossProcessCopy(final boolean on, final int threshold) {
    }

    /**
     * The NIC's copy engines ({@code gdrkit.nic.copy.engines}): a fabric that {@linkplain #pullsReferences() pulls}
     * splits a large pull over them. The NIC owns and closes them. A no-op elsewhere.
     */
    default void copyEngines(final CopyEngines engines) {
    }

    /**
     * The NIC's {@code gdrkit.nic.shm.batch}: whether a cross-process reference record may stand for a span of packets
     * ({@link #carriesBatches()}). A no-op on fabrics without cross-process references.
     */
    default void crossProcessBatches(final boolean on) {
    }

    /**
     * Whether a reference packet claimed now may stand for several consecutive packets of one message (segment
     * offload, see {@code Packet}): where {@link #carriesReferences()} holds and the link hook
     * {@linkplain LinkHook#passesBatches() accepts whole spans}. Asked per record. Default false.
     */
    default boolean carriesBatches() {
        return false;
    }

    /**
     * Whether a record whose payload travels inline may stand for several consecutive MTU packets of one RC SEND or
     * WRITE (segment offload without references, for a fabric whose bytes travel in the link anyway): one header,
     * one claim and one copy for up to {@code gdrkit.nic.batch} packets. The receiving NIC counts the packets from
     * the payload's length and the QP's MTU ({@link #acceptsInlineBatches()}). Asked per record. Default false.
     */
    default boolean carriesInlineBatches() {
        return false;
    }

    /**
     * Whether an RC SEND or WRITE request received here whose inline payload is longer than the QP's MTU is a span
     * of that many MTU packets (all full but a LAST one; else it is refused as any malformed length is). Elsewhere
     * such a packet is refused. Default false.
     */
    default boolean acceptsInlineBatches() {
        return false;
    }

    /**
     * How many pieces of registered host memory the payload of the next record to {@code dlid} (on the connection
     * {@code destQpn} picks) may leave in the sender's memory until the link sends it; 0: the payload goes into the
     * link. With pieces, the record in the link holds the packet's headers only and the pieces are attached to it
     * with {@link #deferPayload}, to be written to the socket straight from there (no copy into the link; TCP), and
     * the whole packet must be at most {@link #maxPacket()} long. Only where the bytes are not looked at before they
     * leave: no link CRC and no link hook. Default 0.
     */
    default int deferrablePieces(final int dlid, final int destQpn) {
        return 0;
    }

    /**
     * Attaches {@code length} bytes of {@code memory} at {@code offset} to the record just claimed (its headers only;
     * the LRH's length counts the payload) as the next piece of its payload. Only after {@link #deferrablePieces}
     * said yes for this record; the pieces are published with the record by {@code commit}.
     */
    default void deferPayload(final MemorySegment memory, final long offset, final int length) {
        throw new UnsupportedOperationException("this fabric port carries its payloads in the link");
    }

    /**
     * {@code memory} is about to stop being the NIC's (its MR is deregistered): the bytes of it that records still
     * waiting for the link would send from there are copied now, so that nothing is read from it later. A no-op where
     * nothing is deferred.
     */
    default void detachPayloads(final MemorySegment memory) {
    }

    /**
     * A record handler that can say, from a request's headers alone, where its payload belongs, so that a link whose
     * bytes arrive in pieces (a socket) reads the payload straight there instead of into its buffer first.
     */
    interface DirectSink extends SpscRingBuffer.RecordHandler {
        /**
         * Where the payload of the packet at {@code offset} of {@code buffer} (its headers there; {@code length} its
         * whole length, LRH included) may be read straight in: the memory, with the offset in it in {@code at[0]};
         * null when the packet must arrive whole in the link's buffer. Changes nothing.
         */
        MemorySegment directTarget(MemorySegment buffer, long offset, int length, long[] at);

        /**
         * A count that changes whenever memory {@link #directTarget} found may have stopped being writable so (keys
         * registered, deregistered, invalidated): a link reading a payload over several calls checks it before each
         * read, and drops the packet instead when it changed.
         */
        long directEpoch();

        /** The packet whose payload was read where {@link #directTarget} said: handled as by {@code onRecord}. */
        void onPlaced(MemorySegment buffer, long offset, int length);
    }

    /** Packets whose payload was read from the link straight into their memory, and those dropped on the way. */
    default long directReceived() {
        return 0;
    }

    /** Records sent with their payload written to the link straight from the sender's memory. */
    default long deferredSent() {
        return 0;
    }

    /**
     * Makes {@code owner} (the NIC using this port) findable by its LID through {@link #peer(int, Class)} of every
     * port of the fabric, so a reference can be resolved against the sender's memory. A no-op where references are
     * not carried.
     */
    default void owner(final PortOwner owner) {
    }

    /**
     * The {@link #owner(PortOwner) owner} of the port with {@code lid} on this fabric, in this JVM, when it is a
     * {@code type}; null otherwise (no such port, no owner, or another kind of NIC).
     */
    default <T extends PortOwner> T peer(final int lid, final Class<T> type) {
        return null;
    }

    /** Counters of this port: packets sent, dropped by the hook, unroutable. */
    long packetsSent();

    long packetsDropped();
}
