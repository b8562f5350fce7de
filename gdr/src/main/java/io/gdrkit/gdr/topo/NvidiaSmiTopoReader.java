/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads the text of {@code nvidia-smi topo -m}: the matrix of X, NV#, PIX, PXB, PHB, NODE, SYS between GPUs and
 * NICs, the CPU/NUMA affinity columns, and the "NIC Legend" that names the NICs.
 *
 * <p>The matrix gives relations, not a tree, so a tree is rebuilt that yields exactly those relations: devices
 * that are NODE-or-closer share a CPU (NUMA node, from the NUMA Affinity column when present), PHB-or-closer share
 * a host bridge, PXB-or-closer share a top switch, PIX share a leaf switch; NV# adds an NVLink of # links. NODE
 * (across host bridges of one NUMA node) is PHB in NCCL's types, as NCCL has no NODE type. The rebuilt tree's
 * path types are then checked against every cell; a matrix no tree can produce is refused with the line.
 */
public final class NvidiaSmiTopoReader
{
    private static final Pattern NV = Pattern.compile("NV(\\d+)");
    private static final Pattern GPU_LABEL = Pattern.compile("GPU\\d+");
    private static final Pattern NIC_LEGEND = Pattern.compile("^\\s*(NIC\\d+)\\s*:\\s*(\\S+)\\s*$");
    private static final Pattern ANSI = Pattern.compile("\u001B\\[[0-9;]*m");

    /** The most devices (GPUs and NICs) a matrix may name: the matrix grows with their square. */
    public static final int MAX_DEVICES = 1024;

    private NvidiaSmiTopoReader()
    {
    }

    /**
     * @param file a file holding the output of {@code nvidia-smi topo -m}.
     * @return the topology.
     * @throws TopologyReadException  when the file can not be read as text.
     * @throws TopologyParseException when the text is not a topology matrix.
     */
    public static TopoSystem read(final Path file) throws IOException
    {
        return parse(TopoFiles.readText(file), file.toString());
    }

    // One cell: the relation and, for NV#, the link count.
    private record Cell(String text, PathType type, int nvlinks, boolean node)
    {
    }

    /**
     * @param text the output of {@code nvidia-smi topo -m}.
     * @param name a name for messages.
     * @return the topology.
     * @throws TopologyParseException when the text is not a topology matrix.
     */
    public static TopoSystem parse(final String text, final String name)
    {
        final String[] lines = ANSI.matcher(text).replaceAll("").split("\r?\n", -1);
        int headerLine = -1;
        List<String> labels = null;
        for (int i = 0; i < lines.length; i++)
        {
            final String[] tokens = lines[i].trim().split("\\s+");
            if (tokens.length > 0 && GPU_LABEL.matcher(tokens[0]).matches() && Character.isWhitespace(
                lines[i].isEmpty() ? 'x' : lines[i].charAt(0)))
            {
                headerLine = i;
                labels = new ArrayList<>();
                for (final String token : tokens)
                {
                    if (token.equals("CPU") || token.equals("NUMA") || token.equals("GPU") && labels.size() > 0 &&
                        !GPU_LABEL.matcher(token).matches())
                    {
                        break;
                    }
                    labels.add(token);
                }
                break;
            }
        }
        if (headerLine < 0)
        {
            throw new TopologyParseException(name, 0,
                "no matrix header found (expected an indented line starting with GPU0, as printed by " +
                "'nvidia-smi topo -m')");
        }
        if (labels.size() > MAX_DEVICES)
        {
            throw new TopologyParseException(name, headerLine + 1, "the header names " + labels.size() +
                " devices, more than the cap of " + MAX_DEVICES + " (docs/TOPOLOGY.md)");
        }
        final String header = lines[headerLine];
        // "NUMA Affinity" in nvidia-smi's own header; shortened to "NUMA" where people reformat it.
        final boolean hasNuma = header.contains("NUMA");
        final int size = labels.size();

        final Map<String, String> nicNames = new HashMap<>();
        for (final String line : lines)
        {
            final Matcher m = NIC_LEGEND.matcher(line);
            if (m.matches())
            {
                nicNames.put(m.group(1), m.group(2));
            }
        }

        final Cell[][] cells = new Cell[size][size];
        final int[] rowLine = new int[size];
        final Map<Integer, Integer> numaOf = new HashMap<>();
        int row = 0;
        for (int i = headerLine + 1; i < lines.length && row < size; i++)
        {
            final String line = lines[i];
            if (!line.isBlank() && line.strip().chars().allMatch(c -> c == '-'))
            {
                continue; // a dashed rule under the header, as some posts have
            }
            if (line.isBlank())
            {
                if (row == 0)
                {
                    continue;
                }
                break;
            }
            final String[] tokens = line.trim().split("\\s+");
            final int lineNo = i + 1;
            if (!tokens[0].equals(labels.get(row)))
            {
                throw new TopologyParseException(name, lineNo,
                    "expected the row of " + labels.get(row) + ", found '" + tokens[0] + "'");
            }
            if (tokens.length < size + 1)
            {
                throw new TopologyParseException(name, lineNo,
                    "row " + tokens[0] + " has " + (tokens.length - 1) + " cells, the header has " + size);
            }
            for (int c = 0; c < size; c++)
            {
                cells[row][c] = cell(tokens[c + 1], name, lineNo, row == c, labels.get(c));
            }
            // Columns after the matrix: CPU Affinity, NUMA Affinity, GPU NUMA ID (GPU rows only).
            if (hasNuma && tokens.length >= size + 3 && tokens[size + 2].matches("\\d+"))
            {
                numaOf.put(row, Integer.parseInt(tokens[size + 2]));
            }
            rowLine[row] = lineNo;
            row++;
        }
        if (row < size)
        {
            throw new TopologyParseException(name, headerLine + 1,
                "the header names " + size + " devices but only " + row + " rows follow");
        }
        for (int a = 0; a < size; a++)
        {
            for (int b = 0; b < size; b++)
            {
                if (!cells[a][b].text.equals(cells[b][a].text))
                {
                    throw new TopologyParseException(name, rowLine[a], labels.get(a) + "-" + labels.get(b) + " is " +
                        cells[a][b].text + " but " + labels.get(b) + "-" + labels.get(a) + " is " +
                        cells[b][a].text + "; the matrix must be symmetric");
                }
            }
        }
        return build(name, labels, nicNames, cells, rowLine, numaOf);
    }

