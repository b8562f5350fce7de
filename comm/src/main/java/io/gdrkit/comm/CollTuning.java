/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.config.CommConfiguration;
import io.gdrkit.gdr.config.GdrConfiguration;

/**
 * The collectives' tuning table: which algorithm, protocol and path a collective takes, by operation, size, rank
 * count and ranks per host, and why. Anchored on NCCL's tuning model (an algorithm and a protocol per operation
 * and size; {@code NCCL_ALGO} and {@code NCCL_PROTO} override the choice) and on Open MPI's decision functions
 * (coll/tuned's fixed rules pick by communicator size and message size; vader carries every message between
 * processes of one node through shared memory):
 *
 * <ul>
 * <li>every rank on this host and host buffers ({@link ShmCollectives}, path {@code shm}): allreduce and reduce
 * up to the direct limit ({@link CollContext#shmDirectBytes(int)}: 256 KiB / (ranks - 1), at least 64 KiB), and
 * to at most 128 KiB of reads per reduce thread ({@link #reductionDirect}), as direct rounds, every rank reading every input in place (one trip; each rank reduces everything), above it as
 * reduce-scatter + all-gather ({@code rsag}: two trips, the reduction split over every rank); every other operation
 * as direct rounds (it moves data only). Protocol LL up to {@value #LL_BYTES} bytes (one round, the data beside
 * its flag), Simple above (rounds of a whole slot).</li>
 * <li>ranks on several hosts with as many on each (more than one), each host's shared memory open, and host buffers
 * ({@link HierCollectives}, path {@code shm+net}, algo {@code hier}): allreduce, allgather, reduce-scatter and
 * broadcast share memory within each host and use the transport between the ranks of one local index on every
 * host, at every size (auto or {@code NCCL_ALGO=hier}); protocol as the shm path's, for the shared-memory
 * rounds.</li>
 * <li>otherwise (ranks on several hosts without the hierarchical path, or its other operations, a GPU attached,
 * {@code gdrkit.coll.shm.direct=false}, or {@code NCCL_ALGO} ring or tree; path {@code net}): the exchanges over
 * the transport: allreduce as a direct round over the eager connections (through the shared slots when they are
 * open: path {@code shm}) up to the direct limit, then ring (tree with {@code NCCL_ALGO=tree}, which has no direct
 * round); broadcast and reduce direct, then a chain; allgather direct, then ring; reduce-scatter ring; alltoall
 * pairwise; sendrecv one exchange. Protocol LL for the eager direct rounds, Simple for the chunked exchanges.</li>
 * </ul>
 *
 * <p>{@code NCCL_ALGO=direct} or {@code rsag} forces that algorithm on the shm path (rsag applies to allreduce and
 * reduce; other operations stay direct) and falls back to the net path, saying so, where the shm path is not open;
 * {@code NCCL_ALGO=ring} or {@code tree} forces the exchanges over the transport (ring keeps its direct rounds
 * below the limit, tree has none; {@code gdrkit.coll.shm.direct=false} keeps those off the shared slots too). {@code NCCL_PROTO=LL} limits
 * shm rounds to {@value #LL_BYTES} bytes, {@code Simple} uses whole slots; the net path's protocol follows its
 * algorithm. Choices are made once per kind and kept, so choosing allocates nothing.
 */
public final class CollTuning {
    /** The override names, as catalogued (the reasons quote them). */
    private static final String ALGO_NAME = GdrConfiguration.ALGO.name();
    private static final String PROTO_NAME = GdrConfiguration.PROTO.name();

    /** The largest round of the LL protocol, and auto's LL limit. */
    public static final int LL_BYTES = 8192;

