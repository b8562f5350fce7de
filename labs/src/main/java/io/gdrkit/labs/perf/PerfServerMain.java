/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;

/**
 * Entry point of the perf server process that {@link ShmLoopbackPerf} starts itself ({@code --fabric shm|tcp --port P
 * --link-capacity N}). It lives in the lab, so that the lab never names a CLI class; {@code gdrkit perf TEST --fabric
 * shm} is the same server for a person starting one by hand. Its standard output carries the server's
 * "# server: waiting" line the parent waits for.
 */
public final class PerfServerMain {
    private PerfServerMain() {
    }

    public static void main(final String[] args) {
        if (args.length != 6 || !"--fabric".equals(args[0]) || !"--port".equals(args[2])
            || !"--link-capacity".equals(args[4])) {
            System.err.println("usage: PerfServerMain --fabric shm|tcp --port P --link-capacity BYTES");
            System.exit(2);
        }
        final PrintWriter out = new PrintWriter(new OutputStreamWriter(new FileOutputStream(FileDescriptor.out),
            StandardCharsets.UTF_8), true);
        try {
            RemotePerf.serve(args[1], Integer.parseInt(args[3]), Integer.parseInt(args[5]), out, 60_000, null);
        } catch (final RuntimeException e) {
            System.err.println("perf server: " + e.getMessage());
            System.exit(1);
        }
        out.flush();
        System.exit(0);
    }
}
