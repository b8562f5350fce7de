package io.gdrkit.gdr.topo;

import java.io.IOException;
import java.io.InputStream;
import java.io.StringReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
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
 * Reads an NCCL topology XML file (the format of NCCL_TOPO_FILE and NCCL_TOPO_DUMP_FILE):
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
 * As in NCCL: a {@code <pci>} with a {@code <gpu>} child is a GPU, one with a {@code <nic>} child holds NIC ports
 * (one NIC node per {@code <net>}), one with {@code <pci>} children is a switch; an NVLink target of class
 * 0x068000 is the NVSwitch, 0x060400/0x068001 the GPU's CPU, otherwise the GPU with that bus id; {@code <c2c>}
 * links a GPU to its CPU. Errors carry the file and line.
 */
public final class NcclTopoXmlReader
{
    private NcclTopoXmlReader()
    {
    }

    /**
     * @param file the XML file.
     * @return the topology.
     * @throws IOException            when the file can not be read.
     * @throws TopologyParseException when the content is not a valid topology.
     */
    public static TopoSystem read(final Path file) throws IOException
    {
        try (InputStream in = Files.newInputStream(file))
        {
            return parse(new InputSource(in), file.toString());
        }
    }

    /**
     * @param xml  the XML text.
     * @param name a name for messages.
     * @return the topology.
     * @throws TopologyParseException when the content is not a valid topology.
     */
    public static TopoSystem parse(final String xml, final String name)
    {
        return parse(new InputSource(new StringReader(xml)), name);
    }

