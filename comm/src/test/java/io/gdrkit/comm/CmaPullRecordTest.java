/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The single-copy setup record a peer sends through the bootstrap ("pid threshold address value"): a well-formed one
 * is read field by field, and anything else (wrong field count, a pid out of range, another threshold, bytes that
 * are no number, a seeded fuzz of mutated and random records) is a named reason, never an exception.
 */
class CmaPullRecordTest {
    private static byte[] ascii(final String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    @Test
    void aWellFormedRecordIsReadFieldByField() {
        final long[] out = new long[3];
        assertNull(CmaPull.parseRecord(ascii("4242 65536 7f00deadbeef ffffffffffffffff"), 1, 0, 65536, out));
        assertArrayEquals(new long[] {4242, 0x7f00deadbeefL, -1L}, out);
    }

    @Test
    void eachBadFieldIsNamed() {
        final long[] out = new long[3];
        assertEquals("rank 2 has it off (gdrkit.coll.cma.bytes=0)",
            CmaPull.parseRecord(ascii("4242 0 10 20"), 2, 0, 65536, out));
        assertEquals("rank 2 has gdrkit.coll.cma.bytes=4096, rank 0 65536 (every rank must give the same)",
            CmaPull.parseRecord(ascii("4242 4096 10 20"), 2, 0, 65536, out));
        assertEquals("rank 3 sent a malformed pid record (3 fields)",
            CmaPull.parseRecord(ascii("4242 65536 10"), 3, 0, 65536, out));
        assertEquals("rank 3 sent a malformed pid record (pid 0)",
            CmaPull.parseRecord(ascii("0 65536 10 20"), 3, 0, 65536, out));
        assertEquals("rank 3 sent a malformed pid record (pid 2147483648)",
            CmaPull.parseRecord(ascii("2147483648 65536 10 20"), 3, 0, 65536, out));
        assertTrue(CmaPull.parseRecord(ascii("4242 65536 10000000000000000 20"), 3, 0, 65536, out)
            .startsWith("rank 3 sent a malformed pid record ("));
        assertEquals("rank 1 sent a malformed pid record (1 fields)", CmaPull.parseRecord(new byte[0], 1, 0, 65536,
            out));
    }

    @Test
    void aSeededFuzzOfRecordsGetsAReasonOrAUsableRecordNeverAnException() {
        final SplittableRandom rnd = new SplittableRandom(0x5eedC3A);
        final byte[] good = ascii("4242 65536 7f00deadbeef 1234abcd");
        final String alphabet = " 0123456789abcdef-+x\u00ff";
        int refused = 0;
        for (int i = 0; i < 20_000; i++) {
            final byte[] r;
            if (i % 2 == 0) {
                r = good.clone();
                for (int k = 1 + rnd.nextInt(4); k > 0; k--) {
                    r[rnd.nextInt(r.length)] = (byte) rnd.nextInt(256);
                }
            } else {
                r = new byte[rnd.nextInt(64)];
                for (int k = 0; k < r.length; k++) {
                    r[k] = (byte) alphabet.charAt(rnd.nextInt(alphabet.length()));
                }
            }
            final long[] out = new long[3];
            final String why = CmaPull.parseRecord(r, 1, 0, 65536, out);
            if (why == null) {
                assertTrue(out[0] > 0 && out[0] <= Integer.MAX_VALUE, () -> new String(r, StandardCharsets.ISO_8859_1));
            } else {
                refused++;
                assertTrue(why.startsWith("rank 1 ") && why.length() < 200, why);
            }
        }
        assertTrue(refused > 10_000, "most mutations are refused: " + refused);
    }
}
