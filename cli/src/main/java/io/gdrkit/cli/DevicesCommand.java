/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.ibverbs.NativeProvider;
import io.gdrkit.verbs.Device;
import io.gdrkit.verbs.VerbsException;
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
 * {@code devices}: like ibv_devinfo, from the providers. The native provider's devices (libibverbs' device list,
 * through FFM: name, GUID, ports with state, link layer, MTU and LID), each marked {@code real}; gdrkit's software
 * NICs only when asked ({@code --soft N}), marked simulated. An empty list is said plainly, with the provider's
 * evidence of why. Exit 0 when a device is listed, 1 when none is.
 */
@Command(name = "devices", mixinStandardHelpOptions = true,
    description = {"List the RDMA devices the providers find: libibverbs' devices (real), and with --soft N that "
        + "many software NICs (simulated); --provider native|soft picks one provider. Exit 0 when a device is listed, "
        + "1 when none is."})
final class DevicesCommand implements Callable<Integer> {
    private static final String[] PORT_STATES = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};

    @Spec
    CommandSpec spec;

    @Option(names = "--soft", defaultValue = "0", paramLabel = "N",
        description = "Also start and list N software NICs (simulated, in this JVM only), 0..64 (default 0).")
    int soft;

    /** native (libibverbs only), soft (software NICs only; --soft defaults to 1), all (native plus --soft N). */
    @picocli.CommandLine.Mixin
    Mixins.Provider providerOption;

    /** ibverbs {library, loaded, evidence, empty_reason, devices[]}, soft[] and simulated. */
    @picocli.CommandLine.Mixin
    Mixins.Json jsonOption;

    @picocli.CommandLine.Mixin
    Mixins.SetValues set;

    private String provider;
    private boolean json;

    @Override
    public Integer call() throws IOException {
        provider = providerOption.require(spec.commandLine(), java.util.EnumSet.of(Choices.Provider.NATIVE,
            Choices.Provider.SOFT, Choices.Provider.ALL)).toString();
        json = jsonOption.json;
        if (soft < 0 || soft > 64) {
            throw new ParameterException(spec.commandLine(), "--soft " + soft + " must be 0 .. 64");
        }
        final boolean nativeToo = switch (provider) {
            case "all", "native" -> true;
            case "soft" -> false;
            default -> throw new ParameterException(spec.commandLine(), "--provider " + provider
                + ": expected native, soft or all");
        };
        if ("native".equals(provider) && soft > 0) {
            throw new ParameterException(spec.commandLine(), "--soft lists software NICs; --provider native lists "
                + "none (use --provider all)");
        }
        final int softCount = "soft".equals(provider) && soft == 0 ? 1 : soft;
        final PrintWriter out = spec.commandLine().getOut();
        final List<Map<String, Object>> softRows = softCount > 0 ? softNics(softCount) : List.of();
        if (!nativeToo) {
            return softOnly(out, softRows);
        }
        final NativeProvider.Probe probe = NativeProvider.probe();
        final List<Map<String, Object>> real = new ArrayList<>();
        for (final Device d : probe.devices()) {
            real.add(describe(d));
        }
        final boolean any = !real.isEmpty() || !softRows.isEmpty();
        if (json) {
            final Map<String, Object> root = new LinkedHashMap<>();
            final Map<String, Object> verbs = new LinkedHashMap<>();
            verbs.put("provider", "ibverbs (native, libibverbs through FFM)");
            verbs.put("loaded", probe.libraryLoaded());
            verbs.put("evidence", probe.evidence());
            verbs.put("empty_reason", real.isEmpty() ? emptyReason(probe) : null);
            verbs.put("devices", real);
            root.put("ibverbs", verbs);
            root.put("soft", softRows);
            root.put("simulated", !softRows.isEmpty());
            out.println(new ObjectMapper().writeValueAsString(root));
            out.flush();
            return any ? 0 : Main.EXIT_NO_HARDWARE;
        }
        out.println("# native provider (libibverbs, FFM): " + probe.evidence());
        if (real.isEmpty()) {
            out.println("no RDMA device: " + emptyReason(probe));
        }
        for (final Map<String, Object> m : real) {
            @SuppressWarnings("unchecked")
            final List<Map<String, Object>> ports = (List<Map<String, Object>>) m.get("ports");
            out.println(m.get("name") + ": real, node_guid " + m.get("guid") + ", " + ports.size() + " port(s)"
                + (ports.isEmpty() ? " (" + m.get("evidence") + ")" : ""));
            for (final Map<String, Object> p : ports) {
                out.println("  port " + p.get("port") + ": state " + p.get("state") + ", link_layer "
                    + p.get("link_layer") + ", active_mtu " + p.get("active_mtu") + ", lid " + p.get("lid"));
            }
        }
        if (!softRows.isEmpty()) {
            printSoft(out, softRows, "--soft");
        } else if (!any && !"native".equals(provider)) {
            out.println("(gdrkit's software NICs are listed only when asked: --soft N)");
        }
        out.flush();
        return any ? 0 : Main.EXIT_NO_HARDWARE;
    }

    /** {@code --provider soft}: the software NICs alone; the native provider is not probed. */
    private int softOnly(final PrintWriter out, final List<Map<String, Object>> softRows) throws IOException {
        if (json) {
            final Map<String, Object> root = new LinkedHashMap<>();
            root.put("soft", softRows);
            root.put("simulated", true);
            out.println(new ObjectMapper().writeValueAsString(root));
        } else {
            printSoft(out, softRows, soft > 0 ? "--soft" : "--provider soft");
        }
        out.flush();
        return 0;
    }

    private static void printSoft(final PrintWriter out, final List<Map<String, Object>> softRows,
                                  final String askedBy) {
        out.println(io.gdrkit.labs.perf.Loopback.SIMULATED_HEADER + ": " + softRows.size()
            + " started here because " + askedBy + " asked; they exist only inside this JVM");
        for (final Map<String, Object> m : softRows) {
            @SuppressWarnings("unchecked")
            final Map<String, Object> p = ((List<Map<String, Object>>) m.get("ports")).getFirst();
            out.println(m.get("name") + ": software NIC (simulated), node_guid " + m.get("guid") + ", port 1: state "
                + p.get("state") + ", link_layer " + p.get("link_layer") + ", active_mtu " + p.get("active_mtu")
                + ", lid " + p.get("lid") + ", max_qp " + m.get("max_qp") + ", max_mr " + m.get("max_mr"));
        }
    }

    static String emptyReason(final NativeProvider.Probe probe) {
        if (!probe.libraryLoaded()) {
            return "libibverbs is not loadable (install rdma-core's libibverbs): " + probe.evidence();
        }
        final String ev = probe.evidence();
        final String kernel = ev.contains("/sys/class/infiniband does not exist")
            ? " /sys/class/infiniband does not exist: no RDMA driver is loaded (no HCA, or its kernel module, e.g. "
                + "mlx5_ib, is not loaded; a software one would be rdma_rxe or siw)."
            : ev.contains("/sys/class/infiniband lists")
                ? " The kernel has RDMA devices that libibverbs does not list: its provider library (e.g. libmlx5) "
                    + "may be missing from /usr/lib/*/libibverbs/." : "";
        return "libibverbs loaded but lists no device." + kernel + " (" + ev + ")";
    }

    /** Name, GUID and every port (1, 2, ... until ibv_query_port refuses) of a provider's device. */
    private static Map<String, Object> describe(final Device d) {
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", d.name());
        m.put("guid", guid(d.guid()));
        m.put("real", !d.isSimulated());
        m.put("simulated", d.isSimulated());
        final List<Map<String, Object>> ports = new ArrayList<>();
        String evidence;
        try (VerbsContext ctx = d.open()) {
            int p = 1;
            for (; p <= 16; p++) {
                final PortAttr a;
                try {
                    a = ctx.queryPort(p);
                } catch (final VerbsException e) {
                    break; // past the last port: the device refuses the number
                }
                final Map<String, Object> row = new LinkedHashMap<>();
                row.put("port", p);
                row.put("state", a.state() >= 0 && a.state() < PORT_STATES.length ? PORT_STATES[a.state()]
                    : "state " + a.state());
                row.put("link_layer", a.linkLayer());
                row.put("active_mtu", a.activeMtu() >= 1 && a.activeMtu() <= 5 ? 128 << a.activeMtu() : 0);
                row.put("lid", a.lid());
                ports.add(row);
            }
            evidence = "ibv_open_device; ibv_query_port 1.." + (p - 1) + (p <= 16 ? ", " + p + " refused" : "");
        } catch (final RuntimeException e) {
            evidence = "could not open: " + e.getMessage();
        }
        m.put("ports", ports);
        m.put("evidence", evidence);
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
