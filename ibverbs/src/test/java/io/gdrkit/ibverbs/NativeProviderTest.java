/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.Errno;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.Device;
import io.gdrkit.verbs.DeviceAttr;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.PortAttr;
import io.gdrkit.verbs.PostException;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpAttrMask;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QpType;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The native provider without a NIC: the real libibverbs where it is installed (it lists what this host has, here
 * nothing, and says where it looked), refusal of a missing library and of an unchecked ABI, and the whole binding
 * against a stub libibverbs (src/test/c/stubverbs.c, a test double, not a device) that records what was posted.
 */
class NativeProviderTest {
    private static final Path REAL = Path.of("/usr/lib/x86_64-linux-gnu/libibverbs.so.1");

    @Test
    void realLibraryListsWhatThisHostHasAndSaysWhereItLooked() {
        Assumptions.assumeTrue(Files.exists(REAL), "libibverbs is not installed here (" + REAL + ")");
        final NativeProvider.Probe p = NativeProvider.probe();
        assertTrue(p.libraryLoaded(), p.evidence());
        assertTrue(p.evidence().contains("ibv_get_device_list listed " + p.devices().size() + " device(s)"),
            p.evidence());
        assertTrue(p.evidence().contains("/sys/class/infiniband"), p.evidence());
        for (final Device d : p.devices()) {
            assertFalse(d.isSimulated(), d.name());
        }
        assertEquals("ibverbs", new NativeProvider().name());
    }

    @Test
    void aMissingLibraryIsAReasonNotACrash() {
        final IbvLibrary.Loaded l = IbvLibrary.doLoad("/nonexistent/libibverbs.so.1", false);
        assertNull(l.library());
        assertTrue(l.unavailable().startsWith("libibverbs not loadable: cannot open /nonexistent/libibverbs.so.1"),
            l.unavailable());
        final NativeProvider.Probe p = NativeProvider.probe(l);
        assertEquals(0, p.devices().size());
        assertFalse(p.libraryLoaded());
    }

    @Test
    void theLibraryPropertiesAreReadThroughSettingsReaderAndABadOneIsAReason() {
        final IbvLibrary.Loaded bad = IbvLibrary.load(new io.gdrkit.core.config.SettingsReader(java.util.Map.of(),
            java.util.Map.of(IbvLibrary.ABI_OVERRIDE_PROPERTY, "yes"), java.util.Map.of()));
        assertNull(bad.library());
        assertEquals("libibverbs not loaded: gdrkit.ibverbs.abi.override=yes is not 0, 1, true or false",
            bad.unavailable());
        final IbvLibrary.Loaded named = IbvLibrary.load(new io.gdrkit.core.config.SettingsReader(java.util.Map.of(),
            java.util.Map.of(IbvLibrary.LIBRARY_PROPERTY, "/nonexistent/libibverbs-prop.so"), java.util.Map.of()));
        assertNull(named.library());
        assertTrue(named.unavailable().startsWith("libibverbs not loadable: cannot open "
            + "/nonexistent/libibverbs-prop.so"), named.unavailable());
    }

    @Test
    void anUncheckedAbiIsRefusedWithANamedErrorUnlessOverridden() throws Exception {
        final Path stub = StubLibrary.build("1.99.0.0");
        Assumptions.assumeTrue(stub != null, "no gcc or rdma-core headers to build the stub");
        final IbvLibrary.Loaded refused = IbvLibrary.doLoad(stub.toString(), false);
        assertNull(refused.library());
        assertTrue(refused.unavailable().startsWith("libibverbs ABI 1.99 (" + stub + ") was not checked against "
            + "gdrkit's layouts (checked: [1.14])"), refused.unavailable());
        final IbvLibrary.Loaded allowed = IbvLibrary.doLoad(stub.toString(), true);
        assertNotNull(allowed.library(), allowed.unavailable());
        assertTrue(allowed.library().evidence().endsWith("unchecked ABI allowed by gdrkit.ibverbs.abi.override"));
        assertEquals("1.14", IbvLibrary.abiOf("/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0"));
        assertEquals("unknown", IbvLibrary.abiOf("/opt/libibverbs.so"));
    }

    @Test
    void theBindingMarshalsEveryCallThroughTheStub() throws Throwable {
        final Path stub = StubLibrary.build("1.14.0.0");
        Assumptions.assumeTrue(stub != null, "no gcc or rdma-core headers to build the stub");
        final IbvLibrary.Loaded l = IbvLibrary.doLoad(stub.toString(), false);
        assertNotNull(l.library(), l.unavailable());
        final NativeProvider.Probe p = NativeProvider.probe(l);
        assertEquals(1, p.devices().size(), p.evidence());
        final Device dev = p.devices().get(0);
        assertEquals("stub0", dev.name());
        assertEquals(0x0002c90300a1b2c3L, dev.guid());
        assertFalse(dev.isSimulated());

        final SymbolLookup stubSyms = SymbolLookup.libraryLookup(stub, Arena.global());
        final Linker linker = Linker.nativeLinker();
        final MethodHandle lastWr = linker.downcallHandle(stubSyms.find("stub_last_wr").orElseThrow(),
            FunctionDescriptor.of(ADDRESS.withTargetLayout(IbvLayouts.SEND_WR), JAVA_INT));
        final MethodHandle lastSge = linker.downcallHandle(stubSyms.find("stub_last_sge").orElseThrow(),
            FunctionDescriptor.of(ADDRESS.withTargetLayout(IbvLayouts.SGE), JAVA_INT));
        final MethodHandle lastCount = linker.downcallHandle(stubSyms.find("stub_last_count").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT));

