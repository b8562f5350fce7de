/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import java.io.IOException;
import java.io.StringReader;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import javax.xml.XMLConstants;
import javax.xml.parsers.ParserConfigurationException;
import javax.xml.parsers.SAXParserFactory;

import org.xml.sax.Attributes;
import org.xml.sax.InputSource;
import org.xml.sax.Locator;
import org.xml.sax.SAXException;
import org.xml.sax.SAXParseException;
import org.xml.sax.helpers.DefaultHandler;

/**
 * Reads an NCCL topology XML file (the format of NCCL_TOPO_FILE and NCCL_TOPO_DUMP_FILE) as NCCL 2.30's topo.cc
 * reads it:
 *
 * <pre>{@code
 * <system version="1">
 *   <cpu numaid="0" arch="x86_64" vendor="GenuineIntel">
 *     <pci busid="0000:03:00.0" class="0x060400" link_speed="16.0 GT/s PCIe" link_width="16">
 *       <pci busid="0000:07:00.0" class="0x030200"><gpu dev="0" sm="90" rank="0" gdr="1">
 *         <nvlink target="0000:c7:00.0" count="18" tclass="0x068000"/></gpu></pci>
 *       <pci busid="0000:05:00.0" class="0x020700"><nic><net name="mlx5_0" dev="0" speed="400000" gdr="1"/></nic></pci>
 *     </pci>
 *   </cpu>
 * </system>
 * }</pre>
 *
 * <ul>
 * <li>A {@code <pci>} with {@code <gpu>} children holds GPUs (several of them: a GPU device, NCCL's DEV node), one
 * with a {@code <nic>} child holds NIC ports (one NIC node per {@code <net>} that has a {@code dev}), one with
 * {@code <pci>} children is a switch.</li>
 * <li>PCIe bandwidth is {@code link_width} x the per-lane rate of {@code link_speed} (NCCL's table, matched by
 * prefix, 8 GT/s when unknown); a width of 0 is read as x16, as NCCL does.</li>
 * <li>Partial files (cloud images list bare {@code <pci class="0x0302..">} GPUs and {@code 0x02..} NICs, which NCCL
 * merges with what it detects at run time): such a device becomes a GPU or NIC whose GDR support is unknown, with
 * a note.</li>
 * <li>An NVLink target of class {@code 0x03..} is the GPU with that bus id, {@code 0x068001} the GPU's CPU, any
 * other class the NVSwitch; {@code <c2c bw count>} links a GPU to its CPU with {@code bw x count / 1000} GB/s.</li>
 * <li>A graph file ({@code <graphs>}, NCCL_GRAPH_DUMP_FILE) is refused as a graph file.</li>
 * </ul>
 * Every assumption is a note on the result. Errors carry the file and line. The input is capped at
 * {@value #MAX_NODES} topology nodes and {@code TopoFiles.MAX_FILE_BYTES} bytes.
 */
public final class NcclTopoXmlReader
{
    /** The most topology nodes a file may create (a 10,000-NIC file creates about 10,000 + its switches). */
    public static final int MAX_NODES = 65_536;

    // NCCL topo.cc kvDictPciGen: per-lane rate in units of 100 Mb/s, matched by prefix in this order.
    private static final String[] SPEED_NAMES = {
        "2.5 GT/s", "5 GT/s", "8 GT/s", "16 GT/s", "32 GT/s",
        "2.5 GT/s PCIe", "5.0 GT/s PCIe", "8.0 GT/s PCIe", "16.0 GT/s PCIe", "32.0 GT/s PCIe", "64.0 GT/s PCIe" };
    private static final int[] SPEED_VALUES = { 15, 30, 60, 120, 240, 15, 30, 60, 120, 240, 480 };
    private static final int SPEED_FALLBACK = 60;

    private NcclTopoXmlReader()
    {
    }

    /**
     * @param file the XML file.
     * @return the topology.
     * @throws TopologyReadException  when the file can not be read as text.
     * @throws TopologyParseException when the content is not a valid topology.
     */
    public static TopoSystem read(final Path file) throws IOException
    {
        return parse(TopoFiles.readText(file), file.toString());
    }

