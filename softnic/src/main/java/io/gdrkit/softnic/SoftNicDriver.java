/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.core.agent.Agent;
import io.gdrkit.core.agent.AgentRunner;
import io.gdrkit.core.agent.IdleStrategy;
import io.gdrkit.core.agent.PacedIdleStrategy;
import io.gdrkit.softnic.fabric.Fabric;
import io.gdrkit.softnic.fabric.InJvmFabric;
import io.gdrkit.softnic.fabric.LinkHook;
import io.gdrkit.verbs.Device;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Hosts software NICs on an in-JVM fabric and drives their agents the way the {@link SoftNicContext} says:
 * on the caller's polling, on dedicated threads, or not at all (a deterministic runner steps them).
 */
public final class SoftNicDriver implements AutoCloseable {
    private static final List<SoftNicDriver> LIVE = new CopyOnWriteArrayList<>();

    private final SoftNicContext ctx;
    private final Fabric fabric;
    private final List<SoftDevice> devices = new CopyOnWriteArrayList<>();
    private volatile SoftDevice[] deviceArray = new SoftDevice[0];
    /** The thread that drives each device, where the progress mode gives it one. */
    private final Map<SoftDevice, AgentRunner> runnerOf = new IdentityHashMap<>();
    private volatile boolean closed;

    private SoftNicDriver(final SoftNicContext ctx, final Fabric fabric) {
        this.ctx = ctx;
        this.fabric = fabric != null ? fabric : new InJvmFabric(ctx.linkCapacity(), ctx.linkHook(), ctx.linkCrc());
    }

    /** Concludes the context and starts a driver with no devices yet. */
    public static SoftNicDriver launch(final SoftNicContext ctx) {
        return launch(ctx, null);
    }

    /** Starts a driver whose devices attach to {@code fabric} (null: a new in-JVM fabric); it closes the fabric. */
    public static SoftNicDriver launch(final SoftNicContext ctx, final Fabric fabric) {
        final SoftNicDriver d = new SoftNicDriver(ctx.conclude(), fabric);
        LIVE.add(d);
        return d;
    }

    public static SoftNicDriver launch() {
        return launch(new SoftNicContext());
    }

    /** Drivers alive in this JVM (the provider lists their devices). */
    static List<SoftNicDriver> live() {
        return LIVE;
    }

    public SoftNicContext context() {
        return ctx;
    }

    /** Adds a software NIC named {@code name} with the next LID. */
    public SoftDevice addDevice(final String name) {
        return addDevice(name, 0);
    }

    /** Adds a software NIC with the given LID (0: the fabric picks the next). */
    public synchronized SoftDevice addDevice(final String name, final int lid) {
        if (closed) {
            throw new IllegalStateException("driver is closed");
        }
        for (final SoftDevice d : devices) {
            if (d.name().equals(name)) {
                throw new IllegalArgumentException("device name '" + name + "' already used");
            }
        }
        final SoftDevice dev = new SoftDevice(this, name, fabric.attach(lid));
        devices.add(dev);
        deviceArray = devices.toArray(new SoftDevice[0]);
        AgentRunner runner = null;
        if (ctx.progressMode() == SoftNicContext.ProgressMode.DEDICATED) {
            runner = new AgentRunner(dev, IdleStrategy.parse(ctx.idleStrategy())).start();
        } else if (ctx.progressMode() == SoftNicContext.ProgressMode.OWN_DEVICE && ctx.backstopMicros() > 0) {
            // the poller drives its NIC; this thread only covers the times it does not poll (Duty: one at a time)
            runner = new AgentRunner(dev, new PacedIdleStrategy(ctx.backstopMicros() * 1000L)).start();
        }
        if (runner != null) {
            runnerOf.put(dev, runner);
        }
        return dev;
    }

    /**
     * Takes a device off this driver, for a caller that added devices to a driver it shares with others (the
     * collectives on the in-JVM fabric): its thread ends, its QPs go to ERR and flush (WR_FLUSH_ERR), its port leaves
     * the fabric (packets to its LID are unroutable from then on), and its name may be used again. On the in-JVM
     * fabric the LID is not given out again and the port's ring memory stays until the driver closes (one arena).
     * A device of another driver, or one removed already, is refused.
     */
    public synchronized void removeDevice(final SoftDevice dev) {
        if (!devices.contains(dev)) {
            throw new IllegalArgumentException("device '" + (dev == null ? "null" : dev.name())
                + "' is not a device of this driver (removed already?)");
        }
        final AgentRunner runner = runnerOf.remove(dev);
        if (runner != null) {
            runner.close();
        }
        dev.stop();
        devices.remove(dev);
        deviceArray = devices.toArray(new SoftDevice[0]);
        if (!closed) {
            fabric.detach(dev.port);
        }
    }

    /** The fabric the devices are attached to. */
    public Fabric fabric() {
        return fabric;
    }

    /** This driver's device at {@code lid}, or null. */
    SoftDevice deviceByLid(final int lid) {
        for (final SoftDevice d : deviceArray) {
            if (d.lid() == lid) {
                return d;
            }
        }
        return null;
    }

    public List<Device> devices() {
        return List.copyOf(devices);
    }

    /** Replaces the link hook of every link (fault injection, link models). */
    public void linkHook(final LinkHook hook) {
        fabric.hook(hook);
    }

    /** Steps every device once (each only if no other thread is in it); returns the work done. */
    public int progress() {
        int work = 0;
        for (final SoftDevice d : deviceArray) {
            work += d.doWork();
        }
        return work;
    }

    /** What polling a CQ of {@code device} does, by progress mode. */
    void progressFor(final SoftDevice device) {
        switch (ctx.progressMode()) {
            case INVOKER -> progress();
            case OWN_DEVICE -> device.doWork();
            default -> {
                // dedicated threads or a deterministic runner move the NICs
            }
        }
    }

    /** All agents of all devices, for a {@link io.gdrkit.core.agent.DeterministicRunner}. */
    public List<Agent> agents() {
        final List<Agent> all = new ArrayList<>();
        for (final SoftDevice d : devices) {
            all.addAll(d.agents());
        }
        return all;
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (final AgentRunner r : runnerOf.values()) {
            r.close();
        }
        for (final SoftDevice d : devices) {
            d.stop(); // WRs in flight complete with WR_FLUSH_ERR: no poller waits forever
        }
        LIVE.remove(this);
        fabric.close();
    }
}
