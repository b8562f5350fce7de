/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A host topology: nodes and the links between them, plus notes about anything the builder skipped or assumed.
 * Built by {@link TopologyBuilder}, or by a reader ({@link NcclTopoXmlReader}, {@link NvidiaSmiTopoReader},
 * {@link SysfsTopoReader}). Path types are computed by {@link PathComputer}.
 */
public final class TopoSystem
{
    private final List<TopoNode> nodes;
    private final Map<NodeType, List<TopoNode>> byType = new EnumMap<>(NodeType.class);
    private final List<String> notes;
    private final String source;
    private final Map<String, TopoNode> byId = new java.util.HashMap<>();

    TopoSystem(final List<TopoNode> nodes, final List<String> notes, final String source)
    {
        this.nodes = List.copyOf(nodes);
        for (final NodeType type : NodeType.values())
        {
            byType.put(type, new ArrayList<>());
        }
        for (final TopoNode node : nodes)
        {
            byType.get(node.type()).add(node);
        }
        byType.replaceAll((type, list) -> Collections.unmodifiableList(list));
        this.notes = List.copyOf(notes);
        this.source = source;
        for (final TopoNode node : nodes)
        {
            byId.putIfAbsent(node.id().toLowerCase(java.util.Locale.ROOT), node);
        }
    }

    /**
     * @return every node, in creation order.
     */
    public List<TopoNode> nodes()
    {
        return nodes;
    }

    /**
     * @param type a node type.
     * @return the nodes of that type, ordered by {@link TopoNode#typeIndex()}.
     */
    public List<TopoNode> nodes(final NodeType type)
    {
        return byType.get(type);
    }

    /**
     * @return the GPUs.
     */
    public List<TopoNode> gpus()
    {
        return nodes(NodeType.GPU);
    }

    /**
     * @return the NIC ports.
     */
    public List<TopoNode> nics()
    {
        return nodes(NodeType.NIC);
    }

    /**
     * @return the CPUs (NUMA nodes).
     */
    public List<TopoNode> cpus()
    {
        return nodes(NodeType.CPU);
    }

    /**
     * @param id a node id (bus ids compare case-insensitively).
     * @return the node with that id.
     */
    public Optional<TopoNode> find(final String id)
    {
        return Optional.ofNullable(byId.get(id.toLowerCase(java.util.Locale.ROOT)));
    }

    /**
     * @return what the builder skipped, assumed or could not resolve; empty when nothing.
     */
    public List<String> notes()
    {
        return notes;
    }

    /**
     * @return where the topology came from (a file, sysfs root, or "builder").
     */
    public String source()
    {
        return source;
    }

    @Override
    public String toString()
    {
        return "TopoSystem[" + source + ": " + gpus().size() + " GPU, " + nics().size() + " NIC, " +
            cpus().size() + " CPU, " + nodes(NodeType.PCI).size() + " PCI switch, " +
            nodes(NodeType.NVS).size() + " NVSwitch]";
    }
}
