/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.gdr.devices.IbvDeviceList;
import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.DeviceAttr;
import io.gdrkit.verbs.Mtu;
import io.gdrkit.verbs.PortAttr;
import io.gdrkit.verbs.VerbsContext;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code devices}: like ibv_devinfo, from the providers. The libibverbs device list (asked through FFM: name, GUID,
 * ports, state, link layer), each marked {@code real}; gdrkit's software NICs only when asked ({@code --soft N}),
 * marked simulated. An empty list is said plainly, with why. Exit 0 when a device is listed, 1 when none is.
 */
@Command(name = "devices", mixinStandardHelpOptions = true,
    description = {"List the RDMA devices the providers find: libibverbs' devices (real), and with --soft N that "
        + "many software NICs (simulated). Exit 0 when a device is listed, 1 when none is."})
final class DevicesCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--soft", defaultValue = "0", paramLabel = "N",
        description = "Also start and list N software NICs (simulated, in this JVM only), 0..64 (default 0).")
    int soft;

    @Option(names = "--json", description = "JSON: ibverbs {library, loaded, evidence, empty_reason, devices[]}, "
        + "soft[] and simulated.")
    boolean json;

    @Override
    public Integer call() throws IOException {
        if (soft < 0 || soft > 64) {
            throw new ParameterException(spec.commandLine(), "--soft " + soft + " must be 0 .. 64");
        }
        final PrintWriter out = spec.commandLine().getOut();
        final IbvDeviceList.Listing ibv = IbvDeviceList.list();
        final List<Map<String, Object>> softRows = soft > 0 ? softNics(soft) : List.of();
        final boolean any = !ibv.devices().isEmpty() || !softRows.isEmpty();
        if (json) {
            final Map<String, Object> root = new LinkedHashMap<>();
            final Map<String, Object> verbs = new LinkedHashMap<>();
            verbs.put("library", ibv.library());
            verbs.put("loaded", ibv.loaded());
            verbs.put("evidence", ibv.evidence());
            verbs.put("empty_reason", ibv.devices().isEmpty() ? ibv.emptyReason() : null);
            final List<Map<String, Object>> devs = new ArrayList<>();
            for (final IbvDeviceList.Device d : ibv.devices()) {
                final Map<String, Object> m = new LinkedHashMap<>();
                m.put("name", d.name());
                m.put("guid", d.guid());
                m.put("real", d.real());
                m.put("simulated", false);
                m.put("ports", d.ports().stream().map(DevicesCommand::port).toList());
                m.put("evidence", d.evidence());
                devs.add(m);
            }
            verbs.put("devices", devs);
            root.put("ibverbs", verbs);
            root.put("soft", softRows);
            root.put("simulated", !softRows.isEmpty());
            out.println(new ObjectMapper().writeValueAsString(root));
            out.flush();
            return any ? 0 : Main.EXIT_FAILURE;
        }
        out.println("# libibverbs (FFM): " + ibv.evidence());
        if (ibv.devices().isEmpty()) {
            out.println("no RDMA device: " + ibv.emptyReason());
        }
        for (final IbvDeviceList.Device d : ibv.devices()) {
            out.println(d.name() + ": real, node_guid " + d.guid() + ", " + d.ports().size() + " port(s)"
                + (d.ports().isEmpty() ? " (" + d.evidence() + ")" : ""));
            for (final IbvDeviceList.Port p : d.ports()) {
                out.println("  port " + p.port() + ": state " + p.state() + ", link_layer " + p.linkLayer()
                    + ", active_mtu " + p.activeMtu() + ", lid " + p.lid());
            }
        }
        if (!softRows.isEmpty()) {
            out.println(io.gdrkit.labs.perf.Loopback.SIMULATED_HEADER + ": " + softRows.size()
                + " started here because --soft asked; they exist only inside this JVM");
            for (final Map<String, Object> m : softRows) {
                @SuppressWarnings("unchecked")
                final Map<String, Object> p = ((List<Map<String, Object>>) m.get("ports")).getFirst();
                out.println(m.get("name") + ": software NIC (simulated), node_guid " + m.get("guid") + ", port 1: state "
                    + p.get("state") + ", link_layer " + p.get("link_layer") + ", active_mtu " + p.get("active_mtu")
                    + ", lid " + p.get("lid") + ", max_qp " + m.get("max_qp") + ", max_mr " + m.get("max_mr"));
            }
        } else if (!any) {
            out.println("(gdrkit's software NICs are listed only when asked: --soft N)");
        }
        out.flush();
        return any ? 0 : Main.EXIT_FAILURE;
    }

    private static Map<String, Object> port(final IbvDeviceList.Port p) {
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put("port", p.port());
        m.put("state", p.state());
        m.put("link_layer", p.linkLayer());
        m.put("active_mtu", p.activeMtu());
        m.put("lid", p.lid());
        return m;
    }

    private static List<Map<String, Object>> softNics(final int count) {
        final List<Map<String, Object>> rows = new ArrayList<>();
        try (SoftNicDriver driver = SoftNicDriver.launch()) {
            for (int i = 0; i < count; i++) {
                final SoftDevice dev = driver.addDevice("soft" + i);
                try (VerbsContext ctx = dev.open()) {
                    final DeviceAttr a = ctx.queryDevice();
                    final PortAttr p = ctx.queryPort(1);
                    final Map<String, Object> port = new LinkedHashMap<>();
                    port.put("port", 1);
                    port.put("state", p.state() == PortAttr.PORT_ACTIVE ? "ACTIVE" : "state " + p.state());
                    port.put("link_layer", String.valueOf(p.linkLayer()));
                    port.put("active_mtu", Mtu.toBytes(p.activeMtu()));
                    port.put("lid", dev.lid());
                    final Map<String, Object> m = new LinkedHashMap<>();
                    m.put("name", a.name());
                    m.put("guid", guid(a.nodeGuid()));
                    m.put("real", false);
                    m.put("simulated", true);
                    m.put("ports", List.of(port));
                    m.put("max_qp", a.maxQp());
                    m.put("max_mr", a.maxMr());
                    rows.add(m);
                }
            }
        }
        return rows;
    }

    private static String guid(final long g) {
        return String.format("%04x:%04x:%04x:%04x", (g >>> 48) & 0xffff, (g >>> 32) & 0xffff, (g >>> 16) & 0xffff,
            g & 0xffff);
    }
}
