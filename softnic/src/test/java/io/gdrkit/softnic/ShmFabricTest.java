/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.QpBringUp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.softnic.fabric.ShmFabric;
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
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** Two processes, one software NIC each, exchanging RDMA WRITEs through shared memory. */
class ShmFabricTest {
    @Test
    void writeBetweenProcessesIsByteExact() throws Exception {
        final ShmFabric.CopyMode m = writeAndEcho(true, true, true, 1);
        assertEquals("ring", m.mode(), "with a link CRC the bytes travel: " + m);
        assertEquals(0, m.referencePackets());
    }

    /** No link CRC: each process pulls the other's WRITE with process_vm_readv (one copy), both directions. */
    @Test
    void writeBetweenProcessesOnTheCmaPathIsByteExact() throws Exception {
        final ShmFabric.CopyMode m = writeAndEcho(false, true, true, 1);
        assertEquals("cma", m.mode(), m::toString);
        assertTrue(m.referencePackets() > 0, () -> "references sent to the child: " + m);
        assertTrue(m.pulls() > 0, () -> "the child's write-back pulled by this process: " + m);
        assertEquals(0, m.pullErrors(), m::toString);
    }

    /**
     * The cma path with 4 copy engines in both processes (gdrkit.nic.copy.engines, threshold 4096: each 1 MiB pull
     * ahead is split in four): byte-exact both ways, and this process split its pulls of the child's write-back.
     */
    @Test
    void writeBetweenProcessesWithCopyEnginesIsByteExact() throws Exception {
        final ShmFabric.CopyMode m = writeAndEcho(false, true, true, 4);
        assertEquals("cma", m.mode(), m::toString);
        assertTrue(m.pulls() > 0, () -> "the child's write-back pulled by this process: " + m);
        assertEquals(0, m.pullErrors(), m::toString);
    }

    /** The child refuses to grant (gdrkit.nic.shm.cma=false there): both directions fall back to the ring. */
    @Test
    void writeBetweenProcessesFallsBackToTheRingWhenThePeerDeclines() throws Exception {
        final ShmFabric.CopyMode m = writeAndEcho(false, true, false, 1);
        assertEquals("ring", m.mode(), m::toString);
        assertTrue(m.reason().contains("gdrkit.nic.shm.cma is off in the peer"), m::reason);
        assertEquals(0, m.referencePackets(), m::toString);
        assertEquals(0, m.pulls(), "this process declines nothing, but the child sends no references: " + m);
    }

    private static ShmFabric.CopyMode writeAndEcho(final boolean crc, final boolean cma, final boolean childCma,
                                                   final int engines) throws Exception {
        final int size = 6 << 20;
        final Path base = Files.isDirectory(Path.of("/dev/shm")) ? Path.of("/dev/shm") : Path.of(
            System.getProperty("java.io.tmpdir"));
        final Path dir = Files.createTempDirectory(base, "gdrkit-test-");
        final Process child = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "--enable-native-access=ALL-UNNAMED", "-D" + SoftNicContext.COPY_ENGINES_PROP + "=" + engines,
            "-D" + SoftNicContext.COPY_THRESHOLD_PROP + "=4096", "-cp", System.getProperty("java.class.path"),
            ShmPeer.class.getName(), dir.toString(), Integer.toString(size), crc ? "crc" : "nocrc",
            childCma ? "cma=true" : "cma=false")
            .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        final ShmFabric fabric = new ShmFabric(dir, 4 << 20, 4, null, crc);
        try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext().shmCma(cma).copyEngines(engines)
                .copyThreshold(4096), fabric);
             Arena arena = Arena.ofShared()) {
            final BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream()));
            final PrintStream to = new PrintStream(child.getOutputStream(), true);
            final SoftDevice dev = driver.addDevice("shm-test", 1);
            final VerbsContext ctx = dev.open();
            final ProtectionDomain pd = ctx.allocPd();
            final CompletionQueue cq = ctx.createCq(64);
            final MemorySegment buf = arena.allocate(2L * size, 4096);
            final MemoryRegion mr = pd.registerMr(buf, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            final QueuePair qp = pd.createQp(new QpInitAttr().cqs(cq, cq));
            final String ready = out.readLine();
            assertTrue(ready != null && ready.startsWith("READY "), "child said: " + ready);
            final String[] f = ready.split(" ");
            QpBringUp.toRts(qp, Integer.parseInt(f[1]), 2, 400, 500, QpBringUp.rcDefaults());
            qp.postRecv(new RecvWorkRequest().wrId(77).sge(mr, 0, 0));
            to.println("PEER " + qp.qpNum() + " " + (mr.address() + size) + " " + mr.rkey());
            // a small WRITE first opens the link, on which the child probes this process; the large WRITE waits for
            // the child's verdict, so which path it takes does not depend on who wins that race (CI once saw the
            // whole 6 MiB go through the ring before the grant arrived)
            final WorkCompletion[] first = {new WorkCompletion()};
            qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(4)
                .sge(mr, 0, 64).remote(Long.parseLong(f[2]), Integer.parseInt(f[3])));
            final long opened = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (cq.poll(first) == 0) {
                assertTrue(System.nanoTime() < opened, "timed out waiting for the first small WRITE");
            }
            assertTrue(first[0].isSuccess() && first[0].wrId == 4, first[0]::toString);
            while (cma && (fabric.copyMode(1, 2).reason().startsWith("no link")
                || fabric.copyMode(1, 2).reason().contains("has not probed"))) {
                assertTrue(System.nanoTime() < opened, () -> "no verdict from the child: " + fabric.copyMode(1, 2));
                driver.progress();
                Thread.onSpinWait();
            }
            final MemorySegment src = buf.asSlice(0, size);
            Fixture.fill(src, 1234);
            qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
                .wrId(5).imm(1234).sge(mr, 0, size).remote(Long.parseLong(f[2]), Integer.parseInt(f[3])));
            final WorkCompletion[] wc = {new WorkCompletion()};
            int seen = 0;
            boolean writeDone = false;
            boolean echoed = false;
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (seen < 2) {
                assertTrue(System.nanoTime() < deadline, "timed out waiting for the write and the echo");
                if (cq.poll(wc) == 1) {
                    seen++;
                    assertTrue(wc[0].isSuccess(), wc[0]::toString);
                    if (wc[0].opcode == WcOpcode.RDMA_WRITE) {
                        writeDone = true;
                    } else {
                        assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, wc[0].opcode);
                        assertEquals(1235, wc[0].immData);
                        assertEquals(size, wc[0].byteLen);
                        echoed = true;
                    }
                }
            }
            assertTrue(writeDone && echoed);
            Fixture.assertBytes(src, buf.asSlice(size, size), "data echoed by the other process");
            assertEquals("UP", out.readLine());
            assertEquals("OK " + size, out.readLine());
            assertTrue(child.waitFor(30, TimeUnit.SECONDS), "child exits");
            assertEquals(0, child.exitValue());
            final ShmFabric.CopyMode mode = fabric.copyMode(1, 2);
            if (engines > 1 && cma && !crc) {
                assertTrue(dev.copyEngines.splitReads() > 0, "the write-back's pulls were split");
            }
            driver.close();
            assertFalse(Files.exists(dir), "files and directory removed after both sides closed");
            return mode;
        } finally {
            child.destroyForcibly();
            if (Files.exists(dir)) { // both sides remove their files on close, and the last one the directory
                try (Stream<Path> files = Files.walk(dir)) {
                    files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
                }
            }
        }
    }
}
