/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.gdrkit.softnic.fabric.RemoteMemoryReader;
import io.gdrkit.softnic.fabric.ShmFabric;
import io.gdrkit.softnic.fabric.SpscRingBuffer;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link ShmFabric#copyMode}'s reason when the peer's probe checked another process than the sender: the link's
 * hello was rewritten by another process (a stranger, or a producer that replaced this one), so the verdict in the
 * trailer names that process's pid, not this one's. The other process is a real one (a child {@code sleep}, whose
 * memory this process may read as the peer's probe would); the hello is rewritten in the link file as that process
 * would write it. Both the refused and the granted verdict leave this sender on the ring, and say so exactly.
 */
class ShmCopyModeOtherProcessTest {
    private static final int MIB = 1 << 20;
    /** Trailer offsets of a link file (ShmFabric's javadoc): the producer's hello, the consumer's verdict. */
    private static final long HELLO = 128;
    private static final long VERDICT = 160;
    /** ShmFabric's verdicts GRANTED and NOT_LID_OWNER. */
    private static final long GRANTED = 1;
    private static final long NOT_LID_OWNER = 3;
    private static final VarHandle LONGS = ValueLayout.JAVA_LONG.varHandle();

    private static SoftNicContext ctx() {
        return new SoftNicContext().progressMode(SoftNicContext.ProgressMode.INVOKER);
    }

    /** A hello naming another process was refused (that process does not own LID 1's claim). */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aRefusedHelloOfAnotherProcessIsTheReasonNotThisProcesssProbe() throws Exception {
        final Process other = new ProcessBuilder("sleep", "120").redirectErrorStream(true).start();
        try (ShmCmaTest.Pair p = new ShmCmaTest.Pair(ctx(), ctx(), null, null, 2 * MIB);
             Arena mapping = Arena.ofConfined()) {
            p.awaitProbe();
            assertEquals("cma", p.modeAtoB().mode(), p.modeAtoB()::reason);
            final long pid = other.pid();
            final MemorySegment ring = rewriteHello(p, mapping, pid);
            assertEquals(NOT_LID_OWNER, ring.get(ValueLayout.JAVA_LONG, trailer(ring) + VERDICT + 8),
                "LID 2's verdict on process " + pid);
            final ShmFabric.CopyMode m = p.modeAtoB();
            assertEquals("ring", m.mode(), m::toString);
            assertEquals("the peer (LID 2) probed process " + pid + ", not this one (it found the hello's pid is not "
                + "the owner of the sender's LID claim): another process wrote this link's hello", m.reason());
            assertRingCarriesTheBytes(p, 91);
        } finally {
            end(other);
        }
    }

    /**
     * A hello naming another process that owns LID 1's claim now (a producer that replaced this one) was granted:
     * granted to that process, not to this one, so this sender stays on the ring.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aHelloOfAnotherProcessGrantedToItLeavesThisSenderOnTheRing() throws Exception {
        final Process other = new ProcessBuilder("sleep", "120").redirectErrorStream(true).start();
        try (ShmCmaTest.Pair p = new ShmCmaTest.Pair(ctx(), ctx(), null, null, 2 * MIB);
             Arena mapping = Arena.ofConfined()) {
            p.awaitProbe();
            assertEquals("cma", p.modeAtoB().mode(), p.modeAtoB()::reason);
            final long pid = other.pid();
            final Path claim = p.dir.resolve("port-1");
            final String mine = Files.readString(claim, StandardCharsets.US_ASCII);
            assertEquals(Long.toString(ProcessHandle.current().pid()), mine.trim(), "LID 1's claim names this process");
            // the other process takes LID 1's claim over, as a process replacing this one would
            Files.writeString(claim, Long.toString(pid), StandardCharsets.US_ASCII, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING);
            final MemorySegment ring;
            try {
                ring = rewriteHello(p, mapping, pid);
            } finally {
                Files.writeString(claim, mine, StandardCharsets.US_ASCII, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING);
            }
            assertEquals(GRANTED, ring.get(ValueLayout.JAVA_LONG, trailer(ring) + VERDICT + 8),
                "LID 2 granted process " + pid + ", which owned LID 1's claim when it was probed");
            final ShmFabric.CopyMode m = p.modeAtoB();
            assertEquals("ring", m.mode(), m::toString);
            assertEquals("the peer (LID 2) probed process " + pid + ", not this one (granted): another process wrote "
                + "this link's hello", m.reason());
            assertRingCarriesTheBytes(p, 92);
        } finally {
            end(other);
        }
    }

    /**
     * Writes a hello naming process {@code pid} into link-1-2 (with a word its memory holds at a readable address)
     * and runs the NICs until LID 2's verdict names {@code pid}; returns the mapped link file.
     */
    private static MemorySegment rewriteHello(final ShmCmaTest.Pair p, final Arena mapping, final long pid)
        throws Exception {
        final long address = firstReadableAddress(pid);
        final MemorySegment word = mapping.allocate(8, 8);
        assertEquals(8, RemoteMemoryReader.processVmReadv().read(pid, word, 0, address, 8),
            "this process can read process " + pid + "'s memory (else the probe could not either)");
        final MemorySegment ring;
        try (FileChannel ch = FileChannel.open(p.dir.resolve("link-1-2"), StandardOpenOption.READ,
            StandardOpenOption.WRITE)) {
            ring = ch.map(FileChannel.MapMode.READ_WRITE, 0, ch.size(), mapping);
        }
        final long t = trailer(ring);
        ring.set(ValueLayout.JAVA_LONG, t + HELLO + 8, address);
        ring.set(ValueLayout.JAVA_LONG, t + HELLO + 16, word.get(ValueLayout.JAVA_LONG, 0));
        LONGS.setRelease(ring, t + HELLO, pid);
        p.await(() -> (long) LONGS.getAcquire(ring, t + VERDICT) == pid, "LID 2's verdict on process " + pid);
        return ring;
    }

    private static long trailer(final MemorySegment ring) {
        return ring.byteSize() - SpscRingBuffer.TRAILER;
    }

    /** This sender's WRITE still arrives byte-exact, through the ring: no reference packet sent after the verdict. */
    private static void assertRingCarriesTheBytes(final ShmCmaTest.Pair p, final long seed) {
        final long refs = p.modeAtoB().referencePackets();
        final WorkCompletion wc = p.write(MIB, seed);
        assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
        Fixture.assertBytes(p.a.buf.asSlice(0, MIB), p.b.buf.asSlice(0, MIB), "WRITE through the ring");
        assertEquals(refs, p.modeAtoB().referencePackets(), "no reference sent after the verdict");
        assertEquals(null, p.a.dev.fatal());
        assertEquals(null, p.b.dev.fatal());
    }

    /**
     * The start of the first readable mapping of {@code pid} once it runs {@code sleep} (it may still be between
     * fork and exec when started): the first page of its executable, which holds still.
     */
    private static long firstReadableAddress(final long pid) throws Exception {
        final Path proc = Path.of("/proc", Long.toString(pid));
        final long deadline = System.nanoTime() + 10_000_000_000L;
        while (!new String(Files.readAllBytes(proc.resolve("cmdline")), StandardCharsets.US_ASCII)
            .startsWith("sleep")) {
            if (System.nanoTime() > deadline) {
                fail("process " + pid + " did not exec sleep within 10 s");
            }
            Thread.sleep(10);
        }
        for (final String line : Files.readAllLines(proc.resolve("maps"))) {
            final String[] f = line.split("\\s+");
            if (f.length > 1 && f[1].startsWith("r")) {
                return Long.parseUnsignedLong(f[0].substring(0, f[0].indexOf('-')), 16);
            }
        }
        fail("no readable mapping in /proc/" + pid + "/maps");
        return 0;
    }

    private static void end(final Process p) throws InterruptedException {
        p.destroyForcibly();
        assertTrue(p.waitFor(10, TimeUnit.SECONDS), "process " + p.pid() + " ends");
    }
}
