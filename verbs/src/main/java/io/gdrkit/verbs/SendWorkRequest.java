/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/**
 * A send work request (ibv_send_wr). Mutable and meant to be reused: posting copies it into the send queue's
 * WQE ring, so the object may be changed as soon as {@code postSend} returns. Chains are built with {@link #next}.
 */
public final class SendWorkRequest {
    public long wrId;
    public int opcode;
    public int sendFlags;
    /**
     * Immediate data in host order: the receiver's {@link WorkCompletion#immData} is this same value, and the wire
     * carries it big-endian as the IB spec says. libibverbs' {@code imm_data} is the network-order form instead
     * ({@code htonl(x)}): set that form with {@link #immBe(int)}, and it arrives byte for byte as a libibverbs
     * peer sent it.
     */
    public int immData;
    public long remoteAddr;
    public int rkey;
    public long compareAdd;
    public long swap;
    public SendWorkRequest next;
    /** UD only (wr.ud.ah): where the datagram goes. */
    public AddressHandle ah;
    /** UD only (wr.ud.remote_qpn). */
    public int remoteQpn;
    /**
     * UD only (wr.ud.remote_qkey). A Q_Key with its high bit set is a controlled one: the QP's own Q_Key is sent
     * instead, as the IB spec says (C10-15), so an application cannot forge a privileged Q_Key.
     */
    public int remoteQkey;
    /** BIND_MW only (wr.bind_mw): the type 2 window, its new rkey, and what it grants. */
    public MemoryWindow mw;
    public int mwRkey;
    public final MwBind bindInfo = new MwBind();
    /** LOCAL_INV and SEND_WITH_INV (wr.invalidate_rkey): the rkey to invalidate. */
    public int invalidateRkey;
    /** FLUSH only: bytes to flush from remoteAddr (ignored with {@link #FLUSH_MR}). */
    public long flushLength;
    /** FLUSH only: placement type, {@link #FLUSH_GLOBAL} and/or {@link #FLUSH_PERSISTENT}. */
    public int flushType;
    /** FLUSH only: selectivity, {@link #FLUSH_RANGE} or {@link #FLUSH_MR}. */
    public int flushLevel;

    /** FLUSH placement types (IBV_FLUSH_GLOBAL, IBV_FLUSH_PERSISTENT). */
    public static final int FLUSH_GLOBAL = 1;
    public static final int FLUSH_PERSISTENT = 2;
    /** FLUSH selectivity levels (IBV_FLUSH_RANGE, IBV_FLUSH_MR). */
    public static final int FLUSH_RANGE = 0;
    public static final int FLUSH_MR = 1;

    private final Sge[] sgList;
    private int numSge;

    public SendWorkRequest() {
        this(4);
    }

    public SendWorkRequest(final int maxSge) {
        sgList = new Sge[maxSge];
        for (int i = 0; i < maxSge; i++) {
            sgList[i] = new Sge();
        }
    }

    public Sge sge(final int index) {
        return sgList[index];
    }

    public int numSge() {
        return numSge;
    }

    public SendWorkRequest numSge(final int numSge) {
        if (numSge < 0 || numSge > sgList.length) {
            throw new IllegalArgumentException("numSge " + numSge + " outside 0.." + sgList.length);
        }
        this.numSge = numSge;
        return this;
    }

    /** Sets a single SGE. */
    public SendWorkRequest sge(final long addr, final int length, final int lkey) {
        sgList[0].set(addr, length, lkey);
        numSge = 1;
        return this;
    }

    /** Sets a single SGE over unregistered memory, for an {@link SendFlags#INLINE} send (no lkey). */
    public SendWorkRequest sge(final java.lang.foreign.MemorySegment memory, final long offset, final int length) {
        sgList[0].set(memory, offset, length);
        numSge = 1;
        return this;
    }

    public SendWorkRequest sge(final MemoryRegion mr, final long offset, final int length) {
        sgList[0].set(mr, offset, length);
        numSge = 1;
        return this;
    }

