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
            assertEquals(64 + 8 * 4 + 256 * 4, AgentRing.bytes(4));
            assertArrayEquals("GDRAGNT2".getBytes(java.nio.charset.StandardCharsets.US_ASCII),
                m.asSlice(0, 8).toArray(ValueLayout.JAVA_BYTE));
            assertEquals(4, m.get(ValueLayout.JAVA_INT, 8));
            assertEquals(16, m.get(ValueLayout.JAVA_INT, 12));
            for (long i = 16; i < AgentRing.bytes(4); i++) {
                assertEquals(0, m.get(ValueLayout.JAVA_BYTE, i), "byte " + i);
            }
            final long seq = 0x1_0000_0006L; // the tag is the low half: 6
            r.post(seq, 0x1122334455667788L, 0x0102030405060708L, 0x0a0b0c0d, AgentRing.FENCE | AgentRing.WAIT_CE, 9);
            // seq lives in slot (seq - 1) % 4 = 1: descriptors start after the 4 completion words, 256 B each
            final long at = 64 + 8 * 4 + 256;
            final byte[] want = new byte[256];
            final java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(want).order(ByteOrder.LITTLE_ENDIAN);
            // each word: the value in its low half, the tag in its high half
            for (final int v : new int[] {0x0a0b0c0d, 5, 0x55667788, 0x11223344, 0x05060708, 0x01020304, 9, 0}) {
                b.putInt(v).putInt(6);
            }
            assertArrayEquals(want, m.asSlice(at, 256).toArray(ValueLayout.JAVA_BYTE));
            assertEquals(6, r.descTag(1));
            assertEquals(0x1122334455667788L, r.descDst(1));
            assertEquals(0x0102030405060708L, r.descSrc(1));
            assertEquals(0x0a0b0c0d, r.descLen(1));
            assertEquals(5, r.descFlags(1));
            assertEquals(9, r.descCeWait(1));
            // the other slots are untouched
            for (final int s : new int[] {0, 2, 3}) {
                assertEquals(0, r.descTag(s));
            }
        }
    }

    @Test
    void anInlineDescriptorCarriesItsPayloadFourBytesAWord() {
        try (Arena a = Arena.ofConfined()) {
            final AgentRing r = new AgentRing(a.allocate(AgentRing.bytes(4), 64), 4, 1);
            final MemorySegment data = a.allocate(200);
            for (int i = 0; i < 200; i++) {
                data.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 1));
            }
            assertEquals(96, AgentRing.INLINE_MAX);
            for (final int len : new int[] {1, 3, 4, 7, 64, 95, 96}) {
                final long seq = 3 + 4L * len; // slot 2 every time, a new tag each time
                r.postInline(seq, 0xdead0000L + len, data, 11, len, AgentRing.FENCE, 0);
                assertEquals(len, r.descLen(2));
                assertEquals(AgentRing.FENCE | AgentRing.INLINE, r.descFlags(2));
                assertEquals(0xdead0000L + len, r.descDst(2));
                assertEquals(0, r.descSrc(2), "no source: the payload is in the descriptor");
                for (int w = 0; w < (len + 3) / 4; w++) {
                    assertEquals((int) seq, r.wordTag(2, AgentRing.HEADER_WORDS + w), "word " + w + " of " + len);
                    for (int k = 0; k < 4 && 4 * w + k < len; k++) {
                        assertEquals((byte) ((11 + 4 * w + k) * 7 + 1), (byte) (r.wordValue(2, AgentRing.HEADER_WORDS
                            + w) >>> (8 * k)), "byte " + (4 * w + k) + " of " + len);
                    }
                }
                for (int w = 0; w < AgentRing.HEADER_WORDS; w++) {
                    assertEquals((int) seq, r.wordTag(2, w), "header word " + w);
                }
            }
            // a word past the payload keeps an older tag: the agent does not wait for it
            r.postInline(100, 0x1000, data, 0, 4, 0, 0);
            assertEquals(100, r.wordTag(3, AgentRing.HEADER_WORDS));
            assertEquals(0, r.wordTag(3, AgentRing.HEADER_WORDS + 1));
            assertThrows(IllegalArgumentException.class, () -> r.postInline(5, 0x1000, data, 0, 97, 0, 0));
            assertThrows(IllegalArgumentException.class, () -> r.postInline(5, 0x1000, data, 0, 0, 0, 0));
            assertThrows(IllegalArgumentException.class, () -> r.postInline(5, 0x1000, data, 0, 8, AgentRing.STOP, 0));
            assertEquals(0, r.descTag(0), "nothing written by a refused post");
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
