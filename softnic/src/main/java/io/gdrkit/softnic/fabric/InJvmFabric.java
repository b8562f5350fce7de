/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * Software NICs in one JVM, joined by one SPSC ring per directed link (LID to LID). The ring memory is owned by
 * the fabric's shared {@link Arena} and freed on {@link #close()}.
 */
public final class InJvmFabric implements Fabric {
    private final Arena arena = Arena.ofShared();
    private final int linkCapacity;
    private volatile LinkHook hook;
    private final List<Port> ports = new ArrayList<>();
    private volatile Port[] portsByLid = new Port[1];

    private final boolean crc;

    public InJvmFabric(final int linkCapacity, final LinkHook hook) {
        this(linkCapacity, hook, false);
    }

    /** @param crc whether every packet carries a CRC32C checked on receipt (needed to catch corruption) */
    public InJvmFabric(final int linkCapacity, final LinkHook hook, final boolean crc) {
        this.linkCapacity = linkCapacity;
        this.hook = hook == null ? LinkHook.PASS : hook;
        this.crc = crc;
    }

    @Override
    public void hook(final LinkHook hook) {
        this.hook = hook == null ? LinkHook.PASS : hook;
    }

    public LinkHook hook() {
        return hook;
    }

    @Override
    public String describe() {
        return "in-JVM";
    }

    /** Attaches a new port with the next LID (1, 2, ...) and links to and from every existing port. */
    @Override
    public synchronized FabricPort attach(final int requestedLid) {
        final int lid = ports.size() + 1;
        if (requestedLid != 0 && requestedLid != lid) {
            throw new IllegalArgumentException("the in-JVM fabric assigns LIDs in order; next is " + lid
                + ", asked for " + requestedLid);
        }
        final Port port = new Port(lid);
        final Port[] byLid = new Port[lid + 1];
        System.arraycopy(portsByLid, 0, byLid, 0, portsByLid.length);
        byLid[lid] = port;
        for (final Port other : ports) {
            other.connect(port, newRing());
            port.connect(other, newRing());
        }
        // a port may also send to itself (loopback QPs)
        port.connect(port, newRing());
        ports.add(port);
        portsByLid = byLid;
        return port;
    }

    /**
     * Unlinks a port whose NIC stopped: no port routes to its LID or polls its rings any more, and {@link PortOwner}
     * lookups of its LID find nothing. Its LID is not given out again (LIDs go in order) and its rings' memory stays
     * in the fabric's arena until {@link #close()}. A port of another fabric, or one detached already, is ignored.
     */
    @Override
    public synchronized void detach(final FabricPort fabricPort) {
        if (!(fabricPort instanceof Port port) || !ports.contains(port) || portsByLid[port.lid()] != port) {
            return;
        }
        final Port[] byLid = portsByLid.clone();
        byLid[port.lid()] = null;
        portsByLid = byLid;
        for (final Port other : ports) {
            if (other != port) {
                other.disconnect(port);
                port.disconnect(other);
            }
        }
        port.disconnect(port);
        port.owner(null);
    }

    private SpscRingBuffer newRing() {
        final MemorySegment seg = arena.allocate(SpscRingBuffer.segmentSize(linkCapacity), 64);
        return new SpscRingBuffer(seg);
    }

    @Override
    public synchronized void close() {
        arena.close();
    }

    /** Whether packets carry a link CRC; a fabric with one never carries references. */
    public boolean crc() {
        return crc;
    }

    private final class Port extends RingPort {
        private volatile PortOwner owner;

        /** outbound ring by destination LID; inbound rings by source. Replaced copy-on-write under the fabric lock. */
        private volatile SpscRingBuffer[] outbound = new SpscRingBuffer[0];
        private volatile SpscRingBuffer[] inbound = new SpscRingBuffer[0];

        Port(final int lid) {
            super(lid, crc, linkCapacity / 4);
        }

        void connect(final Port to, final SpscRingBuffer ring) {
            final SpscRingBuffer[] out = java.util.Arrays.copyOf(outbound, Math.max(outbound.length, to.lid() + 1));
            out[to.lid()] = ring;
            outbound = out;
            final SpscRingBuffer[] in = java.util.Arrays.copyOf(to.inbound, to.inbound.length + 1);
            in[in.length - 1] = ring;
            to.inbound = in;
        }

        /** Drops the link to {@code to}: this port no longer routes to it, and it no longer polls the ring. */
        void disconnect(final Port to) {
            final SpscRingBuffer[] out = outbound;
            if (to.lid() >= out.length || out[to.lid()] == null) {
                return;
            }
            final SpscRingBuffer ring = out[to.lid()];
            final SpscRingBuffer[] o = out.clone();
            o[to.lid()] = null;
            outbound = o;
            final List<SpscRingBuffer> in = new ArrayList<>(java.util.Arrays.asList(to.inbound));
            in.remove(ring);
            to.inbound = in.toArray(new SpscRingBuffer[0]);
        }

        @Override
        SpscRingBuffer outbound(final int dlid) {
            final SpscRingBuffer[] out = outbound;
            return dlid > 0 && dlid < out.length ? out[dlid] : null;
        }

        @Override
        SpscRingBuffer[] inbound() {
            return inbound;
        }

        @Override
        LinkHook hook() {
            return hook;
        }

        @Override
        public boolean carriesReferences() {
            return !crc && hook.passesReferences();
        }

        @Override
        public boolean carriesBatches() {
            final LinkHook h = hook;
            return !crc && h.passesReferences() && h.passesBatches();
        }

        @Override
        public void owner(final PortOwner owner) {
            this.owner = owner;
        }

        @Override
        public <T extends PortOwner> T peer(final int lid, final Class<T> type) {
            final Port[] byLid = portsByLid;
            final PortOwner o = lid > 0 && lid < byLid.length && byLid[lid] != null ? byLid[lid].owner : null;
            return type.isInstance(o) ? type.cast(o) : null;
        }

        @Override
        public int maxPacket() {
            return linkCapacity / 2 - SpscRingBuffer.HEADER;
        }
    }
}
