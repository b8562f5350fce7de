/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.provider;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.devices.GpuDevices;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.Device;
import io.gdrkit.verbs.PortAttr;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.VerbsContext;

/**
 * What a command that runs on the software NIC only (visibility, ordering, coll) can do with {@code --provider
 * native}: find the device (or end with {@link NoDeviceException} and the probe's evidence), open it and read
 * port 1, and, given a CUDA GPU, register GPU memory with it through DMA-BUF or peermem
 * ({@link NativeGpuMr}). The experiment itself is not run on the native device: {@link #notBuilt} says so.
 */
public final class NativeReadiness {
    /** The named end after the readiness steps: the experiment's processes drive software NICs only. */
    public static final String NOT_BUILT = "NATIVE_RUN_NOT_BUILT";
    /** Bytes of GPU memory registered to prove the GPUDirect path. */
    public static final long GPU_BYTES = 2L << 20;

    /**
     * @param device       the native device used
     * @param port         port 1's state, link layer and LID
     * @param registration what registering GPU memory did (null without a GPU)
     */
    public record Result(String device, String port, NativeGpuMr.Registration registration) {
    }

    private NativeReadiness() {
    }

    /**
     * @param what    the command ("visibility", ...), named in the errors
     * @param gpuSpec a CUDA GPU ({@code cuda:N}) whose memory to register, or null
     * @throws NoDeviceException without a native device (before anything is opened)
     * @throws IllegalArgumentException for a GPU that is not a CUDA GPU (a simulated GPU has no memory a NIC
     *                                  could reach)
     * @throws io.gdrkit.verbs.VerbsException when registering the GPU memory fails both ways (both reasons named)
     */
    public static Result check(final String what, final String gpuSpec) {
        final Device device = Providers.requireNative(what);
        if (gpuSpec != null && !gpuSpec.startsWith("cuda:")) {
            throw new IllegalArgumentException("the native provider registers real GPU memory with a real NIC: it "
                + "needs a CUDA GPU (cuda:N), not " + gpuSpec);
        }
        try (VerbsContext ctx = device.open()) {
            final PortAttr p = ctx.queryPort(1);
            final String port = "port 1 " + (p.state() == PortAttr.PORT_ACTIVE ? "ACTIVE" : "state " + p.state())
                + ", " + p.linkLayer() + ", lid " + p.lid();
            if (gpuSpec == null) {
                return new Result(device.name(), port, null);
            }
            try (GpuDevice gpu = GpuDevices.open(gpuSpec); ProtectionDomain pd = ctx.allocPd()) {
                final DeviceBuffer buf = gpu.alloc(GPU_BYTES);
                try {
                    final NativeGpuMr.Registration r = NativeGpuMr.register(pd, gpu, buf, AccessFlags.LOCAL_WRITE
                        | AccessFlags.ALL_REMOTE);
                    r.mr().deregister();
                    return new Result(device.name(), port, r);
                } finally {
                    gpu.free(buf);
                }
            }
        }
    }

    /** The message of the named end that follows the readiness steps. */
    public static String notBuilt(final String what) {
        return NOT_BUILT + ": " + what + " --provider native: the device" + " is found and opened (above), but "
            + what + "'s sender and receiver processes drive software NICs only; run it with --provider soft, or "
            + "perf --provider native for traffic on this device";
    }
}
