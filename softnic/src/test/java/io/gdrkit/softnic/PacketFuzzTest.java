package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.softnic.fabric.LinkHook;
import io.gdrkit.softnic.fabric.Mutator;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Seeded fuzzing of the packet path: real packets of WRITE, SEND, READ and atomic exchanges (requests and
 * responses, captured on the link) are mutated 25,000 times and handed to the receiving NIC as if they came off
 * the wire. No input may throw out of an engine (which would make the device fatal) or hang a duty cycle.
 */
@Timeout(120)
class PacketFuzzTest {
    private static final int INPUTS = 25_000;

    private record Captured(int dst, byte[] bytes) {
    }

    @Test
    void mutatedPacketsNeverBreakTheNic() {
        final List<Captured> captured = new ArrayList<>();
        final boolean[] capturing = {true};
        final LinkHook tap = (src, dst, buf, off, len) -> {
            if (capturing[0] && captured.size() < 400) {
                captured.add(new Captured(dst, buf.asSlice(off, len).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)));
            }
            return LinkHook.DELIVER;
        };
        try (Fixture f = new Fixture(new SoftNicContext().linkHook(tap), 1 << 20)) {
            f.b.qp.postRecv(new RecvWorkRequest().wrId(1).sge(f.b.mr, 0, 1 << 16));
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, 20_000).remote(f.b.mr.address(), f.b.mr.rkey()).imm(5));
            f.awaitSuccess(f.a.scq, "WRITE_WITH_IMM");
            f.b.qp.postRecv(new RecvWorkRequest().wrId(2).sge(f.b.mr, 0, 1 << 16));
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, 9000));
            f.awaitSuccess(f.a.scq, "SEND");
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, 10_000).remote(f.b.mr.address(), f.b.mr.rkey()));
            f.awaitSuccess(f.a.scq, "READ");
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, 8).remote(f.b.mr.address() + 64, f.b.mr.rkey()).atomic(3, 0));
            f.awaitSuccess(f.a.scq, "FETCH_AND_ADD");
            capturing[0] = false;
            assertTrue(captured.size() > 10, "captured " + captured.size() + " packets");
            final SplittableRandom rnd = new SplittableRandom(1820);
            try (Arena arena = Arena.ofConfined()) {
                final MemorySegment wire = arena.allocate(1 << 16, 8);
                int delivered = 0;
                for (int i = 0; i < INPUTS; i++) {
                    final Captured c = captured.get(rnd.nextInt(captured.size()));
                    final byte[] in = Mutator.mutate(c.bytes(), rnd, rnd.nextInt(3) != 0);
                    final int len = Math.min(in.length, (int) wire.byteSize());
                    MemorySegment.copy(MemorySegment.ofArray(in), 0, wire, 0, len);
                    final SoftDevice dev = c.dst() == f.a.dev.lid() ? f.a.dev : f.b.dev;
                    if (dev.duty.tryAcquire()) {
                        delivered++;
                        try {
                            dev.receiver.onRecord(wire, 0, len);
                        } catch (final RuntimeException e) {
                            throw new AssertionError("input " + i + " threw out of the receive path", e);
                        } finally {
                            dev.duty.release();
                        }
                    }
                    if (i % 64 == 0) {
                        f.settle(4); // responses, retransmissions, NAKs: the engines run on the fuzzed state
                    }
                }
                // invoker progress on one thread: nobody else holds a duty, so every input reached a receive path
                assertEquals(INPUTS, delivered, "inputs that reached the receive path");
            }
            f.settle(200);
            assertNull(f.a.dev.fatal(), () -> "device a failed: " + f.a.dev.fatal());
            assertNull(f.b.dev.fatal(), () -> "device b failed: " + f.b.dev.fatal());
            assertTrue(f.a.dev.receiver.malformed() + f.b.dev.receiver.malformed() > 0, "some inputs were malformed");
        }
    }
}
