/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.agent.ManualClock;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.gdr.gate.NetCaps;
import io.gdrkit.gdr.net.NetNic;
import io.gdrkit.comm.transport.NetTransportException.Reason;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.sim.SimGpu;
import io.gdrkit.gpu.sim.SimGpuConfig;
import io.gdrkit.gpu.sim.SimPreset;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.VerbsException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * IbTransport over several NICs (rails): a registration holds an MR on every device of the transport, so one
 * registration serves comms on any of them, as NCCL's net_ib registers a merged device's buffers on each NIC; each
 * comm's traffic goes through its own device only.
 */
class IbTransportRailsTest {
    private final Arena arena = Arena.ofShared();
    private final List<VerbsContext> ctxs = new ArrayList<>();
    private final List<NetNic> nics = new ArrayList<>();
    private final AtomicLongArray bytesFromLid = new AtomicLongArray(16);
    private SoftNicDriver driver;
    private SimGpu gpu;
    private IbTransport tx;
    private IbTransport rx;

    /** Two transports of two NICs each: tx on LIDs 1 and 2, rx on 3 and 4. */
    private void open() {
        open(null, null);
    }

    /** As {@link #open()}, rx's NICs probed with these GPUs (null: none; with one, peermem is probed true). */
    private void open(final SimGpu gpu3, final SimGpu gpu4) {
        driver = SoftNicDriver.launch(new SoftNicContext());
        driver.linkHook((src, dst, buf, off, len) -> {
            bytesFromLid.addAndGet(src, len);
            return 0;
        });
        for (int i = 0; i < 4; i++) {
            final VerbsContext c = driver.addDevice("rail" + i, i + 1).open();
            ctxs.add(c);
            nics.add(new NetNic(i, c, NetCaps.probe(i, c, i == 2 ? gpu3 : i == 3 ? gpu4 : null)));
        }
        tx = new IbTransport(new IbTransportContext().nic(nics.get(0)).nic(nics.get(1))
            .settings(SettingsReader.ofEnv(Map.of())).timeout(Duration.ofSeconds(20)));
        rx = new IbTransport(new IbTransportContext().nic(nics.get(2)).nic(nics.get(3))
            .settings(SettingsReader.ofEnv(Map.of())).timeout(Duration.ofSeconds(20)));
    }

    @AfterEach
    void close() {
        if (tx != null) {
            tx.close();
            rx.close();
        }
        for (final NetNic n : nics) {
            n.close();
        }
        for (final VerbsContext c : ctxs) {
            c.close();
        }
        if (driver != null) {
            driver.close();
        }
        if (gpu != null) {
            gpu.close();
        }
        arena.close();
    }

    /** Connects tx's device {@code dev} to rx's device {@code dev}. */
    private TransportPair pair(final int dev) {
        return pair(tx, dev);
    }

    /** Connects {@code from}'s device {@code dev} to rx's device {@code dev}. */
    private TransportPair pair(final IbTransport from, final int dev) {
        final TransportPair p = new TransportPair(from, rx);
        final byte[] handle = new byte[NetTransport.HANDLE_MAXSIZE];
        p.listen = rx.listen(dev, handle);
        final long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (p.send == null || p.recv == null) {
            assertTrue(System.nanoTime() < deadline, "connect/accept on device " + dev + " within 30 s");
            if (p.send == null) {
                p.send = from.connect(dev, handle);
            }
            if (p.recv == null) {
                p.recv = rx.accept(p.listen);
            }
        }
        return p;
    }

    private static void send(final TransportPair p, final long src, final int size, final int tag,
                             final NetTransport.MrHandle smh, final long dst, final NetTransport.MrHandle rmh) {
        final NetTransport.Request r = p.rx.irecv(p.recv, 1, new long[] {dst}, new int[] {size}, new int[] {tag},
            new NetTransport.MrHandle[] {rmh});
        NetTransport.Request s = null;
        final long deadline = System.nanoTime() + 20_000_000_000L;
        while (s == null) {
            assertTrue(System.nanoTime() < deadline, "the CTS never reached the sender");
            p.rx.test(r, null);
            s = p.tx.isend(p.send, src, size, tag, smh);
        }
        final int[] got = new int[1];
        TransportPair.await(p.rx, r, got, p.tx, new NetTransport.Request[] {s});
        assertEquals(size, got[0]);
    }

