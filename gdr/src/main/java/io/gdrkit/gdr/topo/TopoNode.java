/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One node of a host topology: a GPU, PCIe switch, NVSwitch, CPU, NIC port or host bridge. Identity is the
 * {@link #id()}: a PCI bus id for PCI devices, the device name for NICs, {@code cpuN} for CPUs.
 * Nodes are created only by {@link TopologyBuilder}.
 */
public final class TopoNode
{
    /**
     * Attribute set on a GPU whose source lists no {@code <nvlink>} for it (a bare GPU, or a {@code <gpu>} without
     * {@code <nvlink>} children): NCCL looks its NVLinks up with NVML at run time (xml.cc), so the file does not
     * say whether it has NVLink.
     */
    public static final String NVLINK_FROM_NVML = "#nvlink-from-nvml";

    private final int index;
    private final NodeType type;
    private final int typeIndex;
    private final String id;
    private final int systemId;
    private final Map<String, String> attributes;
    private final List<TopoLink> links = new ArrayList<>();

    TopoNode(
        final int index,
        final NodeType type,
        final int typeIndex,
        final String id,
        final int systemId,
        final Map<String, String> attributes)
    {
        this.index = index;
        this.type = type;
        this.typeIndex = typeIndex;
        this.id = id;
        this.systemId = systemId;
        this.attributes = Collections.unmodifiableMap(new LinkedHashMap<>(attributes));
    }

    /**
     * @return index among all nodes of the system.
     */
    public int index()
    {
        return index;
    }

    /**
     * @return the node type.
     */
    public NodeType type()
    {
        return type;
    }

    /**
     * @return index among the nodes of the same type (GPU0, GPU1, ...; NIC0, ...), in creation order.
     */
    public int typeIndex()
    {
        return typeIndex;
    }

    /**
     * @return the node id (bus id, device name or cpuN).
     */
    public String id()
    {
        return id;
    }

    /**
     * @return the host this node belongs to; GPUs on different hosts reach each other only through the network.
     */
    public int systemId()
    {
        return systemId;
    }

    /**
     * @return descriptive attributes (sm, dev, numaid, busid, class, gdr, ...) as read from the source.
     */
    public Map<String, String> attributes()
    {
        return attributes;
    }

    /**
     * @param name         attribute name.
     * @param defaultValue value when the attribute is absent or not an integer.
     * @return the attribute as an int (decimal or 0x hex).
     */
    public int intAttribute(final String name, final int defaultValue)
    {
        final String value = attributes.get(name);
        if (value == null)
        {
            return defaultValue;
        }
        try
        {
            return value.startsWith("0x") ? Integer.parseInt(value.substring(2), 16) : Integer.parseInt(value.trim());
        }
        catch (final NumberFormatException ex)
        {
            return defaultValue;
        }
    }

    /**
     * @return the links leaving this node.
     */
    public List<TopoLink> links()
    {
        return Collections.unmodifiableList(links);
    }

    void addLink(final TopoLink link)
    {
        links.add(link);
    }

    void replaceLink(final TopoLink old, final TopoLink replacement)
    {
        links.set(links.indexOf(old), replacement);
    }

    /**
     * @return the device number the source gave this GPU or NIC (NCCL's {@code dev}: the CUDA device of a GPU, the
     *     NET device of a NIC); the index among its type when the source gave none.
     */
    public int dev()
    {
        return intAttribute("dev", typeIndex);
    }

    /**
     * @return the PCI bus id, or null when the source gave none.
     */
    public String busId()
    {
        final String busId = attributes.get("busid");
        if (busId != null)
        {
            return busId;
        }
        return type == NodeType.GPU || type == NodeType.PCI || type == NodeType.DEV ? id.split("#")[0] : null;
    }

    /**
     * @return a short label like GPU0, NIC1 or CPU0: GPUs and NICs by the source's {@code dev} (so that GPU2 is the
     *     file's {@code dev="2"}, not the third GPU in document order), PCI nodes by their id.
     */
    public String label()
    {
        return switch (type)
        {
            case GPU, NIC -> type.name() + dev();
            case CPU, NVS -> type.name() + typeIndex;
            default -> id;
        };
    }

    @Override
    public String toString()
    {
        return label() + (type == NodeType.GPU || type == NodeType.NIC ? "(" + id + ")" : "");
    }

    /**
     * @return true for a GPU whose NVLinks the source does not give (NCCL finds them with NVML at run time).
     */
    public boolean nvlinkUnknown()
    {
        return attributes.containsKey(NVLINK_FROM_NVML);
    }
}
