/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.bootstrap;

import java.net.InetSocketAddress;
import java.util.HexFormat;
import java.util.Objects;

/**
 * What ncclGetUniqueId hands out: the root's TCP address and a random run id. Every rank of one run is given the
 * same id (in the environment, by the launcher); the run id makes a rank of another run (or a stale process) that
 * reaches the same port a named {@link BootstrapException.Reason#PROTOCOL} error instead of a member.
 *
 * <p>Text form: {@code host:port/runIdHex}, e.g. {@code 127.0.0.1:40123/9f3c0d2a11b7e655}.
 *
 * @param host  the host name or address of the bootstrap root, 1 to 255 characters
 * @param port  the root's TCP port, 1 to 65535
 * @param runId a random number naming this run; a rank that presents another run's id is refused
 */
public record UniqueId(String host, int port, long runId) {
    /**
     * Checks the components.
     *
     * @throws NullPointerException     if {@code host} is null
     * @throws IllegalArgumentException if {@code host} is blank or longer than 255 characters, or {@code port} is
     *     outside 1..65535
     */
    public UniqueId {
        Objects.requireNonNull(host, "host");
        if (host.isBlank() || host.length() > 255) {
            throw new IllegalArgumentException("unique id host '" + host + "' must be 1..255 characters");
        }
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("unique id port " + port + " outside 1..65535");
        }
    }

    /** {@return the root's socket address, resolved now} */
    public InetSocketAddress address() {
        return new InetSocketAddress(host, port);
    }

    /** {@return the text form, {@code host:port/runIdHex}, that {@link #parse(String)} reads back} */
    public String encode() {
        return host + ":" + port + "/" + HexFormat.of().toHexDigits(runId);
    }

    /**
     * Parses {@link #encode()}'s form.
     *
     * @param text the text form, {@code host:port/runIdHex}
     * @return the id the text names
     * @throws IllegalArgumentException naming the text and the form expected
     */
    public static UniqueId parse(final String text) {
        Objects.requireNonNull(text, "text");
        final int slash = text.lastIndexOf('/');
        final int colon = slash < 0 ? -1 : text.lastIndexOf(':', slash);
        if (slash < 0 || colon <= 0 || text.length() - slash - 1 != 16) {
            throw new IllegalArgumentException("unique id '" + text + "' is not host:port/<16 hex digits>");
        }
        final int port;
        final long run;
        try {
            port = Integer.parseInt(text.substring(colon + 1, slash));
            run = HexFormat.fromHexDigitsToLong(text.substring(slash + 1));
        } catch (final IllegalArgumentException e) {
            throw new IllegalArgumentException("unique id '" + text + "' is not host:port/<16 hex digits>");
        }
        String host = text.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        return new UniqueId(host, port, run);
    }

    @Override
    public String toString() {
        return encode();
    }
}
