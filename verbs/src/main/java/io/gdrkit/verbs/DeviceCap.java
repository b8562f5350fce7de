/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/**
 * {@code enum ibv_device_cap_flags} bits of {@link DeviceAttr#deviceCapFlags} and {@code enum ibv_atomic_cap}
 * values of {@link DeviceAttr#atomicCap}; values equal libibverbs'.
 */
public final class DeviceCap {
    public static final int RESIZE_MAX_WR = 1;
    public static final int BAD_PKEY_CNTR = 1 << 1;
    public static final int BAD_QKEY_CNTR = 1 << 2;
    public static final int RAW_MULTI = 1 << 3;
    public static final int AUTO_PATH_MIG = 1 << 4;
    public static final int CHANGE_PHY_PORT = 1 << 5;
    public static final int UD_AV_PORT_ENFORCE = 1 << 6;
    public static final int CURR_QP_STATE_MOD = 1 << 7;
    public static final int SHUTDOWN_PORT = 1 << 8;
    public static final int INIT_TYPE = 1 << 9;
    public static final int PORT_ACTIVE_EVENT = 1 << 10;
    public static final int SYS_IMAGE_GUID = 1 << 11;
    public static final int RC_RNR_NAK_GEN = 1 << 12;
    public static final int SRQ_RESIZE = 1 << 13;
    public static final int N_NOTIFY_CQ = 1 << 14;
    public static final int MEM_WINDOW = 1 << 17;
    public static final int UD_IP_CSUM = 1 << 18;
    public static final int XRC = 1 << 20;
    public static final int MEM_MGT_EXTENSIONS = 1 << 21;
    public static final int MEM_WINDOW_TYPE_2A = 1 << 23;
    public static final int MEM_WINDOW_TYPE_2B = 1 << 24;
    public static final int RC_IP_CSUM = 1 << 25;
    public static final int RAW_IP_CSUM = 1 << 26;
    public static final int MANAGED_FLOW_STEERING = 1 << 29;

    /** ibv_atomic_cap: no atomics. */
    public static final int ATOMIC_NONE = 0;
    /** Atomic with respect to this device's own atomics only. */
    public static final int ATOMIC_HCA = 1;
    /** Atomic with respect to every agent, CPU included. */
    public static final int ATOMIC_GLOB = 2;

    private DeviceCap() {
    }
}
