/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.provider;

/**
 * A command asked for a provider's device and the provider has none: the run ends before anything is set up, with
 * the provider's evidence of where it looked (for the native provider: whether libibverbs loaded, how many devices
 * it listed, what {@code /sys/class/infiniband} holds).
 */
public final class NoDeviceException extends RuntimeException {
    /** The name every tool prints for this end. */
    public static final String CODE = "NO_RDMA_DEVICE";
    private static final long serialVersionUID = 1L;

    private final String what;
    private final String evidence;

    public NoDeviceException(final String provider, final String what, final String evidence) {
        super(CODE + ": the " + provider + " provider has no RDMA device for " + what + "; " + evidence);
        this.what = what;
        this.evidence = evidence;
    }

    /** What the device was wanted for ("perf write_bw", ...). */
    public String what() {
        return what;
    }

    /** The provider's evidence of where it looked. */
    public String evidence() {
        return evidence;
    }
}