    private static Cell cell(
        final String token, final String name, final int line, final boolean diagonal, final String column)
    {
        if (diagonal)
        {
            if (!token.equals("X"))
            {
                throw new TopologyParseException(name, line, "the diagonal cell of " + column + " must be X, got " +
                    token);
            }
            return new Cell(token, PathType.LOC, 0, false);
        }
        final Matcher nv = NV.matcher(token);
        if (nv.matches())
        {
            return new Cell(token, PathType.NVL, Integer.parseInt(nv.group(1)), false);
        }
        return switch (token)
        {
            case "PIX" -> new Cell(token, PathType.PIX, 0, false);
            case "PXB" -> new Cell(token, PathType.PXB, 0, false);
            case "PHB" -> new Cell(token, PathType.PHB, 0, false);
            case "NODE" -> new Cell(token, PathType.PHB, 0, true);
            // SOC is what older drivers printed for SYS.
            case "SYS", "SOC" -> new Cell(token, PathType.SYS, 0, false);
            default -> throw new TopologyParseException(name, line, "cell '" + token + "' in column " + column +
                " is not one of X, NV#, PIX, PXB, PHB, NODE, SYS");
        };
    }

    private static TopoSystem build(
        final String name,
        final List<String> labels,
        final Map<String, String> nicNames,
        final Cell[][] cells,
        final int[] rowLine,
        final Map<Integer, Integer> numaOf)
    {
        final int size = labels.size();
        final int[] numaGroup = groups(cells, size, 3);
        final int[] bridgeGroup = groups(cells, size, 2);
        final int[] topGroup = groups(cells, size, 1);
        final int[] leafGroup = groups(cells, size, 0);

        final TopologyBuilder builder = new TopologyBuilder().source(name);
        // NUMA id per group: from any GPU of the group that has one, else the next free id.
        final Map<Integer, Integer> groupNuma = new TreeMap<>();
        for (int i = 0; i < size; i++)
        {
            if (numaOf.containsKey(i))
            {
                final Integer prev = groupNuma.putIfAbsent(numaGroup[i], numaOf.get(i));
                if (prev != null && !prev.equals(numaOf.get(i)))
                {
                    builder.note(name + ":" + rowLine[i] + ": " + labels.get(i) + " has NUMA affinity " +
                        numaOf.get(i) + " but is NODE-or-closer to a device of NUMA " + prev + "; used " + prev);
                }
            }
        }
        int nextNuma = groupNuma.values().stream().mapToInt(Integer::intValue).max().orElse(-1) + 1;
        // Two NODE groups are SYS to each other by construction, so they can not share a CPU (that would make them
        // PHB). A VM can show SYS between devices of one reported NUMA node; the later group gets its own CPU.
        final Map<Integer, Integer> groupOfNuma = new HashMap<>();
        for (final Map.Entry<Integer, Integer> e : groupNuma.entrySet())
        {
            final Integer earlier = groupOfNuma.putIfAbsent(e.getValue(), e.getKey());
            if (earlier != null)
            {
                final int fresh = nextNuma++;
                builder.note(name + ": " + labels.get(e.getKey()) + " reports NUMA " + e.getValue() + " like " +
                    labels.get(earlier) + ", but the matrix puts them SYS apart (a VM's root ports?); modelled as " +
                    "CPU " + fresh + " so that their paths stay SYS as printed");
                e.setValue(fresh);
            }
        }
        final Map<Integer, TopoNode> cpus = new LinkedHashMap<>();
        final Map<Integer, TopoNode> bridges = new HashMap<>();
        final Map<Integer, TopoNode> tops = new HashMap<>();
        final Map<Integer, TopoNode> leaves = new HashMap<>();
        final TopoNode[] devices = new TopoNode[size];
        for (int i = 0; i < size; i++)
        {
            Integer numa = groupNuma.get(numaGroup[i]);
            if (numa == null)
            {
                numa = nextNuma++;
                groupNuma.put(numaGroup[i], numa);
                builder.note(name + ": no NUMA affinity known for the group of " + labels.get(i) +
                    "; modelled as CPU " + numa);
            }
            final int numaId = numa;
            final TopoNode cpu = cpus.computeIfAbsent(numaGroup[i], g -> builder.cpu(numaId));
            final TopoNode bridge = bridges.computeIfAbsent(bridgeGroup[i],
                g -> builder.hostBridge("hostbridge" + g, cpu));
            final TopoNode top = tops.computeIfAbsent(topGroup[i], g -> builder.pciSwitch("switch" + g, bridge));
            final TopoNode leaf = leaves.computeIfAbsent(leafGroup[i],
                g -> builder.pciSwitch("switch" + g + "." + labels.get(g), top));
            final String label = labels.get(i);
            // The matrix's own numbers (GPU3, NIC5) are the devices' numbers; nothing else is known of them.
            final String dev = label.replaceAll("\\D", "");
            final Map<String, String> attrs = dev.isEmpty() ? Map.of("label", label) :
                Map.of("label", label, "dev", dev);
            if (GPU_LABEL.matcher(label).matches())
            {
                devices[i] = builder.gpu(label, leaf, TopologyBuilder.PCI_BW, attrs);
            }
            else
            {
                final String nicName = nicNames.getOrDefault(label, label);
                devices[i] = builder.nic(nicName, leaf, TopologyBuilder.PCI_BW, attrs);
            }
        }
        for (int a = 0; a < size; a++)
        {
            for (int b = a + 1; b < size; b++)
            {
                if (cells[a][b].type == PathType.NVL)
                {
                    builder.nvlink(devices[a], devices[b], cells[a][b].nvlinks);
                }
            }
        }
        final TopoSystem system = builder.build();
        verify(system, name, labels, cells, rowLine, devices);
        return system;
    }

