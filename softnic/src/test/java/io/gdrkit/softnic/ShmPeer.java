package io.gdrkit.softnic;

import io.gdrkit.verbs.QpBringUp;
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
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * The other process of {@link ShmFabricTest}: a software NIC with LID 2 on a shared-memory fabric. It prints
 * its QP, waits for a WRITE_WITH_IMM, checks every byte, and writes the data back to its peer.
 */
public final class ShmPeer {
    private ShmPeer() {
    }

    public static void main(final String[] args) throws Exception {
        final Path dir = Path.of(args[0]);
        final int size = Integer.parseInt(args[1]);
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext(),
            new ShmFabric(dir, 4 << 20, 4, null)); Arena arena = Arena.ofShared()) {
            final SoftDevice dev = driver.addDevice("shm-peer", 2);
            final VerbsContext ctx = dev.open();
            final ProtectionDomain pd = ctx.allocPd();
            final CompletionQueue cq = ctx.createCq(64);
            final MemorySegment buf = arena.allocate(size, 4096);
            final MemoryRegion mr = pd.registerMr(buf, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            final QueuePair qp = pd.createQp(new QpInitAttr().cqs(cq, cq));
            System.out.println("READY " + qp.qpNum() + " " + mr.address() + " " + mr.rkey());
            System.out.flush();
            final String[] peer = in.readLine().split(" ");
            final int peerQpn = Integer.parseInt(peer[1]);
            final long peerAddr = Long.parseLong(peer[2]);
            final int peerRkey = Integer.parseInt(peer[3]);
            QpBringUp.toRts(qp, peerQpn, 1, 500, 400, QpBringUp.rcDefaults());
            qp.postRecv(new RecvWorkRequest().wrId(1).sge(mr, 0, 0));
            System.out.println("UP"); // the QP is in RTS: the peer may send
            System.out.flush();
            final WorkCompletion wc = await(cq, "the peer's WRITE_WITH_IMM");
            if (wc.status != WcStatus.SUCCESS || wc.opcode != WcOpcode.RECV_RDMA_WITH_IMM || wc.byteLen != size) {
                System.out.println("BAD completion " + wc);
                return;
            }
            final MemorySegment expected = arena.allocate(size);
            Fixture.fill(expected, wc.immData);
            final long mismatch = expected.mismatch(buf);
            if (mismatch != -1) {
                System.out.println("BAD byte " + mismatch);
                return;
            }
            qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
                .imm(wc.immData + 1).sge(mr, 0, size).remote(peerAddr, peerRkey));
            final WorkCompletion back = await(cq, "completion of the write-back");
            System.out.println(back.status == WcStatus.SUCCESS ? "OK " + size : "BAD write-back " + back);
            System.out.flush();
            // stay until the peer has seen our write: its ACK already came, so the data is placed
        }
    }

    private static WorkCompletion await(final CompletionQueue cq, final String what) {
        final WorkCompletion[] wc = {new WorkCompletion()};
        final long deadline = System.nanoTime() + 30_000_000_000L;
        while (cq.poll(wc) == 0) {
            if (System.nanoTime() > deadline) {
                System.out.println("BAD timeout waiting for " + what);
                System.exit(3);
            }
        }
        return wc[0];
    }
}
