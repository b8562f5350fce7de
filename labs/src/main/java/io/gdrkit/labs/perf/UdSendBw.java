/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.AddressHandle;
import io.gdrkit.verbs.AhAttr;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpAttrMask;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QpType;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
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
 * perftest's {@code send_bw -c UD} between two software NICs (simulated) in this JVM: one UD QP per side, an address
 * handle to the receiver, messages of at most one MTU (a datagram is one packet), each received behind the 40-byte
 * GRH area. UD has no acknowledgements, so a sender that outran the posted receives would lose datagrams: the sender
 * keeps at most {@code min(tx-depth, rx-depth)} messages ahead of the receive completions, and bandwidth is counted
 * at the receiver. A datagram lost anyway (a fault) ends the run with a named timeout, never a hang.
 */
public final class UdSendBw {
    /** The GRH area in front of every UD receive (the IB spec's 40 bytes). */
    public static final int GRH = 40;
    /** perftest's default Q_Key. */
    public static final int QKEY = 0x1111_1111;
    private static final long STALL_NS = 10_000_000_000L;

    /**
     * One UD run.
     *
     * @param bw      the row: peak and average at the receiver
     * @param checked datagrams compared byte for byte with what was sent (0 without --check)
     * @param bad     of those, the ones that differed, or arrived with another length or status
     */
    public record Result(BwResult bw, long checked, long bad) {
    }

    private final SoftNicDriver driver;
    private final Arena arena = Arena.ofShared();
    private final QueuePair qa;
    private final QueuePair qb;
    private final CompletionQueue scq;
    private final CompletionQueue rcq;
    private final MemoryRegion src;
    private final MemoryRegion dst;
    private final AddressHandle ah;
    private final int size;
    private final int window;
    private final int slots;
    private final int slotBytes;
    private final WorkCompletion[] wcs = WorkCompletion.array(32);
    private final SendWorkRequest send = new SendWorkRequest();
    private final RecvWorkRequest recv = new RecvWorkRequest();

    /**
     * @param size     bytes per datagram, 1..mtu
     * @param txDepth  sends in flight
     * @param rxDepth  receives posted
     * @param mtu      the path MTU (256..4096)
     * @throws IllegalArgumentException for a size above the MTU (a UD message is one packet)
     */
    public UdSendBw(final int size, final int txDepth, final int rxDepth, final int mtu) {
        if (size < 1 || size > mtu) {
            throw new IllegalArgumentException("-c UD: a datagram is one packet: -s must be 1 .. the MTU (" + mtu
                + "), not " + size);
        }
        this.size = size;
        this.slots = Math.max(1, rxDepth);
        this.window = Math.max(1, Math.min(txDepth, slots));
        this.slotBytes = size + GRH;
        driver = SoftNicDriver.launch(new SoftNicContext().progressMode(SoftNicContext.ProgressMode.INVOKER));
        try {
            final SoftDevice da = driver.addDevice("soft0");
            final SoftDevice db = driver.addDevice("soft1");
            final VerbsContext ca = da.open();
            final VerbsContext cb = db.open();
            final ProtectionDomain pa = ca.allocPd();
            final ProtectionDomain pb = cb.allocPd();
            scq = ca.createCq(Math.max(window, 1) + 1);
            rcq = cb.createCq(slots + 1);
            src = pa.registerMr(arena.allocate(size, 64), AccessFlags.LOCAL_WRITE);
            dst = pb.registerMr(arena.allocate((long) slotBytes * slots, 64), AccessFlags.LOCAL_WRITE);
            qa = pa.createQp(udInit(scq, window, 1));
            qb = pb.createQp(udInit(rcq, 1, slots));
            toRts(qa);
            toRts(qb);
            ah = pa.createAh(new AhAttr().dlid(db.lid()));
        } catch (final RuntimeException e) {
            close();
            throw e;
        }
        fill(src.segment(), 0x5eedL + size);
        for (int s = 0; s < slots; s++) {
            postRecv(s);
        }
    }

    private static QpInitAttr udInit(final CompletionQueue cq, final int sendWr, final int recvWr) {
        final QpInitAttr ia = new QpInitAttr().cqs(cq, cq).qpType(QpType.UD);
        ia.cap.maxSendWr(sendWr).maxRecvWr(recvWr).maxInlineData(0);
        return ia;
    }