    /** What a collective takes. */
    static final int SHM_DIRECT = 0;
    static final int SHM_RSAG = 1;
    static final int NET_DIRECT = 2;
    static final int NET_RING = 3;
    static final int NET_TREE = 4;
    static final int NET_CHAIN = 5;
    static final int NET_PAIRWISE = 6;
    static final int NET_P2P = 7;
    /** The hierarchical path ({@link HierCollectives}): shared memory within each host, the transport between. */
    static final int HIER = 8;
    /** Reduce up a binomial tree through shared memory ({@link ShmCollectives#reduceTree}). */
    static final int SHM_TREE = 9;
    private static final int KINDS = 10;
    private static final String[] ALGO = {"direct", "rsag", "direct", "ring", "tree", "chain", "pairwise", "p2p",
        "hier", "tree"};
    /** The fewest ranks whose small reduce goes up the tree: with 3 the root reads 2 inputs either way. */
    static final int TREE_MIN_RANKS = 4;
    private static final String TREE_NAME = CommConfiguration.COLL_SHM_TREE_BYTES.name();

    /**
     * One choice of the table.
     *
     * @param algo  the algorithm: direct, rsag, ring, tree, chain (broadcast and reduce on the net path), pairwise
     *     (alltoall) or p2p (sendrecv)
     * @param proto {@code LL} or {@code Simple}
     * @param path  {@code shm} (shared memory only), {@code net} (the transport) or {@code shm+net} (the
     *     hierarchical path: shared memory within each host, the transport between hosts)
     * @param why   why: the rule of the table, or the override
     * @param kind  the internal kind
     * @param round the largest round through shared memory, in bytes (0 on the net path)
     */
    public record Choice(String algo, String proto, String path, String why, int kind, int round) {
    }

    private final CollContext.Algo algo;
    private final CollContext.Proto proto;
    private final int n;
    /** The shm path's round (a slot), 0 when the shm path is not open. */
    private final int shmSlot;
    /** Why the shm path is not open (null when it is). */
    private final String noShm;
    private final int shmDirect;
    /** Allreduce's and reduce's largest direct round on the shm path ({@link #reductionDirect}). */
    private final int reduceDirect;
    /** The hierarchical path's slot, 0 when it is not open. */
    private final int hierSlot;
    /** The hosts' layout when the hierarchical path is open ("2 hosts x 3 ranks"), else why it is not. */
    private final String hierWhy;
    private final Choice[] cache = new Choice[CollOp.values().length * KINDS * 2];
    /** What the shm path's data-moving rounds say about single copy ({@link CmaPull}); null: nothing. */
    private String singleCopy;
    /** The largest reduce that goes up the tree on the shm path (0: none). */
    private int treeBytes;

    /**
     * @param algo      NCCL_ALGO
     * @param proto     NCCL_PROTO
     * @param n         the ranks
     * @param shmSlot   the shm path's slot bytes, 0 when it is not open
     * @param noShm     why the shm path is not open (ignored when it is)
     * @param shmDirect the direct limit on the shm path
     * @param reduceThreads the threads (the rank's own included) that share one of its host reductions
     */
    CollTuning(final CollContext.Algo algo, final CollContext.Proto proto, final int n, final int shmSlot,
               final String noShm, final int shmDirect, final int reduceThreads) {
        this(algo, proto, n, shmSlot, noShm, shmDirect, reduceThreads, 0, null);
    }

    /**
     * As above, for ranks on several hosts: {@code hierSlot} is the slot of each host's shared memory (0 when the
     * hierarchical path is not open), {@code hierWhy} the hosts' layout or why the path is not open.
     */
    CollTuning(final CollContext.Algo algo, final CollContext.Proto proto, final int n, final int shmSlot,
               final String noShm, final int shmDirect, final int reduceThreads, final int hierSlot,
               final String hierWhy) {
        this.hierSlot = hierSlot;
        this.hierWhy = hierWhy;
        this.algo = algo;
        this.proto = proto;
        this.n = n;
        this.shmSlot = shmSlot;
        this.noShm = shmSlot > 0 ? null : noShm;
        this.shmDirect = shmDirect;
        this.reduceDirect = reductionDirect(n, reduceThreads, shmDirect);
    }

    /**
     * Records whether the shm path's sendrecv and alltoall rounds (and allgather and broadcast between 2 ranks) move
     * with a single copy
     * ({@link CmaPull}), or why not: their choices' reason ends with it. Called once, before any choice.
     */
    void singleCopy(final String why) {
        this.singleCopy = why;
    }

