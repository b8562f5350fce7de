/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.cuda;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The descriptor ring's bytes are agent.cu's layout (AgentRing's diagram), byte by byte; slots wrap; words check. */
class AgentRingTest {

    @Test
    void theHeaderAndADescriptorAreTheDocumentedBytes() {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment m = a.allocate(AgentRing.bytes(4), 64);
            m.fill((byte) 0x5a); // construction clears every byte
            final AgentRing r = new AgentRing(m, 4, 16);
            assertEquals(64 + 8 * 4 + 64 * 4, AgentRing.bytes(4));
            assertArrayEquals("GDRAGNT1".getBytes(java.nio.charset.StandardCharsets.US_ASCII),
                m.asSlice(0, 8).toArray(ValueLayout.JAVA_BYTE));
            assertEquals(4, m.get(ValueLayout.JAVA_INT, 8));
            assertEquals(16, m.get(ValueLayout.JAVA_INT, 12));
            for (long i = 16; i < AgentRing.bytes(4); i++) {
                assertEquals(0, m.get(ValueLayout.JAVA_BYTE, i), "byte " + i);
            }
            r.post(6, 0x1122334455667788L, 0x0102030405060708L, 0x0a0b0c0d, AgentRing.FENCE | AgentRing.WAIT_CE, 9);
            // seq 6 lives in slot (6 - 1) % 4 = 1: descriptors start after the 4 completion words, 64 B each
            final long at = 64 + 8 * 4 + 64;
            final byte[] want = new byte[64];
            final java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(want).order(ByteOrder.LITTLE_ENDIAN);
            b.putLong(6).putLong(0x1122334455667788L).putLong(0x0102030405060708L).putInt(0x0a0b0c0d).putInt(5)
                .putLong(9);
            assertArrayEquals(want, m.asSlice(at, 64).toArray(ValueLayout.JAVA_BYTE));
            assertEquals(6, r.descSeq(1));
            assertEquals(0x1122334455667788L, r.descDst(1));
            assertEquals(0x0102030405060708L, r.descSrc(1));
            assertEquals(0x0a0b0c0d, r.descLen(1));
            assertEquals(5, r.descFlags(1));
            assertEquals(9, r.descCeWait(1));
            // the other slots are untouched
            for (final int s : new int[] {0, 2, 3}) {
                assertEquals(0, r.descSeq(s));
            }
        }
    }

    @Test
    void seqsWrapAroundTheSlotsAndCompletionWordsAreChecked() {
        try (Arena a = Arena.ofConfined()) {
            final AgentRing r = new AgentRing(a.allocate(AgentRing.bytes(8), 64), 8, 1);
            assertEquals(0, r.slot(1));
            assertEquals(7, r.slot(8));
            assertEquals(0, r.slot(9));
            assertEquals(3, r.slot(1 << 20 | 4));
            // the agent writes the seq into the slot's completion word (here by hand)
            r.segment().set(ValueLayout.JAVA_LONG, 64 + 8 * 2, 11);
            assertEquals(11, r.done(2));
            assertTrue(r.plausible(2, 11, 11));
            assertTrue(r.plausible(2, 3, 11));
            assertTrue(r.plausible(2, 0, 11));
            assertFalse(r.plausible(2, 11, 10), "newer than anything posted");
            assertFalse(r.plausible(2, 12, 20), "a seq of another slot");
            assertFalse(r.plausible(2, -1, 20), "negative");
            r.segment().set(ValueLayout.JAVA_LONG, 16, (2L << 56) | 7);
            assertEquals((2L << 56) | 7, r.fault());
            r.segment().set(ValueLayout.JAVA_LONG, 24, 42);
            assertEquals(42, r.ceDone());
            assertEquals(24, r.ceDoneOffset());
        }
    }

    @Test
    void aRingNeedsAPowerOfTwoAndRoomAndAlignment() {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment m = a.allocate(AgentRing.bytes(8) + 64, 64);
            assertThrows(IllegalArgumentException.class, () -> new AgentRing(m, 6, 1));
            assertThrows(IllegalArgumentException.class, () -> new AgentRing(m, 1, 1));
            assertThrows(IllegalArgumentException.class, () -> new AgentRing(m.asSlice(0, AgentRing.bytes(8) - 1), 8, 1));
            assertThrows(IllegalArgumentException.class, () -> new AgentRing(m.asSlice(8), 8, 1));
        }
    }
}
