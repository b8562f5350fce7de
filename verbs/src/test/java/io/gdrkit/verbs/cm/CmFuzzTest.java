/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.auth.Token;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Seeded fuzzing of the CM's message parser with 25,000 mutated REQs (part of issue 18's 10^5 inputs; the
 * fabric hellos, packets and ring headers are fuzzed in softnic). Every input must give either a message whose
 * fields are all in their documented ranges, or a PROTOCOL {@link CmException}: nothing else escapes.
 */
@Timeout(60)
class CmFuzzTest {
    static final int INPUTS = 25_000;

    @Test
    void mutatedRequestsGiveAValidMessageOrANamedProtocolError() throws IOException {
        final SplittableRandom rnd = new SplittableRandom(18);
        final ByteArrayOutputStream base = new ByteArrayOutputStream();
        new CmMessage(CmMessage.REQ, 0x1234, 0x56, 7, 4096, new byte[42]).signed(Token.of("fuzzing token"),
            new byte[16]).write(new DataOutputStream(base));
        final byte[] valid = base.toByteArray();
        int parsed = 0;
        int refused = 0;
        for (int i = 0; i < INPUTS; i++) {
            final byte[] in = Mutator.mutate(valid, rnd);
            try {
                final CmMessage m = CmMessage.read(new DataInputStream(new ByteArrayInputStream(in)));
                parsed++;
                assertTrue(m.type() >= CmMessage.REQ && m.type() <= CmMessage.INFO, m::toString);
                assertTrue(m.privateData().length <= CmMessage.MAX_PRIVATE_DATA);
                if (m.type() == CmMessage.REQ || m.type() == CmMessage.REP) {
                    assertTrue(m.qpn() >= 2 && m.qpn() <= CmMessage.MAX_QPN, m::toString);
                    assertTrue(m.lid() >= 1 && m.lid() <= CmMessage.MAX_LID, m::toString);
                    assertTrue(Integer.bitCount(m.mtu()) == 1 && m.mtu() >= 256, m::toString);
                }
            } catch (final CmException e) {
                assertEquals(CmException.Reason.PROTOCOL, e.reason(), e::getMessage);
                refused++;
            }
        }
        assertEquals(INPUTS, parsed + refused);
        assertTrue(parsed > 0 && refused > 0, "the mutator reaches both outcomes: " + parsed + "/" + refused);
    }

    /** Byte flips, field overwrites with edge values, truncation and extension; seeded, nothing else random. */
    static final class Mutator {
        private static final int[] EDGES = {0, 1, -1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000};

        private Mutator() {
        }

        static byte[] mutate(final byte[] valid, final SplittableRandom rnd) {
            byte[] b = valid.clone();
            final int ops = 1 + rnd.nextInt(4);
            for (int k = 0; k < ops; k++) {
                switch (rnd.nextInt(5)) {
                    case 0 -> {
                        if (b.length > 0) {
                            b[rnd.nextInt(b.length)] ^= (byte) (1 << rnd.nextInt(8));
                        }
                    }
                    case 1 -> {
                        if (b.length >= 4) {
                            final int at = rnd.nextInt(b.length - 3);
                            final int v = EDGES[rnd.nextInt(EDGES.length)];
                            b[at] = (byte) (v >>> 24);
                            b[at + 1] = (byte) (v >>> 16);
                            b[at + 2] = (byte) (v >>> 8);
                            b[at + 3] = (byte) v;
                        }
                    }
                    case 2 -> b = Arrays.copyOf(b, rnd.nextInt(b.length + 1));
                    case 3 -> {
                        final byte[] more = new byte[rnd.nextInt(300)];
                        rnd.nextBytes(more);
                        final byte[] c = Arrays.copyOf(b, b.length + more.length);
                        System.arraycopy(more, 0, c, b.length, more.length);
                        b = c;
                    }
                    default -> {
                        if (b.length > 0) {
                            b[rnd.nextInt(b.length)] = (byte) rnd.nextInt(256);
                        }
                    }
                }
            }
            return b;
        }
    }
}
