/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Child-process half of {@code ShmTruncationAttackTest}: two ports of a shm fabric exchange packets, then the link
 * file LID 3 writes into LID 1 through is truncated to {@code args[1]} bytes (as a hostile same-uid process would),
 * and both sides go on. Prints one {@code RESULT} line per side saying what each met (a named error, or none) and
 * then {@code DONE}; a SIGBUS that kills the JVM shows as no DONE line.
 */
public final class ShmTruncationProbe {
    private static final int CAP = 1 << 12;
    private static final ValueLayout.OfShort BIG_U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private ShmTruncationProbe() {
    }

    public static void main(final String[] args) throws Exception {
        final Path dir = ShmFabric.createPrivateDirectory(Path.of(args[0]), "gdrkit-t-");
        final long size = Long.parseLong(args[1]);
        try (ShmFabric f = new ShmFabric(dir, CAP, 3, null, false)) {
            final RingPort p1 = (RingPort) f.attach(1);
            final FabricPort p3 = f.attach(3);
            send(p3, 1, 3, 32);
            final int[] got = {0};
            p1.poll((b, o, l) -> got[0]++, 10);
            System.out.println("BEFORE " + got[0]);
            try (FileChannel ch = FileChannel.open(dir.resolve("link-3-1"), StandardOpenOption.WRITE,
                LinkOption.NOFOLLOW_LINKS)) {
                ch.truncate(size);
            }
            String sender = "none";
            try {
                for (int i = 0; i < 8; i++) {
                    send(p3, 1, 3, 32);
                }
            } catch (final Throwable t) {
                sender = t.getClass().getName() + ": " + t.getMessage();
            }
            System.out.println("RESULT sender " + sender);
            String receiver = "none";
            try {
                for (int i = 0; i < 8; i++) {
                    p1.poll((b, o, l) -> got[0]++, 10);
                }
                receiver = "polled " + got[0] + ", corrupt rings " + p1.corruptRings() + ", " + p1.lastRingError();
            } catch (final Throwable t) {
                receiver = t.getClass().getName() + ": " + t.getMessage();
            }
            System.out.println("RESULT receiver " + receiver);
        }
        System.out.println("DONE");
    }

    private static void send(final FabricPort from, final int dlid, final int slid, final int length) {
        final long off = from.tryClaim(dlid, length);
        if (off < 0) {
            throw new IllegalStateException("no room to claim " + length + " bytes");
        }
        final MemorySegment b = from.claimBuffer();
        b.asSlice(off, length).fill((byte) 7);
        b.set(BIG_U16, off, (short) dlid);
        b.set(BIG_U16, off + 2, (short) slid);
        from.commit();
    }
}