        try (VerbsContext ctx = dev.open(); Arena arena = Arena.ofConfined()) {
            final DeviceAttr da = ctx.queryDevice();
            assertEquals(1000, da.maxQp());
            assertEquals(4096, da.maxQpWr());
            assertEquals(30, da.maxSge());
            assertEquals(65536, da.maxCqe());
            assertEquals(1L << 40, da.maxMrSize());
            assertEquals(0x0002c90300a1b2c3L, da.nodeGuid());
            assertFalse(da.simulated());
            final PortAttr pa = ctx.queryPort(1);
            assertEquals(PortAttr.PORT_ACTIVE, pa.state());
            assertEquals(5, pa.maxMtu());
            assertEquals(3, pa.activeMtu());
            assertEquals(0x1234, pa.lid());
            assertEquals("InfiniBand", pa.linkLayer());
            final VerbsException badPort = assertThrows(VerbsException.class, () -> ctx.queryPort(2));
            assertEquals(Errno.EINVAL, badPort.errno());
            final byte[] gid = ((NativeContext) ctx).queryGid(1, 0);
            assertArrayEquals(new byte[] {(byte) 0xf0, (byte) 0xf1, (byte) 0xf2, (byte) 0xf3, (byte) 0xf4,
                (byte) 0xf5, (byte) 0xf6, (byte) 0xf7, (byte) 0xf8, (byte) 0xf9, (byte) 0xfa, (byte) 0xfb,
                (byte) 0xfc, (byte) 0xfd, (byte) 0xfe, (byte) 0xff}, gid);
            assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> ((NativeContext) ctx)
                .queryGid(1, 3)).errno());

            final ProtectionDomain pd = ctx.allocPd();
            final MemorySegment buf = arena.allocate(4096, 64);
            final MemoryRegion mr = pd.registerMr(buf, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
            assertEquals(buf.address(), mr.address());
            assertEquals(4096, mr.length());
            assertEquals(mr.lkey() + 1, mr.rkey());
            assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> pd.registerMr(
                MemorySegment.ofArray(new byte[16]), AccessFlags.LOCAL_WRITE)).errno());
            assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> pd.registerMr(buf, 1 << 20))
                .errno());
            // NCCL's DMA-BUF probe: fd = -1 gives EBADF where the provider supports DMA-BUF
            final VerbsException dmabuf = assertThrows(VerbsException.class, () -> pd.registerDmaBufMr(0, 4096, 0,
                -1, AccessFlags.LOCAL_WRITE));
            assertEquals(Errno.EBADF, dmabuf.errno());
            assertTrue(dmabuf.getMessage().startsWith("EBADF: ibv_reg_dmabuf_mr(fd -1)"), dmabuf.getMessage());

            final VerbsException badCq = assertThrows(VerbsException.class, () -> ctx.createCq(0));
            assertEquals(Errno.EINVAL, badCq.errno());
            assertTrue(badCq.getMessage().startsWith("EINVAL: ibv_create_cq(0) failed"), badCq.getMessage());
            final CompletionQueue cq = ctx.createCq(256);
            assertEquals(256, cq.capacity());

            final QpInitAttr init = new QpInitAttr().cqs(cq, cq);
            init.cap.maxSendWr(8).maxSendSge(2);
            final QueuePair qp = pd.createQp(init);
            assertEquals(QpType.RC, qp.qpType());
            assertEquals(QpState.RESET, qp.state());
            final QpAttr a = new QpAttr().state(QpState.INIT).access(AccessFlags.REMOTE_WRITE);
            a.portNum = 1;
            qp.modify(a, QpAttrMask.STATE | QpAttrMask.ACCESS_FLAGS | QpAttrMask.PORT | QpAttrMask.PKEY_INDEX);
            assertEquals(QpState.INIT, qp.state());
            assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> qp.modify(new QpAttr().state(
                QpState.RTS), QpAttrMask.STATE)).errno());
            final QpAttr rtr = new QpAttr().state(QpState.RTR).destQpNum(0x77).rqPsn(0x123456);
            rtr.dlid = 0x4321;
            qp.modify(rtr, QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN);
            final QpAttr q = qp.queryQp();
            assertEquals(QpState.RTR, q.qpState);
            assertEquals(0x77, q.destQpNum);
            assertEquals(0x123456, q.rqPsn);
            assertEquals(0x4321, q.dlid);
            assertEquals(Errno.EOPNOTSUPP, assertThrows(VerbsException.class, () -> qp.modify(new QpAttr()
                .softwareMtu(65536), QpAttrMask.SOFTWARE_MTU)).errno());

            final SendWorkRequest w1 = new SendWorkRequest(2).wrId(0x1111).opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
                .flags(SendFlags.SIGNALED).imm(0x12345678).remote(0xabcdef0012345678L, 0x55aa)
                .sge(mr, 64, 100);
            final SendWorkRequest w2 = new SendWorkRequest(2).wrId(0x2222).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                .remote(0x1000, 0x66).atomic(5, 9).sge(mr, 8, 8);
            w1.next(w2);
            qp.postSend(w1);
            assertEquals(2, (int) lastCount.invokeExact());
            final MemorySegment n1 = ((MemorySegment) lastWr.invokeExact(0));
            assertEquals(0x1111L, n1.get(JAVA_LONG, 0));
            assertEquals(WrOpcode.RDMA_WRITE_WITH_IMM, n1.get(JAVA_INT, IbvLayouts.offset(IbvLayouts.SEND_WR,
                "opcode")));
            assertEquals(SendFlags.SIGNALED, n1.get(JAVA_INT, IbvLayouts.offset(IbvLayouts.SEND_WR, "send_flags")));
            assertEquals(1, n1.get(JAVA_INT, IbvLayouts.offset(IbvLayouts.SEND_WR, "num_sge")));
            // imm_data is __be32 on the wire struct: bytes 12 34 56 78 in memory
            assertEquals(Integer.reverseBytes(0x12345678), n1.get(JAVA_INT, IbvLayouts.offset(IbvLayouts.SEND_WR,
                "$imm", "imm_data")));
            assertEquals(0xabcdef0012345678L, n1.get(JAVA_LONG, IbvLayouts.offset(IbvLayouts.SEND_WR, "wr", "rdma",
                "remote_addr")));
            assertEquals(0x55aa, n1.get(JAVA_INT, IbvLayouts.offset(IbvLayouts.SEND_WR, "wr", "rdma", "rkey")));
            final MemorySegment s1 = (MemorySegment) lastSge.invokeExact(0);
            assertEquals(buf.address() + 64, s1.get(JAVA_LONG, 0));
            assertEquals(100, s1.get(JAVA_INT, 8));
            assertEquals(mr.lkey(), s1.get(JAVA_INT, 12));
            final MemorySegment n2 = ((MemorySegment) lastWr.invokeExact(1));
            assertEquals(0x2222L, n2.get(JAVA_LONG, 0));
            assertEquals(5L, n2.get(JAVA_LONG, IbvLayouts.offset(IbvLayouts.SEND_WR, "wr", "atomic", "compare_add")));
            assertEquals(9L, n2.get(JAVA_LONG, IbvLayouts.offset(IbvLayouts.SEND_WR, "wr", "atomic", "swap")));
            assertEquals(0x66, n2.get(JAVA_INT, IbvLayouts.offset(IbvLayouts.SEND_WR, "wr", "atomic", "rkey")));
            assertEquals(0x1000L, n2.get(JAVA_LONG, IbvLayouts.offset(IbvLayouts.SEND_WR, "wr", "atomic",
                "remote_addr")));

            final WorkCompletion[] wcs = new WorkCompletion[4]; // a plain array: poll fills it
            assertEquals(2, cq.poll(wcs));
            assertEquals(0x1111L, wcs[0].wrId);
            assertTrue(wcs[0].isSuccess());
            assertEquals(100, wcs[0].byteLen);
            assertEquals(0x12345678, wcs[0].immData);
            assertTrue(wcs[0].hasImm());
            assertEquals(qp.qpNum(), wcs[0].qpNum);
            assertEquals(0x2222L, wcs[1].wrId);
            assertEquals(0, cq.poll(wcs));

            final SendWorkRequest ok = new SendWorkRequest(1).wrId(1).opcode(WrOpcode.RDMA_WRITE).sge(mr, 0, 8);
            final SendWorkRequest bad = new SendWorkRequest(1).wrId(0xbad).opcode(WrOpcode.RDMA_WRITE).sge(mr, 0, 8);
            ok.next(bad);
            final PostException pe = assertThrows(PostException.class, () -> qp.postSend(ok));
            assertEquals(1, pe.badWrIndex());
            assertEquals(Errno.EINVAL, pe.errno());
            final SendWorkRequest tooMany = new SendWorkRequest(3).wrId(3).opcode(WrOpcode.SEND).numSge(3);
            for (int i = 0; i < 3; i++) {
                tooMany.sge(i).set(mr, i, 1);
            }
            assertEquals(Errno.EINVAL, assertThrows(PostException.class, () -> qp.postSend(tooMany)).errno());
            assertEquals(1, cq.poll(wcs)); // the good first WR of the failed chain was posted, as a provider does
            qp.close();
            cq.close();
            mr.deregister();
            pd.close();
        }
    }
}
