package io.gdrkit.softnic;

import io.gdrkit.verbs.AsyncEvent;
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
    public PortAttr queryPort(final int port) {
        return device.queryPort(port);
    }

    @Override
    public ProtectionDomain allocPd() {
        return new SoftPd(this);
    }

    @Override
    public CompletionQueue createCq(final int cqe) {
        return device.createCq(cqe);
    }

    @Override
    public AsyncEvent pollAsyncEvent() {
        return device.pollAsyncEvent();
    }

    @Override
    public void close() {
        device.closeContext(this);
    }

    @Override
    public String toString() {
        return "context(" + device.name() + ")";
    }

}