    /**
     * @param xml  the XML text.
     * @param name a name for messages.
     * @return the topology.
     * @throws TopologyParseException when the content is not a valid topology.
     */
    public static TopoSystem parse(final String xml, final String name)
    {
        return parse(xml, name, MAX_NODES);
    }

    static TopoSystem parse(final String xml, final String name, final int maxNodes)
    {
        final Handler handler = new Handler(name, maxNodes);
        try
        {
            final SAXParserFactory factory = SAXParserFactory.newInstance();
            // A topology file is plain data: no DTDs or external entities.
            factory.setFeature(XMLConstants.FEATURE_SECURE_PROCESSING, true);
            factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
            factory.newSAXParser().parse(new InputSource(new StringReader(xml)), handler);
        }
        catch (final SAXParseException ex)
        {
            if (ex.getCause() instanceof TopologyParseException tpe)
            {
                throw tpe;
            }
            throw new TopologyParseException(name, ex.getLineNumber(), "malformed XML: " + ex.getMessage(), ex);
        }
        catch (final SAXException | ParserConfigurationException | IOException ex)
        {
            if (ex.getCause() instanceof TopologyParseException tpe)
            {
                throw tpe;
            }
            throw new TopologyParseException(name, 0, "could not parse: " + ex.getMessage(), ex);
        }
        return handler.finish();
    }

    /**
     * NCCL's PCIe link bandwidth: width (0 read as 16) x the per-lane rate of the speed text, / 80, in GB/s.
     *
     * @param speed the link_speed text (null when absent).
     * @param width the link_width (null when absent).
     * @return GB/s.
     */
    static double pciBandwidth(final String speed, final String width)
    {
        int lanes = 16;
        if (width != null)
        {
            try
            {
                lanes = Integer.decode(width.trim());
            }
            catch (final NumberFormatException ex)
            {
                lanes = 16;
            }
            if (lanes == 0)
            {
                lanes = 16;
            }
        }
        return lanes * laneRate(speed) / 80.0;
    }

    private static int laneRate(final String speed)
    {
        if (speed != null)
        {
            for (int i = 0; i < SPEED_NAMES.length; i++)
            {
                if (speed.startsWith(SPEED_NAMES[i]))
                {
                    return SPEED_VALUES[i];
                }
            }
        }
        return SPEED_FALLBACK;
    }

    // NCCL topo.cc kvDictPciClass, matched by prefix.
    private static NodeType pciClass(final String cls)
    {
        if (cls == null)
        {
            return null;
        }
        final String c = cls.toLowerCase(Locale.ROOT);
        if (c.startsWith("0x060400") || c.startsWith("0x080100"))
        {
            return NodeType.PCI;
        }
        if (c.startsWith("0x068000"))
        {
            return NodeType.NVS;
        }
        if (c.startsWith("0x068001"))
        {
            return NodeType.CPU;
        }
        if (c.startsWith("0x03"))
        {
            return NodeType.GPU;
        }
        if (c.startsWith("0x02"))
        {
            return NodeType.NIC;
        }
        return NodeType.PCI;
    }

    private record PendingNvlink(Frame gpu, String target, int count, String tclass, int line)
    {
    }

    private record PendingC2c(Frame gpu, TopoNode cpu, double bandwidth)
    {
    }

    private record PendingBare(
        NodeType type, String busId, TopoNode anchor, double bandwidth, Map<String, String> attributes)
    {
    }

    // One open element: the node it created (if any) and, for <pci>, what it holds.
    private static final class Frame
    {
        final String element;
        final int line;
        final Map<String, String> attributes;
        TopoNode node;
        TopoNode cpu;
        Frame parent;
        final List<Frame> gpus = new ArrayList<>();
        boolean holdsNic;
        boolean holdsPci;

        Frame(final String element, final int line, final Map<String, String> attributes)
        {
            this.element = element;
            this.line = line;
            this.attributes = attributes;
        }
    }

