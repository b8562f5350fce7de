/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import io.gdrkit.core.config.ContextFreeze;
import io.gdrkit.core.config.Setting;
import io.gdrkit.softnic.config.SoftNicConfiguration;
import io.gdrkit.core.config.SettingsReader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Socket settings of a {@link TcpFabric} (Aeron's Context pattern): each value has a default, a {@code gdrkit.tcp.*}
 * system property overrides it, a setter overrides both. {@link #conclude()} reads the properties once through
 * {@link SettingsReader}, records where each value came from ({@link #settings()}) and freezes the context.
 *
 * <p>Idle parking: a port whose NIC finds nothing to do for {@link #spinMicros()} waits in a selector on its sockets
 * (readable, or writable where bytes wait) for at most {@link #parkMillis()} instead of polling them again. Off by
 * default (0): a NIC thread that other threads post to must not sleep where a post cannot wake it. A process whose
 * NIC is moved by the very thread that waits on it (perf's client and server) turns it on: on a loaded machine a
 * spinning process takes the CPU its peer and the kernel's TCP work need.
 *
 * <p>Socket buffers: where no property or setter sizes them, each connection asks for {@link #AUTO_BUFFER} bytes
 * each way when the kernel grants that much ({@code net.core.wmem_max} / {@code rmem_max} at least that large), and
 * keeps the kernel's autotuning otherwise (a fixed buffer smaller than what autotuning reaches would only slow it).
 * Autotuned buffers start at tcp_wmem's and tcp_rmem's middle values (16 KiB and 128 KiB by default), so a 1 MiB
 * WRITE crosses in many short non-blocking writes, each a duty cycle that finds the socket full and may park; with
 * 4 MiB each way it goes in a few (docs/PERFORMANCE.md, the TCP rows, has the before and after).
 */
public final class TcpFabricContext {
    /** SO_SNDBUF of each connection in bytes; 0: the kernel's default (autotuned); default {@link #AUTO_BUFFER}. */
    public static final String SEND_BUFFER_PROP = SoftNicConfiguration.TCP_SEND_BUFFER.name();
    /** SO_RCVBUF of each connection in bytes; 0: the kernel's default (autotuned); default {@link #AUTO_BUFFER}. */
    public static final String RECEIVE_BUFFER_PROP = SoftNicConfiguration.TCP_RECEIVE_BUFFER.name();
    /** Longest wait in the selector per idle duty cycle, milliseconds; 0: never wait (busy-poll). */
    public static final String PARK_PROP = SoftNicConfiguration.TCP_PARK_MS.name();
    /** Microseconds of idle duty cycles before the port waits in its selector. */
    public static final String SPIN_PROP = SoftNicConfiguration.TCP_SPIN_US.name();
    /** Smallest WRITE frame whose payload is read straight into its MR; 0: none. */
    public static final String DIRECT_MIN_PROP = SoftNicConfiguration.TCP_DIRECT_MIN.name();

    /** The socket buffer each connection asks for by default, where the kernel allows it. */
    public static final int AUTO_BUFFER = 4 << 20;
    /** Where the kernel says how large a buffer a socket may ask for ({@code wmem_max}, {@code rmem_max}). */
    static final Path KERNEL_LIMITS = Path.of("/proc/sys/net/core");

    private final Map<String, String> overrides = new LinkedHashMap<>();
    private Map<String, String> properties;
    private int defaultParkMillis;
    private final ContextFreeze freeze = new ContextFreeze("TcpFabricContext");
    private int sendBuffer;
    private int receiveBuffer;
    private int parkMillis;
    private int spinMicros;
    private int directMin;
    private List<Setting<?>> settings = List.of();
    private Path kernelLimits = KERNEL_LIMITS;

    /** The values with no property and no setter (tests, callers that take the defaults). */
    public static TcpFabricContext defaults() {
        return new TcpFabricContext().properties(Map.of()).conclude();
    }

    /** Reads {@code gdrkit.tcp.*} from {@code props} instead of the system properties (tests, a child's view). */
    public TcpFabricContext properties(final Map<String, String> props) {
        freeze.set("properties");
        properties = Map.copyOf(props);
        return this;
    }

    /**
     * Reads the kernel's socket buffer limits ({@code wmem_max}, {@code rmem_max}) from {@code dir} instead of
     * {@code /proc/sys/net/core} (tests).
     */
    public TcpFabricContext kernelLimits(final Path dir) {
        freeze.set("kernelLimits");
        kernelLimits = java.util.Objects.requireNonNull(dir, "dir");
        return this;
    }

    /**
     * The default size of a socket buffer whose kernel limit is in {@code limitFile}: {@link #AUTO_BUFFER} when the
     * limit is at least that, else 0 (the kernel's autotuning); 0 too when the file is missing or unreadable.
     */
    static int autoBuffer(final Path limitFile) {
        // one buffered read of the line, not Files.readString: a sysctl file answers a read at a non-zero offset with
        // end-of-file, and readString's first read takes one byte of a file whose size says 0 (it read "4" of 4194304)
        try (java.io.BufferedReader in = Files.newBufferedReader(limitFile)) {
            final String line = in.readLine();
            return line != null && Long.parseLong(line.trim()) >= AUTO_BUFFER ? AUTO_BUFFER : 0;
        } catch (final IOException | NumberFormatException | SecurityException e) {
            return 0;
        }
    }

    public TcpFabricContext sendBuffer(final int bytes) {
        return set("sendBuffer", SEND_BUFFER_PROP, Integer.toString(bytes));
    }

    public TcpFabricContext receiveBuffer(final int bytes) {
        return set("receiveBuffer", RECEIVE_BUFFER_PROP, Integer.toString(bytes));
    }

    public TcpFabricContext parkMillis(final int millis) {
        return set("parkMillis", PARK_PROP, Integer.toString(millis));
    }

    /**
     * The park time when {@link #PARK_PROP} is not set: a lab whose NIC is moved by the thread that waits on it
     * turns parking on this way and a property still overrides it.
     */
    public TcpFabricContext defaultParkMillis(final int millis) {
        freeze.set("defaultParkMillis");
        defaultParkMillis = millis;
        return this;
    }

    public TcpFabricContext spinMicros(final int micros) {
        return set("spinMicros", SPIN_PROP, Integer.toString(micros));
    }

    public TcpFabricContext directMin(final int bytes) {
        return set("directMin", DIRECT_MIN_PROP, Integer.toString(bytes));
    }

    /** The smallest WRITE frame whose payload is read from the socket straight into its MR; 0: none. */
    public int directMin() {
        concluded();
        return directMin;
    }

    /** SO_SNDBUF in bytes, 0 for the kernel's default. */
    public int sendBuffer() {
        concluded();
        return sendBuffer;
    }

    /** SO_RCVBUF in bytes, 0 for the kernel's default. */
    public int receiveBuffer() {
        concluded();
        return receiveBuffer;
    }

    /** Longest selector wait per idle cycle in ms; 0: busy-poll. */
    public int parkMillis() {
        concluded();
        return parkMillis;
    }

    /** Idle time before parking, microseconds. */
    public int spinMicros() {
        concluded();
        return spinMicros;
    }

    /** Every value in effect with its source. */
    public List<Setting<?>> settings() {
        concluded();
        return settings;
    }

    /** {@link #settings()} as {@code name=value (source)}, in order: what outputs show. */
    public List<String> describe() {
        return settings().stream().map(Setting::describe).toList();
    }

    /** Reads the properties once, validates each value and freezes the context. */
    public TcpFabricContext conclude() {
        freeze.checkConclude();
        final SettingsReader r = new SettingsReader(Map.of(), properties != null ? properties
            : SettingsReader.systemProperties("gdrkit.tcp."), overrides);
        sendBuffer = SoftNicConfiguration.TCP_SEND_BUFFER.read(r, autoBuffer(kernelLimits.resolve("wmem_max"))).value();
        receiveBuffer = SoftNicConfiguration.TCP_RECEIVE_BUFFER.read(r, autoBuffer(kernelLimits.resolve("rmem_max")))
            .value();
        if (defaultParkMillis < 0 || defaultParkMillis > 1000) {
            throw new IllegalArgumentException("default park " + defaultParkMillis + " ms outside 0..1000");
        }
        parkMillis = SoftNicConfiguration.TCP_PARK_MS.read(r, defaultParkMillis).value();
        spinMicros = SoftNicConfiguration.TCP_SPIN_US.read(r).value();
        directMin = SoftNicConfiguration.TCP_DIRECT_MIN.read(r).value();
        settings = List.copyOf(r.recorded());
        freeze.concluded();
        return this;
    }

    private TcpFabricContext set(final String setter, final String name, final String value) {
        freeze.set(setter);
        overrides.put(name, value);
        return this;
    }

    /** {@return whether {@link #conclude()} ran (then setters and a second conclude() throw)} */
    public boolean isConcluded() {
        return freeze.isConcluded();
    }

    private void concluded() {
        freeze.requireConcluded("reading its values");
    }
}
