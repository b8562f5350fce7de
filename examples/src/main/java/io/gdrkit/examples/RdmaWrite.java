/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.examples;

import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * An RDMA WRITE between two software NICs of this JVM: two devices, a protection domain, a completion queue and
 * a registered buffer on each, one RC queue pair connected to the other, then one signalled WRITE of 64 KiB and a
 * byte-by-byte check of what landed. Software NICs are simulated hardware: real bytes move, between threads here.
 */
public final class RdmaWrite {
    private RdmaWrite() {
    }

    public static void main(final String[] args) {
        final int len = 64 * 1024;
        try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext());
             Arena arena = Arena.ofShared()) {
            final SoftDevice a = driver.addDevice("soft0");
            final SoftDevice b = driver.addDevice("soft1");
            try (VerbsContext ca = a.open(); VerbsContext cb = b.open()) {
                final ProtectionDomain pa = ca.allocPd();
                final ProtectionDomain pb = cb.allocPd();
                final CompletionQueue cqa = ca.createCq(16);
                final CompletionQueue cqb = cb.createCq(16);
                final MemorySegment srcMem = arena.allocate(len, 4096);
                final MemorySegment dstMem = arena.allocate(len, 4096);
                for (int i = 0; i < len; i++) {
                    srcMem.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 3));
                }
                final MemoryRegion src = pa.registerMr(srcMem, AccessFlags.LOCAL_WRITE);
                final MemoryRegion dst = pb.registerMr(dstMem, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
                final QueuePair qa = pa.createQp(new QpInitAttr().cqs(cqa, cqa));
                final QueuePair qb = pb.createQp(new QpInitAttr().cqs(cqb, cqb));
                QpBringUp.connect(qa, a.lid(), 0, qb, b.lid(), 0, QpBringUp.rcDefaults());

                qa.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(src, 0, len).remote(dst.address(), dst.rkey()));
                final WorkCompletion[] wc = WorkCompletion.array(1);
                final long deadline = System.nanoTime() + 10_000_000_000L;
                while (cqa.poll(wc) == 0) { // polling drives the software NICs
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("no completion for the WRITE within 10 s");
                    }
                }
                if (!wc[0].isSuccess()) {
                    throw new IllegalStateException("the WRITE completed with " + wc[0]);
                }
                final long mismatch = srcMem.mismatch(dstMem);
                if (mismatch != -1) {
                    throw new IllegalStateException("byte " + mismatch + " differs after the WRITE");
                }
                System.out.println("RDMA WRITE of " + len + " bytes soft0 -> soft1: completion " + WcStatus.name(wc[0].status)
                    + ", every byte checked (software NICs: simulated hardware)");
            }
        }
    }
}
