/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.visibility;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.labs.visibility.VisConfig.Consumer;
import io.gdrkit.labs.visibility.VisConfig.Flag;
import io.gdrkit.labs.visibility.VisConfig.Injection;
import io.gdrkit.labs.visibility.VisConfig.Poll;
import io.gdrkit.labs.visibility.VisConfig.Readback;
import io.gdrkit.labs.visibility.VisConfig.Source;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/** The visibility lab's Context: defaults, values by name, one validation naming the option, frozen after. */
class VisConfigTest {

    @Test
    void defaultsAndValuesByName() {
        assertEquals("VisConfig[gpu=sim:v100, consumer=PERSISTENT, flag=RECEIVER, readback=OFF, wrSplit=1, "
            + "size=65536, rounds=20, senders=1, syncMemops=false, source=HOST, poll=ACQUIRE, seed=1, inject=none, "
            + "peerConsumer=false, refill=false]", new VisConfig().conclude().toString());
        final VisConfig c = new VisConfig().gpu("sim:h200").consumer(Consumer.PERSISTENT).flag(Flag.IMM)
            .readback(Readback.FLUSH_ALL).wrSplit(16).size(4096).rounds(9).senders(3).syncMemops(true)
            .source(Source.GPU).seed(42).inject(Injection.parse("skip-write@2")).peerConsumer(true).refill(true).conclude();
        assertEquals("VisConfig[gpu=sim:h200, consumer=PERSISTENT, flag=IMM, readback=FLUSH_ALL, wrSplit=16, "
            + "size=4096, rounds=9, senders=3, syncMemops=true, source=GPU, poll=ACQUIRE, seed=42, "
            + "inject=skip-write@2, peerConsumer=true, refill=true]", c.toString());
        assertTrue(c.simulated());
        assertTrue(c.isConcluded());
    }

    @Test
    void everyBadValueNamesItsOption() {
        bad(c -> c.gpu("gpu0"), "a GPU spec is sim:<v100|h100|h200|all-devices> or cuda:N, not 'gpu0'");
        bad(c -> c.gpu("sim:a100"), "unknown simulated GPU 'a100' (v100, h100, h200, all-devices, no-gdr)");
        bad(c -> c.wrSplit(2), "--wr-split must be 1, 16 or 256, not 2");
        bad(c -> c.wrSplit(16).size(8), "--size must be between the WR split (16) and 2 GiB, not 8");
        bad(c -> c.rounds(0), "--rounds must be 1..16777215, not 0");
        bad(c -> c.senders(129), "--senders must be 1..128, not 129");
        bad(c -> c.consumer(Consumer.LAUNCH).flag(Flag.SENDER_SAME_QP),
            "--consumer launch reads no flag: --flag sender-same-qp needs --consumer persistent");
        bad(c -> c.flag(Flag.SENDER_OTHER_QP).readback(Readback.FLUSH), "--readback flush is the receiver's API, "
            + "and with --flag sender-other-qp the receiver's CPU is not between the data and the flag: use off or on");
        bad(c -> c.rounds(3).inject(Injection.parse("bad-rkey@4")), "--inject bad-rkey@4: round 4 is beyond --rounds 3");
        bad(c -> c.inject(Injection.parse("bad-launch@2")),
            "--inject bad-launch@2: the persistent consumer is launched once, before round 1: use bad-launch@1");
        bad(c -> c.gpu("cuda:0").peerConsumer(true).source(Source.GPU),
            "--consumer-gpu peer with --source gpu needs three GPUs' worth of roles on two: use --source host");
        bad(c -> c.gpu("cuda:0").consumer(Consumer.LAUNCH).poll(Poll.PLAIN),
            "--poll plain is how the persistent consumer loads its flag; a launched consumer polls nothing");
        bad(c -> c.poll(Poll.VOLATILE), "--poll volatile is a CUDA experiment (how the compiled kernel loads the "
            + "flag); the simulated GPU's consumer always uses acquire loads");
        assertThrows(NullPointerException.class, () -> new VisConfig().flag(null));
    }

    @Test
    void frozenAfterConclude() {
        final VisConfig c = new VisConfig().conclude();
        assertEquals("VisConfig already concluded: it is frozen",
            assertThrows(IllegalStateException.class, () -> c.rounds(3)).getMessage());
        assertThrows(IllegalStateException.class, c::conclude);
    }

    @Test
    void travelsToTheSendersByteForByteAndIsCheckedThere() throws IOException {
        final VisConfig c = new VisConfig().gpu("cuda:1").consumer(Consumer.PERSISTENT).flag(Flag.SENDER_SAME_QP)
            .readback(Readback.ON).wrSplit(256).size(1 << 20).rounds(7).senders(5).syncMemops(true)
            .source(Source.GPU).poll(Poll.VOLATILE).seed(-3).inject(Injection.parse("bad-rkey@7")).refill(true)
            .conclude();
        final byte[] wire = write(c);
        final VisConfig back = VisConfig.read(new DataInputStream(new ByteArrayInputStream(wire)));
        assertEquals(c, back);
        assertEquals(c.hashCode(), back.hashCode());
        assertTrue(back.isConcluded());
        assertFalse(back.simulated());
        assertTrue(back.refill());
        assertFalse(VisConfig.read(new DataInputStream(new ByteArrayInputStream(write(new VisConfig().conclude()))))
            .refill());

        // a peer's bad ordinal or bad combination is an IOException naming it, not an array index crash
        final byte[] badOrdinal = wire.clone();
        badOrdinal[2 + "cuda:1".length()] = 9; // the consumer byte
        final IOException e1 = assertThrows(IOException.class,
            () -> VisConfig.read(new DataInputStream(new ByteArrayInputStream(badOrdinal))));
        assertEquals("bad configuration from the receiver: consumer ordinal 9 is not one of 0..1", e1.getMessage());
        final byte[] badRounds = write(new VisConfig().rounds(1).conclude());
        // rounds is after gpu(2+8) consumer flag readback (3) wrSplit (4) size (8): offset 25
        badRounds[25] = (byte) 0x7F;
        final IOException e2 = assertThrows(IOException.class,
            () -> VisConfig.read(new DataInputStream(new ByteArrayInputStream(badRounds))));
        assertTrue(e2.getMessage().startsWith("bad configuration from the receiver: --rounds must be 1..16777215"),
            e2.getMessage());
    }

    private static byte[] write(final VisConfig c) throws IOException {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            c.write(out);
        }
        return bytes.toByteArray();
    }

    private static void bad(final UnaryOperator<VisConfig> set, final String message) {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> set.apply(new VisConfig()).conclude());
        assertEquals(message, e.getMessage());
    }
}
