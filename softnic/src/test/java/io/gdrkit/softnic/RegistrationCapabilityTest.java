/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.agent.ManualClock;
import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.Source;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.DmaBufExport;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.sim.SimDeviceBuffer;
import io.gdrkit.gpu.sim.SimGpu;
import io.gdrkit.gpu.sim.SimGpuConfig;
import io.gdrkit.gpu.sim.SimPreset;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.core.mem.DmaBuf;
import io.gdrkit.core.Errno;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * C6 in the software provider: DMA-BUF registration (ibv_reg_dmabuf_mr) and GPU registration by pointer (the
 * peermem path) are capabilities of the provider that can be switched off, and each answers as a real provider does.
 */
class RegistrationCapabilityTest {
    private static final int SIZE = 256 * 1024;
    private static final int ACCESS = AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE;

    private static SimGpu gpu(final SimPreset preset, final long seed) {
        return SimGpu.create(preset, SimGpuConfig.deterministic(seed, new ManualClock(0)));
    }

    private static VerbsException verbsError(final int errno, final Executable call) {
        final VerbsException e = assertThrows(VerbsException.class, call);
        assertEquals(Errno.name(errno), Errno.name(e.errno()), e.getMessage());
        return e;
    }

    /** RDMA WRITE of {@code len} bytes of a's buffer at {@code srcOff} to {@code remote} on b. */
    private static void write(final Fixture f, final long srcOff, final long remote, final int rkey, final int len) {
        f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
            .sge(f.a.mr, srcOff, len).remote(remote, rkey));
        f.awaitSuccess(f.a.scq, "RDMA WRITE into GPU memory");
    }

    @Test
    void ncclProbeWithFdMinusOneIsEbadfWhenSupportedAndEopnotsuppWhenSwitchedOff() {
        try (Fixture on = new Fixture(new SoftNicContext(), 4096)) {
            final VerbsException e = verbsError(Errno.EBADF, () -> on.b.pd.registerDmaBufMr(0, 0, 0, -1, 0));
            assertTrue(e.getMessage().contains("fd -1"), e.getMessage());
        }
        try (Fixture off = new Fixture(new SoftNicContext().dmaBuf(false), 4096)) {
            final VerbsException e = verbsError(Errno.EOPNOTSUPP, () -> off.b.pd.registerDmaBufMr(0, 0, 0, -1, 0));
            assertTrue(e.getMessage().contains(SoftNicContext.DMABUF_PROP + "=false"), e.getMessage());
        }
    }

    @Test
    void dmaBufMrOfAnExportTakesAnRdmaWriteByteExactAndOutlivesTheFd() {
        // peermem off: the DMA-BUF path must not need it
        try (Fixture f = new Fixture(new SoftNicContext().peermem(false), 2L * SIZE); SimGpu gpu = gpu(SimPreset.H200, 1)) {
            final DeviceBuffer buf = gpu.alloc(SIZE);
            final DmaBufExport export = gpu.exportDmaBuf(buf);
            assertTrue(export.supported(), export.evidence());
            final MemoryRegion mr = f.b.pd.registerDmaBufMr(0, SIZE, buf.address(), export.fd(), ACCESS);
            DmaBuf.close(export.fd()); // as NCCL does right after registering: the MR holds the attachment
            assertEquals(buf.address(), mr.address());
            assertEquals(SIZE, mr.length());
            assertEquals(SIZE, gpu.dmaTarget().bar1MappedBytes(), "the import mapped the buffer through BAR1");
            Fixture.fill(f.a.buf.asSlice(0, SIZE), 11);
            write(f, 0, mr.address(), mr.rkey(), SIZE);
            Fixture.assertBytes(f.a.buf.asSlice(0, SIZE), ((SimDeviceBuffer) buf).memory(), "GPU memory");
            // and the NIC reads it back through the same MR
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, SIZE, SIZE).remote(mr.address(), mr.rkey()));
            f.awaitSuccess(f.a.scq, "READ of the DMA-BUF MR");
            Fixture.assertBytes(f.a.buf.asSlice(0, SIZE), f.a.buf.asSlice(SIZE, SIZE), "read back");
            mr.deregister();
            assertEquals(0, gpu.dmaTarget().bar1MappedBytes(), "deregistration detached the DMA-BUF");
        }
    }

    @Test
    void offsetLengthAndIovaSelectTheWindow() {
        try (Fixture f = new Fixture(new SoftNicContext(), SIZE); SimGpu gpu = gpu(SimPreset.H200, 2)) {
            final DeviceBuffer buf = gpu.alloc(SIZE);
            final DmaBufExport export = gpu.exportDmaBuf(buf);
            final long iova = 0x5000_0000L;
            final MemoryRegion mr = f.b.pd.registerDmaBufMr(4096, 8192, iova, export.fd(), ACCESS);
            DmaBuf.close(export.fd());
            assertEquals(iova, mr.address());
            Fixture.fill(f.a.buf.asSlice(0, 8192), 12);
            write(f, 0, iova, mr.rkey(), 8192);
            final MemorySegment gpuMem = ((SimDeviceBuffer) buf).memory();
            Fixture.assertBytes(f.a.buf.asSlice(0, 8192), gpuMem.asSlice(4096, 8192), "window at offset 4096");
            assertEquals(-1, gpuMem.asSlice(0, 4096).mismatch(MemorySegment.ofArray(new byte[4096])), "before: 0");
            assertEquals(-1, gpuMem.asSlice(12288, 4096).mismatch(MemorySegment.ofArray(new byte[4096])), "after: 0");
            // one byte past the window is outside the MR: a remote access error, nothing written
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, 1).remote(iova + 8192, mr.rkey()));
            assertEquals(WcStatus.REM_ACCESS_ERR, f.awaitOne(f.a.scq, "WRITE past the window").status);
            assertEquals(0, gpuMem.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 12288));
            mr.deregister();
        }
    }

    @Test
    void badDmaBufRegistrationsAreNamed() throws Exception {
        try (Fixture f = new Fixture(new SoftNicContext(), 4096); SimGpu gpu = gpu(SimPreset.H200, 3)) {
            final ProtectionDomain pd = f.b.pd;
            final DeviceBuffer buf = gpu.alloc(SIZE);
            final int fd = gpu.exportDmaBuf(buf).fd();
            assertTrue(verbsError(Errno.EINVAL, () -> pd.registerDmaBufMr(SIZE - 4096, 8192, 0, fd, ACCESS))
                .getMessage().contains("outside the " + SIZE + "-byte DMA-BUF"));
            verbsError(Errno.EINVAL, () -> pd.registerDmaBufMr(0, 0, 0, fd, ACCESS));
            verbsError(Errno.EINVAL, () -> pd.registerDmaBufMr(-1, 4096, 0, fd, ACCESS));
            verbsError(Errno.EINVAL, () -> pd.registerDmaBufMr(0, 4096, Long.MAX_VALUE - 10, fd, ACCESS));
            assertTrue(verbsError(Errno.EINVAL, () -> pd.registerDmaBufMr(0, 4096, 0, fd, AccessFlags.REMOTE_WRITE))
                .getMessage().contains("access flags"));
            DmaBuf.close(fd);
            verbsError(Errno.EBADF, () -> pd.registerDmaBufMr(0, 4096, 0, fd, ACCESS));
            // an open file that is not a DMA-BUF: the kernel's dma_buf_get answers EINVAL
            final int other = openNonDmaBufFd();
            assertTrue(verbsError(Errno.EINVAL, () -> pd.registerDmaBufMr(0, 4096, 0, other, ACCESS))
                .getMessage().contains("is not a DMA-BUF"));
            assertEquals(0, gpu.dmaTarget().bar1MappedBytes(), "no failed registration left a mapping");
        }
    }

    /** stdin, stdout or stderr: open in every test JVM, never a DMA-BUF. */
    private static int openNonDmaBufFd() {
        for (int fd = 0; fd <= 2; fd++) {
            if (Files.exists(Path.of("/proc/self/fd/" + fd))) {
                return fd;
            }
        }
        throw new AssertionError("no standard fd open");
    }

    @Test
    void bar1ExhaustionAtImportIsEnomemNamingBar1() {
        try (Fixture f = new Fixture(new SoftNicContext(), 4096);
             SimGpu gpu = gpu(SimPreset.H200.withBar1(SimGpu.BAR1_PAGE), 4)) {
            final DeviceBuffer buf = gpu.alloc(SIZE);
            final int fd = gpu.exportDmaBuf(buf).fd();
            final VerbsException e = verbsError(Errno.ENOMEM, () -> f.b.pd.registerDmaBufMr(0, SIZE, 0, fd, ACCESS));
            assertTrue(e.getMessage().contains("BAR1"), e.getMessage());
            DmaBuf.close(fd);
        }
    }

    @Test
    void gpuMemoryByPointerNeedsPeermem() {
        try (Fixture f = new Fixture(new SoftNicContext().peermem(false).dmaBuf(false), 4096);
             SimGpu gpu = gpu(SimPreset.H200, 5)) {
            final DeviceBuffer buf = gpu.alloc(SIZE);
            try (GpuDmaMemory dma = new GpuDmaMemory(gpu, buf)) {
                final VerbsException e = verbsError(Errno.EFAULT, () -> f.b.pd.registerMr(dma, ACCESS));
                assertTrue(e.getMessage().contains("peermem is absent") && e.getMessage().contains(
                    SoftNicContext.PEERMEM_PROP + "=false"), e.getMessage());
            }
            // host memory is not affected by either capability
            f.b.pd.registerMr(f.arena.allocate(4096), ACCESS).deregister();
        }
        // with peermem on and DMA-BUF off the pointer path works, byte-exact
        try (Fixture f = new Fixture(new SoftNicContext().dmaBuf(false), SIZE); SimGpu gpu = gpu(SimPreset.H200, 6)) {
            final DeviceBuffer buf = gpu.alloc(SIZE);
            try (GpuDmaMemory dma = new GpuDmaMemory(gpu, buf)) {
                final MemoryRegion mr = f.b.pd.registerMr(dma, ACCESS);
                Fixture.fill(f.a.buf, 13);
                write(f, 0, mr.address(), mr.rkey(), SIZE);
                Fixture.assertBytes(f.a.buf, ((SimDeviceBuffer) buf).memory(), "GPU memory by pointer");
            }
        }
    }

    @Test
    void capabilitiesAreValidatedAndReadFromProperties() {
        final SoftNicContext defaults = new SoftNicContext().properties(Map.of()).conclude();
        assertTrue(defaults.dmaBuf() && defaults.peermem(), "both mechanisms on by default");
        for (final String prop : new String[] {SoftNicContext.DMABUF_PROP, SoftNicContext.PEERMEM_PROP}) {
            System.setProperty(prop, "off");
            try {
                final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new SoftNicContext().conclude());
                assertEquals(prop + "=off is not 0, 1, true or false", e.getMessage());
                System.setProperty(prop, "FALSE");
                final SoftNicContext c = new SoftNicContext().conclude();
                assertEquals(!prop.equals(SoftNicContext.DMABUF_PROP), c.dmaBuf());
                assertEquals(!prop.equals(SoftNicContext.PEERMEM_PROP), c.peermem());
                final Setting<?> s = c.settings().stream().filter(x -> x.name().equals(prop)).findFirst()
                    .orElseThrow();
                assertEquals(new Setting<>(prop, false, Source.PROPERTY, "FALSE"), s);
            } finally {
                System.clearProperty(prop);
            }
        }
        for (final int bad : new int[] {0, SoftNicContext.MAX_QP_LIMIT + 1}) {
            final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new SoftNicContext().maxQp(bad).conclude());
            assertEquals(SoftNicContext.MAX_QP_PROP + "=" + bad + " is not an integer in [1, "
                + SoftNicContext.MAX_QP_LIMIT + "]", e.getMessage());
        }
    }

    @Test
    void maxQpIsADeviceLimit() {
        try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext().maxQp(1))) {
            final SoftDevice dev = driver.addDevice("q0");
            final var ctx = dev.open();
            assertEquals(1, ctx.queryDevice().maxQp());
            final var pd = ctx.allocPd();
            final var cq = ctx.createCq(16);
            final var qp = pd.createQp(new QpInitAttr().cqs(cq, cq));
            final VerbsException e = verbsError(Errno.ENOMEM, () -> pd.createQp(new QpInitAttr().cqs(cq, cq)));
            assertTrue(e.getMessage().contains(SoftNicContext.MAX_QP_PROP), e.getMessage());
            qp.close();
            pd.createQp(new QpInitAttr().cqs(cq, cq)).close(); // the slot is free again
        }
    }
}
