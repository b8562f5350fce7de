/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link RemoteMemoryReader#processVmReadv()}: both bindings read this process byte-exact and name their errors, and
 * the guarded one holds the destination's shared arena for the whole system call, so another thread's
 * {@code close()} is refused (IllegalStateException) instead of freeing the memory the kernel is writing.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RemoteMemoryReaderTest {
    private static final long ME = ProcessHandle.current().pid();

    @Test
    void bothBindingsReadThisProcessByteExactAndNameTheirErrors() {
        for (final RemoteMemoryReader r : new RemoteMemoryReader[] {RemoteMemoryReader.processVmReadv(),
            RemoteMemoryReader.ProcessVm.unguarded()}) {
            try (Arena arena = Arena.ofConfined()) {
                final MemorySegment src = arena.allocate(8192);
                for (int i = 0; i < 8192; i++) {
                    src.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
                }
                final MemorySegment dst = arena.allocate(8192 + 64);
                assertEquals(8192, r.read(ME, dst, 64, src.address(), 8192));
                assertEquals(-1, src.mismatch(dst.asSlice(64)), "bytes read from this process");
                assertEquals(-RemoteMemoryReader.EFAULT, r.read(ME, dst, 0, 0x10, 64));
                assertEquals(-RemoteMemoryReader.EINVAL, r.read(ME, dst, 8200, src.address(), 400), "past dst");
                assertEquals(-RemoteMemoryReader.ESRCH, r.read(Integer.MAX_VALUE - 1, dst, 0, src.address(), 8),
                    "no such process");
                final Arena closed = Arena.ofShared();
                final MemorySegment gone = closed.allocate(64);
                closed.close();
                assertEquals(-RemoteMemoryReader.EINVAL, r.read(ME, gone, 0, src.address(), 64), "closed arena");
            }
        }
        assertFalse(RemoteMemoryReader.ProcessVm.unguarded().guardsDestination());
    }

    /**
     * Another thread closes the destination's shared arena while a 48 MiB read (large enough that malloc maps it
     * alone, so freeing it unmaps it) runs: the read either found the arena closed already (-EINVAL, nothing
     * written) or ran whole with the close refused until it returned. Unguarded, a close that lands during the
     * system call frees the memory under it and the read comes back short or EFAULT (seen in most runs with the
     * guard removed). How often the close lands inside the call is up to the scheduler; no round may fail.
     */
    @Test
    void aSharedArenaCannotBeClosedUnderARead() throws Exception {
        final RemoteMemoryReader r = RemoteMemoryReader.processVmReadv();
        final boolean linux = System.getProperty("os.name").equals("Linux");
        assertEquals(linux && RemoteMemoryReader.ProcessVm.syscallNumber(System.getProperty("os.arch")) > 0,
            r.guardsDestination(), "the guarded binding on Linux x86-64, aarch64 and riscv64");
        if (!r.guardsDestination()) {
            return; // documented as unsafe there: nothing to hold
        }
        final long size = 48L << 20;
        try (Arena arena = Arena.ofConfined()) {
            final MemorySegment src = arena.allocate(size, 4096);
            src.fill((byte) 0x5A);
            for (int round = 0; round < 8; round++) {
                final Arena shared = Arena.ofShared();
                final MemorySegment dst = shared.allocate(size, 4096);
                final CountDownLatch go = new CountDownLatch(1);
                final Thread closer = new Thread(() -> {
                    try {
                        go.await();
                    } catch (final InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    while (true) {
                        try {
                            shared.close();
                            return;
                        } catch (final IllegalStateException inUse) {
                            Thread.onSpinWait(); // held by the read: it cannot be freed now; try again
                        }
                    }
                }, "arena-closer");
                closer.start();
                go.countDown();
                final long n = r.read(ME, dst, 0, src.address(), size);
                closer.join(30_000);
                assertFalse(closer.isAlive(), "the close succeeded once the read returned");
                assertTrue(n == size || n == -RemoteMemoryReader.EINVAL, "round " + round + ": the read returned "
                    + n + " (" + (n < 0 ? RemoteMemoryReader.describe(n) : "short") + ")");
            }
        }
    }
}