    private static final class Handler extends DefaultHandler
    {
        private final String name;
        private final int maxNodes;
        private final TopologyBuilder builder = new TopologyBuilder();
        private final Deque<Frame> stack = new ArrayDeque<>();
        private final List<PendingNvlink> nvlinks = new ArrayList<>();
        private final List<PendingC2c> c2cLinks = new ArrayList<>();
        private final List<PendingBare> bare = new ArrayList<>();
        // Assumptions, grouped so that a 10,000-NIC file gives one line per kind, not 10,000.
        private final Map<String, List<String>> assumed = new LinkedHashMap<>();
        private Locator locator;
        private boolean sawSystem;
        private boolean sawNvlink;
        private boolean gpuWithoutSm;
        private int maxExplicitGpuDev = -1;

        Handler(final String name, final int maxNodes)
        {
            this.name = name;
            this.maxNodes = maxNodes;
            builder.source(name);
        }

        @Override
        public void setDocumentLocator(final Locator locator)
        {
            this.locator = locator;
        }

        private int line()
        {
            return locator == null ? 0 : locator.getLineNumber();
        }

        private TopologyParseException error(final String message)
        {
            return new TopologyParseException(name, line(), message);
        }

        private void assume(final String kind, final String where)
        {
            assumed.computeIfAbsent(kind, k -> new ArrayList<>()).add(where);
        }

        @Override
        public void startElement(final String uri, final String local, final String qName, final Attributes atts)
        {
            final Map<String, String> attrs = new HashMap<>();
            for (int i = 0; i < atts.getLength(); i++)
            {
                attrs.put(atts.getQName(i), atts.getValue(i));
            }
            final Frame parent = stack.peek();
            final Frame frame = new Frame(qName, line(), attrs);
            frame.parent = parent;
            frame.cpu = parent == null ? null : parent.cpu;
            if (parent == null && !qName.equals("system"))
            {
                if (qName.equals("graphs") || qName.equals("graph"))
                {
                    throw error("this is an NCCL graph file (<" + qName + ">, written by NCCL_GRAPH_DUMP_FILE and " +
                        "read by NCCL_GRAPH_FILE): it lists the rings and trees NCCL chose, not the hardware. Give " +
                        "a topology file (NCCL_TOPO_FILE, or one written by NCCL_TOPO_DUMP_FILE)");
                }
                throw error("the root element is <" + qName + ">, not <system>: not an NCCL topology file");
            }
            switch (qName)
            {
                case "system" ->
                {
                    if (parent != null)
                    {
                        throw error("<system> must be the root element");
                    }
                    sawSystem = true;
                }
                case "cpu" ->
                {
                    requireParent(parent, "cpu", "system");
                    final int numa = intAttr(attrs, "numaid", "cpu");
                    frame.node = addChecked(() -> builder.cpu(numa));
                    frame.cpu = frame.node;
                }
                case "pci" ->
                {
                    if (parent == null || (!parent.element.equals("cpu") && !parent.element.equals("pci")))
                    {
                        throw error("<pci> must be inside <cpu> or <pci>");
                    }
                    required(attrs, "busid", "pci");
                    promoteToSwitch(parent);
                }
                case "gpu" ->
                {
                    requireParent(parent, "gpu", "pci");
                    if (parent.holdsNic || parent.holdsPci)
                    {
                        throw error("<pci busid=\"" + parent.attributes.get("busid") + "\"> holds a GPU and also " +
                            (parent.holdsNic ? "a NIC" : "PCI devices"));
                    }
                    if (!attrs.containsKey("sm"))
                    {
                        gpuWithoutSm = true;
                    }
                    else
                    {
                        intAttr(attrs, "sm", "gpu");
                    }
                    if (attrs.containsKey("dev"))
                    {
                        maxExplicitGpuDev = Math.max(maxExplicitGpuDev, intAttr(attrs, "dev", "gpu"));
                    }
                    parent.gpus.add(frame);
                }
                case "nvlink" ->
                {
                    requireParent(parent, "nvlink", "gpu");
                    sawNvlink = true;
                    final int count = attrs.containsKey("count") ? intAttr(attrs, "count", "nvlink") : 1;
                    nvlinks.add(new PendingNvlink(parent, attrs.getOrDefault("target", ""), count,
                        attrs.getOrDefault("tclass", ""), line()));
                }
                case "c2c" ->
                {
                    requireParent(parent, "c2c", "gpu");
                    final double bw = doubleAttr(attrs, "bw", 0);
                    final int count = attrs.containsKey("count") ? intAttr(attrs, "count", "c2c") : 1;
                    if (bw <= 0)
                    {
                        throw error("<c2c> needs a positive bw attribute");
                    }
                    // NCCL: bw is in MB/s per link; bw x count / 1000 is the link's GB/s.
                    c2cLinks.add(new PendingC2c(parent, frame.cpu, bw * count / 1000.0));
                }
                case "nic" ->
                {
                    if (parent == null || (!parent.element.equals("pci") && !parent.element.equals("cpu")))
                    {
                        throw error("<nic> must be inside <pci> or <cpu>");
                    }
                    if (parent.element.equals("pci"))
                    {
                        if (!parent.gpus.isEmpty() || parent.holdsPci)
                        {
                            throw error("<pci busid=\"" + parent.attributes.get("busid") + "\"> holds a NIC and " +
                                "also " + (parent.holdsPci ? "PCI devices" : "a GPU"));
                        }
                        parent.holdsNic = true;
                    }
                }
                case "net" ->
                {
                    requireParent(parent, "net", "nic");
                    addNet(parent, attrs);
                }
                default -> builder.note(name + ":" + line() + ": element <" + qName + "> ignored");
            }
            if (builder.size() > maxNodes)
            {
                throw error("more than " + maxNodes + " topology nodes: past the input cap (docs/TOPOLOGY.md); " +
                    "split the file or check that it is a single host's topology");
            }
            stack.push(frame);
        }

