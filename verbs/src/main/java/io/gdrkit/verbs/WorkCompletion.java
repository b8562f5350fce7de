/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/**
 * A work completion (ibv_wc), owned by the caller and filled by {@link CompletionQueue#poll}. {@link #immData} is in
 * host order (the value the sender put in {@link SendWorkRequest#immData}); {@link #immDataBe()} gives it as
 * libibverbs' network-order field, for code ported with {@code ntohl}.
 */
public final class WorkCompletion {
    /** wc_flags bit: the first 40 bytes of the receive buffer hold a GRH (IBV_WC_GRH); never set here (no GRH). */
    public static final int GRH = 1;
    /** wc_flags bit: immediate data is valid (IBV_WC_WITH_IMM). */
    public static final int WITH_IMM = 1 << 1;
    /**
     * wc_flags bit (IBV_WC_WITH_INV): a SEND_WITH_INV invalidated the rkey held in {@link #immData} (libibverbs'
     * union of imm_data and invalidated_rkey); see {@link #invalidatedRkey()}.
     */
    public static final int WITH_INV = 1 << 3;

    public long wrId;
    public int status;
    public int opcode;
    public int vendorErr;
    public int byteLen;
    public int immData;
    public int qpNum;
    public int srcQp;
    public int wcFlags;
    public int slid;

    /** {@code n} fresh records, for a poll loop that must not allocate (a plain {@code new WorkCompletion[n]}
     * works too: {@link CompletionQueue#poll} fills null entries on first use). */
    public static WorkCompletion[] array(final int n) {
        final WorkCompletion[] a = new WorkCompletion[n];
        for (int i = 0; i < n; i++) {
            a[i] = new WorkCompletion();
        }
        return a;
    }

    /**
     * The immediate data as libibverbs' {@code wc.imm_data} holds it (a {@code __be32}): what C code passes to
     * {@code ntohl}. {@link #immData} is the host-order value, the one the sender gave.
     */
    public int immDataBe() {
        return Imm.htonl(immData);
    }

    public boolean isSuccess() {
        return status == WcStatus.SUCCESS;
    }

    /** The rkey a SEND_WITH_INV invalidated (with {@link #WITH_INV}); 0 otherwise. */
    public int invalidatedRkey() {
        return (wcFlags & WITH_INV) != 0 ? immData : 0;
    }

    public boolean hasImm() {
        return (wcFlags & WITH_IMM) != 0;
    }

    public void copyFrom(final WorkCompletion other) {
        wrId = other.wrId;
        status = other.status;
        opcode = other.opcode;
        vendorErr = other.vendorErr;
        byteLen = other.byteLen;
        immData = other.immData;
        qpNum = other.qpNum;
        srcQp = other.srcQp;
        wcFlags = other.wcFlags;
        slid = other.slid;
    }

    @Override
    public String toString() {
        return "WC{wr_id=" + wrId + ", status=" + WcStatus.name(status) + ", opcode=" + WcOpcode.name(opcode)
            + ", byte_len=" + byteLen + (hasImm() ? ", imm=0x" + Integer.toHexString(immData) : "")
            + ", qp=" + qpNum + (vendorErr != 0 ? ", vendor_err=0x" + Integer.toHexString(vendorErr) : "") + '}';
    }
}