    @Test
    void oneRegistrationServesCommsOnEveryDeviceAndEachCommUsesItsOwn() {
        open();
        assertEquals(2, tx.devices());
        assertEquals("rail1", tx.getProperties(1).name());
        final TransportPair p0 = pair(0);
        final TransportPair p1 = pair(1);
        final int len = 1 << 20;
        final MemorySegment src = arena.allocate(len, 4096);
        final SplittableRandom rnd = new SplittableRandom(12);
        for (int i = 0; i < len; i++) {
            src.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt(256));
        }
        final MemorySegment dst = arena.allocate(len, 4096);
        dst.fill((byte) 0x5a);
        // registered through device 0's comms, used on device 1's too
        final NetTransport.MrHandle smh = tx.regMr(p0.send, src);
        final NetTransport.MrHandle rmh = rx.regMr(p0.recv, dst);
        final long before1 = bytesFromLid.get(1);
        final long before2 = bytesFromLid.get(2);
        send(p0, src.address(), len / 2, 1, smh, dst.address(), rmh);
        final long rail0 = bytesFromLid.get(1) - before1;
        assertTrue(rail0 >= len / 2, "device 0 carried its half: " + rail0 + " bytes");
        assertEquals(before2, bytesFromLid.get(2), "device 1 sent nothing for device 0's comm");
        send(p1, src.address() + len / 2, len / 2, 2, smh, dst.address() + len / 2, rmh);
        assertTrue(bytesFromLid.get(2) - before2 >= len / 2, "device 1 carried its half");
        assertEquals(-1L, MemorySegment.mismatch(src, 0, len, dst, 0, len), "every byte, both halves");
        // registered through device 1's comm: the same
        final NetTransport.MrHandle smh1 = tx.regMr(p1.send, src);
        dst.fill((byte) 0);
        send(p0, src.address(), 4096, 3, smh1, dst.address(), rmh);
        assertEquals(-1L, MemorySegment.mismatch(src, 0, 4096, dst, 0, 4096));
        tx.deregMr(p1.send, smh1);