        private void addNet(final Frame nicFrame, final Map<String, String> attrs)
        {
            if (!attrs.containsKey("dev"))
            {
                builder.note(name + ":" + line() + ": <net name=\"" + attrs.getOrDefault("name", "?") +
                    "\"> has no dev attribute; NCCL ignores such a <net>, and so does gdrkit");
                return;
            }
            if (attrs.containsKey("net") && "0".equals(attrs.get("net").trim()))
            {
                builder.note(name + ":" + line() + ": <net name=\"" + attrs.getOrDefault("name", "?") +
                    "\" net=\"0\"> is a port fused into a virtual NIC; NCCL does not use it as a NET device");
                return;
            }
            final int dev = intAttr(attrs, "dev", "net");
            final String netName = attrs.getOrDefault("name", "net" + dev);
            final Frame holder = nicFrame.parent;
            final Map<String, String> netAttrs = new HashMap<>(attrs);
            netAttrs.put("#net", "1");
            final TopoNode where;
            final double bw;
            if (holder.element.equals("pci"))
            {
                netAttrs.put("busid", holder.attributes.get("busid").toLowerCase(Locale.ROOT));
                netAttrs.putIfAbsent("class", holder.attributes.getOrDefault("class", ""));
                where = anchorAbove(holder);
                bw = linkBandwidth(holder);
            }
            else
            {
                where = holder.node;
                bw = TopologyBuilder.LOC_BW;
            }
            addChecked(() -> builder.nic(netName, where, bw, netAttrs));
        }

        @Override
        public void endElement(final String uri, final String local, final String qName)
        {
            final Frame frame = stack.pop();
            if (!frame.element.equals("pci"))
            {
                return;
            }
            if (!frame.gpus.isEmpty())
            {
                addGpus(frame);
            }
            else if (!frame.holdsNic && !frame.holdsPci)
            {
                addBare(frame);
            }
        }

