/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.verbs.cm.ConnectionManager;
import io.gdrkit.labs.visibility.SenderHost;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code gdrkit visibility-sender --connect HOST:PORT}: a sender process of the visibility experiment. The
 * receiver ({@code gdrkit visibility}) starts these itself; start one by hand on another host for
 * {@code gdrkit visibility --fabric tcp --listen}.
 */
@Command(name = "visibility-sender", mixinStandardHelpOptions = true,
    description = "A sender process of the visibility experiment (software NIC, simulated); serves the receiver at "
        + "HOST:PORT until it says BYE.")
public final class VisibilitySenderCommand implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--connect", required = true, description = "The receiver's control address HOST:PORT.")
    String connect;

    @CommandLine.Mixin
    Mixins.SetValues set;

    @Override
    public Integer call() {
        final java.net.InetSocketAddress addr;
        try {
            addr = ConnectionManager.address(connect);
        } catch (final IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--connect: " + e.getMessage());
        }
        SenderHost.serve(addr, io.gdrkit.labs.visibility.VisibilityLab::openFabric);
        return 0;
    }
}
