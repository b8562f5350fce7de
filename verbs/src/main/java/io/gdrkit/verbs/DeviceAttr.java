/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/**
 * Device attributes (ibv_device_attr, from {@link VerbsContext#queryDevice()}), with the field names of libibverbs
 * in camelCase and the same meaning, plus gdrkit's own at the end. Limits are what the provider enforces;
 * {@link #deviceCapFlags} and {@link #atomicCap} say only what it implements (checked against probes in tests).
 *
 * @param fwVer            firmware version text
 * @param maxMrSize        largest MR in bytes
 * @param pageSizeCap      supported page sizes (bit n set: 2^n bytes)
 * @param deviceCapFlags   {@link DeviceCap} bits
 * @param atomicCap        {@link DeviceCap#ATOMIC_NONE}, {@link DeviceCap#ATOMIC_HCA} or {@link DeviceCap#ATOMIC_GLOB}
 * @param physPortCnt      number of physical ports (numbered from 1)
 * @param name             the device name (ibv_get_device_name)
 * @param maxInlineData    largest inline send (not in ibv_device_attr; what ibv_create_qp accepts)
 * @param maxSoftwareMtu   largest gdrkit software MTU the device's links carry (gdrkit's own)
 * @param simulated        true when the device is a software NIC, not hardware
 */
public record DeviceAttr(String fwVer, long nodeGuid, long sysImageGuid, long maxMrSize, long pageSizeCap,
                         int vendorId, int vendorPartId, int hwVer, int maxQp, int maxQpWr, int deviceCapFlags,
                         int maxSge, int maxSgeRd, int maxCq, int maxCqe, int maxMr, int maxPd, int maxQpRdAtom,
                         int maxEeRdAtom, int maxResRdAtom, int maxQpInitRdAtom, int maxEeInitRdAtom, int atomicCap,
                         int maxEe, int maxRdd, int maxMw, int maxRawIpv6Qp, int maxRawEthyQp, int maxMcastGrp,
                         int maxMcastQpAttach, int maxTotalMcastQpAttach, int maxAh, int maxFmr, int maxMapPerFmr,
                         int maxSrq, int maxSrqWr, int maxSrqSge, int maxPkeys, int localCaAckDelay, int physPortCnt,
                         String name, int maxInlineData, int maxSoftwareMtu, boolean simulated) {

    /** Whether every bit of {@code cap} ({@link DeviceCap}) is set in {@link #deviceCapFlags}. */
    public boolean has(final int cap) {
        return (deviceCapFlags & cap) == cap;
    }
}
