/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.visibility;

import io.gdrkit.verbs.cm.ConnectionManager;
import java.net.InetSocketAddress;

/**
 * Entry point of a sender process that {@link VisibilityLab} starts itself ({@code --connect HOST:PORT}). It lives in
 * the lab, not the CLI, so that the lab never names a CLI class; {@code gdrkit visibility-sender} is the same sender
 * for a person starting one by hand on another host.
 */
public final class SenderMain {
    private SenderMain() {
    }

    public static void main(final String[] args) {
        if (args.length != 2 || !"--connect".equals(args[0])) {
            System.err.println("usage: SenderMain --connect HOST:PORT");
            System.exit(2);
        }
        final InetSocketAddress addr;
        try {
            addr = ConnectionManager.address(args[1]);
        } catch (final IllegalArgumentException e) {
            System.err.println("--connect: " + e.getMessage());
            System.exit(2);
            return;
        }
        SenderHost.serve(addr, VisibilityLab::openFabric);
        System.exit(0);
    }
}
