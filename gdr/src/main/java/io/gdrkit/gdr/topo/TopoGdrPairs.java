/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {@link TopoGdr#decide} for every GPU-NIC pair of a large host: the same decisions, worked out once per class of
 * pair. Two pairs whose decision inputs match (NCCL_IB_HCA's answer, both devices' GDR support, the read policy, the
 * distance, the PXN relay, the level) get the same decision apart from the pair's own names, so each class is decided
 * once by {@link TopoGdr#decide} and its reason is kept as the text before and after the pair's names; a pair then
 * costs a path lookup, a map probe and one string. GPU and NIC facts are read once per device, not once per pair.
 * A reason that does not hold the pair's names exactly once is not templated: such a pair is decided on its own.
 * Not thread-safe: one instance per thread.
 */
public final class TopoGdrPairs
{
    private final TopoPaths paths;
    private final GdrLevel level;
    private final GdrLevel used;
    private final int gdrRead;
    private final IbHcaFilter hca;
    // by node index: a GPU's and a NIC's facts are read once
    private final GpuFacts[] gpus;
    private final NicFacts[] nics;
    private final Map<Key, Template> classes = new HashMap<>();
    private TopoNode lastGpu;
    private TopoNode lastNic;
    private TopoNode intermediate;
    private PathType distance;
    private TopoNode relay;
    private PathType relayDistance;

    /**
     * @param paths   the paths.
     * @param level   NCCL_NET_GDR_LEVEL, or {@link GdrLevel#DEFAULT}.
     * @param gdrRead NCCL_NET_GDR_READ: 1, 0, or negative for NCCL's default rule.
     */
    public TopoGdrPairs(final TopoPaths paths, final GdrLevel level, final int gdrRead)
    {
        this.paths = paths;
        this.level = level;
        this.used = GdrLevel.effective(level, paths.options().netGdrC2c());
        this.gdrRead = gdrRead;
        this.hca = paths.options().ibHca();
        this.gpus = new GpuFacts[paths.system().nodes().size()];
        this.nics = new NicFacts[paths.system().nodes().size()];
    }

    private record GpuFacts(TopoGdr.Support support, TopoGdr.Tri readPolicy, String readEvidence, String who)
    {
    }

    private record NicFacts(boolean accepts, boolean bareUnknown, TopoGdr.Support support, String who)
    {
    }

    // Every input of TopoGdr.decide that is not the pair's names; a node stands in where its text is used.
    private record Key(
        boolean read, TopoNode excludedNic, boolean bareUnknown, TopoGdr.Support nic, TopoGdr.Support gpu,
        TopoGdr.Tri readPolicy, String readEvidence, PathType distance, TopoNode intermediate, TopoNode relay,
        TopoNode relayFor, PathType relayDistance)
    {
    }

    // A decided class: its reason without the pair's names (prefix + names + suffix), or null when the reason does not
    // hold the names once at a known place (then each pair is decided on its own).
    private record Template(TopoGdr.Decision decision, String prefix, String suffix)
    {
    }

    /**
     * @param gpu  a GPU.
     * @param nic  a NIC.
     * @param read true for sends (the NIC reads GPU memory), false for receives.
     * @return the decision, equal to {@link TopoGdr#decide} with this object's paths, level and read setting.
     */
    public TopoGdr.Decision decide(final TopoNode gpu, final TopoNode nic, final boolean read)
    {
        final GpuFacts g = gpuFacts(gpu);
        final NicFacts n = nicFacts(nic);
        if (gpu != lastGpu || nic != lastNic)
        {
            // a pair's send and receive decisions are asked one after the other: its path facts are read once
            lastGpu = gpu;
            lastNic = nic;
            intermediate = paths.relay(gpu, nic);
            final PathType pathType = paths.type(gpu, nic);
            final TopoNode effective = pathType == PathType.PXN && intermediate != null ? intermediate : gpu;
            distance = paths.type(effective, nic);
            relay = null;
            relayDistance = null;
            if (n.accepts() && intermediate == null && !used.allows(distance))
            {
                relay = TopoGdr.nvmlPxnRelay(paths, gpu, nic, used);
                relayDistance = relay == null ? null : paths.type(relay, nic);
            }
        }
        final Key key = new Key(read, n.accepts() ? null : nic, n.bareUnknown(), n.support(), g.support(),
            read ? g.readPolicy() : null, read ? g.readEvidence() : null, distance, intermediate, relay,
            relay == null ? null : gpu, relayDistance);
        Template t = classes.get(key);
        if (t == null)
        {
            t = template(gpu, nic, read, g.who() + n.who());
            classes.put(key, t);
        }
        final TopoGdr.Decision d = t.decision();
        if (t.prefix() == null)
        {
            return TopoGdr.decide(paths, gpu, nic, read, level, gdrRead);
        }
        return new TopoGdr.Decision(gpu, nic, read, d.enabled(), d.gate(), d.distance(), d.level(), d.relay(),
            d.mechanism(), t.prefix() + g.who() + n.who() + t.suffix(), d.evidence());
    }

    /**
     * @return how many classes of pair were decided so far (each by {@link TopoGdr#decide}).
     */
    public int classes()
    {
        return classes.size();
    }

    private Template template(final TopoNode gpu, final TopoNode nic, final boolean read, final String who)
    {
        final TopoGdr.Decision d = TopoGdr.decide(paths, gpu, nic, read, level, gdrRead);
        final String reason = d.reason();
        final int at = reason.indexOf(who);
        if (at < 0 || reason.indexOf(who, at + 1) >= 0)
        {
            return new Template(d, null, null);
        }
        return new Template(d, reason.substring(0, at), reason.substring(at + who.length()));
    }

    private GpuFacts gpuFacts(final TopoNode gpu)
    {
        GpuFacts f = gpus[gpu.index()];
        if (f == null)
        {
            final List<String> evidence = new ArrayList<>();
            final TopoGdr.Tri policy = TopoGdr.readPolicy(paths, gpu, gdrRead, evidence);
            f = new GpuFacts(TopoGdr.gpuSupport(gpu), policy, evidence.getLast(),
                "GPU " + gpu.dev() + " (" + gpu.busId() + ") / HCA ");
            gpus[gpu.index()] = f;
        }
        return f;
    }

    private NicFacts nicFacts(final TopoNode nic)
    {
        NicFacts f = nics[nic.index()];
        if (f == null)
        {
            f = new NicFacts(hca.accepts(nic), !hca.selectsAll() && nic.attributes().containsKey("#bare"),
                TopoGdr.nicSupport(nic), nic.dev() + " '" + nic.id() + "'");
            nics[nic.index()] = f;
        }
        return f;
    }
}
