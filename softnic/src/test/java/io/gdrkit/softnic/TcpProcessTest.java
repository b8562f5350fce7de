/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.QpBringUp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.softnic.fabric.Fabric;
import io.gdrkit.softnic.fabric.ShmFabric;
import io.gdrkit.softnic.fabric.TcpFabric;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Software NICs in different processes joined by TCP (over loopback and across network namespaces), and what a
 * NIC sees when its peer's process is killed, over TCP and over shared memory.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TcpProcessTest {
    private static final int SIZE = 6 << 20;

    @Test
    void writeBetweenProcessesOverTcpIsByteExact() throws Exception {
        try (ChildJvm passive = new ChildJvm(List.of(), TcpPeer.class, "passive", "127.0.0.1",
            Integer.toString(SIZE))) {
            final String ready = passive.expect("READY ", 30);
            final String[] passiveSaid = {null};
            assertEquals("OK " + SIZE, TcpPeer.active("127.0.0.1", "127.0.0.1", ready, SIZE, passive.input(),
                r -> { }, () -> {
                    final String line = passive.poll();
                    if (line != null && !line.equals("UP")) {
                        passiveSaid[0] = line;
                    }
                    return passiveSaid[0] != null;
                }));
            assertEquals("OK " + SIZE, passiveSaid[0]);
            assertEquals(0, passive.awaitExit(30));
        }
    }

    /** Two namespaces joined by a veth pair: a real (virtual) network between two JVMs. */
    @Test
    void writeAcrossNetworkNamespaces() throws Exception {
        final String ip = Files.isExecutable(Path.of("/usr/sbin/ip")) ? "/usr/sbin/ip"
            : Files.isExecutable(Path.of("/sbin/ip")) ? "/sbin/ip" : null;
        Assumptions.assumeTrue(ip != null, "iproute2's ip is not installed");
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "network namespaces need root");
        final String tag = "gk" + (ProcessHandle.current().pid() % 100_000);
        final String nsA = tag + "a";
        final String nsB = tag + "b";
        final List<String> undo = new ArrayList<>();
        try {
            Assumptions.assumeTrue(sh(ip, "netns", "add", nsA) == 0, "ip netns add does not work here");
            undo.add(nsA);
            assertEquals(0, sh(ip, "netns", "add", nsB));
            undo.add(nsB);
            // veth names are unique per test JVM and vanish with the namespaces
            assertEquals(0, sh(ip, "link", "add", tag + "va", "type", "veth", "peer", "name", tag + "vb"));
            assertEquals(0, sh(ip, "link", "set", tag + "va", "netns", nsA));
            assertEquals(0, sh(ip, "link", "set", tag + "vb", "netns", nsB));
            assertEquals(0, sh(ip, "-n", nsA, "addr", "add", "10.77.0.1/24", "dev", tag + "va"));
            assertEquals(0, sh(ip, "-n", nsB, "addr", "add", "10.77.0.2/24", "dev", tag + "vb"));
            for (final String[] up : new String[][] {{nsA, tag + "va"}, {nsB, tag + "vb"}, {nsA, "lo"}, {nsB, "lo"}}) {
                assertEquals(0, sh(ip, "-n", up[0], "link", "set", up[1], "up"));
            }
            try (ChildJvm passive = new ChildJvm(List.of(ip, "netns", "exec", nsB), TcpPeer.class, "passive",
                "10.77.0.2", Integer.toString(SIZE));
                 ChildJvm active = new ChildJvm(List.of(ip, "netns", "exec", nsA), TcpPeer.class, "active",
                     "10.77.0.1", "10.77.0.2", Integer.toString(SIZE))) {
                // the parent relays the out-of-band exchange, as a connection manager would
                active.send(passive.expect("READY ", 30));
                passive.send(active.expect("PEER ", 30));
                passive.expect("UP", 30);
                active.expect("OK " + SIZE, 60);
                passive.expect("OK " + SIZE, 30);
                active.send("DONE");
                assertEquals(0, passive.awaitExit(30));
                assertEquals(0, active.awaitExit(30));
            }
        } finally {
            for (final String ns : undo) {
                sh(ip, "netns", "del", ns);
            }
        }
    }

    @Test
    void tcpPeerKilledEndsInRetryExceeded() throws Exception {
        try (ChildJvm child = new ChildJvm(List.of(), TcpPeer.class, "passive", "127.0.0.1", "65536")) {
            final String[] ready = child.expect("READY ", 30).split(" ");
            final TcpFabric fabric = new TcpFabric(new InetSocketAddress("127.0.0.1", 0), TcpPeer.LINK, null, true, 2);
            peerKilled(fabric, () -> fabric.connect(2, new InetSocketAddress("127.0.0.1",
                Integer.parseInt(ready[1]))), child, Integer.parseInt(ready[2]), Long.parseLong(ready[3]),
                Integer.parseInt(ready[4]));
        }
    }

    @Test
    void shmPeerKilledEndsInRetryExceeded() throws Exception {
        final Path base = Files.isDirectory(Path.of("/dev/shm")) ? Path.of("/dev/shm") : Path.of(
            System.getProperty("java.io.tmpdir"));
        final Path dir = Files.createTempDirectory(base, "gdrkit-kill-");
        try (ChildJvm child = new ChildJvm(List.of(), ShmPeer.class, dir.toString(), "65536")) {
            final String[] ready = child.expect("READY ", 30).split(" ");
            peerKilled(new ShmFabric(dir, 4 << 20, 4, null), () -> { }, child,
                Integer.parseInt(ready[1]), Long.parseLong(ready[2]), Integer.parseInt(ready[3]));
        } finally {
            if (Files.exists(dir)) { // both sides remove their files on close, and the last one the directory
                try (Stream<Path> files = Files.walk(dir)) {
                    files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
                }
            }
        }
    }

    /**
     * Connects a QP to the child's, proves the path with one WRITE, then kills the child with WRITEs in flight
     * and posts more: the QP must fail the first unfinished WR with RETRY_EXC_ERR, flush the rest, go to ERR.
     */
    private static void peerKilled(final Fabric fabric, final Runnable connect, final ChildJvm child,
                                   final int childQpn, final long childAddr, final int childRkey)
        throws Exception {
        final int len = 256 << 10;
        try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext(), fabric);
             Arena arena = Arena.ofShared()) {
            final SoftDevice dev = driver.addDevice("survivor", 1);
            connect.run();
            final VerbsContext ctx = dev.open();
            final ProtectionDomain pd = ctx.allocPd();
            final CompletionQueue cq = ctx.createCq(64);
            final MemorySegment buf = arena.allocate(len, 4096);
            final MemoryRegion mr = pd.registerMr(buf, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            final QueuePair qp = pd.createQp(new QpInitAttr().cqs(cq, cq));
            // 4.096 us * 2^13 = 34 ms per try, 7 retries: the peer is declared dead within about 0.3 s. Shorter
            // budgets (timeout 11-12, 2-3 retries) failed the warm-up WRITE: a freshly started child JVM on a
            // loaded 2-core machine took ~100 ms to answer its first packet over TCP.
            QpBringUp.toRts(qp, childQpn, 2, 400, 500, QpBringUp.rcDefaults().timeout(13).retryCnt(7));
            child.send("PEER " + qp.qpNum() + " " + mr.address() + " " + mr.rkey());
            child.expect("UP", 30);
            // the child's MR is 64 KiB: every WRITE lands in it
            final SendWorkRequest wr = new SendWorkRequest();
            qp.postSend(wr.clear().wrId(100).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(mr, 0, 4096).remote(childAddr, childRkey));
            assertEquals(WcStatus.SUCCESS, await(cq).status, "the path works before the kill");
            for (int i = 0; i < 4; i++) {
                qp.postSend(wr.clear().wrId(i).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(mr, 0, 65536).remote(childAddr, childRkey));
            }
            child.kill();
            final long killed = System.nanoTime();
            for (int i = 4; i < 8; i++) {
                qp.postSend(wr.clear().wrId(i).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(mr, 0, 65536).remote(childAddr, childRkey));
            }
            final List<Integer> statuses = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                final WorkCompletion wc = await(cq);
                assertEquals(i, wc.wrId, "completions in WR order");
                statuses.add(wc.status);
            }
            final long tookMs = (System.nanoTime() - killed) / 1_000_000;
            final int failed = statuses.indexOf(WcStatus.RETRY_EXC_ERR);
            assertTrue(failed >= 0, () -> "one WR fails with RETRY_EXC_ERR: " + statuses);
            for (int i = 0; i < 8; i++) {
                final int expected = i < failed ? WcStatus.SUCCESS : i == failed ? WcStatus.RETRY_EXC_ERR
                    : WcStatus.WR_FLUSH_ERR;
                assertEquals(expected, statuses.get(i), "WR " + i + " of " + statuses);
            }
            assertEquals(QpState.ERR, qp.queryQp().qpState);
            assertTrue(tookMs < 10_000, "the dead peer was noticed in " + tookMs + " ms");
        }
    }

    /** One completion, copied; the NIC is progressed by the polling (invoker mode). Fails after 20 s. */
    private static WorkCompletion await(final CompletionQueue cq) {
        final WorkCompletion[] wc = {new WorkCompletion()};
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (cq.poll(wc) == 0) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no completion within 20 s: a thread hangs on the dead peer");
            }
        }
        final WorkCompletion copy = new WorkCompletion();
        copy.copyFrom(wc[0]);
        return copy;
    }

    /** Runs a command with a 10 s bound; returns its exit status (-1 if it had to be killed). */
    private static int sh(final String... cmd) throws IOException, InterruptedException {
        final Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return -1;
        }
        return p.exitValue();
    }
}
