package io.gdrkit.verbs;

/**
 * Device limits (a subset of ibv_device_attr).
 *
 * @param simulated true when the device is a software NIC, not hardware
 */
public record DeviceAttr(String name, long nodeGuid, int maxQp, int maxQpWr, int maxSge, int maxCq, int maxCqe,
                         int maxMr, long maxMrSize, int maxQpRdAtom, int maxQpInitRdAtom, int maxInlineData,
                         int maxSoftwareMtu, boolean simulated) {
}