    private static void toRts(final QueuePair qp) {
        final QpAttr init = new QpAttr().qkey(QKEY).state(QpState.INIT);
        init.pkeyIndex = 0;
        init.portNum = 1;
        qp.modify(init, QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.QKEY);
        qp.modify(new QpAttr().state(QpState.RTR), QpAttrMask.STATE);
        final QpAttr rts = new QpAttr().state(QpState.RTS);
        rts.sqPsn = 0;
        qp.modify(rts, QpAttrMask.STATE | QpAttrMask.SQ_PSN);
    }

    /**
     * Sends {@code iters} datagrams and waits for all of them at the receiver.
     *
     * @param check compare every datagram with the sent bytes
     * @throws Deadline.TimeoutError when no datagram arrives for 10 s (one was lost)
     */
    public Result run(final long iters, final boolean check) {
        final PeakMeter peak = new PeakMeter(window);
        long posted = 0;
        long sendsDone = 0;
        long received = 0;
        long checked = 0;
        long bad = 0;
        final long start = System.nanoTime();
        long lastProgress = start;
        while (received < iters) {
            while (posted < iters && posted - received < window && posted - sendsDone < window) {
                peak.posted(posted, System.nanoTime());
                qa.postSend(send.wrId(posted).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).sge(src, 0, size)
                    .ud(ah, qb.qpNum(), QKEY));
                posted++;
            }
            driver.progress();
            final int ns = scq.poll(wcs);
            for (int i = 0; i < ns; i++) {
                if (wcs[i].status != WcStatus.SUCCESS) {
                    throw new IllegalStateException("UD send " + wcs[i].wrId + " completed with "
                        + WcStatus.name(wcs[i].status));
                }
            }
            sendsDone += ns;
            final int nr = rcq.poll(wcs);
            final long now = System.nanoTime();
            for (int i = 0; i < nr; i++) {
                final WorkCompletion wc = wcs[i];
                final int slot = (int) wc.wrId;
                if (check) {
                    checked++;
                    if (wc.status != WcStatus.SUCCESS || wc.byteLen != slotBytes || dst.segment()
                        .asSlice((long) slot * slotBytes + GRH, size).mismatch(src.segment()) != -1) {
                        bad++;
                    }
                } else if (wc.status != WcStatus.SUCCESS) {
                    throw new IllegalStateException("UD receive completed with " + WcStatus.name(wc.status));
                }
                received++;
                peak.completed(received, now);
                postRecv(slot); // every slot stays posted, across runs too
            }
            if (ns + nr > 0) {
                lastProgress = now;
            } else if (now - lastProgress > STALL_NS) {
                throw new Deadline.TimeoutError("-c UD: no datagram for 10 s after " + received + " of " + iters
                    + " (UD does not retransmit: one was lost)");
            }
        }
        // the sends of the last datagrams may complete after their receives
        final long deadline = System.nanoTime() + STALL_NS;
        while (sendsDone < posted) {
            driver.progress();
            sendsDone += scq.poll(wcs);
            if (System.nanoTime() > deadline) {
                throw new Deadline.TimeoutError("-c UD: send completions missing after 10 s");
            }
        }
        final double secs = Math.max(1e-9, (System.nanoTime() - start) / 1e9);
        final double avgMsgs = iters / secs;
        final double peakMsgs = peak.peakMsgsPerSec(avgMsgs);
        return new Result(new BwResult(size, iters, peakMsgs * size / (1 << 20), avgMsgs * size / (1 << 20),
            avgMsgs / 1e6), checked, bad);
    }

    private void postRecv(final int slot) {
        qb.postRecv(recv.wrId(slot).sge(dst, (long) slot * slotBytes, slotBytes));
    }

    private static void fill(final MemorySegment seg, final long seed) {
        long x = seed * 0x9E3779B97F4A7C15L;
        for (long i = 0; i < seg.byteSize(); i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) (x >>> 56));
        }
    }

    /** Stops the NICs and frees the buffers. */
    public void close() {
        driver.close();
        arena.close();
    }
}
