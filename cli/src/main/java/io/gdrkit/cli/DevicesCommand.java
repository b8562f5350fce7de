/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.labs.perf.Loopback;

import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.DeviceAttr;
import io.gdrkit.verbs.PortAttr;
import io.gdrkit.verbs.VerbsContext;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code devices}: like ibv_devinfo, for the software NICs this JVM can host. */
@Command(name = "devices", mixinStandardHelpOptions = true,
    description = "List the RDMA devices: software NICs (simulated) on the in-JVM fabric.")
final class DevicesCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = {"-c", "--count"}, defaultValue = "2", description = "Software NICs to start (default 2).")
    int count;

    @Override
    public Integer call() {
        if (count < 1 || count > 64) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--count " + count
                + " must be 1 .. 64");
        }
        final PrintWriter out = spec.commandLine().getOut();
        out.println(Loopback.SIMULATED_HEADER);
        out.println("# no hardware RDMA device is used: these NICs exist only inside this JVM");
        try (SoftNicDriver driver = SoftNicDriver.launch()) {
            for (int i = 0; i < count; i++) {
                final SoftDevice dev = driver.addDevice("soft" + i);
                try (VerbsContext ctx = dev.open()) {
                    final DeviceAttr a = ctx.queryDevice();
                    final PortAttr p = ctx.queryPort(1);
                    out.printf("%s: software NIC (simulated) guid %016x lid %d port 1 state %s active_mtu %d link_layer %s max_qp %d max_qp_wr %d"
                            + " max_sge %d max_cqe %d max_mr %d max_qp_rd_atom %d max_inline %d"
                            + " max_software_mtu %d%n", a.name(), a.nodeGuid(), dev.lid(),
                        p.state() == PortAttr.PORT_ACTIVE ? "ACTIVE" : Integer.toString(p.state()),
                        io.gdrkit.verbs.Mtu.toBytes(p.activeMtu()), p.linkLayer(), a.maxQp(),
                        a.maxQpWr(), a.maxSge(), a.maxCqe(), a.maxMr(), a.maxQpRdAtom(), a.maxInlineData(),
                        a.maxSoftwareMtu());
                }
            }
        }
        out.flush();
        return 0;
    }
}
