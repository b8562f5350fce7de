/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.bench;

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
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QpType;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * UD against RC SEND bandwidth on the in-JVM fabric (the speed goal: UD send_bw at 0.8x or more of RC at
 * 64 B-4 KiB). Each invocation posts {@value #BATCH} receives, {@value #BATCH} sends (the last signaled) and drives the
 * two software NICs until every receive completed; the score is messages per second. Software NIC (simulated).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class UdVsRcSendBench {
    public static final int BATCH = 32;
    private static final int QKEY = 0x1111;

    @Param({"RC", "UD"})
    public String type;

    @Param({"64", "1024", "4096"})
    public int size;

    private final Arena arena = Arena.ofShared();
    private SoftNicDriver driver;
    private QueuePair qa;
    private QueuePair qb;
    private CompletionQueue cqa;
    private CompletionQueue cqb;
    private final SendWorkRequest[] sends = new SendWorkRequest[BATCH];
    private final RecvWorkRequest[] recvs = new RecvWorkRequest[BATCH];
    private final WorkCompletion[] wcs = WorkCompletion.array(BATCH);

    @Setup
    public void setup() {
        driver = SoftNicDriver.launch(new SoftNicContext());
        final SoftDevice da = driver.addDevice("bench0");
        final SoftDevice db = driver.addDevice("bench1");
        final VerbsContext ca = da.open();
        final VerbsContext cb = db.open();
        final ProtectionDomain pa = ca.allocPd();
        final ProtectionDomain pb = cb.allocPd();
        cqa = ca.createCq(1024);
        cqb = cb.createCq(1024);
        final MemoryRegion ma = pa.registerMr(arena.allocate(8192, 4096), AccessFlags.LOCAL_WRITE);
        final MemoryRegion mb = pb.registerMr(arena.allocate((long) BATCH * 8192, 4096), AccessFlags.LOCAL_WRITE);
        final boolean ud = type.equals("UD");
        final QpInitAttr init = new QpInitAttr().cqs(cqa, cqa).qpType(ud ? QpType.UD : QpType.RC);
        init.cap.maxSendWr(256).maxRecvWr(256);
        qa = pa.createQp(init);
        final QpInitAttr initB = new QpInitAttr().cqs(cqb, cqb).qpType(ud ? QpType.UD : QpType.RC);
        initB.cap.maxSendWr(256).maxRecvWr(256);
        qb = pb.createQp(initB);
        final AddressHandle ah;
        if (ud) {
            udToRts(qa);
            udToRts(qb);
            ah = pa.createAh(new AhAttr().dlid(db.lid()));
        } else {
            QpBringUp.connect(qa, da.lid(), 0, qb, db.lid(), 0, QpBringUp.rcDefaults());
            ah = null;
        }
        final int grh = ud ? 40 : 0;
        for (int i = 0; i < BATCH; i++) {
            final SendWorkRequest s = new SendWorkRequest().wrId(i).opcode(WrOpcode.SEND).sge(ma, 0, size)
                .flags(i == BATCH - 1 ? SendFlags.SIGNALED : 0);
            if (ud) {
                s.ud(ah, qb.qpNum(), QKEY);
            }
            if (i > 0) {
                sends[i - 1].next(s);
            }
            sends[i] = s;
            final RecvWorkRequest r = new RecvWorkRequest().wrId(i).sge(mb, (long) i * 8192, size + grh);
            if (i > 0) {
                recvs[i - 1].next(r);
            }
            recvs[i] = r;
        }
    }

    private static void udToRts(final QueuePair qp) {
        final QpAttr a = new QpAttr().qkey(QKEY).state(QpState.INIT);
        a.pkeyIndex = 0;
        a.portNum = 1;
        qp.modify(a, QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.QKEY);
        qp.modify(new QpAttr().state(QpState.RTR), QpAttrMask.STATE);
        final QpAttr rts = new QpAttr().state(QpState.RTS);
        rts.sqPsn = 0;
        qp.modify(rts, QpAttrMask.STATE | QpAttrMask.SQ_PSN);
    }

    @TearDown
    public void tearDown() {
        driver.close();
        arena.close();
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int send() {
        qb.postRecv(recvs[0]);
        qa.postSend(sends[0]);
        int received = 0;
        int sent = 0;
        final long deadline = System.nanoTime() + 10_000_000_000L;
        while (received < BATCH || sent < 1) {
            driver.progress();
            received += cqb.poll(wcs);
            sent += cqa.poll(wcs);
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("timed out after 10 s: " + received + " of " + BATCH
                    + " receives, " + sent + " send completions (" + type + ", " + size + " B)");
            }
        }
        return received;
    }
}
