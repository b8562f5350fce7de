/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.provider;

import io.gdrkit.core.mem.DmaBuf;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.DmaBufExport;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.VerbsException;
import java.lang.foreign.MemorySegment;

/**
 * GPU memory registered with a real NIC (the native provider) the way NCCL does it: DMA-BUF first, the device
 * pointer (peermem) second.
 * <ol>
 *   <li>{@code cuMemGetHandleForAddressRange(DMA_BUF_FD)} exports the buffer as a DMA-BUF fd;</li>
 *   <li>{@code ibv_reg_dmabuf_mr(offset 0, length, iova = the device pointer, fd, access)}; the fd is closed after
 *       the call either way (the MR holds the attachment);</li>
 *   <li>if the export or the registration failed: {@code ibv_reg_mr(device pointer, length, access)}, which only
 *       works where a peer-memory client (nvidia-peermem) claims the address; the reason DMA-BUF was not used is
 *       kept in the result.</li>
 * </ol>
 * The device pointer is handed to libibverbs as an address and never dereferenced in Java.
 */
public final class NativeGpuMr {
    /** The registration path taken. */
    public enum Path {
        DMABUF,
        PEERMEM
    }

    /**
     * @param mr             the registered region (its address is the device pointer)
     * @param path           how it was registered
     * @param evidence       the calls made and what each returned
     * @param fallbackReason why DMA-BUF was not used (null when it was)
     */
    public record Registration(MemoryRegion mr, Path path, String evidence, String fallbackReason) {
    }

    private NativeGpuMr() {
    }

    /**
     * Registers all of {@code buffer} with {@code pd}.
     *
     * @throws VerbsException when both paths fail, with both reasons and the errno of the last
     */
    @SuppressWarnings("restricted") // the device pointer as an address for ibv_reg_mr; Java never reads it
    public static Registration register(final ProtectionDomain pd, final GpuDevice gpu, final DeviceBuffer buffer,
                                        final int access) {
        final long addr = buffer.address();
        final long len = buffer.size();
        final DmaBufExport export = gpu.exportDmaBuf(buffer);
        final String dmabufCall = "ibv_reg_dmabuf_mr(offset 0, length " + len + ", iova 0x" + Long.toHexString(addr)
            + ", fd " + export.fd() + ")";
        final String reason;
        if (export.supported()) {
            try {
                final MemoryRegion mr = pd.registerDmaBufMr(0, len, addr, export.fd(), access);
                return new Registration(mr, Path.DMABUF, export.evidence() + "; " + dmabufCall + " = lkey 0x"
                    + Integer.toHexString(mr.lkey()) + " rkey 0x" + Integer.toHexString(mr.rkey()), null);
            } catch (final VerbsException e) {
                reason = dmabufCall + " failed: " + e.getMessage();
            } finally {
                DmaBuf.close(export.fd());
            }
        } else {
            reason = "no DMA-BUF export: " + export.evidence();
        }
        final String peermemCall = "ibv_reg_mr(device pointer 0x" + Long.toHexString(addr) + ", " + len + ")";
        try {
            final MemoryRegion mr = pd.registerMr(MemorySegment.ofAddress(addr).reinterpret(len), access);
            return new Registration(mr, Path.PEERMEM, reason + "; fell back to " + peermemCall + " = lkey 0x"
                + Integer.toHexString(mr.lkey()) + " rkey 0x" + Integer.toHexString(mr.rkey())
                + " (a peer-memory client, nvidia-peermem, claimed the address)", reason);
        } catch (final VerbsException e) {
            throw new VerbsException(e.errno(), "GPU memory of " + gpu.describe() + " cannot be registered with "
                + pd.context().device().name() + ": DMA-BUF: " + reason + "; peermem: " + peermemCall + " failed: "
                + e.getMessage() + " (is nvidia-peermem loaded?)");
        }
    }
}
