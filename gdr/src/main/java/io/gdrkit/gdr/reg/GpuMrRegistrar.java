/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.DmaBufExport;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.GpuException;
import io.gdrkit.core.mem.DmaBuf;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Registers GPU memory with one NIC (one PD) by the branch {@link RegMechanismDecision} chose, as NCCL's
 * connector does before it calls the NET plugin:
 * <ul>
 *   <li>{@link RegMechanism#DMABUF_FD}: export the allocation holding the range as a DMA-BUF
 *       ({@code cuMemGetHandleForAddressRange}), {@code ibv_reg_dmabuf_mr(offset, len, iova = addr, fd)}, then
 *       close the fd; the MR keeps the attachment.</li>
 *   <li>{@link RegMechanism#PEERMEM_POINTER}: map the allocation for the NIC and {@code ibv_reg_mr} the range by its
 *       address; the provider's peer-memory client (nvidia-peermem) must claim it.</li>
 * </ul>
 * It stands behind a {@link NetMrCache}, which calls it only on a miss. The GPU is asked which allocation holds an
 * address only through the buffers {@link #track tracked} here (the simulated GPU has no cuMemGetAddressRange).
 */
public final class GpuMrRegistrar implements Registrar {
    private final GpuDevice gpu;
    private final ProtectionDomain pd;
    private final RegMechanism mechanism;
    private final int access;
    private final List<DeviceBuffer> buffers = new ArrayList<>();

    /**
     * One MR made here.
     *
     * @param mr        the verbs MR (keys, address)
     * @param mechanism the branch that made it
     * @param mapping   the NIC mapping the pointer path made (closed at deregistration); null for DMA-BUF, whose
     *                  attachment the provider holds
     */
    public record GpuMr(MemoryRegion mr, RegMechanism mechanism, GpuDmaMemory mapping) {
    }

    /**
     * @param mechanism DMABUF_FD or PEERMEM_POINTER
     * @param access    the MR access flags (NCCL: LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ)
     * @throws IllegalArgumentException for {@link RegMechanism#NONE}: GPU memory cannot be registered at all
     */
    public GpuMrRegistrar(final GpuDevice gpu, final ProtectionDomain pd, final RegMechanism mechanism,
                          final int access) {
        this.gpu = Objects.requireNonNull(gpu, "gpu");
        this.pd = Objects.requireNonNull(pd, "pd");
        if (mechanism == RegMechanism.NONE) {
            throw new IllegalArgumentException("no registration mechanism: GPU memory cannot be registered "
                + "(neither DMA-BUF nor peermem)");
        }
        this.mechanism = mechanism;
        this.access = access;
    }

    public RegMechanism mechanism() {
        return mechanism;
    }

    /** Makes {@code buffer}'s addresses registrable here. */
    public synchronized void track(final DeviceBuffer buffer) {
        if (buffer.device() != gpu) {
            throw new IllegalArgumentException("buffer 0x" + Long.toHexString(buffer.address()) + " belongs to GPU "
                + buffer.device().ordinal() + ", not to GPU " + gpu.ordinal() + " of this registrar");
        }
        buffers.add(buffer);
    }

    /** Forgets {@code buffer} (before it is freed). */
    public synchronized void untrack(final DeviceBuffer buffer) {
        buffers.remove(buffer);
    }

    /**
     * Registers {@code [addr, addr + len)}, which must lie in one tracked allocation.
     *
     * @return a {@link GpuMr}
     * @throws IllegalArgumentException when no tracked allocation holds the range
     * @throws io.gdrkit.verbs.VerbsException when the provider refuses (EOPNOTSUPP, EFAULT, ENOMEM ...)
     * @throws GpuException when the GPU cannot export or map the memory
     */
    @Override
    public synchronized Object register(final long addr, final long len) {
        final DeviceBuffer buffer = holding(addr, len);
        final long offset = addr - buffer.address();
        if (mechanism == RegMechanism.DMABUF_FD) {
            final DmaBufExport export = gpu.exportDmaBuf(buffer);
            if (!export.supported()) {
                throw new GpuException("DMA_BUF_EXPORT", -1, "cuMemGetHandleForAddressRange failed: "
                    + export.evidence());
            }
            try {
                return new GpuMr(pd.registerDmaBufMr(offset, len, addr, export.fd(), access), mechanism, null);
            } finally {
                DmaBuf.close(export.fd());
            }
        }
        final GpuDmaMemory mapping = new GpuDmaMemory(gpu, buffer);
        try {
            return new GpuMr(pd.registerMr(mapping.window(offset, len, addr), access), mechanism, mapping);
        } catch (final RuntimeException e) {
            mapping.close();
            throw e;
        }
    }

    @Override
    public void deregister(final Object mr) {
        if (!(mr instanceof GpuMr m)) {
            throw new IllegalArgumentException("not an MR of this registrar: " + mr);
        }
        m.mr().deregister();
        if (m.mapping() != null) {
            m.mapping().close();
        }
    }

    private DeviceBuffer holding(final long addr, final long len) {
        for (final DeviceBuffer b : buffers) {
            if (addr >= b.address() && len > 0 && addr - b.address() <= b.size() - len) {
                return b;
            }
        }
        throw new IllegalArgumentException("[0x" + Long.toHexString(addr) + ", +" + len + ") is not inside a GPU "
            + gpu.ordinal() + " allocation known to this registrar");
    }
}
