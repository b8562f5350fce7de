/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.Errno;
import io.gdrkit.verbs.VerbsException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** librdmacm's binding where no RDMA device exists: named errors, the event wait's timeout, sockaddr bytes. */
class RdmaCmTest {
    private static final Path LIB = Path.of("/usr/lib/x86_64-linux-gnu/librdmacm.so.1");

    @Test
    void withoutTheKernelsCmDeviceTheChannelFailsWithANamedErrno() {
        Assumptions.assumeTrue(Files.exists(LIB), "librdmacm is not installed (" + LIB + ")");
        Assumptions.assumeFalse(Files.exists(Path.of("/dev/infiniband/rdma_cm")), "this host has an RDMA CM device");
        final RdmaCm cm = RdmaCm.load();
        final VerbsException e = assertThrows(VerbsException.class, cm::createEventChannel);
        assertTrue(e.getMessage().contains("rdma_create_event_channel: " + Errno.name(e.errno())), e.getMessage());
        assertTrue(e.getMessage().contains("/dev/infiniband/rdma_cm"), e.getMessage());
    }

    @Test
    void anEventWaitGivesUpAndNamesWhatItAwaited() throws Throwable {
        Assumptions.assumeTrue(Files.exists(LIB), "librdmacm is not installed (" + LIB + ")");
        final RdmaCm cm = RdmaCm.load();
        final Linker l = Linker.nativeLinker();
        final MethodHandle pipe = l.downcallHandle(l.defaultLookup().find("pipe").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, java.lang.foreign.ValueLayout.ADDRESS));
        final MethodHandle close = l.downcallHandle(l.defaultLookup().find("close").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT));
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment fds = a.allocate(JAVA_INT, 2);
            assertEquals(0, (int) pipe.invokeExact(fds));
            final int rd = fds.getAtIndex(JAVA_INT, 0);
            try (RdmaCm.EventChannel ch = cm.channelOverFd(rd)) {
                final VerbsException e = assertThrows(VerbsException.class, () -> ch.next(Duration.ofMillis(50),
                    "ADDR_RESOLVED"));
                assertEquals(Errno.ETIMEDOUT, e.errno());
                assertEquals("ETIMEDOUT: waited 50 ms for the RDMA CM event ADDR_RESOLVED on fd " + rd + "; none came",
                    e.getMessage());
            } finally {
                final int r0 = (int) close.invokeExact(rd);
                final int r1 = (int) close.invokeExact(fds.getAtIndex(JAVA_INT, 1));
                assertEquals(0, r0 + r1);
            }
        }
    }

    @Test
    void sockaddrIsNetworkOrderedAndIpv6IsRefused() {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment s = RdmaCm.sockaddr(a, new InetSocketAddress("10.1.2.3", 18515));
            assertArrayEquals(new byte[] {2, 0, (byte) 0x48, (byte) 0x53, 10, 1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0},
                s.toArray(JAVA_BYTE));
            assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> RdmaCm.sockaddr(a,
                new InetSocketAddress("::1", 1))).errno());
        }
        assertEquals("ADDR_RESOLVED", RdmaCm.eventName(0));
        assertEquals("event 99", RdmaCm.eventName(99));
    }
}
