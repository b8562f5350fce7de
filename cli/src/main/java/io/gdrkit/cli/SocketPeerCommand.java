/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code socket-bw}: the peer a TCP fabric is measured against: a raw Java {@link SocketChannel} stream over
 * loopback, writer and reader threads in this JVM, direct buffers, no framing. What the JVM and kernel give a
 * plain byte stream is the ceiling for anything carried over TCP.
 */
@Command(name = "socket-bw", mixinStandardHelpOptions = true,
    description = "Raw Java SocketChannel stream bandwidth over loopback (a peer for the TCP fabric).")
final class SocketPeerCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = {"-s", "--size"}, defaultValue = "1M", converter = Sizes.IntConverter.class,
        description = "Bytes per write call, with K, M or G (default ${DEFAULT-VALUE}).")
    int size;

    @Option(names = {"-D", "--duration"}, defaultValue = "3", description = "Seconds to stream.")
    double duration;

    @picocli.CommandLine.Mixin
    Mixins.Json jsonOption;

    @picocli.CommandLine.Mixin
    Mixins.SetValues set;

    @Override
    public Integer call() throws Exception {
        final boolean json = jsonOption.json;
        if (size < 1 || size > (64 << 20)) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "-s must be 1 .. 67108864");
        }
        if (!(duration > 0 && duration <= 600)) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "-D must be within (0, 600]");
        }
        final PrintWriter out = spec.commandLine().getOut();
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            final CompletableFuture<Long> reader = CompletableFuture.supplyAsync(() -> {
                try (SocketChannel in = server.accept()) {
                    final ByteBuffer buf = ByteBuffer.allocateDirect(Math.max(size, 1 << 16));
                    long total = 0;
                    int n;
                    while ((n = in.read(buf.clear())) >= 0) {
                        total += n;
                    }
                    return total;
                } catch (final IOException e) {
                    throw new IllegalStateException("reader failed: " + e.getMessage(), e);
                }
            });
            final long start;
            final long end;
            long written = 0;
            try (SocketChannel outCh = SocketChannel.open(server.getLocalAddress())) {
                outCh.socket().setTcpNoDelay(true);
                final ByteBuffer buf = ByteBuffer.allocateDirect(size);
                start = System.nanoTime();
                final long stop = start + (long) (duration * 1e9);
                while (System.nanoTime() < stop) {
                    buf.clear();
                    while (buf.hasRemaining()) {
                        written += outCh.write(buf);
                    }
                }
            }
            final long read = reader.get(30, TimeUnit.SECONDS);
            end = System.nanoTime();
            if (read != written) {
                throw new IllegalStateException("reader got " + read + " bytes, writer sent " + written);
            }
            final double mibs = read / ((end - start) / 1e9) / (1 << 20);
            if (json) {
                final Map<String, Object> m = new LinkedHashMap<>();
                m.put("peer", "java_socketchannel");
                m.put("transport", "tcp");
                m.put("test", "stream");
                m.put("bytes", size);
                m.put("bw_avg_mib_s", Math.round(mibs * 100) / 100.0);
                m.put("seconds", Math.round((end - start) / 1e6) / 1e3);
                out.println(new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(m));
            } else {
                out.println("# raw Java SocketChannel stream over 127.0.0.1 (not a NIC; the TCP ceiling)");
                out.println("#bytes BW average[MiB/sec]");
                out.println(size + " " + String.format(java.util.Locale.ROOT, "%.2f", mibs));
            }
            return 0;
        }
    }
}
