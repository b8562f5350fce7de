/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

/**
 * ncclNetProperties_v8_t: what a network device offers.
 *
 * @param name          the device's name for logs
 * @param pciPath       its PCI path in /sys, or {@code unknown} (a software NIC has none)
 * @param guid          the NIC chip's unique id
 * @param ptrSupport    {@link #PTR_HOST} | {@link #PTR_CUDA} | {@link #PTR_DMABUF}
 * @param regIsGlobal   a registration is valid for every comm of the device, not only the one it was made for
 * @param speedMbps     port speed in Mbps
 * @param port          port number
 * @param latencyUs     network latency in microseconds (0: unknown)
 * @param maxComms      how many comms the device can hold
 * @param maxRecvs      how many receives one irecv may group
 * @param netDeviceType HOST (the CPU proxy moves data) or UNPACK
 * @param simulated     the device is a software NIC
 */
public record NetProperties(String name, String pciPath, long guid, int ptrSupport, boolean regIsGlobal,
                            int speedMbps, int port, float latencyUs, int maxComms, int maxRecvs,
                            NetDeviceType netDeviceType, boolean simulated) {
    /** NCCL_PTR_HOST. */
    public static final int PTR_HOST = 0x1;
    /** NCCL_PTR_CUDA. */
    public static final int PTR_CUDA = 0x2;
    /** NCCL_PTR_DMABUF. */
    public static final int PTR_DMABUF = 0x4;

    /** ncclNetDeviceType. */
    public enum NetDeviceType {
        /** The device reads and writes host or GPU memory directly. */
        HOST,
        /** The device delivers received data through an unpack step on the GPU. */
        UNPACK
    }

    /** {@return {@link #ptrSupport()} as NCCL logs it, such as {@code HOST|CUDA}} */
    public String ptrSupportText() {
        final StringBuilder sb = new StringBuilder();
        if ((ptrSupport & PTR_HOST) != 0) {
            sb.append("HOST");
        }
        if ((ptrSupport & PTR_CUDA) != 0) {
            sb.append(sb.isEmpty() ? "" : "|").append("CUDA");
        }
        if ((ptrSupport & PTR_DMABUF) != 0) {
            sb.append(sb.isEmpty() ? "" : "|").append("DMABUF");
        }
        return sb.toString();
    }
}
