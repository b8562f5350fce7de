/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.softnic.fabric.TcpFabric;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
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
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;

/**
 * A software NIC on a {@link TcpFabric} in its own process, for the multi-process TCP tests. Two roles:
 * <ul>
 * <li>{@code passive <bind-host> <size>}: LID 2, listens; prints {@code READY <port> <qpn> <addr> <rkey>}, reads
 * {@code PEER <qpn> <addr> <rkey>}, waits for a WRITE_WITH_IMM of size bytes, checks every byte, writes the data
 * back, prints {@code OK <size>}.</li>
 * <li>{@code active <bind-host> <passive-host> <size>}: LID 1; reads the passive side's READY line, connects,
 * prints {@code PEER ...}, writes size bytes with immediate, waits for the echo, checks it, prints OK.</li>
 * </ul>
 * Every wait has a timeout; on failure a line starting with BAD says why.
 */
public final class TcpPeer {
    static final int LINK = 4 << 20;

    private TcpPeer() {
    }

    public static void main(final String[] args) throws Exception {
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        if (args[0].equals("passive")) {
            try {
                passive(args[1], Integer.parseInt(args[2]), in);
            } catch (final IllegalStateException e) {
                System.out.println("BAD " + e.getMessage());
            }
        } else {
            final String ready = in.readLine();
            // the passive side's write-back needs our ACK: keep the NIC going until the parent says DONE
            final java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
            final Thread stdin = new Thread(() -> {
                try {
                    while (!"DONE".equals(in.readLine())) {
                        Thread.onSpinWait();
                    }
                } catch (final java.io.IOException ignored) {
                    // parent gone
                }
                done.set(true);
            });
            stdin.setDaemon(true);
            stdin.start();
            try {
                active(args[1], args[2], ready, Integer.parseInt(args[3]), System.out, r -> {
                    System.out.println(r);
                    System.out.flush();
                }, done::get);
            } catch (final IllegalStateException e) {
                System.out.println("BAD " + e.getMessage());
            }
        }
    }

    private static void passive(final String host, final int size, final BufferedReader in) throws Exception {
        final TcpFabric fabric = new TcpFabric(new InetSocketAddress(host, 0), LINK, null, true, 2);
        try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext().linkCrc(true), fabric)) {
            PassiveEcho.run(driver.addDevice("tcp-peer", 2), size, "READY " + fabric.localAddress().getPort(), in,
                System.out);
        }
    }

    /**
     * The active side: connects to the passive side described by {@code ready}, sends its PEER line through
     * {@code toPassive}, writes {@code size} bytes with immediate and checks the echo. Returns "OK size" or
     * "BAD ...".
     */
    static String active(final String bindHost, final String passiveHost, final String ready, final int size,
                         final PrintStream toPassive, final java.util.function.Consumer<String> report,
                         final java.util.function.BooleanSupplier passiveDone) throws Exception {
        if (ready == null || !ready.startsWith("READY ")) {
            report.accept("BAD passive side said: " + ready);
            return "BAD passive side said: " + ready;
        }
        final String[] f = ready.split(" ");
        final TcpFabric fabric = new TcpFabric(new InetSocketAddress(bindHost, 0), LINK, null, true, 2);
        try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext().linkCrc(true), fabric);
             Arena arena = Arena.ofShared()) {
            final SoftDevice dev = driver.addDevice("tcp-active", 1);
            fabric.connect(2, new InetSocketAddress(passiveHost, Integer.parseInt(f[1])));
            final VerbsContext ctx = dev.open();
            final ProtectionDomain pd = ctx.allocPd();
            final CompletionQueue cq = ctx.createCq(64);
            final MemorySegment buf = arena.allocate(2L * size, 4096);
            final MemoryRegion mr = pd.registerMr(buf, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            final QueuePair qp = pd.createQp(new QpInitAttr().cqs(cq, cq));
            QpBringUp.toRts(qp, Integer.parseInt(f[2]), 2, 400, 500, QpBringUp.rcDefaults());
            qp.postRecv(new RecvWorkRequest().wrId(77).sge(mr, 0, 0));
            toPassive.println("PEER " + qp.qpNum() + " " + (mr.address() + size) + " " + mr.rkey());
            toPassive.flush();
            final MemorySegment src = buf.asSlice(0, size);
            Fixture.fill(src, 1234);
            qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
                .wrId(5).imm(1234).sge(mr, 0, size).remote(Long.parseLong(f[3]), Integer.parseInt(f[4])));
            boolean written = false;
            boolean echoed = false;
            while (!(written && echoed)) {
                final WorkCompletion wc = PassiveEcho.await(cq, "the write and the echo");
                if (wc.status != WcStatus.SUCCESS) {
                    return "BAD " + wc;
                }
                if (wc.opcode == WcOpcode.RDMA_WRITE) {
                    written = true;
                } else if (wc.opcode == WcOpcode.RECV_RDMA_WITH_IMM && wc.immData == 1235 && wc.byteLen == size) {
                    echoed = true;
                } else {
                    report.accept("BAD unexpected " + wc);
                    return "BAD unexpected " + wc;
                }
            }
            final long mismatch = src.mismatch(buf.asSlice(size, size));
            final String result = mismatch == -1 ? "OK " + size : "BAD echoed byte " + mismatch;
            report.accept(result);
            // stay until the passive side has its write-back's ACK, which only this NIC can send
            final long deadline = System.nanoTime() + 30_000_000_000L;
            while (!passiveDone.getAsBoolean() && System.nanoTime() < deadline) {
                driver.progress();
            }
            return result;
        }
    }
}
