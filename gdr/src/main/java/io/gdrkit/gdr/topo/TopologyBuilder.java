/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Builds a {@link TopoSystem} from code. Every attach method links a child below a parent with a PCIe link;
 * {@link #build()} connects every pair of CPUs of the same host with a SYS link, as NCCL does.
 *
 * <pre>{@code
 * TopologyBuilder b = new TopologyBuilder();
 * TopoNode cpu = b.cpu(0);
 * TopoNode sw = b.pciSwitch("0000:03:00.0", cpu);
 * TopoNode gpu = b.gpu("0000:07:00.0", sw, 90);
 * TopoNode nic = b.nic("mlx5_0", "0000:05:00.0", sw);
 * TopoSystem system = b.build();
 * }</pre>
 */
public final class TopologyBuilder
{
    /** NCCL's LOC_BW: bandwidth of a local path, GB/s. */
    public static final double LOC_BW = 5000.0;
    /** NCCL's PCI_BW: a PCIe Gen3 x16 link in GB/s, used when a link's speed is unknown. */
    public static final double PCI_BW = 12.0;
    /** NCCL's SKL_QPI_BW: the inter-socket bandwidth used for SYS links, GB/s. */
    public static final double SYS_BW = 10.0;

    private final List<TopoNode> nodes = new ArrayList<>();
    // Lookup by id (lower case): files with thousands of NICs must not scan the node list per node.
    private final Map<String, TopoNode> byId = new HashMap<>();
    private final Map<NodeType, Integer> counts = new EnumMap<>(NodeType.class);
    private final List<String> notes = new ArrayList<>();
    private String source = "builder";
    private TopoNode nvSwitch;
    private boolean built;

    /**
     * @param source where the topology comes from, for messages.
     * @return this builder.
     */
    public TopologyBuilder source(final String source)
    {
        this.source = source;
        return this;
    }

    /**
     * Add a CPU (NUMA node) of host 0.
     *
     * @param numaId the NUMA node id.
     * @return the CPU node.
     */
    public TopoNode cpu(final int numaId)
    {
        return cpu(numaId, 0);
    }

    /**
     * Add a CPU (NUMA node) of a given host. Nodes attached below it inherit the host.
     *
     * @param numaId   the NUMA node id.
     * @param systemId the host.
     * @return the CPU node.
     */
    public TopoNode cpu(final int numaId, final int systemId)
    {
        final String id = systemId == 0 ? "cpu" + numaId : "host" + systemId + "/cpu" + numaId;
        if (findNode(id) != null)
        {
            throw new IllegalArgumentException("CPU with numaid " + numaId + " defined twice");
        }
        return add(NodeType.CPU, id, systemId, Map.of("numaid", Integer.toString(numaId)));
    }

    /**
     * Add a PCIe host bridge (root complex) below a CPU.
     *
     * @param id  the root id, e.g. {@code pci0000:00}.
     * @param cpu the CPU.
     * @return the host bridge node.
     */
    public TopoNode hostBridge(final String id, final TopoNode cpu)
    {
        final TopoNode node = add(NodeType.HOST_BRIDGE, id, cpu.systemId(), Map.of());
        link(node, cpu, LinkType.PCI, LOC_BW, 1);
        return node;
    }

    /**
     * Add a PCIe switch below a parent.
     *
     * @param busId  the switch's bus id.
     * @param parent a CPU, host bridge or switch.
     * @return the switch node.
     */
    public TopoNode pciSwitch(final String busId, final TopoNode parent)
    {
        return pciSwitch(busId, parent, PCI_BW, Map.of());
    }

    /**
     * Add a PCIe switch below a parent with a given uplink bandwidth.
     *
     * @param busId      the switch's bus id.
     * @param parent     a CPU, host bridge or switch.
     * @param bandwidth  the uplink bandwidth, GB/s.
     * @param attributes descriptive attributes.
     * @return the switch node.
     */
    public TopoNode pciSwitch(
        final String busId, final TopoNode parent, final double bandwidth, final Map<String, String> attributes)
    {
        final TopoNode node = add(NodeType.PCI, busId, parent.systemId(), attributes);
        link(node, parent, LinkType.PCI, bandwidth, 1);
        return node;
    }

    /**
     * Add a GPU below a parent.
     *
     * @param busId  the GPU's bus id.
     * @param parent a CPU, host bridge or switch; null for a GPU with no PCIe link (its paths are DIS).
     * @param sm     compute capability times ten (90 for Hopper).
     * @return the GPU node.
     */
    public TopoNode gpu(final String busId, final TopoNode parent, final int sm)
    {
        return gpu(busId, parent, PCI_BW, Map.of("sm", Integer.toString(sm)));
    }

    /**
     * Add a GPU below a parent.
     *
     * @param busId      the GPU's bus id.
     * @param parent     a CPU, host bridge or switch; null for a GPU with no PCIe link.
     * @param bandwidth  PCIe bandwidth to the parent, GB/s.
     * @param attributes attributes; {@code sm} is used for NVLink bandwidth, {@code gdr} by the GDR check.
     * @return the GPU node.
     */
    public TopoNode gpu(
        final String busId, final TopoNode parent, final double bandwidth, final Map<String, String> attributes)
    {
        final TopoNode node = add(NodeType.GPU, busId, parent == null ? 0 : parent.systemId(), attributes);
        if (parent != null)
        {
            link(node, parent, LinkType.PCI, bandwidth, 1);
        }
        return node;
    }

    /**
     * Add a GPU device that holds several GPUs (NCCL 2.30's DEV node), below a parent. Add its GPUs with
     * {@link #gpuOnDevice(TopoNode, String, Map)}.
     *
     * @param busId     the device's bus id.
     * @param parent    a CPU, host bridge or switch.
     * @param bandwidth PCIe bandwidth to the parent, GB/s.
     * @param attributes descriptive attributes.
     * @return the device node.
     */
    public TopoNode gpuDevice(
        final String busId, final TopoNode parent, final double bandwidth, final Map<String, String> attributes)
    {
        final TopoNode node = add(NodeType.DEV, busId, parent.systemId(), attributes);
        link(node, parent, LinkType.PCI, bandwidth, 1);
        return node;
    }

    /**
     * Add one GPU of a multi-GPU device, linked to it as NCCL links a GPU to its DEV node (LOC).
     *
     * @param device     the device from {@link #gpuDevice}.
     * @param id         a unique id for this GPU (the device bus id and a suffix).
     * @param attributes attributes (dev, sm, gdr, ...).
     * @return the GPU node.
     */
    public TopoNode gpuOnDevice(final TopoNode device, final String id, final Map<String, String> attributes)
    {
        final TopoNode node = add(NodeType.GPU, id, device.systemId(), attributes);
        link(node, device, LinkType.LOC, LOC_BW, 1);
        return node;
    }

    /**
     * Add a NIC port below a parent.
     *
     * @param name   the device name, e.g. mlx5_0.
     * @param busId  the NIC's bus id, or null when unknown.
     * @param parent a CPU, host bridge or switch.
     * @return the NIC node.
     */
    public TopoNode nic(final String name, final String busId, final TopoNode parent)
    {
        return nic(name, parent, PCI_BW, busId == null ? Map.of() : Map.of("busid", busId));
    }

    /**
     * Add a NIC port below a parent.
     *
     * @param name       the device name.
     * @param parent     a CPU, host bridge or switch.
     * @param bandwidth  PCIe bandwidth to the parent, GB/s.
     * @param attributes attributes (busid, speed, gdr, ...).
     * @return the NIC node.
     */
    public TopoNode nic(
        final String name, final TopoNode parent, final double bandwidth, final Map<String, String> attributes)
    {
        if (findNode(name) != null)
        {
            throw new IllegalArgumentException("NIC " + name + " defined twice");
        }
        final TopoNode node = add(NodeType.NIC, name, parent.systemId(), attributes);
        link(node, parent, LinkType.PCI, bandwidth, 1);
        return node;
    }

    /**
     * Connect two GPUs directly with NVLink. A second call for the same GPU pair with the same count is ignored (an
     * NCCL XML file lists each link from both ends); a different count is kept as a note. Links from a GPU to the
     * NVSwitch or to a CPU are summed, as NCCL sums them ({@code link->bw += bw}).
     *
     * @param a     a GPU.
     * @param b     another GPU, the NVSwitch from {@link #nvSwitch()}, or a CPU (NVLink to CPU, POWER9).
     * @param count number of bonded NVLinks.
     */
    public void nvlink(final TopoNode a, final TopoNode b, final int count)
    {
        if (count <= 0)
        {
            throw new IllegalArgumentException("NVLink count must be positive, got " + count + " for " + a + "-" + b);
        }
        final int sm = Math.max(a.intAttribute("sm", 0), b.intAttribute("sm", 0));
        for (final TopoLink existing : a.links())
        {
            if (existing.to() == b && existing.type() == LinkType.NVL && b.type() != NodeType.GPU)
            {
                // NCCL topo.cc ncclTopoConnectNodes: links to an NVSwitch (all NVSwitches are one node) or a CPU
                // aggregate, link->bw += bw: a GPU listing 5+5+4+4 links to four NVSwitches has 18 links' width.
                final double bw = existing.bandwidth() + count * nvlinkBandwidth(sm);
                final int total = existing.count() + count;
                a.replaceLink(existing, new TopoLink(a, b, LinkType.NVL, bw, total));
                for (final TopoLink back : b.links())
                {
                    if (back.to() == a && back.type() == LinkType.NVL)
                    {
                        b.replaceLink(back, new TopoLink(b, a, LinkType.NVL, bw, total));
                        break;
                    }
                }
                return;
            }
            if (existing.to() == b && existing.type() == LinkType.NVL)
            {
                if (existing.count() != count)
                {
                    notes.add("NVLink " + a + "-" + b + " listed with count " + existing.count() + " and " + count +
                        "; kept " + existing.count());
                }
                return;
            }
        }
        link(a, b, LinkType.NVL, count * nvlinkBandwidth(sm), count);
    }

    /**
     * @return the host's NVSwitch node, created on first use (NCCL models all NVSwitches as one node).
     */
    public TopoNode nvSwitch()
    {
        if (nvSwitch == null)
        {
            nvSwitch = add(NodeType.NVS, "nvswitch", 0, Map.of());
        }
        return nvSwitch;
    }

    /**
     * Connect a GPU to its CPU with a C2C link.
     *
     * @param gpu       the GPU.
     * @param cpu       the CPU.
     * @param bandwidth total C2C bandwidth, GB/s.
     */
    public void c2c(final TopoNode gpu, final TopoNode cpu, final double bandwidth)
    {
        link(gpu, cpu, LinkType.C2C, bandwidth, 1);
    }

    /**
     * Record something the source said that the model does not use or could not resolve.
     *
     * @param note the note.
     */
    public void note(final String note)
    {
        notes.add(note);
    }

    /**
     * @param id a node id.
     * @return the node with that id (case-insensitive), or null.
     */
    public TopoNode findNode(final String id)
    {
        return byId.get(id.toLowerCase(Locale.ROOT));
    }

    /**
     * @return the number of nodes added so far (readers cap their input with it).
     */
    public int size()
    {
        return nodes.size();
    }

    /**
     * Finish: connect the CPUs of each host pairwise with SYS links and freeze the topology.
     *
     * @return the topology.
     */
    public TopoSystem build()
    {
        if (built)
        {
            throw new IllegalStateException("build() already called");
        }
        built = true;
        final List<TopoNode> cpus = nodes.stream().filter(n -> n.type() == NodeType.CPU).toList();
        for (int i = 0; i < cpus.size(); i++)
        {
            for (int j = i + 1; j < cpus.size(); j++)
            {
                if (cpus.get(i).systemId() == cpus.get(j).systemId())
                {
                    link(cpus.get(i), cpus.get(j), LinkType.SYS, SYS_BW, 1);
                }
            }
        }
        return new TopoSystem(nodes, notes, source);
    }

    /**
     * NCCL's per-link NVLink bandwidth by compute capability (topo.h SM*_NVLINK_BW), GB/s.
     *
     * @param sm compute capability times ten; 0 when unknown.
     * @return bandwidth of one NVLink.
     */
    public static double nvlinkBandwidth(final int sm)
    {
        if (sm >= 100)
        {
            return 40.1;
        }
        if (sm >= 90)
        {
            return 20.6;
        }
        if (sm == 86)
        {
            return 12.0;
        }
        if (sm >= 70 || sm == 0)
        {
            return 20.0;
        }
        return 18.0;
    }

    private TopoNode add(
        final NodeType type, final String id, final int systemId, final Map<String, String> attributes)
    {
        if (built)
        {
            throw new IllegalStateException("build() already called");
        }
        if (type != NodeType.CPU && type != NodeType.NVS && findNode(id) != null)
        {
            throw new IllegalArgumentException(type + " " + id + ": a node with this id already exists");
        }
        final int typeIndex = counts.merge(type, 1, Integer::sum) - 1;
        final TopoNode node = new TopoNode(nodes.size(), type, typeIndex, id, systemId, attributes);
        nodes.add(node);
        byId.putIfAbsent(id.toLowerCase(Locale.ROOT), node);
        return node;
    }

    private static void link(
        final TopoNode a, final TopoNode b, final LinkType type, final double bandwidth, final int count)
    {
        if (a == b)
        {
            throw new IllegalArgumentException("cannot link " + a + " to itself");
        }
        a.addLink(new TopoLink(a, b, type, bandwidth, count));
        b.addLink(new TopoLink(b, a, type, bandwidth, count));
    }
}
