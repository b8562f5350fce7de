/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.core.Errno;
import io.gdrkit.verbs.AsyncEvent;
import io.gdrkit.verbs.CompletionChannel;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.DeviceAttr;
import io.gdrkit.verbs.PortAttr;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.VerbsContext;

/** A context on a software device. */
final class SoftVerbsContext implements VerbsContext {
    private final SoftDevice device;

    SoftVerbsContext(final SoftDevice device) {
        this.device = device;
    }

    @Override
    public SoftDevice device() {
        return device;
    }

    @Override
    public DeviceAttr queryDevice() {
        return device.attr();
    }

    @Override
    public byte[] queryGid(final int port, final int index) {
        return device.queryGid(port, index);
    }

    @Override
    public PortAttr queryPort(final int port) {
        return device.queryPort(port);
    }

    @Override
    public ProtectionDomain allocPd() {
        return new SoftPd(this);
    }

    @Override
    public int numCompVectors() {
        return SoftDevice.NUM_COMP_VECTORS;
    }

    @Override
    public CompletionChannel createCompChannel() {
        return new SoftCompChannel(this);
    }

    @Override
    public CompletionQueue createCq(final int cqe, final CompletionChannel channel, final int compVector) {
        if (channel != null && !(channel instanceof SoftCompChannel)) {
            throw new VerbsException(Errno.EINVAL, "the completion channel is not one of a software NIC");
        }
        return device.createCq(this, cqe, (SoftCompChannel) channel, compVector);
    }

    /**
     * Events this context returned and the caller has not acknowledged yet (by identity: records compare equal).
     * Events come from rare transitions (a QP's error, a port change, an armed SRQ limit), and libibverbs programs
     * acknowledge each; one that never does keeps one record per event until the context closes.
     */
    /** This context's asynchronous events, in the order raised (its own objects' and every port/device event). */
    final java.util.concurrent.ConcurrentLinkedQueue<AsyncEvent> events =
        new java.util.concurrent.ConcurrentLinkedQueue<>();

    private final java.util.Set<AsyncEvent> unacked =
        java.util.Collections.synchronizedSet(java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>()));

    @Override
    public AsyncEvent pollAsyncEvent() {
        return returned(device.pollAsyncEvent(this));
    }

    @Override
    public AsyncEvent getAsyncEvent(final long timeoutNanos) {
        return returned(device.getAsyncEvent(this, timeoutNanos));
    }

    private AsyncEvent returned(final AsyncEvent e) {
        if (e != null) {
            unacked.add(e);
        }
        return e;
    }

    @Override
    public void ackAsyncEvent(final AsyncEvent event) {
        if (event == null || !unacked.remove(event)) {
            throw new VerbsException(Errno.EINVAL, "ibv_ack_async_event: " + (event == null ? "no event (null)"
                : event + " was not returned by this context, or is already acknowledged"));
        }
    }

    @Override
    public void close() {
        unacked.clear();
        device.closeContext(this);
    }

    @Override
    public String toString() {
        return "context(" + device.name() + ")";
    }

}