    public SendWorkRequest wrId(final long wrId) {
        this.wrId = wrId;
        return this;
    }

    public SendWorkRequest opcode(final int opcode) {
        this.opcode = opcode;
        return this;
    }

    public SendWorkRequest flags(final int sendFlags) {
        this.sendFlags = sendFlags;
        return this;
    }

    public SendWorkRequest imm(final int immData) {
        this.immData = immData;
        return this;
    }

    /**
     * Sets the immediate data from libibverbs' network-order form: {@code wr.immBe(Imm.htonl(1234))} is C's
     * {@code wr.imm_data = htonl(1234)}, and the receiver's {@code ntohl(wc.imm_data)} (here
     * {@code Imm.ntohl(wc.immDataBe())}, or simply {@code wc.immData}) is 1234.
     */
    public SendWorkRequest immBe(final int networkOrder) {
        this.immData = Imm.ntohl(networkOrder);
        return this;
    }

    public SendWorkRequest remote(final long remoteAddr, final int rkey) {
        this.remoteAddr = remoteAddr;
        this.rkey = rkey;
        return this;
    }

    /**
     * Makes this a FLUSH (ibv_wr_flush): {@code length} bytes at {@code remoteAddr} under {@code rkey}, placement
     * {@code type} ({@link #FLUSH_GLOBAL}|{@link #FLUSH_PERSISTENT}), selectivity {@code level}. No SGE.
     */
    public SendWorkRequest flush(final long remoteAddr, final int rkey, final long length, final int type,
                                 final int level) {
        this.opcode = WrOpcode.FLUSH;
        this.remoteAddr = remoteAddr;
        this.rkey = rkey;
        this.flushLength = length;
        this.flushType = type;
        this.flushLevel = level;
        this.numSge = 0;
        return this;
    }

    /**
     * Makes this a BIND_MW of type 2 window {@code mw} with the new rkey {@code rkey} (its index, the upper 24 bits,
     * must be the window's: {@code (mw.rkey() & ~0xFF) | key}).
     */
    public SendWorkRequest bindMw(final MemoryWindow mw, final int rkey, final MemoryRegion mr, final long addr,
                                  final long length, final int mwAccessFlags) {
        this.opcode = WrOpcode.BIND_MW;
        this.mw = mw;
        this.mwRkey = rkey;
        this.bindInfo.range(mr, addr, length, mwAccessFlags);
        this.numSge = 0;
        return this;
    }

    /** The rkey LOCAL_INV or SEND_WITH_INV invalidates. */
    public SendWorkRequest invalidate(final int rkey) {
        this.invalidateRkey = rkey;
        return this;
    }

    /** Addresses a UD send: the AH, the remote QP number and its Q_Key. */
    public SendWorkRequest ud(final AddressHandle ah, final int remoteQpn, final int remoteQkey) {
        this.ah = ah;
        this.remoteQpn = remoteQpn;
        this.remoteQkey = remoteQkey;
        return this;
    }

    public SendWorkRequest atomic(final long compareAdd, final long swap) {
        this.compareAdd = compareAdd;
        this.swap = swap;
        return this;
    }

    public SendWorkRequest next(final SendWorkRequest next) {
        this.next = next;
        return this;
    }

    /** Sum of the SGE lengths. */
    public long totalLength() {
        long total = 0;
        for (int i = 0; i < numSge; i++) {
            total += Integer.toUnsignedLong(sgList[i].length);
        }
        return total;
    }

    /** Resets every field, keeping the SGE objects. */
    public SendWorkRequest clear() {
        wrId = 0;
        opcode = 0;
        sendFlags = 0;
        immData = 0;
        remoteAddr = 0;
        rkey = 0;
        compareAdd = 0;
        swap = 0;
        mw = null;
        mwRkey = 0;
        bindInfo.range(null, 0, 0, 0);
        invalidateRkey = 0;
        ah = null;
        remoteQpn = 0;
        remoteQkey = 0;
        flushLength = 0;
        flushType = 0;
        flushLevel = 0;
        next = null;
        numSge = 0;
        return this;
    }
}