    private static TopoSystem parse(final InputSource input, final String name)
    {
        final Handler handler = new Handler(name);
        try
        {
            final SAXParserFactory factory = SAXParserFactory.newInstance();
            // A topology file is plain data: no DTDs or external entities.
            factory.setFeature(XMLConstants.FEATURE_SECURE_PROCESSING, true);
            factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
            factory.newSAXParser().parse(input, handler);
        }
        catch (final SAXParseException ex)
        {
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

    private record PendingNvlink(TopoNode gpu, String target, int count, String tclass, int line)
    {
    }

    private record PendingC2c(TopoNode gpu, TopoNode cpu, double bandwidth)
    {
    }

    // One open element: the node it created (if any) and, for <pci>, what it is still waiting to become.
    private static final class Frame
    {
        final String element;
        final int line;
        final Map<String, String> attributes;
        TopoNode node;
        TopoNode cpu;

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
        private final TopologyBuilder builder = new TopologyBuilder();
        private final Deque<Frame> stack = new ArrayDeque<>();
        private final List<PendingNvlink> nvlinks = new ArrayList<>();
        private final List<PendingC2c> c2cLinks = new ArrayList<>();
        private Locator locator;
        private boolean sawSystem;

        Handler(final String name)
        {
            this.name = name;
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
            frame.cpu = parent == null ? null : parent.cpu;
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
                    try
                    {
                        frame.node = builder.cpu(numa);
                    }
                    catch (final IllegalArgumentException ex)
                    {
                        throw error(ex.getMessage());
                    }
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
                    if (parent.node != null)
                    {
                        throw error("<pci busid=\"" + parent.attributes.get("busid") + "\"> holds more than a GPU");
                    }
                    final Map<String, String> gpuAttrs = new HashMap<>(parent.attributes);
                    gpuAttrs.putAll(attrs);
                    intAttr(attrs, "sm", "gpu");
                    parent.node = addChecked(() -> builder.gpu(
                        parent.attributes.get("busid").toLowerCase(Locale.ROOT), anchor(parent),
                        pciBandwidth(parent.attributes), gpuAttrs));
                    frame.node = parent.node;
                }
                case "nvlink" ->
                {
                    requireParent(parent, "nvlink", "gpu");
                    final int count = attrs.containsKey("count") ? intAttr(attrs, "count", "nvlink") : 1;
                    nvlinks.add(new PendingNvlink(parent.node, required(attrs, "target", "nvlink"), count,
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
                    c2cLinks.add(new PendingC2c(parent.node, frame.cpu, bw * count));
                }
                case "nic" ->
                {
                    if (parent == null || (!parent.element.equals("pci") && !parent.element.equals("cpu")))
                    {
                        throw error("<nic> must be inside <pci> or <cpu>");
                    }
                }
                case "net" ->
                {
                    requireParent(parent, "net", "nic");
                    final String netName = required(attrs, "name", "net");
                    final Frame holder = stack.toArray(new Frame[0])[1];
                    final Map<String, String> netAttrs = new HashMap<>(attrs);
                    final TopoNode where;
                    final double bw;
                    if (holder.element.equals("pci"))
                    {
                        netAttrs.put("busid", holder.attributes.get("busid").toLowerCase(Locale.ROOT));
                        holder.attributes.put("#nic", "1");
                        where = anchor(holder);
                        bw = pciBandwidth(holder.attributes);
                    }
                    else
                    {
                        where = holder.node;
                        bw = TopologyBuilder.LOC_BW;
                    }
                    frame.node = addChecked(() -> builder.nic(netName, where, bw, netAttrs));
                }
                default -> builder.note(name + ":" + line() + ": element <" + qName + "> ignored");
            }
            stack.push(frame);
        }

        @Override
        public void endElement(final String uri, final String local, final String qName)
        {
            final Frame frame = stack.pop();
            if (frame.element.equals("pci") && frame.node == null && !frame.attributes.containsKey("#nic"))
            {
                builder.note(name + ":" + frame.line + ": <pci busid=\"" + frame.attributes.get("busid") +
                    "\" class=\"" + frame.attributes.getOrDefault("class", "?") +
                    "\"> has no GPU, NIC or child device; ignored");
            }
        }

        // A <pci> that contains another <pci> is a switch; create it on first child.
        private void promoteToSwitch(final Frame parent)
        {
            if (parent.element.equals("pci") && parent.node == null)
            {
                parent.node = addChecked(() -> builder.pciSwitch(
                    parent.attributes.get("busid").toLowerCase(Locale.ROOT), anchor(stack.toArray(new Frame[0])[1]),
                    pciBandwidth(parent.attributes), parent.attributes));
                parent.attributes.put("#switch", "1");
            }
            else if (parent.element.equals("pci") && parent.node.type() != NodeType.PCI)
            {
                throw new TopologyParseException(name, line(), "<pci busid=\"" + parent.attributes.get("busid") +
                    "\"> is a " + parent.node.type() + " and can not also hold PCI devices");
            }
        }

        // The node a child of this frame attaches to: the CPU for <cpu>, the switch for a <pci> switch.
        private TopoNode anchor(final Frame frame)
        {
            if (frame.element.equals("cpu"))
            {
                return frame.node;
            }
            if (frame.element.equals("pci"))
            {
                // The device's own <pci> frame: attach to the frame above it.
                final Frame[] frames = stack.toArray(new Frame[0]);
                for (int i = 0; i < frames.length; i++)
                {
                    if (frames[i] == frame)
                    {
                        if (frame.node != null && frame.node.type() == NodeType.PCI)
                        {
                            return frame.node;
                        }
                        return anchor(frames[i + 1]);
                    }
                }
            }
            throw error("internal: no parent for <" + frame.element + ">");
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
            for (final PendingNvlink link : nvlinks)
            {
                final String tclass = link.tclass.toLowerCase(Locale.ROOT);
                final TopoNode target;
                if (tclass.equals("0x068000"))
                {
                    target = builder.nvSwitch();
                }
                else if (tclass.equals("0x060400") || tclass.equals("0x068001"))
                {
                    target = cpuOf(link.gpu);
                }
                else
                {
                    target = builder.findNode(link.target.toLowerCase(Locale.ROOT));
                }
                if (target == null || target == link.gpu)
                {
                    builder.note(name + ":" + link.line + ": nvlink target " + link.target +
                        " is not a device of this topology; link ignored");
                    continue;
                }
                builder.nvlink(link.gpu, target, link.count);
            }
            // C2C links go in last so that NCCL's search (which keeps the first of two equally short paths
            // unless the later one is wider) sees the PCIe link first and then prefers the wider C2C link.
            for (final PendingC2c c2c : c2cLinks)
            {
                builder.c2c(c2c.gpu(), c2c.cpu(), c2c.bandwidth());
            }
            return builder.build();
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
                        (node.type() != NodeType.PCI || l.to().index() < node.index()))
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

    // NCCL derives PCIe bandwidth from link_width x the per-lane rate of link_speed; unknown means Gen3 x16.
    static double pciBandwidth(final Map<String, String> attrs)
    {
        final String speed = attrs.get("link_speed");
        final String width = attrs.get("link_width");
        if (speed == null || width == null)
        {
            return TopologyBuilder.PCI_BW;
        }
        final double perLane;
        if (speed.startsWith("2.5 GT/s"))
        {
            perLane = 0.25;
        }
        else if (speed.startsWith("5 GT/s") || speed.startsWith("5.0 GT/s"))
        {
            perLane = 0.5;
        }
        else if (speed.startsWith("8 GT/s") || speed.startsWith("8.0 GT/s"))
        {
            perLane = 0.75;
        }
        else if (speed.startsWith("16 GT/s") || speed.startsWith("16.0 GT/s"))
        {
            perLane = 1.5;
        }
        else if (speed.startsWith("32 GT/s") || speed.startsWith("32.0 GT/s"))
        {
            perLane = 3.0;
        }
        else if (speed.startsWith("64 GT/s") || speed.startsWith("64.0 GT/s"))
        {
            perLane = 6.0;
        }
        else
        {
            return TopologyBuilder.PCI_BW;
        }
        try
        {
            return perLane * Integer.parseInt(width.trim());
        }
        catch (final NumberFormatException ex)
        {
            return TopologyBuilder.PCI_BW;
        }
    }
}