        private void addGpus(final Frame pci)
        {
            final String busId = pci.attributes.get("busid").toLowerCase(Locale.ROOT);
            final TopoNode anchor = anchorAbove(pci);
            final double bw = linkBandwidth(pci);
            if (pci.gpus.size() == 1)
            {
                final Frame gpu = pci.gpus.getFirst();
                final Map<String, String> attrs = new HashMap<>(pci.attributes);
                attrs.putAll(gpu.attributes);
                attrs.put("#gpu", "1");
                markWithoutNvlink(gpu, attrs);
                gpu.node = addChecked(() -> builder.gpu(busId, anchor, bw, attrs));
                return;
            }
            // NCCL 2.30: several <gpu> under one <pci> are GPUs of one device (DEV), each linked to it locally.
            final Map<String, String> devAttrs = new HashMap<>(pci.attributes);
            devAttrs.putIfAbsent("sm", pci.gpus.getFirst().attributes.getOrDefault("sm", "0"));
            final TopoNode device = addChecked(() -> builder.gpuDevice(busId, anchor, bw, devAttrs));
            int k = 0;
            for (final Frame gpu : pci.gpus)
            {
                final Map<String, String> attrs = new HashMap<>(pci.attributes);
                attrs.putAll(gpu.attributes);
                attrs.put("#gpu", "1");
                markWithoutNvlink(gpu, attrs);
                final String id = busId + "#" + k++;
                gpu.node = addChecked(() -> builder.gpuOnDevice(device, id, attrs));
            }
            builder.note(name + ":" + pci.line + ": <pci busid=\"" + busId + "\"> holds " + pci.gpus.size() +
                " GPUs: one GPU device (NCCL's DEV node), its GPUs linked to it locally; NVLinks are the first " +
                "GPU's, as in NCCL");
        }

        // NCCL xml.cc: a <gpu> without any <nvlink> child gets its NVLinks from NVML at run time.
        private void markWithoutNvlink(final Frame gpu, final Map<String, String> attrs)
        {
            if (nvlinks.stream().noneMatch(l -> l.gpu() == gpu))
            {
                attrs.put(TopoNode.NVLINK_FROM_NVML, "1");
            }
        }

        private void addBare(final Frame pci)
        {
            final String busId = pci.attributes.get("busid");
            final String cls = pci.attributes.get("class");
            final NodeType type = pciClass(cls);
            if (type == NodeType.GPU || type == NodeType.NIC)
            {
                final Map<String, String> attrs = new HashMap<>(pci.attributes);
                attrs.put("busid", busId.toLowerCase(Locale.ROOT));
                attrs.put("#bare", "1");
                if (type == NodeType.GPU)
                {
                    attrs.put(TopoNode.NVLINK_FROM_NVML, "1");
                }
                bare.add(new PendingBare(type, busId.toLowerCase(Locale.ROOT), anchorAbove(pci), linkBandwidth(pci),
                    attrs));
                return;
            }
            builder.note(name + ":" + pci.line + ": <pci busid=\"" + busId + "\"" +
                (cls == null ? " (no class: NCCL reads it from sysfs at run time)" : " class=\"" + cls + "\"") +
                "> has no GPU, NIC or child device; ignored");
        }

        // A <pci> that contains another <pci> is a switch; create it on the first child.
        private void promoteToSwitch(final Frame parent)
        {
            if (!parent.element.equals("pci"))
            {
                return;
            }
            if (!parent.gpus.isEmpty() || parent.holdsNic)
            {
                throw new TopologyParseException(name, line(), "<pci busid=\"" + parent.attributes.get("busid") +
                    "\"> holds a " + (parent.holdsNic ? "NIC" : "GPU") + " and can not also hold PCI devices");
            }
            if (parent.node == null)
            {
                final TopoNode above = anchorAbove(parent);
                parent.node = addChecked(() -> builder.pciSwitch(
                    parent.attributes.get("busid").toLowerCase(Locale.ROOT), above, linkBandwidth(parent),
                    parent.attributes));
                parent.holdsPci = true;
            }
        }

        // The node a device described by this <pci> frame attaches to: its parent CPU or switch.
        private TopoNode anchorAbove(final Frame pci)
        {
            final Frame up = pci.parent;
            if (up == null || up.node == null)
            {
                throw error("internal: no parent node for <pci busid=\"" + pci.attributes.get("busid") + "\">");
            }
            return up.node;
        }

