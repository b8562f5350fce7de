/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.auth.Token;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Seeded fuzzing of what peers hand the fabrics: 25,000 TCP fabric hellos and 25,000 shared-memory ring states
 * (with CmFuzzTest and PacketFuzzTest, issue 18's 10^5 inputs). No input may hang, throw anything but the named
 * error, or read outside the ring.
 */
@Timeout(60)
class FabricFuzzTest {
    private static final int INPUTS = 25_000;

    @Test
    void mutatedHellosAreAcceptedOnlyWhenValidElseNamed() {
        final Token token = Token.of("fuzzing token");
        final int cap = 1 << 16;
        try (TcpFabric f = new TcpFabric(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), cap, null, false,
            4, token)) {
            f.attach(1);
            final byte[] nonce = new byte[16];
            final ByteBuffer h = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN);
            h.putInt('G' | 'D' << 8 | 'R' << 16 | 'T' << 24).putShort((short) 2).putShort((short) 0).putInt(7)
                .putInt(99).putShort((short) 0).putShort((short) 2).putInt(cap);
            final byte[] valid = new byte[56];
            System.arraycopy(h.array(), 0, valid, 0, 24);
            System.arraycopy(token.answer(nonce, h.array()), 0, valid, 24, 32);
            assertEquals(null, f.checkHello(valid, nonce), "the unmutated hello is accepted");
            final SplittableRandom rnd = new SplittableRandom(1818);
            int accepted = 0;
            for (int i = 0; i < INPUTS; i++) {
                final byte[] in = Mutator.mutate(valid, rnd, rnd.nextInt(4) != 0);
                final String why = f.checkHello(in, nonce);
                if (why == null) {
                    accepted++;
                    // only the authenticated bytes may pass: any change to them fails the HMAC
                    assertTrue(java.util.Arrays.equals(java.util.Arrays.copyOf(in, 24), h.array()),
                        "an accepted hello carries exactly the signed fields");
                } else {
                    assertTrue(!why.isBlank());
                }
            }
            assertTrue(accepted < INPUTS / 10, "almost every mutation is refused: " + accepted);
        }
    }

    @Test
    void randomRingStatesEndOrAreNamedCorrupt() {
        final SplittableRandom rnd = new SplittableRandom(1819);
        final int capacity = 1024;
        int corrupt = 0;
        long records = 0;
        try (Arena arena = Arena.ofConfined()) {
            final MemorySegment seg = arena.allocate(SpscRingBuffer.segmentSize(capacity), 64);
            for (int i = 0; i < INPUTS; i++) {
                seg.fill((byte) 0);
                // a plausible start: a few well-formed records, then random damage to headers and positions
                final SpscRingBuffer producer = new SpscRingBuffer(seg);
                final int n = rnd.nextInt(6);
                for (int k = 0; k < n; k++) {
                    final long at = producer.tryClaim(rnd.nextInt(200));
                    if (at >= 0) {
                        producer.commit();
                    }
                }
                final int damage = rnd.nextInt(4);
                for (int k = 0; k < damage; k++) {
                    final int where = rnd.nextInt(3);
                    if (where == 0) {
                        seg.set(ValueLayout.JAVA_INT, (long) rnd.nextInt(capacity / 8) * 8, rnd.nextInt());
                    } else if (where == 1) {
                        seg.set(ValueLayout.JAVA_INT, (long) rnd.nextInt(capacity / 8) * 8 + 4, rnd.nextInt());
                    } else {
                        seg.set(ValueLayout.JAVA_LONG, capacity, rnd.nextLong(-4096, 1L << 40));
                    }
                }
                final SpscRingBuffer consumer = new SpscRingBuffer(seg);
                final long[] seen = {0};
                try {
                    // bounded: a valid record advances at least 8 bytes, a padding exactly to the end
                    for (int round = 0; round < 4; round++) {
                        consumer.read((b, off, len) -> {
                            assertTrue(off >= 0 && len >= 0 && off + len <= capacity, "inside the ring");
                            seen[0]++;
                        }, 1000);
                    }
                } catch (final RingCorruptException e) {
                    corrupt++;
                    assertTrue(e.getMessage().startsWith("corrupt ring: "));
                }
                records += seen[0];
            }
        }
        assertTrue(corrupt > 0 && records > 0, "both outcomes reached: " + corrupt + " corrupt, " + records
            + " records read");
    }
}