    /**
     * The largest reduce on the shm path that goes up a binomial tree ({@code gdrkit.coll.shm.tree.bytes}, the same
     * on every rank: the shared files carry it); 0: none. Called once, before any choice.
     */
    void treeBytes(final int bytes) {
        this.treeBytes = bytes;
    }

    /** What one rank's threads read of its peers' slots in a direct reduction, at most, before rsag takes over. */
    static final int REDUCE_READ_PER_THREAD = 128 * 1024;

    /**
     * Allreduce's and reduce's largest direct round on the shm path: the direct limit, and at most
     * {@value #REDUCE_READ_PER_THREAD} bytes read per reduce thread, at least {@value #LL_BYTES}. A direct round has
     * every rank read all n inputs and reduce the whole size on its own reduce threads; rsag costs a second round
     * but has each rank reduce 1/n, all ranks in parallel. With few reduce threads per rank (8 ranks on 16 cores
     * have one each) the direct round's n-fold read is the slower of the two well below the direct limit. Two ranks
     * keep the direct limit: there each rank reduces one pair either way, and rsag adds a copy and a round (on the
     * 2-core machine 256 KiB took 49 us as rsag against 42 us direct).
     *
     * @param n       the ranks
     * @param threads the reduce threads of a rank (its own included)
     * @param limit   the direct limit
     * @return the largest size that still goes direct, a multiple of 8
     */
    static int reductionDirect(final int n, final int threads, final int limit) {
        if (n <= 2) {
            return limit;
        }
        final long byRead = (long) REDUCE_READ_PER_THREAD * Math.max(1, threads) / Math.max(1, n) / 8 * 8;
        return (int) Math.min(limit, Math.max(LL_BYTES, byRead));
    }

    /**
     * Whether {@code op} is a reduce between 2 ranks, which stays direct at every size: the peer only publishes and
     * the root reduces its own input where it lies with the peer's slot, one pass, while rsag would have the root
     * copy its input, reduce half and copy the other half (2-core machine, 4 and 16 MiB: direct 0.56-0.60 and
     * 2.3-2.9 ms, rsag 0.85-1.7 and 2.9-6.3 ms, 3 runs each).
     */
    private boolean reduceOfTwo(final CollOp op) {
        return op == CollOp.REDUCE && n == 2;
    }

    /** {@return allreduce's and reduce's largest direct round on the shm path} */
    int reduceDirect() {
        return reduceDirect;
    }

    /** Whether {@code op} has a hierarchical algorithm ({@link HierCollectives}). */
    private static boolean hierOp(final CollOp op) {
        return op == CollOp.ALLREDUCE || op == CollOp.ALLGATHER || op == CollOp.REDUCE_SCATTER
            || op == CollOp.BROADCAST;
    }

    /** {@return whether the hierarchical path is open: each host's ranks mapped each other's segments} */
    public boolean hierOpen() {
        return hierSlot > 0;
    }

    /** {@return whether the shm path is open: every rank on this host, each mapping every rank's segment} */
    public boolean shmOpen() {
        return shmSlot > 0;
    }

