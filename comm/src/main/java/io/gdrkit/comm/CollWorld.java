/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.config.CommConfiguration;
import io.gdrkit.core.auth.Token;
import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.core.config.Source;
import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.gdr.gate.NetCaps;
import io.gdrkit.gdr.net.NetNic;
import io.gdrkit.comm.transport.IbTransport;
import io.gdrkit.comm.transport.IbTransportContext;
import io.gdrkit.comm.transport.NetTransport;
import io.gdrkit.comm.transport.SocketTransport;
import io.gdrkit.comm.transport.SocketTransportContext;
import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.softnic.fabric.Fabric;
import io.gdrkit.softnic.fabric.ShmFabric;
import io.gdrkit.softnic.fabric.TcpFabric;
import io.gdrkit.verbs.VerbsContext;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * One rank's stack for collectives: a software NIC on the chosen fabric, its NET device, the chosen transport
 * and a {@link Communicator} over the bootstrap. Fabrics: {@code injvm} (ranks are threads of one JVM sharing
 * one driver), {@code shm} (ranks are processes of one host; the fabric lives in /dev/shm, named after the run),
 * {@code tcp} (ranks anywhere; each rank's fabric port address travels through the bootstrap).
 */
public final class CollWorld implements AutoCloseable {
    /** Which transport sits behind the seam. */
    public enum TransportKind {
        /** The InfiniBand-style transport over software NICs (NCCL's NET/IB). */
        IB,
        /** The TCP socket transport (NCCL's NET/Socket). */
        SOCKET;

        /**
         * Reads a transport kind by name.
         *
         * @param s {@code ib} or {@code socket}, in any case
         * @return the kind named
         * @throws IllegalArgumentException for any other name
         */
        public static TransportKind parse(final String s) {
            return switch (s.toLowerCase(Locale.ROOT)) {
                case "ib" -> IB;
                case "socket" -> SOCKET;
                default -> throw new IllegalArgumentException("the transport must be ib or socket, not '" + s + "'");
            };
        }
    }

    static final int LINK_CAPACITY = 1 << 22;

    private final Bootstrap bootstrap;
    /** The drivers this rank launched (none on injvm, whose driver the caller shares). */
    private final List<SoftNicDriver> drivers;
    /** On injvm: the caller's driver and the devices this rank added to it, taken off again at close. */
    private final SoftNicDriver shared;
    private final List<SoftDevice> sharedDevices;
    private boolean sharedReleased;
    private final List<VerbsContext> vctxs;
    private final List<NetNic> nics;
    private final NetTransport net;
    private final Communicator comm;
    private io.gdrkit.gpu.GpuDevice gpu;
    private CollGdr gdr;

    private CollWorld(final Bootstrap bootstrap, final List<SoftNicDriver> drivers, final SoftNicDriver shared,
                      final List<SoftDevice> sharedDevices, final List<VerbsContext> vctxs, final List<NetNic> nics,
                      final NetTransport net, final Communicator comm) {
        this.bootstrap = bootstrap;
        this.drivers = List.copyOf(drivers);
        this.shared = shared;
        this.sharedDevices = List.copyOf(sharedDevices);
        this.vctxs = List.copyOf(vctxs);
        this.nics = List.copyOf(nics);
        this.net = net;
        this.comm = comm;
    }

    /**
     * What the ranks' fabric hellos must prove: the run's token when one is set, and the run id in any case (the
     * secret of a run without a token, known only to holders of its handle), so a fabric joins only this run.
     */
    static Token fabricToken(final Bootstrap b) {
        final String tok = b.context().token();
        return Token.of((tok.isEmpty() ? "" : tok + "/") + "gdrkit-run-"
            + Long.toHexString(b.context().id().runId()));
    }

    /**
     * Builds this rank's stack as {@code world} says (concluded here unless it is already). With a GPU
     * ({@link WorldContext#gpu}: {@code sim:<preset>}, each rank its own simulated GPU, {@code cuda:N}, or
     * {@code cuda:rank}, rank r on cuda:r) reductions run on that GPU. The control plane's gates
     * ({@link CollGdr#decide}) decide, per rank, whether the NIC reads and writes the GPU buffers directly (GDR) or
     * the data bounces through host memory, and whether iflush reads before the GPU consumes received data; the
     * transport is told the flush decision and never decides either. Before that, the ranks exchange where their
     * GPUs are ({@link GpuSharing}): how many rank processes share this rank's GPU, and whether MPS is on for them.
     *
     * @param b     this rank's bootstrap, joined
     * @param world the fabric, transport, tuning, timeout and GPU
     * @return the world; close it on every rank
     */
    public static CollWorld open(final Bootstrap b, final WorldContext world) {
        return open(b, world, Here.probe(world.settings()));
    }

    /**
     * What this rank tells the others about its host ({@link HostRanks}): the processors its JVM may use and the
     * host's identity. Tests give ranks of one JVM different ones, as ranks on different hosts have.
     */
    record Here(int cpus, String hostIdentity, Path shmBase) {
        Here(final int cpus, final String hostIdentity) {
            this(cpus, hostIdentity, null);
        }

        static Here probe() {
            return new Here(Runtime.getRuntime().availableProcessors(), GpuSharing.hostIdentity());
        }

        /** As {@link #probe()}, with the host named by {@code GDRKIT_HOST_ID} when it is set. */
        static Here probe(final io.gdrkit.core.config.SettingsReader settings) {
            final String id = io.gdrkit.comm.config.CommConfiguration.HOST_ID.read(settings).value();
            return id.isEmpty() ? probe() : new Here(Runtime.getRuntime().availableProcessors(), "set:" + id);
        }

        /**
         * A test's rank on a host of the test's making: its record counts even among threads of one JVM (the in-JVM
         * fabric), and its host's shared memory lies under {@code shmBase}, as each host has its own /dev/shm.
         */
        static Here played(final int cpus, final String hostIdentity, final Path shmBase) {
            return new Here(cpus, hostIdentity, java.util.Objects.requireNonNull(shmBase, "shmBase"));
        }
    }

    /** {@link #open(Bootstrap, WorldContext)} as {@code here}. */
    static CollWorld open(final Bootstrap b, final WorldContext world, final Here here) {
        if (!world.concluded()) {
            world.conclude();
        }
        final String fabric = world.fabric().wireName();
        final SoftNicDriver shared = world.sharedDriver();
        final TransportKind kind = world.transport();
        final CollContext coll = world.coll();
        final SettingsReader settings = world.settings();
        final Duration timeout = world.timeout();
        final String gpuSpec = world.gpu();
        io.gdrkit.gpu.GpuDevice gpu = null;
        GpuSharing sharing = null;
        if (gpuSpec != null) {
            gpu = io.gdrkit.gpu.devices.GpuDevices.open(gpuSpec.equals("cuda:rank") ? "cuda:" + b.rank() : gpuSpec);
            try {
                // who else is on this GPU, and with MPS or not: every rank checks every rank's record, so a bad
                // one fails every rank alike
                sharing = GpuSharing.of(b.rank(), b.allGather(GpuSharing.record(gpu)),
                    gpu.attributes().mpsEvidence());
            } catch (final RuntimeException e) {
                gpu.close();
                throw e;
            }
        }
        final CollWorld w;
        try {
            w = openHost(b, fabric, shared, kind, coll, settings, timeout, gpu,
                gpuSpec != null && gpuSpec.startsWith("cuda:") && !gpuSpec.equals("cuda:rank"), here);
        } catch (final RuntimeException e) {
            if (gpu != null) {
                gpu.close();
            }
            throw e;
        }
        if (gpu != null) {
            w.gpu = gpu;
            w.comm.gpuSharing(sharing);
            try {
                w.comm.attachGpu(gpu, w.gdr);
            } catch (final RuntimeException e) {
                w.close();
                throw e;
            }
        }
        return w;
    }

    /** {@return this rank's GDR decision (null without a GPU)} */
    public CollGdr gdr() {
        return gdr;
    }

    private static CollWorld openHost(final Bootstrap b, final String fabric, final SoftNicDriver shared,
                                      final TransportKind kind, final CollContext coll, final SettingsReader settings,
                                      final Duration timeout, final io.gdrkit.gpu.GpuDevice gpu,
                                      final boolean singleGpu, final Here here) {
        final int r = b.rank();
        final int n = b.nranks();
        // which ranks share this host's processors: threads of one JVM do by definition; processes may be anywhere
        // (shm proves one kernel, not one set of processors per container), so they say where they are
        final HostRanks hosts = fabric.equals("injvm") && here.shmBase() == null ? HostRanks.oneHost(n, here.cpus())
            : HostRanks.gather(b, here.cpus(), here.hostIdentity());
        final int local = hosts.localRanks(r);
        // rails: k software NICs per rank; on the tcp fabric each has a fabric (a listening port) of its own, on
        // shm they share the run's fabric with LIDs i*n + r + 1; NIC i of one rank talks only to NIC i of the others
        // every rank on this host with host buffers: the shm path carries every collective (ShmCollectives), the NIC
        // only sets up and stands by, so it gets no thread that spins and no extra rails
        final boolean shmServes = shmServes(coll.concludeOnce(), hosts, gpuSpecGiven(gpu));
        final NicChoice nicChoice = kind != TransportKind.IB ? new NicChoice(1, "SocketTransport: no software NIC")
            : shmServes && coll.nicsSetting().value() == 0 ? new NicChoice(1, "auto: " + SHM_SERVES)
            : chooseNics(coll.concludeOnce(), fabric, hosts, r);
        final int k = nicChoice.count();
        final List<SoftNicDriver> drivers = new ArrayList<>();
        final List<SoftDevice> sharedDevices = new ArrayList<>();
        final List<VerbsContext> vctxs = new ArrayList<>();
        final List<NetNic> nics = new ArrayList<>();
        NetTransport net = null;
        CollGdr gdr = null;
        String progress = kind == TransportKind.IB ? null : NO_SOFTWARE_NIC;
        String mtu = NO_SOFTWARE_NIC;
        try {
            if (kind == TransportKind.IB) {
                final List<SoftDevice> devs = new ArrayList<>();
                switch (fabric) {
                    case "injvm" -> {
                        if (shared == null) {
                            throw new IllegalArgumentException("the injvm fabric joins ranks of one JVM only");
                        }
                        for (int i = 0; i < k; i++) {
                            sharedDevices.add(shared.addDevice(deviceName(r, i, k), 0));
                        }
                        devs.addAll(sharedDevices);
                    }
                    case "shm" -> {
                        // each rank's fabric removes its own files at close, the last one out the directory (rank 0
                        // walking it raced the others' removal: a file gone mid-walk failed the run); runs killed -9
                        // are swept here
                        ShmFabric.sweepStaleDirectories(ShmFabric.defaultBase(), "gdrkit-coll-");
                        final String run = Long.toHexString(b.context().id().runId());
                        final Path dir = ShmFabric.defaultBase().resolve("gdrkit-coll-" + run);
                        final NicProgress p = shmServes ? standBy(local, k, here.cpus())
                            : nicProgress(local, k, here.cpus());
                        progress = p.description();
                        final SoftNicDriver d = SoftNicDriver.launch(p.context(), new ShmFabric(dir, LINK_CAPACITY,
                            n * k, null, false));
                        drivers.add(d);
                        for (int i = 0; i < k; i++) {
                            devs.add(d.addDevice(deviceName(r, i, k), i * n + r + 1));
                        }
                    }
                    case "tcp" -> {
                        for (int i = 0; i < k; i++) {
                            // a context per driver (a driver concludes its own)
                            final NicProgress p = shmServes ? standBy(local, k, here.cpus())
                            : nicProgress(local, k, here.cpus());
                            progress = p.description();
                            final TcpFabric tf = new TcpFabric(new InetSocketAddress(coll.bind(), 0),
                                LINK_CAPACITY, null, false, 1, fabricToken(b));
                            // LIDs are the bootstrap's ranks + 1 (the root assigned the ranks); ranks below this
                            // one connect to it, so only their LIDs may join: none can be claimed by a stranger
                            tf.requireAdmission();
                            for (int lower = 0; lower < r; lower++) {
                                tf.admit(lower + 1);
                            }
                            final SoftNicDriver d;
                            try {
                                d = SoftNicDriver.launch(p.context(), tf);
                            } catch (final RuntimeException e) {
                                tf.close();
                                throw e;
                            }
                            drivers.add(d);
                            devs.add(d.addDevice(deviceName(r, i, k), r + 1));
                        }
                        joinTcp(b, drivers);
                    }
                    default -> throw new IllegalArgumentException("the fabric must be injvm, shm or tcp, not '"
                        + fabric + "'");
                }
                for (final SoftDevice dev : devs) {
                    final VerbsContext v = dev.open();
                    vctxs.add(v);
                    // with a GPU the probe also asks the peermem question with that GPU's memory
                    nics.add(new NetNic(r, v, NetCaps.probe(r, v, gpu)));
                }
                final IbTransportContext ic = new IbTransportContext().settings(settings).timeout(timeout)
                    .bind(coll.bind()).softwareMtuDefault(softwareMtuDefault(fabric));
                for (final NetNic x : nics) {
                    ic.nic(x);
                }
                if (gpu != null) {
                    // every NIC of a rank is the same kind of software NIC on the same fabric: the first one's
                    // capabilities stand for all (a registration checks each NIC's again)
                    gdr = CollGdr.decide(gpu, nics.get(0), settings, singleGpu);
                    final io.gdrkit.core.config.Setting<Boolean> cudaGdr = coll.cudaGdr();
                    if (!gpu.isSimulated() && !cudaGdr.value()) {
                        gdr = gdr.heldBack("the software NIC's direct path into a real CUDA GPU is held back: "
                            + cudaGdr.name() + "=" + cudaGdr.raw() + " ("
                            + cudaGdr.source().name().toLowerCase(java.util.Locale.ROOT) + "); true lets the gates "
                            + "decide");
                    }
                    ic.flush(gdr.flush(), gdr.flushEvidence());
                }
                net = new IbTransport(ic);
                mtu = describeMtu(ic, fabric);
            } else {
                if (gpu != null) {
                    gdr = CollGdr.socket(settings);
                }
                net = new SocketTransport(new SocketTransportContext().settings(settings).timeout(timeout)
                    .bind(coll.bind()));
            }
            final Communicator comm = new Communicator(b, net, coll, local, here.cpus(), hosts,
                here.shmBase() == null ? ShmFabric.defaultBase() : here.shmBase());
            comm.nicMtu(mtu);
            if (progress != null) { // a shared (injvm) driver's caller says how it launched it
                comm.nicProgress(progress + "; " + k + (k == 1 ? " NIC" : " NICs") + " per rank (" + nicChoice.why()
                    + ")");
            }
            final CollWorld w = new CollWorld(b, drivers, shared, sharedDevices, vctxs, nics, net, comm);
            w.gdr = gdr;
            return w;
        } catch (final RuntimeException e) {
            if (net != null) {
                net.close();
            }
            for (final NetNic x : nics) {
                x.close();
            }
            for (final VerbsContext v : vctxs) {
                v.close();
            }
            for (final SoftNicDriver d : drivers) {
                d.close();
            }
            // the shared driver is the caller's: only this rank's devices leave it, so a later world can use the names
            for (final SoftDevice dev : sharedDevices) {
                shared.removeDevice(dev);
            }
            throw e;
        }
    }

    /**
     * How many software NICs each rank gets, and why.
     *
     * @param count the number of software NICs per rank
     * @param why   why: the setting, or what the automatic choice saw
     */
    public record NicChoice(int count, String why) {
    }

    /** The NICs a rank prefers on {@code fabric} when auto: {@value #SHM_NICS} on shm, {@value #TCP_NICS} on tcp. */
    static int preferredNics(final String fabric) {
        return switch (fabric) {
            case "shm" -> SHM_NICS;
            case "tcp" -> TCP_NICS;
            default -> 1;
        };
    }

    /** Auto's NICs per rank on the shm fabric. */
    static final int SHM_NICS = 2;
    /** Auto's NICs per rank on the tcp fabric. */
    static final int TCP_NICS = 4;

    /**
     * The NIC count of every rank, the same on all: each rank's own rule ({@link #chooseNics(CollContext, String,
     * int, int)}) with its host's rank count and its processors, and the fewest of them, since every rank must have
     * as many NICs as the others (NIC i talks to NIC i). {@code me} is the asking rank, for the wording.
     */
    static NicChoice chooseNics(final CollContext coll, final String fabric, final HostRanks hosts, final int me) {
        NicChoice fewest = null;
        int at = me;
        for (int p = 0; p < hosts.nranks(); p++) {
            final boolean here = hosts.hostOf()[p] == hosts.hostOf()[me];
            final NicChoice c = chooseNics(coll, fabric, hosts.localRanks(p), hosts.cpus()[p],
                p == me ? "this host" : here ? "this host, rank " + p + "'s processors" : "rank " + p + "'s host");
            // ties go to this rank's own rule, so its words are its own
            if (fewest == null || c.count() < fewest.count() || c.count() == fewest.count() && p == me) {
                fewest = c;
                at = p;
            }
        }
        if (hosts.hosts() == 1 || coll.nicsSetting().value() != 0) {
            return fewest;
        }
        return new NicChoice(fewest.count(), fewest.why() + "; the fewest over " + hosts.hosts() + " hosts"
            + (hosts.hostOf()[at] == hosts.hostOf()[me] ? "" : ", set by rank " + at + "'s host"));
    }

    /**
     * {@code gdrkit.coll.nics}: a value given is taken as is; auto gives a rank several software NICs only where each
     * gets a thread of its own, since NICs that share the rank's polling add work without adding a core: the
     * fabric's preference ({@link #preferredNics}: 2 NICs over shm and 4 over tcp are faster for large allreduces than
     * one, the measured effect is in docs/PERFORMANCE.md, "Collectives against OpenMPI"), lowered until
     * {@value #CPUS_PER_RANK_FOR_DEDICATED} + k - 1 processors per local rank are there (what {@link #nicProgress}
     * asks for dedicated NIC threads), else 1; 1 when {@code gdrkit.nic.progress} is set to another mode than
     * dedicated.
     */
    static NicChoice chooseNics(final CollContext coll, final String fabric, final int localRanks, final int cpus) {
        return chooseNics(coll, fabric, localRanks, cpus, "this host");
    }

    private static NicChoice chooseNics(final CollContext coll, final String fabric, final int localRanks,
                                        final int cpus, final String where) {
        final Setting<Integer> s = coll.nicsSetting();
        if (s.value() != 0) {
            return new NicChoice(s.value(), s.describe());
        }
        final String how = s.source() == Source.DEFAULT ? "auto" : "auto, " + s.describe();
        final int preferred = preferredNics(fabric);
        if (preferred == 1) {
            return new NicChoice(1, how + ": one NIC on the " + fabric + " fabric");
        }
        final SoftNicContext probe = nicContext().conclude();
        final Setting<?> mode = setting(probe, SoftNicContext.PROGRESS_PROP);
        if (mode.source() != Source.DEFAULT && probe.progressMode() != SoftNicContext.ProgressMode.DEDICATED) {
            return new NicChoice(1, how + ": NICs without threads of their own (" + mode.describe() + ")");
        }
        for (int k = preferred; k > 1; k--) {
            if (cpus >= cpusPerRankFor(k) * localRanks) {
                return new NicChoice(k, how + ": " + cpus + " processors >= " + cpusPerRankFor(k) + " x "
                    + localRanks + " ranks on " + where + ", " + fabric + " prefers " + preferred);
            }
        }
        return new NicChoice(1, how + ": " + cpus + " processors < " + cpusPerRankFor(2) + " x " + localRanks
            + " ranks on " + where);
    }

    /**
     * Processors per local rank from which its {@code nicsPerRank} NICs get threads of their own:
     * {@value #CPUS_PER_RANK_FOR_DEDICATED} with one NIC, one more per extra NIC. The one rule behind the NIC's
     * progress ({@link #nicProgress}), the auto NIC count ({@link #chooseNics}) and the auto reduce threads
     * ({@link CollContext#chooseReduceThreadsBeside}).
     */
    static int cpusPerRankFor(final int nicsPerRank) {
        return CPUS_PER_RANK_FOR_DEDICATED + nicsPerRank - 1;
    }

    /** coll-rank{r}, and -nic{i} when a rank has several. */
    static String deviceName(final int rank, final int nic, final int nics) {
        return "coll-rank" + rank + (nics > 1 ? "-nic" + nic : "");
    }

    /**
     * Connects this rank's TCP fabrics (one per NIC) to the higher ranks' fabrics of the same index, through
     * addresses gathered by the bootstrap, and waits until the lower ranks' hellos are taken.
     */
    private static void joinTcp(final Bootstrap b, final List<SoftNicDriver> drivers) {
        final int r = b.rank();
        final int n = b.nranks();
        final StringBuilder mine = new StringBuilder();
        for (final SoftNicDriver d : drivers) {
            final TcpFabric tf = (TcpFabric) d.fabric();
            mine.append(mine.isEmpty() ? "" : ",").append(tf.localAddress().getAddress().getHostAddress())
                .append(':').append(tf.localAddress().getPort());
        }
        final byte[][] addrs = b.allGather(mine.toString().getBytes(StandardCharsets.US_ASCII));
        for (int p = r + 1; p < n; p++) {
            final String[] theirs = new String(addrs[p], StandardCharsets.US_ASCII).split(",", -1);
            if (theirs.length != drivers.size()) {
                throw new CollException("rank " + p + " sent " + theirs.length + " fabric addresses, rank " + r
                    + " has " + drivers.size() + " NICs (a different " + CommConfiguration.COLL_NICS.name() + "?)");
            }
            for (int i = 0; i < drivers.size(); i++) {
                ((TcpFabric) drivers.get(i).fabric()).connect(p + 1, parse(theirs[i].getBytes(
                    StandardCharsets.US_ASCII), p));
            }
        }
        b.barrier();
        // the lower ranks' hellos are in this port's sockets now; the port takes them in its duty cycle, which
        // otherwise runs only when this rank polls a CQ: before then, packets to those ranks would have no route
        final long until = System.nanoTime() + 200_000_000L;
        while (System.nanoTime() < until) {
            int work = 0;
            for (final SoftNicDriver d : drivers) {
                work += d.progress();
            }
            if (work == 0) {
                java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
            }
        }
        b.barrier();
    }

    /** Why a rank's NIC stands by: the shm path carries the collectives. */
    static final String SHM_SERVES = "every rank on one host: the shm path carries every collective of host buffers";

    private static boolean gpuSpecGiven(final io.gdrkit.gpu.GpuDevice gpu) {
        return gpu != null;
    }

    /**
     * Whether the shm path will carry every collective: every rank on one host, host buffers, the shared rounds on
     * ({@code gdrkit.coll.shm.direct}) and no {@code NCCL_ALGO} that forces the transport (ring, tree). Rank
     * threads and reduce workers are then the only threads that spin on this host.
     */
    static boolean shmServes(final CollContext coll, final HostRanks hosts, final boolean gpu) {
        return hosts.hosts() == 1 && !gpu && coll.shmDirect().value() && coll.algo() != CollContext.Algo.RING
            && coll.algo() != CollContext.Algo.TREE;
    }

    /**
     * The NIC's progress when the shm path carries the collectives: the rank's own polling drives it, with the
     * backstop thread (which parks between steps) as the only NIC thread, unless {@code gdrkit.nic.progress} says
     * otherwise.
     */
    static NicProgress standBy(final int localRanks, final int nicsPerRank, final int cpus) {
        final NicProgress auto = nicProgress(localRanks, nicsPerRank, cpus);
        if (!auto.description().contains("(auto:")) {
            return auto; // gdrkit.nic.progress was given
        }
        return new NicProgress(new SoftNicContext().defaultProgress(SoftNicContext.ProgressMode.OWN_DEVICE,
            STANDBY_BACKSTOP_MICROS), "own_device, backstop " + STANDBY_BACKSTOP_MICROS + " us (auto: " + SHM_SERVES
            + "; no NIC thread spins)");
    }

    /**
     * The backstop period of a NIC that stands by: nothing of the collectives goes through it, and what does (a
     * point-to-point call) is driven by the rank's own polling while it waits, so the backstop only keeps an idle
     * NIC answering. A short period would wake a thread thousands of times a second on a host whose processors the
     * spinning ranks already hold: each wake-up preempts a rank in the middle of a handshake.
     */
    static final int STANDBY_BACKSTOP_MICROS = 10_000;

    /** The own-device backstop period: far below NCCL_IB_TIMEOUT's 67 ms, far above a poll loop's cycle. */
    static final int BACKSTOP_MICROS = 200;

    /** Processors per rank on a host from which a rank's NIC gets a thread of its own (auto). */
    public static final int CPUS_PER_RANK_FOR_DEDICATED = 4;

    /**
     * How the ranks' software NICs are driven, and why: the context to launch the driver with, and a line for the
     * output ({@code nic_progress}).
     *
     * @param context     the software NIC context to launch the driver with
     * @param description the line for the output's {@code nic_progress}
     */
    public record NicProgress(SoftNicContext context, String description) {
    }

    /**
     * The software NIC's context for a rank: the rank's own polling drives its NIC (OWN_DEVICE), as NCCL's proxy
     * thread drives a real NIC's queues, so a message costs no hand-off between threads; a backstop thread steps
     * the NIC every {@value #BACKSTOP_MICROS} us so it still answers while its rank computes (reducing a large
     * chunk). A NIC thread per rank (DEDICATED) would instead add a thread hand-off to every hop, which on a host
     * with few cores costs far more than it gains (docs/PERFORMANCE.md). {@code gdrkit.nic.progress} /
     * {@code gdrkit.nic.backstop.us} pick another mode; both are the context's defaults, so the NIC's settings
     * record them as DEFAULT and a property as PROPERTY.
     *
     * @return the software NIC's context for a rank
     */
    public static SoftNicContext nicContext() {
        return new SoftNicContext().defaultProgress(SoftNicContext.ProgressMode.OWN_DEVICE, BACKSTOP_MICROS);
    }

    /**
     * The NIC's progress for {@code localRanks} ranks on this host, chosen by the host's processors unless
     * {@code gdrkit.nic.progress} says otherwise: with at least {@value #CPUS_PER_RANK_FOR_DEDICATED} processors per
     * rank, each NIC gets a thread of its own that spins while idle (DEDICATED; {@code gdrkit.nic.idle} still
     * applies), so it moves the peer's chunks while its rank reduces (see docs/PERFORMANCE.md); with fewer, the
     * rank's polling drives it (OWN_DEVICE and the backstop, {@link #nicContext()}), since a spinning NIC thread per
     * rank on a host with few cores takes the CPU the ranks need.
     *
     * @param localRanks the number of ranks on this host
     * @return the chosen progress mode, with the line for the output
     */
    public static NicProgress nicProgress(final int localRanks) {
        return nicProgress(localRanks, 1, Runtime.getRuntime().availableProcessors());
    }

    /** {@link #nicProgress(int)} on a host with {@code cpus} processors. */
    static NicProgress nicProgress(final int localRanks, final int cpus) {
        return nicProgress(localRanks, 1, cpus);
    }

    /**
     * With {@code nicsPerRank} NICs per rank each NIC past the first needs one more processor per rank: the rule
     * is {@value #CPUS_PER_RANK_FOR_DEDICATED} + nicsPerRank - 1 processors per rank (4 NICs for 2 ranks: 14
     * processors).
     */
    static NicProgress nicProgress(final int localRanks, final int nicsPerRank, final int cpus) {
        if (localRanks < 1 || cpus < 1 || nicsPerRank < 1) {
            throw new IllegalArgumentException("nicProgress: " + localRanks + " ranks, " + nicsPerRank + " NICs each, "
                + cpus + " processors");
        }
        // concluded once to learn each setting's source: the NIC's settings are read there only
        final SoftNicContext probe = nicContext().conclude();
        final Setting<?> mode = setting(probe, SoftNicContext.PROGRESS_PROP);
        if (mode.source() != Source.DEFAULT) {
            return new NicProgress(nicContext(), probe.progressMode().name().toLowerCase(Locale.ROOT) + " ("
                + mode.describe() + ")");
        }
        final int perRank = cpusPerRankFor(nicsPerRank);
        final boolean enough = cpus >= perRank * localRanks;
        final String evidence = cpus + " processors " + (enough ? ">=" : "<") + " " + perRank
            + " x " + localRanks + " ranks on this host" + (nicsPerRank > 1 ? " (" + nicsPerRank + " NICs per rank)"
            : "");
        if (!enough) {
            return new NicProgress(nicContext(), "own_device, backstop " + probe.backstopMicros() + " us (auto: "
                + evidence + ")");
        }
        final Setting<?> idle = setting(probe, SoftNicContext.IDLE_STRATEGY_PROP);
        return new NicProgress(new SoftNicContext().defaultProgress(SoftNicContext.ProgressMode.DEDICATED, 0, "spin"),
            "dedicated, idle " + (idle.source() == Source.DEFAULT ? "spin" : idle.value() + " (" + idle.describe()
            + ")") + " (auto: " + evidence + ")");
    }

    private static Setting<?> setting(final SoftNicContext concluded, final String name) {
        for (final Setting<?> s : concluded.settings()) {
            if (s.name().equals(name)) {
                return s;
            }
        }
        throw new IllegalStateException(name + " is not a SoftNicContext setting");
    }

    /**
     * A peer's fabric address as it sent it: {@code IP:port}, the IP a literal (what {@link #joinTcp} sends). A host
     * name is refused, not resolved: a peer's word must not make this rank ask DNS (a lookup has no timeout of ours
     * and tells a resolver who runs with whom).
     */
    static InetSocketAddress parse(final byte[] blob, final int rank) {
        final String s = new String(blob, StandardCharsets.US_ASCII);
        final int colon = s.lastIndexOf(':');
        final int port;
        try {
            port = Integer.parseInt(s.substring(colon + 1));
            if (colon <= 0 || port < 1 || port > 65535) {
                throw new NumberFormatException();
            }
        } catch (final RuntimeException e) {
            throw new CollException("rank " + rank + " sent a fabric address that is not IP:port");
        }
        try {
            return new InetSocketAddress(java.net.InetAddress.ofLiteral(s.substring(0, colon)), port);
        } catch (final IllegalArgumentException e) {
            throw new CollException("rank " + rank + " sent a fabric address whose host is not a literal IP address "
                + "(names are not looked up)");
        }
    }

    /** {@return this rank's communicator} */
    public Communicator communicator() {
        return comm;
    }

    /**
     * The software MTU the collectives give IbTransport when {@code gdrkit.ib.software.mtu} is not set: 64 KiB on the
     * shm fabric, whose links carry packets that large and where fewer, larger packets raise a large allreduce's
     * busbw (docs/PERFORMANCE.md, "Collectives against OpenMPI"); elsewhere 0, the path MTU (4096 B), as on the tcp
     * fabric, where 64 KiB packets gain nothing.
     */
    static int softwareMtuDefault(final String fabric) {
        return "shm".equals(fabric) ? SHM_SOFTWARE_MTU : 0;
    }

    /** What {@code nic_progress} and {@code nic_mtu} say over SocketTransport. */
    static final String NO_SOFTWARE_NIC = "none (SocketTransport: no software NIC)";

    /** {@link #softwareMtuDefault}'s value on the shm fabric. */
    static final int SHM_SOFTWARE_MTU = 65536;

    /** What {@code nic_mtu} says: the MTU the connections use, and the setting it came from. */
    static String describeMtu(final IbTransportContext ic, final String fabric) {
        final String from = ic.recorded().stream().filter(s -> s.name().equals(CommConfiguration.IB_SOFTWARE_MTU.name()))
            .findFirst().map(s -> s.source() == io.gdrkit.core.config.Source.DEFAULT
                ? CommConfiguration.IB_SOFTWARE_MTU.name() + " not set: "
                    + (ic.softwareMtu() > 0 ? "the collectives' default on the "
                + fabric + " fabric" : "the default") : s.describe())
            .orElse("unknown");
        return (ic.softwareMtu() > 0 ? ic.softwareMtu() + " B" : "the path MTU") + " (" + from + ")";
    }

    /** This rank's TCP fabric (null on the other fabrics); tests play a stranger against it. */
    TcpFabric tcpFabric() {
        return !drivers.isEmpty() && drivers.get(0).fabric() instanceof TcpFabric t ? t : null;
    }

    /** {@return the transport the communicator runs over} */
    public NetTransport transport() {
        return net;
    }

    /** Closes the communicator, transport and NIC; each rank's fabric removes its own shared-memory files. */
    @Override
    public void close() {
        try {
            // every rank has finished its exchanges before any rank closes a connection: a socket closed with a
            // peer's bytes still unread is reset, and the reset can take the peer's last unread data with it
            bootstrap.barrier();
        } catch (final RuntimeException ignored) {
            // another rank is gone already: still release ours
        }
        comm.close();
        if (gpu != null) {
            gpu.close();
        }
        net.close();
        for (final NetNic x : nics) {
            x.close();
        }
        for (final VerbsContext v : vctxs) {
            v.close();
        }
        try {
            bootstrap.barrier();
        } catch (final RuntimeException ignored) {
            // another rank is gone already: still release ours
        }
        for (final SoftNicDriver d : drivers) {
            d.close();
        }
        if (!sharedReleased) {
            sharedReleased = true;
            for (final SoftDevice dev : sharedDevices) {
                shared.removeDevice(dev);
            }
        }
    }
}