        // a registration of another transport is named, on either device
        final NetTransportException foreign = assertThrows(NetTransportException.class,
            () -> tx.isend(p1.send, dst.address(), 8, 4, rmh));
        assertEquals(Reason.INVALID_USAGE, foreign.reason());
        assertTrue(foreign.getMessage().contains("registration made on") && foreign.getMessage().contains(
            "(and 1 more devices) used on"), foreign.getMessage());
        // deregistered once, on every device: a use on either is named, and a second deregMr too
        tx.deregMr(p0.send, smh);
        for (final TransportPair p : List.of(p0, p1)) {
            final NetTransportException gone = assertThrows(NetTransportException.class,
                () -> tx.isend(p.send, src.address(), 8, 5, smh));
            assertEquals(Reason.INVALID_USAGE, gone.reason());
            assertTrue(gone.getMessage().contains("already deregistered"), gone.getMessage());
        }
        assertEquals(Reason.INVALID_USAGE, assertThrows(NetTransportException.class,
            () -> tx.deregMr(p1.send, smh)).reason());
        rx.deregMr(p1.recv, rmh);
        p0.close();
        p1.close();
    }

    @Test
    void deviceMemoryRegisteredOnceIsWrittenThroughEitherDevice() {
        gpu = SimGpu.create(SimPreset.H200, SimGpuConfig.deterministic(5, new ManualClock(0)));
        open(gpu, gpu);
        final TransportPair p0 = pair(0);
        final TransportPair p1 = pair(1);
        final int len = 200_000;
        final DeviceBuffer buf = gpu.alloc(1 << 20);
        final GpuDmaMemory dma = new GpuDmaMemory(gpu, buf);
        final MemorySegment src = arena.allocate(len, 4096);
        final SplittableRandom rnd = new SplittableRandom(9);
        for (int i = 0; i < len; i++) {
            src.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt(256));
        }
        final NetTransport.MrHandle smh = tx.regMr(p0.send, src);
        final NetTransport.MrHandle rmh = rx.regMr(p0.recv, dma);
        // device 1's comm writes GPU memory registered through device 0's
        send(p1, src.address(), len, 7, smh, rmh.address(), rmh);
        final MemorySegment got = arena.allocate(len, 64);
        gpu.copyDtoH(got, 0, buf, 0, len);
        assertEquals(-1L, MemorySegment.mismatch(src, 0, len, got, 0, len), "every byte, in GPU memory");
        rx.deregMr(p0.recv, rmh);
        tx.deregMr(p0.send, smh);
        p0.close();
        p1.close();
    }

    @Test
    void deviceMemoryIsRefusedWhenOneDeviceCannotReachIt() {
        gpu = SimGpu.create(SimPreset.H200, SimGpuConfig.deterministic(6, new ManualClock(0)));
        open(gpu, null); // rx's second NIC was probed without a GPU: no peermem
        final TransportPair p0 = pair(0);
        final GpuDmaMemory dma = new GpuDmaMemory(gpu, gpu.alloc(1 << 16));
        final NetTransportException e = assertThrows(NetTransportException.class, () -> rx.regMr(p0.recv, dma));
        assertEquals(Reason.INVALID_USAGE, e.reason());
        assertTrue(e.getMessage().contains("regMr of device memory on") && e.getMessage().contains("rail3")
            && e.getMessage().contains("ptrSupport has no CUDA"), e.getMessage());
        p0.close();
    }

    /**
     * {@code real} with a protection domain that hands out the real MRs but keeps each one whose memory is
     * {@code watched}, so a test can see what became of the MRs a failed call made.
     */
    private static VerbsContext recordingMrsOf(final VerbsContext real, final MemorySegment watched,
                                               final List<MemoryRegion> made) {
        final ClassLoader l = IbTransportRailsTest.class.getClassLoader();
        return (VerbsContext) Proxy.newProxyInstance(l, new Class<?>[] {VerbsContext.class}, (p, m, args) -> {
            final Object r = call(m, real, args);
            if (!m.getName().equals("allocPd")) {
                return r;
            }
            final ProtectionDomain pd = (ProtectionDomain) r;
            return Proxy.newProxyInstance(l, new Class<?>[] {ProtectionDomain.class}, (q, pm, pargs) -> {
                final Object mr = call(pm, pd, pargs);
                if (pm.getName().equals("registerMr") && pargs[0] == watched) {
                    made.add((MemoryRegion) mr);
                }
                return mr;
            });
        });
    }

    private static Object call(final Method m, final Object target, final Object[] args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (final InvocationTargetException e) {
            throw e.getCause();
        }
    }

    @Test
    void aRegistrationOneDeviceRefusesIsNamedAndTheOthersAreReleased() {
        // the second NIC sits on a driver whose NICs have threads of their own: it refuses memory of a confined
        // arena (its thread could not touch it), which the first NIC, moved by its poller, accepts
        open();
        try (SoftNicDriver dedicated = SoftNicDriver.launch(new SoftNicContext().progressMode(
                 SoftNicContext.ProgressMode.DEDICATED));
             Arena confined = Arena.ofConfined()) {
            final MemorySegment mine = confined.allocate(4096, 4096);
            final List<MemoryRegion> made = new ArrayList<>();
            final NetNic first = new NetNic(0, recordingMrsOf(ctxs.get(0), mine, made),
                NetCaps.probe(0, ctxs.get(0), null));
            nics.add(first);
            final VerbsContext c = dedicated.addDevice("threaded").open();
            ctxs.add(c);
            final NetNic second = new NetNic(9, c, NetCaps.probe(9, c, null));
            nics.add(second);
            final IbTransport two = new IbTransport(new IbTransportContext().nic(first).nic(second)
                .settings(SettingsReader.ofEnv(Map.of())).timeout(Duration.ofSeconds(20)));
            try {
                final TransportPair p = pair(two, 0);
                final NetTransportException e = assertThrows(NetTransportException.class,
                    () -> two.regMr(p.send, mine));
                assertEquals(Reason.SYSTEM, e.reason());
                assertTrue(e.getMessage().startsWith("NET system: regMr of 4096 host bytes on NET/IB/9 (threaded): "
                    + "EINVAL") && e.getMessage().contains("confined arena"), e.getMessage());
                // the first NIC had registered it, and the failure released that MR: a second release is refused
                assertEquals(1, made.size(), "the first NIC registered the memory before the second refused it");
                final VerbsException gone = assertThrows(VerbsException.class, () -> made.get(0).deregister());
                assertTrue(gone.getMessage().contains("already deregistered"), gone.getMessage());
                // memory both can reach still registers on both
                final MemorySegment shared = arena.allocate(4096, 4096);
                final NetTransport.MrHandle ok = two.regMr(p.send, shared);
                two.deregMr(p.send, ok);
                p.close();
            } finally {
                two.close();
            }
        }
    }

    @Test
    void aDeviceOutsideTheTransportIsNamed() {
        open();
        final NetTransportException e = assertThrows(NetTransportException.class,
            () -> tx.listen(2, new byte[NetTransport.HANDLE_MAXSIZE]));
        assertEquals(Reason.INVALID_ARGUMENT, e.reason());
        assertEquals("NET invalid argument: NET/IB device 2 outside 0..1", e.getMessage());
        assertNotNull(tx.getProperties(0));
    }
}
