/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The two hot-path settings that trade a little work per message: {@code gdrkit.nic.onecopy.min} (small payloads
 * copied into the packet instead of referenced) and {@code gdrkit.nic.scan.park} (no parking, no fence per post).
 * Either way every WRITE lands byte-exact, the sizes straddling the threshold and MTU multiples included.
 */
class HotPathKnobsTest {
    @ParameterizedTest(name = "onecopy.min {0}, park {1}")
    @CsvSource({"1,true", "1024,true", "1024,false", "1,false"})
    void writesLandByteExactWhateverTheKnobs(final int min, final boolean park) {
        final SoftNicContext ctx = new SoftNicContext().oneCopyMin(min).scanPark(park);
        try (Fixture f = new Fixture(ctx, 1 << 16)) {
            final Random rnd = new Random(42);
            final byte[] src = new byte[1 << 15];
            rnd.nextBytes(src);
            f.a.buf.asSlice(0, src.length).copyFrom(java.lang.foreign.MemorySegment.ofArray(src));
            long remote = 0;
            for (final int len : new int[] {1, 64, 1023, 1024, 1025, 4096, 4097, 12288 + 7}) {
                final long refsBefore = f.b.dev.responder.referencedPackets();
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).wrId(len).flags(SendFlags.SIGNALED)
                    .sge(f.a.mr, 0, len).remote(f.b.mr.address() + remote, f.b.mr.rkey()));
                final WorkCompletion wc = f.awaitOne(f.a.scq, "WRITE of " + len);
                assertEquals(WcStatus.SUCCESS, wc.status, "WRITE of " + len);
                assertArrayEquals(java.util.Arrays.copyOf(src, len), f.b.buf.asSlice(remote, len)
                    .toArray(ValueLayout.JAVA_BYTE), "bytes of the " + len + "-byte WRITE");
                // below the threshold the payload travelled in the packet; from it on, by reference
                final long refs = f.b.dev.responder.referencedPackets() - refsBefore;
                assertEquals(len >= min, refs > 0, len + "-byte WRITE, onecopy.min " + min + ": " + refs
                    + " referenced record(s)");
                remote += len;
            }
            f.settle(5000); // far more than the cycles after which an idle QP parks
            assertEquals(park, f.a.dev.scan.parks() > 0, "parking " + park + ": QPs parked " + f.a.dev.scan.parks());
        }
    }
}