    // Union-find of devices whose PCI relation is at most the given level: 0 PIX, 1 PXB, 2 PHB, 3 NODE.
    private static int[] groups(final Cell[][] cells, final int size, final int level)
    {
        final int[] parent = new int[size];
        for (int i = 0; i < size; i++)
        {
            parent[i] = i;
        }
        for (int a = 0; a < size; a++)
        {
            for (int b = 0; b < size; b++)
            {
                final Cell c = cells[a][b];
                final boolean join = switch (level)
                {
                    case 0 -> c.type == PathType.PIX;
                    case 1 -> c.type == PathType.PIX || c.type == PathType.PXB;
                    case 2 -> c.type == PathType.PIX || c.type == PathType.PXB || c.type == PathType.PHB && !c.node;
                    default -> c.type == PathType.PIX || c.type == PathType.PXB || c.type == PathType.PHB;
                };
                if (join && a != b)
                {
                    parent[find(parent, a)] = find(parent, b);
                }
            }
        }
        final int[] group = new int[size];
        for (int i = 0; i < size; i++)
        {
            group[i] = find(parent, i);
        }
        // Name each group by its lowest member so that ids are stable.
        final int[] lowest = new int[size];
        java.util.Arrays.fill(lowest, Integer.MAX_VALUE);
        for (int i = 0; i < size; i++)
        {
            lowest[group[i]] = Math.min(lowest[group[i]], i);
        }
        for (int i = 0; i < size; i++)
        {
            group[i] = lowest[group[i]];
        }
        return group;
    }

    private static int find(final int[] parent, final int i)
    {
        int r = i;
        while (parent[r] != r)
        {
            r = parent[r];
        }
        return r;
    }

    private static void verify(
        final TopoSystem system,
        final String name,
        final List<String> labels,
        final Cell[][] cells,
        final int[] rowLine,
        final TopoNode[] devices)
    {
        // Raw distances (no PXN, no NVB): that is what nvidia-smi prints.
        final TopoPaths paths = PathComputer.compute(
            system, PathOptions.DEFAULTS.withPxnDisable(true).withNvbDisable(true));
        for (int a = 0; a < labels.size(); a++)
        {
            for (int b = 0; b < labels.size(); b++)
            {
                final PathType expected = cells[a][b].type;
                final PathType actual = paths.type(devices[a], devices[b]);
                // NV# between two GPUs hides their PCI relation; any NVLink-class result is consistent.
                final boolean ok = expected == PathType.NVL ?
                    actual == PathType.NVL : actual == expected;
                if (!ok)
                {
                    throw new TopologyParseException(name, rowLine[a], labels.get(a) + "-" + labels.get(b) + " is " +
                        cells[a][b].text + " but the other cells place them " + actual +
                        " apart; no PCIe tree gives this matrix");
                }
            }
        }
    }
}