        private double linkBandwidth(final Frame pci)
        {
            final String where = pci.attributes.get("busid") + " (line " + pci.line + ")";
            final String width = pci.attributes.get("link_width");
            final String speed = pci.attributes.get("link_speed");
            if (width == null || speed == null)
            {
                assume("<pci> without link_width or link_speed: NCCL reads them from sysfs at run time; assumed " +
                    "x16 at 8 GT/s (12 GB/s)", where);
            }
            else
            {
                if (width.trim().equals("0"))
                {
                    assume("<pci link_width=\"0\">: NCCL reads a width of 0 as x16 (topo.cc), and so does gdrkit",
                        where);
                }
                if (laneRate(speed) == SPEED_FALLBACK && !speed.startsWith("8"))
                {
                    assume("<pci> link_speed not in NCCL's table (\"" + speed + "\"): NCCL falls back to 8 GT/s " +
                        "per lane, and so does gdrkit", where);
                }
            }
            return pciBandwidth(speed, width);
        }

        private TopoNode addChecked(final java.util.function.Supplier<TopoNode> add)
        {
            try
            {
                return add.get();
            }
            catch (final IllegalArgumentException ex)
            {
                throw error(ex.getMessage());
            }
        }

        private void requireParent(final Frame parent, final String element, final String expected)
        {
            if (parent == null || !parent.element.equals(expected))
            {
                throw error("<" + element + "> must be inside <" + expected + ">" +
                    (parent == null ? "" : ", found inside <" + parent.element + ">"));
            }
        }

        private String required(final Map<String, String> attrs, final String attr, final String element)
        {
            final String value = attrs.get(attr);
            if (value == null || value.isBlank())
            {
                throw error("<" + element + "> needs a " + attr + " attribute");
            }
            return value;
        }

        private int intAttr(final Map<String, String> attrs, final String attr, final String element)
        {
            final String value = required(attrs, attr, element).trim();
            try
            {
                return value.startsWith("0x") ? Integer.parseInt(value.substring(2), 16) : Integer.parseInt(value);
            }
            catch (final NumberFormatException ex)
            {
                throw error("<" + element + "> " + attr + "=\"" + value + "\" is not an integer");
            }
        }

        private double doubleAttr(final Map<String, String> attrs, final String attr, final double dflt)
        {
            final String value = attrs.get(attr);
            if (value == null)
            {
                return dflt;
            }
            try
            {
                return Double.parseDouble(value.trim());
            }
            catch (final NumberFormatException ex)
            {
                throw error(attr + "=\"" + value + "\" is not a number");
            }
        }

        TopoSystem finish()
        {
            if (!sawSystem)
            {
                throw new TopologyParseException(name, 0, "no <system> element");
            }
            addBareDevices();
            for (final PendingNvlink link : nvlinks)
            {
                addNvlink(link);
            }
            // C2C links go in last so that NCCL's search (which keeps the first of two equally short paths
            // unless the later one is wider) sees the PCIe link first and then prefers the wider C2C link.
            for (final PendingC2c c2c : c2cLinks)
            {
                if (c2c.gpu().node != null && c2c.cpu() != null)
                {
                    builder.c2c(deviceOf(c2c.gpu().node), c2c.cpu(), c2c.bandwidth());
                }
            }
            for (final Map.Entry<String, List<String>> e : assumed.entrySet())
            {
                final List<String> where = e.getValue();
                builder.note(name + ": " + e.getKey() + ": " + where.size() + " element(s), first " +
                    where.getFirst());
            }
            if (builder.size() > 0)
            {
                runtimeNote();
            }
            return builder.build();
        }

