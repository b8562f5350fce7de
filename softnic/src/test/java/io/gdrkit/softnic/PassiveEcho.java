/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpBringUp;
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
import java.io.BufferedReader;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The passive half that the fabric process tests' peers ({@link ShmPeer}, {@link TcpPeer}) share: on a device
 * (LID 2) it prints {@code <readyHead> <qpn> <addr> <rkey>}, reads {@code PEER <qpn> <addr> <rkey>}, brings its QP
 * up and prints {@code UP}, waits for a WRITE_WITH_IMM of {@code size} bytes, checks every byte, writes the data
 * back with immediate + 1 and prints {@code OK <size>}; anything else is a line starting with BAD.
 */
final class PassiveEcho {
    private PassiveEcho() {
    }

    static void run(final SoftDevice dev, final int size, final String readyHead, final BufferedReader in,
                    final PrintStream out) throws Exception {
        try (Arena arena = Arena.ofShared()) {
            final VerbsContext ctx = dev.open();
            final ProtectionDomain pd = ctx.allocPd();
            final CompletionQueue cq = ctx.createCq(64);
            final MemorySegment buf = arena.allocate(size, 4096);
            final MemoryRegion mr = pd.registerMr(buf, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            final QueuePair qp = pd.createQp(new QpInitAttr().cqs(cq, cq));
            out.println(readyHead + " " + qp.qpNum() + " " + mr.address() + " " + mr.rkey());
            out.flush();
            final String[] peer = in.readLine().split(" ");
            final long peerAddr = Long.parseLong(peer[2]);
            final int peerRkey = Integer.parseInt(peer[3]);
            QpBringUp.toRts(qp, Integer.parseInt(peer[1]), 1, 500, 400, QpBringUp.rcDefaults());
            qp.postRecv(new RecvWorkRequest().wrId(1).sge(mr, 0, 0));
            out.println("UP"); // the QP is in RTS: the peer may send
            out.flush();
            final WorkCompletion wc = await(cq, "the peer's WRITE_WITH_IMM");
            if (wc.status != WcStatus.SUCCESS || wc.opcode != WcOpcode.RECV_RDMA_WITH_IMM || wc.byteLen != size) {
                out.println("BAD completion " + wc);
                return;
            }
            final MemorySegment expected = arena.allocate(size);
            Fixture.fill(expected, wc.immData);
            final long mismatch = expected.mismatch(buf);
            if (mismatch != -1) {
                out.println("BAD byte " + mismatch);
                return;
            }
            qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
                .imm(wc.immData + 1).sge(mr, 0, size).remote(peerAddr, peerRkey));
            final WorkCompletion back = await(cq, "completion of the write-back");
            out.println(back.status == WcStatus.SUCCESS ? "OK " + size : "BAD write-back " + back);
            out.flush();
            // the peer's ACK for the write-back already came: the data is placed before this side closes
        }
    }

    /** The next completion (a copy), or IllegalStateException naming {@code what} after 30 s. */
    static WorkCompletion await(final CompletionQueue cq, final String what) {
        final WorkCompletion[] wc = {new WorkCompletion()};
        final long deadline = System.nanoTime() + 30_000_000_000L;
        while (cq.poll(wc) == 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timeout after 30 s waiting for " + what);
            }
        }
        final WorkCompletion copy = new WorkCompletion();
        copy.copyFrom(wc[0]);
        return copy;
    }
}