    /**
     * The choice for a collective.
     *
     * @param op          the operation
     * @param bytes       its size as nccl-tests counts it (allgather, reduce-scatter, alltoall: the whole buffer)
     * @param host        whether the buffers are host memory (a GPU's take the net path)
     * @param netDirect   the net path's direct limit now ({@link Communicator#directBytes()})
     * @return the choice, the same object for the same kind
     */
    Choice choose(final CollOp op, final long bytes, final boolean host, final int netDirect) {
        final boolean shm = shmOpen() && host && algo != CollContext.Algo.RING && algo != CollContext.Algo.TREE;
        final boolean hier = !shm && hierOpen() && host && (algo == CollContext.Algo.AUTO
            || algo == CollContext.Algo.HIER) && hierOp(op);
        final int kind;
        boolean ll = false;
        if (hier) {
            kind = HIER;
            ll = proto == CollContext.Proto.LL || proto == CollContext.Proto.AUTO && bytes <= LL_BYTES;
        } else if (shm) {
            final boolean reduction = op == CollOp.ALLREDUCE || op == CollOp.REDUCE;
            // hier on one host has one level: the shm path as auto chooses it
            final boolean auto = algo == CollContext.Algo.AUTO || algo == CollContext.Algo.HIER;
            kind = auto && op == CollOp.REDUCE && n >= TREE_MIN_RANKS && bytes <= treeBytes ? SHM_TREE
                : reduction && (algo == CollContext.Algo.RSAG || auto && bytes > reduceDirect && !reduceOfTwo(op))
                ? SHM_RSAG : SHM_DIRECT;
            ll = proto == CollContext.Proto.LL || proto == CollContext.Proto.AUTO && bytes <= LL_BYTES;
        } else {
            // ring keeps the direct rounds below the limit, as NCCL's ring has its LL protocol; tree has none
            final boolean direct = algo != CollContext.Algo.TREE && bytes > 0 && n > 1 && bytes <= netDirect;
            kind = switch (op) {
                case ALLREDUCE -> algo == CollContext.Algo.TREE ? NET_TREE : direct ? NET_DIRECT : NET_RING;
                case BROADCAST, REDUCE -> direct ? NET_DIRECT : NET_CHAIN;
                case ALLGATHER -> direct ? NET_DIRECT : NET_RING;
                case REDUCE_SCATTER -> NET_RING;
                case ALLTOALL -> NET_PAIRWISE;
                case SENDRECV -> NET_P2P;
            };
            ll = kind == NET_DIRECT;
        }
        // a direct round of the net path goes through the shared slots when they are open (DirectRounds)
        final boolean viaShm = !shm && kind == NET_DIRECT && shmOpen() && host;
        final int i = (op.ordinal() * KINDS + kind) * 2 + (ll ? 1 : 0);
        Choice c = cache[i];
        if (c == null) {
            c = make(op, kind, ll, viaShm);
            cache[i] = c;
        }
        return c;
    }

