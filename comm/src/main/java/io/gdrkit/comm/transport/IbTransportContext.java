/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import io.gdrkit.comm.config.CommConfiguration;
import io.gdrkit.core.config.ContextFreeze;
import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.SettingDef;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.gdr.config.GdrConfiguration;
import io.gdrkit.gdr.net.NetNic;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * {@link IbTransport}'s settings. {@link #conclude()} reads the NCCL_IB_* variables through one
 * {@link SettingsReader} (recording where each value came from) unless a setter gave the value.
 *
 * <ul>
 * <li>{@code NCCL_IB_QPS_PER_CONNECTION} (1, 1..16): data QPs per connection.</li>
 * <li>{@code NCCL_IB_SPLIT_DATA_ON_QPS} (0): 1 splits every message over all QPs; 0 sends each message on one QP,
 * round robin.</li>
 * <li>{@code NCCL_IB_AR_THRESHOLD} (8192): messages above it go as plain WRITEs followed by a separate 0-byte
 * WRITE_WITH_IMM (with adaptive routing the data may arrive out of order; the separate IMM is ordered after it on
 * the same QP); at or below it the last data WRITE carries the IMM.</li>
 * <li>{@code NCCL_IB_TIMEOUT} (14, 1..31) and {@code NCCL_IB_RETRY_CNT} (7, 0..7): the QPs' ACK timeout exponent
 * and retry count; a peer that dies ends the comm's requests with RETRY_EXC_ERR within roughly
 * 4.096 us * 2^timeout * (retry + 1).</li>
 * <li>{@code gdrkit.ib.software.mtu} (0, or a power of two 256..1 MiB): the QPs' software MTU, a gdrkit extension
 * a software NIC honours (fewer, larger packets on a fabric whose links carry them); 0 keeps the path MTU (4096).
 * A caller that knows its NICs are software ones gives the default ({@link #softwareMtuDefault}); both ends of a
 * connection must use the same value.</li>
 * </ul>
 * The flush decision ({@link #flush}) comes from the control plane's flush gate; the transport never makes it.
 */
public final class IbTransportContext {
    /** Creates a context with no device and every setting unset; add devices, then {@link #conclude()}. */
    public IbTransportContext() {
    }

    /** Most QPs per connection gdrkit allows (NCCL allows 128; the connect message stays small). */
    public static final int MAX_QPS = 16;
    /** NCCL_NET_IB_MAX_RECVS: receives one irecv may group. */
    public static final int MAX_RECVS = 8;

    private final List<NetNic> nics = new ArrayList<>();
    private SettingsReader settings = SettingsReader.ofProcess();
    private Integer qpsPerConnection;
    private Boolean splitDataOnQps;
    private Integer arThreshold;
    private Integer ibTimeout;
    private Integer ibRetryCnt;
    private Integer softwareMtu;
    private int softwareMtuDefault;
    private boolean flush;
    private String flushEvidence = "flush gate not asked: no flush";
    private Duration timeout = Duration.ofSeconds(30);
    private InetAddress bind = InetAddress.getLoopbackAddress();
    private final List<Setting<?>> recorded = new ArrayList<>();
    private final ContextFreeze freeze = new ContextFreeze("IbTransportContext");

    /**
     * Adds a NET device (the transport's device index is the order of addition). The caller owns it.
     *
     * @param nic the device to add
     * @return this context
     */
    public IbTransportContext nic(final NetNic nic) {
        freeze.set("nic");
        nics.add(Objects.requireNonNull(nic, "nic"));
        return this;
    }

    /**
     * Where NCCL_* values come from (default: the process environment).
     *
     * @param reader the settings source
     * @return this context
     */
    public IbTransportContext settings(final SettingsReader reader) {
        freeze.set("settings");
        this.settings = Objects.requireNonNull(reader, "reader");
        return this;
    }

    /**
     * Sets the data QPs per connection, overriding NCCL_IB_QPS_PER_CONNECTION.
     *
     * @param n the number of QPs, 1..{@value #MAX_QPS}
     * @return this context
     */
    public IbTransportContext qpsPerConnection(final int n) {
        freeze.set("qpsPerConnection");
        this.qpsPerConnection = n;
        return this;
    }

    /**
     * Sets whether every message is split over all QPs, overriding NCCL_IB_SPLIT_DATA_ON_QPS.
     *
     * @param on true to split every message, false to send each on one QP, round robin
     * @return this context
     */
    public IbTransportContext splitDataOnQps(final boolean on) {
        freeze.set("splitDataOnQps");
        this.splitDataOnQps = on;
        return this;
    }

    /**
     * Sets the size above which the immediate data goes in a separate write, overriding NCCL_IB_AR_THRESHOLD.
     *
     * @param bytes the threshold in bytes
     * @return this context
     */
    public IbTransportContext arThreshold(final int bytes) {
        freeze.set("arThreshold");
        this.arThreshold = bytes;
        return this;
    }

    /**
     * The software MTU in bytes (0: the path MTU); see the class comment.
     *
     * @param bytes the MTU in bytes: 0, or a power of two from 256 to 1 MiB
     * @return this context
     */
    public IbTransportContext softwareMtu(final int bytes) {
        freeze.set("softwareMtu");
        this.softwareMtu = bytes;
        return this;
    }

    /**
     * The software MTU used when {@code gdrkit.ib.software.mtu} is not set (default 0: the path MTU).
     *
     * @param bytes the MTU in bytes: 0, or a power of two from 256 to 1 MiB
     * @return this context
     */
    public IbTransportContext softwareMtuDefault(final int bytes) {
        freeze.set("softwareMtuDefault");
        CommConfiguration.IB_SOFTWARE_MTU.validate(Integer.toString(bytes));
        this.softwareMtuDefault = bytes;
        return this;
    }

    /**
     * Whether iflush posts the 1-byte RDMA READ, as the control plane's flush gate decided
     * ({@link io.gdrkit.gdr.gate.FlushPolicy}), with that decision's evidence.
     *
     * @param on       true to post the read
     * @param evidence the flush gate's reason
     * @return this context
     */
    public IbTransportContext flush(final boolean on, final String evidence) {
        freeze.set("flush");
        this.flush = on;
        this.flushEvidence = Objects.requireNonNull(evidence, "evidence");
        return this;
    }

    /**
     * The longest a connection setup or a request may wait for the peer (default 30 s).
     *
     * @param t the timeout
     * @return this context
     */
    public IbTransportContext timeout(final Duration t) {
        freeze.set("timeout");
        this.timeout = Objects.requireNonNull(t, "timeout");
        return this;
    }

    /**
     * The address listeners bind (default loopback).
     *
     * @param address the local address
     * @return this context
     */
    public IbTransportContext bind(final InetAddress address) {
        freeze.set("bind");
        this.bind = Objects.requireNonNull(address, "address");
        return this;
    }

    /** {@return the devices, in the order they were added} */
    public List<NetNic> nics() {
        return List.copyOf(nics);
    }

    /** {@return the data QPs per connection (after {@link #conclude()})} */
    public int qpsPerConnection() {
        return qpsPerConnection;
    }

    /** {@return whether every message is split over all QPs (after {@link #conclude()})} */
    public boolean splitDataOnQps() {
        return splitDataOnQps;
    }

    /** {@return the size above which the immediate data goes in a separate write (after {@link #conclude()})} */
    public int arThreshold() {
        return arThreshold;
    }

    /** {@return the QPs' ACK timeout exponent, NCCL_IB_TIMEOUT (after {@link #conclude()})} */
    public int ibTimeout() {
        return ibTimeout;
    }

    /** {@return the QPs' retry count, NCCL_IB_RETRY_CNT (after {@link #conclude()})} */
    public int ibRetryCnt() {
        return ibRetryCnt;
    }

    /** {@return the QPs' software MTU in bytes, 0 for the path MTU} */
    public int softwareMtu() {
        return softwareMtu;
    }

    /** {@return whether iflush posts the 1-byte RDMA READ} */
    public boolean flush() {
        return flush;
    }

    /** {@return the flush gate's reason for {@link #flush()}} */
    public String flushEvidence() {
        return flushEvidence;
    }

    /** {@return the longest a connection setup or a request may wait for the peer} */
    public Duration timeout() {
        return timeout;
    }

    /** {@return the address listeners bind} */
    public InetAddress bind() {
        return bind;
    }

    /** {@return each setting in effect with its source} */
    public List<Setting<?>> recorded() {
        return List.copyOf(recorded);
    }

    /**
     * Reads what no setter gave, checks everything once and freezes the context: afterwards a setter and a second
     * {@code conclude()} throw {@link IllegalStateException}.
     *
     * @return this context
     * @throws IllegalArgumentException naming a malformed variable, or when no NIC was added
     */
    public synchronized IbTransportContext conclude() {
        freeze.checkConclude();
        if (nics.isEmpty()) {
            throw new IllegalArgumentException("IbTransport: no NET device added");
        }
        qpsPerConnection = value(qpsPerConnection, GdrConfiguration.IB_QPS_PER_CONNECTION, null);
        splitDataOnQps = value(splitDataOnQps, GdrConfiguration.IB_SPLIT_DATA_ON_QPS, null);
        arThreshold = value(arThreshold, GdrConfiguration.IB_AR_THRESHOLD, null);
        ibTimeout = value(ibTimeout, GdrConfiguration.IB_TIMEOUT, null);
        ibRetryCnt = value(ibRetryCnt, GdrConfiguration.IB_RETRY_CNT, null);
        softwareMtu = value(softwareMtu, CommConfiguration.IB_SOFTWARE_MTU, softwareMtuDefault);
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("IbTransport timeout " + timeout + " must be positive");
        }
        freeze.concluded();
        return this;
    }

    /** {@return whether {@link #conclude()} ran (then setters and a second conclude() throw)} */
    public boolean isConcluded() {
        return freeze.isConcluded();
    }

    /**
     * {@link #conclude()} unless it ran, atomically: for the code a context is handed to, which may find it concluded
     * by its caller (or by another rank's thread sharing it).
     */
    synchronized IbTransportContext concludeOnce() {
        return isConcluded() ? this : conclude();
    }

    /** A setter's value checked by the setting's rule (recorded as FLAG), else the setting read with its source. */
    private <T> T value(final T set, final SettingDef<T> def, final T dflt) {
        final Setting<T> s = set != null ? def.given(set) : dflt != null ? def.read(settings, dflt) : def.read(settings);
        recorded.add(s);
        return s.value();
    }
}