        private void addBareDevices()
        {
            final List<String> gpuBusIds = bare.stream().filter(b -> b.type() == NodeType.GPU)
                .map(PendingBare::busId).sorted().toList();
            int gpus = 0;
            int nics = 0;
            for (final PendingBare b : bare)
            {
                final Map<String, String> attrs = new HashMap<>(b.attributes());
                if (b.type() == NodeType.GPU)
                {
                    // CUDA numbers identical GPUs in bus order; NCCL fills dev from CUDA at run time.
                    attrs.put("dev", Integer.toString(maxExplicitGpuDev + 1 + gpuBusIds.indexOf(b.busId())));
                    addChecked(() -> builder.gpu(b.busId(), b.anchor(), b.bandwidth(), attrs));
                    gpus++;
                }
                else
                {
                    addChecked(() -> builder.nic(b.busId(), b.anchor(), b.bandwidth(), attrs));
                    nics++;
                }
            }
            if (gpus > 0)
            {
                builder.note(name + ": " + gpus + " bare <pci class=\"0x03..\"> GPU(s) without <gpu>: NCCL merges " +
                    "them with the GPUs it detects at run time; modelled as GPUs numbered in bus order, sm and " +
                    "GDR support unknown");
            }
            if (nics > 0)
            {
                builder.note(name + ": " + nics + " bare <pci class=\"0x02..\"> NIC(s) without <nic>/<net>: NCCL " +
                    "adds the NET devices its plugin finds at run time; modelled as one NIC each, named by bus id, " +
                    "GDR support unknown");
            }
        }

        private void runtimeNote()
        {
            final List<String> adds = new ArrayList<>();
            if (!sawNvlink)
            {
                adds.add("NVLink/NVSwitch links from NVML (this file has no <nvlink>; on an NVLink host GPU-GPU " +
                    "paths become NVL and far NICs PXN)");
            }
            if (gpuWithoutSm || bare.stream().anyMatch(b -> b.type() == NodeType.GPU))
            {
                adds.add("<gpu> attributes (dev, sm, rank, gdr) from the CUDA driver");
            }
            if (bare.stream().anyMatch(b -> b.type() == NodeType.NIC))
            {
                adds.add("<nic>/<net> (name, speed, gdr) from the network plugin");
            }
            if (!adds.isEmpty())
            {
                builder.note("at run time NCCL adds: " + String.join("; ", adds));
            }
        }

        private TopoNode deviceOf(final TopoNode gpu)
        {
            for (final TopoLink l : gpu.links())
            {
                if (l.type() == LinkType.LOC && l.to().type() == NodeType.DEV)
                {
                    return l.to();
                }
            }
            return gpu;
        }

        private void addNvlink(final PendingNvlink link)
        {
            final TopoNode gpu = link.gpu().node;
            if (gpu == null)
            {
                return;
            }
            final TopoNode source = deviceOf(gpu);
            if (source != gpu && source.links().stream().filter(l -> l.type() == LinkType.LOC)
                .findFirst().map(l -> l.to() != gpu).orElse(false))
            {
                return; // NCCL takes the NVLinks of a device's first GPU only
            }
            final String tclass = link.tclass().toLowerCase(Locale.ROOT);
            final TopoNode target;
            if (tclass.startsWith("0x03"))
            {
                target = builder.findNode(link.target().toLowerCase(Locale.ROOT));
            }
            else if (tclass.startsWith("0x068001"))
            {
                target = cpuOf(source);
            }
            else
            {
                target = builder.nvSwitch();
            }
            if (target == null || target == source)
            {
                builder.note(name + ":" + link.line() + ": nvlink target " + link.target() +
                    " is not a device of this topology; link ignored (NCCL finds no device either)");
                return;
            }
            builder.nvlink(source, target, link.count());
        }

        private TopoNode cpuOf(final TopoNode gpu)
        {
            TopoNode node = gpu;
            for (int guard = 0; guard < 64 && node != null && node.type() != NodeType.CPU; guard++)
            {
                TopoNode up = null;
                for (final TopoLink l : node.links())
                {
                    if (l.type() == LinkType.PCI && l.to().type() != NodeType.GPU && l.to().type() != NodeType.NIC &&
                        l.to().type() != NodeType.DEV && l.to().index() < node.index())
                    {
                        up = l.to();
                        break;
                    }
                }
                node = up;
            }
            return node;
        }
    }
}