    private Choice make(final CollOp op, final int kind, final boolean ll, final boolean viaShm) {
        final String p = ll ? "LL" : "Simple";
        final String why;
        final String protoWhy = proto == CollContext.Proto.AUTO ? (ll ? "LL up to " + LL_BYTES + " B"
            : "Simple above " + LL_BYTES + " B") : PROTO_NAME + "=" + p;
        if (kind == HIER) {
            return new Choice(ALGO[kind], p, "shm+net", (algo == CollContext.Algo.AUTO ? "auto" : ALGO_NAME + "=hier")
                + ": ranks on several hosts (" + hierWhy + "), " + switch (op) {
                    case ALLREDUCE -> "reduce-scatter within each host through shared memory, allreduce of each "
                        + "host's slices around a ring of the ranks of one local index over the transport, all-gather "
                        + "within each host";
                    case ALLGATHER -> "allgather around a ring of the ranks of one local index over the transport, "
                        + "then within each host through shared memory";
                    case REDUCE_SCATTER -> "reduce-scatter within each host through shared memory of the blocks of "
                        + "each local index's ranks, then around a ring of the ranks of one local index over the "
                        + "transport";
                    default -> "the root's local index relays it host to host over the transport, then each host "
                        + "through shared memory";
                } + "; " + protoWhy + " (the shared-memory rounds)", kind,
                ll ? Math.min(LL_BYTES, hierSlot) : hierSlot);
        }
        if (kind == SHM_DIRECT || kind == SHM_RSAG || kind == SHM_TREE) {
            final String a;
            if (algo == CollContext.Algo.AUTO || algo == CollContext.Algo.HIER) {
                final String limit = reduceDirect < shmDirect ? reduceDirect + " B (" + n + " inputs read per rank, "
                    + REDUCE_READ_PER_THREAD / 1024 + " KiB per reduce thread; the direct limit is " + shmDirect + " B)"
                    : "the direct limit of " + shmDirect + " B";
                a = (algo == CollContext.Algo.HIER ? ALGO_NAME + "=hier with every rank on one host, one level: " : "")
                    + (kind == SHM_RSAG ? "auto: above " + limit + ", reduce-scatter + all-gather split the reduction "
                    + "over the " + n + " ranks"
                    : kind == SHM_TREE ? "auto: up to " + treeBytes + " B (" + TREE_NAME + ") with " + TREE_MIN_RANKS
                    + " or more ranks, a binomial tree: each rank reduces its children's partial results into its "
                    + "slot, the root reads " + (32 - Integer.numberOfLeadingZeros(n - 1)) + " of them instead of "
                    + (n - 1) + " inputs"
                    : reduceOfTwo(op) ? "auto: 2 ranks, one round at every size: the peer publishes, the root "
                    + "reduces its own input in place with the peer's"
                    : op == CollOp.ALLREDUCE || op == CollOp.REDUCE ? "auto: up to " + limit + ", one round, each "
                    + "rank reads every input in place" : "auto: data moves in direct rounds");
            } else if (algo == CollContext.Algo.RSAG && kind == SHM_DIRECT) {
                a = ALGO_NAME + "=rsag applies to allreduce and reduce; " + op.testName() + " moves data in direct rounds";
            } else {
                a = ALGO_NAME + "=" + ALGO[kind];
            }
            return new Choice(ALGO[kind], p, "shm", a + "; every rank on one host, shared memory, no NIC; "
                + protoWhy + (singleCopy != null && CmaPull.oneReaderPerRegion(op, n) ? "; " + singleCopy : ""), kind,
                ll ? Math.min(LL_BYTES, shmSlot) : shmSlot);
        }
        final StringBuilder w = new StringBuilder();
        if (algo == CollContext.Algo.RING || algo == CollContext.Algo.TREE) {
            w.append(ALGO_NAME).append('=').append(algo.name().toLowerCase(java.util.Locale.ROOT))
                .append(" takes the exchanges over the transport");
            if (kind == NET_DIRECT) {
                w.append(" (below the direct limit, one direct round").append(viaShm ? " through shared memory)"
                    : " over the eager connections)");
            } else if (kind != NET_RING && kind != NET_TREE) {
                w.append(" (").append(op.testName()).append(" has no ").append(algo.name()
                    .toLowerCase(java.util.Locale.ROOT)).append(": ").append(ALGO[kind]).append(')');
            }
        } else if (hierOpen()) {
            // the hierarchical path is open: this operation, or these buffers, or the algorithm, keep the transport
            w.append(algo == CollContext.Algo.AUTO || algo == CollContext.Algo.HIER ? (algo == CollContext.Algo.AUTO
                ? "auto" : ALGO_NAME + "=hier") + ": " + (hierOp(op) ? "GPU buffers take the network path"
                : "the hierarchical path (" + hierWhy + ") carries allreduce, allgather, reduce-scatter and "
                + "broadcast; " + op.testName() + " takes the transport")
                : ALGO_NAME + "=" + algo.name().toLowerCase(java.util.Locale.ROOT) + " needs every rank on one host: "
                + "ranks on several hosts (" + hierWhy + ") take the transport");
            w.append(kind == NET_DIRECT ? "; one direct round over the eager connections" : "; " + ALGO[kind]);
        } else {
            w.append(algo == CollContext.Algo.AUTO ? "auto" : algo == CollContext.Algo.HIER ? ALGO_NAME
                + "=hier needs ranks on several hosts and each host's shared memory, which is not open"
                : ALGO_NAME + "=" + algo.name().toLowerCase(java.util.Locale.ROOT)
                + " needs the shm path, which is not open").append(": ")
                .append(noShm == null ? "GPU buffers take the network path" : "no shm path (" + noShm
                + (hierWhy == null ? "" : "; no hierarchical path: " + hierWhy) + ")");
            w.append(kind == NET_DIRECT ? "; one direct round over the eager connections" : "; " + ALGO[kind]);
        }
        if (proto != CollContext.Proto.AUTO) {
            w.append("; ").append(PROTO_NAME).append(" applies to the shm path");
        }
        return new Choice(ALGO[kind], p, viaShm ? "shm" : "net", w.toString(), kind, 0);
    }
}
