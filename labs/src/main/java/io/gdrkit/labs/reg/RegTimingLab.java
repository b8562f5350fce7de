/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.reg;

import io.gdrkit.core.mem.DmaBuf;
import io.gdrkit.gdr.reg.CommRegistrationCache;
import io.gdrkit.gdr.reg.NetConnection;
import io.gdrkit.gdr.reg.NetMrCache;
import io.gdrkit.gdr.reg.RegHandle;
import io.gdrkit.gdr.reg.RegSettings;
import io.gdrkit.gdr.reg.Registrar;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.DmaBufExport;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuException;
import io.gdrkit.gpu.devices.GpuDevices;
import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.VerbsContext;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Registration timing, by page count: the NET MR cache and the communicator cache in front of the
 * software NIC's real MR registration, that registration alone, and on a real GPU the CUDA driver's costs
 * ({@code cuMemHostRegister}, {@code cuMemAlloc}, DMA-BUF export through {@code cuMemGetHandleForAddressRange}).
 * Every call is timed alone with {@link System#nanoTime()}; a row gives min, median, p99 and max over its samples.
 * A library: it returns records and prints nothing.
 */
public final class RegTimingLab {
    /** How the software NIC pins: it does not, and every result says so. */
    public static final String SOFT_PINNING = "software NIC (simulated): ibv_reg_mr keeps a reference to the JVM's "
        + "MemorySegment and allocates a key; no page is locked or touched (a kernel ibv_reg_mr pins every page "
        + "with get_user_pages and writes the NIC's translation table, so its cost grows with the page count)";

    /**
     * @param maxPages the largest page count (a power of 4 from 1 up to it is timed; 2^18 by default)
     * @param reps     samples per operation and size (at least 3); sizes above 2^14 pages use at most 5
     * @param pageSize the page size, bytes (4096)
     * @param gpu      a GPU spec for the CUDA rows ({@code cuda:0}), or null for none; a simulated GPU is skipped
     */
    public record Config(long maxPages, int reps, long pageSize, String gpu) {
        public Config {
            if (maxPages < 1 || maxPages > (1L << 18)) {
                throw new IllegalArgumentException("max pages " + maxPages + " must be 1 .. 262144 (2^18)");
            }
            if (reps < 3 || reps > 100_000) {
                throw new IllegalArgumentException("reps " + reps + " must be 3 .. 100000");
            }
            if (pageSize < 1 || Long.bitCount(pageSize) != 1) {
                throw new IllegalArgumentException("page size " + pageSize + " must be a power of two");
            }
        }

        /** 2^18 pages of 4 KiB, 20 samples, no GPU. */
        public static Config defaults() {
            return new Config(1L << 18, 20, NetMrCache.DEFAULT_PAGE_SIZE, null);
        }
    }

    /**
     * One timed operation at one size.
     *
     * @param layer     "NET MR cache", "comm cache", "software NIC" or "CUDA"
     * @param operation e.g. "cold register (miss)"
     * @param pages     pages in the range
     * @param bytes     bytes in the range
     * @param samples   calls timed
     * @param minNs     fastest call
     * @param medianNs  median call
     * @param p99Ns     99th percentile (nearest rank), or -1 below {@link #P99_SAMPLES} samples, where the nearest
     *                  rank is the maximum and would only repeat it
     * @param maxNs     slowest call
     * @param simulated true when the time includes a simulated device (the software NIC)
     */
    public record Row(String layer, String operation, long pages, long bytes, int samples, long minNs, long medianNs,
                      long p99Ns, long maxNs, boolean simulated) {
    }

    /**
     * @param config  what was asked
     * @param rows    one per layer, operation and size
     * @param pinning how each registering layer pins memory
     * @param notes   what was skipped and why, and how to read the rows
     */
    public record Result(Config config, List<Row> rows, List<String> pinning, List<String> notes) {
    }

    private RegTimingLab() {
    }

    /** Runs every layer at every size. */
    public static Result run(final Config config) {
        final List<Row> rows = new ArrayList<>();
        final List<String> notes = new ArrayList<>();
        final List<String> pinning = new ArrayList<>(List.of(SOFT_PINNING));
        final List<Long> sizes = new ArrayList<>();
        for (long p = 1; p <= config.maxPages(); p *= 4) {
            sizes.add(p);
        }
        final long maxBytes = sizes.getLast() * config.pageSize();
        try (Arena arena = Arena.ofShared();
             SoftNicDriver driver = SoftNicDriver.launch()) {
            // zeroed once by the arena; the software NIC itself never touches or pins it
            final MemorySegment memory = arena.allocate(maxBytes + config.pageSize(), config.pageSize());
            final SoftDevice device = driver.addDevice("soft0");
            try (VerbsContext ctx = device.open()) {
                final ProtectionDomain pd = ctx.allocPd();
                try {
                    final SoftRegistrar nic = new SoftRegistrar(pd, memory);
                    // warm-up: the JIT compiles the paths on small sizes before anything is recorded
                    for (int i = 0; i < 200; i++) {
                        timeCaches(nic, memory, config.pageSize(), Math.min(1 + i % 8, sizes.getLast()), 1,
                            new ArrayList<>());
                    }
                    for (final long pages : sizes) {
                        timeCaches(nic, memory, config.pageSize(), pages, reps(config, pages), rows);
                        timeSoftNic(pd, memory, config.pageSize(), pages, reps(config, pages), rows);
                    }
                } finally {
                    pd.close();
                }
            }
        }
        notes.add("cold register and deregister include the software NIC's own registration; cache hit and "
            + "contained hit never reach the NIC");
        notes.add("each sample is one call timed alone with System.nanoTime(); tens of nanoseconds are near the "
            + "timer's resolution");
        timeCuda(config, sizes, rows, pinning, notes);
        return new Result(config, List.copyOf(rows), List.copyOf(pinning), List.copyOf(notes));
    }

    private static int reps(final Config config, final long pages) {
        return pages > (1L << 14) ? Math.min(config.reps(), 5) : config.reps();
    }

    // The software NIC as NCCL's NET registrar: register = ibv_reg_mr on the slice, deregister = ibv_dereg_mr.
    private static final class SoftRegistrar implements Registrar {
        private final ProtectionDomain pd;
        private final MemorySegment memory;
        private final Map<Object, MemoryRegion> live = new IdentityHashMap<>();

        SoftRegistrar(final ProtectionDomain pd, final MemorySegment memory) {
            this.pd = pd;
            this.memory = memory;
        }

        @Override
        public Object register(final long addr, final long len) {
            final MemoryRegion mr = pd.registerMr(memory.asSlice(addr - memory.address(), len),
                AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            live.put(mr, mr);
            return mr;
        }

        @Override
        public void deregister(final Object mr) {
            final MemoryRegion region = live.remove(mr);
            if (region == null) {
                throw new IllegalStateException("deregister of an MR this registrar did not make");
            }
            region.deregister();
        }
    }

    private static void timeCaches(final SoftRegistrar nic, final MemorySegment memory, final long pageSize,
                                   final long pages, final int reps, final List<Row> rows) {
        final long len = pages * pageSize;
        final long addr = memory.address();
        // strictly inside: one page in from each end when there are three pages or more, else half a page
        final long innerAddr = pages >= 3 ? addr + pageSize : addr + pageSize / 4;
        final long innerLen = pages >= 3 ? len - 2 * pageSize : pageSize / 2;
        final long[][] net = new long[4][reps];
        final long[][] comm = new long[4][reps];
        for (int r = 0; r < reps; r++) {
            final NetMrCache cache = new NetMrCache(nic, pageSize);
            long t0 = System.nanoTime();
            final Object mr = cache.register(addr, len);
            long t1 = System.nanoTime();
            cache.register(addr, len);
            long t2 = System.nanoTime();
            cache.register(innerAddr, innerLen);
            long t3 = System.nanoTime();
            cache.deregister(mr);
            cache.deregister(mr);
            long t4 = System.nanoTime();
            cache.deregister(mr);
            long t5 = System.nanoTime();
            net[0][r] = t1 - t0;
            net[1][r] = t2 - t1;
            net[2][r] = t3 - t2;
            net[3][r] = t5 - t4;

            // the communicator cache in front of one GDR connection whose NIC is the NET MR cache, as in NCCL
            final NetMrCache perNic = new NetMrCache(nic, pageSize);
            final CommRegistrationCache commCache = new CommRegistrationCache(
                new RegSettings(true, pageSize), true, List.of(new NetConnection("net0", true, perNic)));
            t0 = System.nanoTime();
            final RegHandle h = commCache.register(addr, len);
            t1 = System.nanoTime();
            commCache.register(addr, len);
            t2 = System.nanoTime();
            commCache.register(innerAddr, innerLen);
            t3 = System.nanoTime();
            commCache.deregister(h);
            commCache.deregister(h);
            t4 = System.nanoTime();
            commCache.deregister(h);
            t5 = System.nanoTime();
            comm[0][r] = t1 - t0;
            comm[1][r] = t2 - t1;
            comm[2][r] = t3 - t2;
            comm[3][r] = t5 - t4;
        }
        final String[] ops = {"cold register (miss)", "cache hit (exact)", "contained hit", "deregister (last ref)"};
        for (int i = 0; i < ops.length; i++) {
            rows.add(row("NET MR cache", ops[i], pages, len, net[i], true));
        }
        for (int i = 0; i < ops.length; i++) {
            rows.add(row("comm cache", ops[i], pages, len, comm[i], true));
        }
    }

    private static void timeSoftNic(final ProtectionDomain pd, final MemorySegment memory, final long pageSize,
                                    final long pages, final int reps, final List<Row> rows) {
        final long len = pages * pageSize;
        final long[] reg = new long[reps];
        final long[] dereg = new long[reps];
        for (int r = 0; r < reps; r++) {
            final long t0 = System.nanoTime();
            final MemoryRegion mr = pd.registerMr(memory.asSlice(0, len), AccessFlags.LOCAL_WRITE
                | AccessFlags.ALL_REMOTE);
            final long t1 = System.nanoTime();
            mr.deregister();
            final long t2 = System.nanoTime();
            reg[r] = t1 - t0;
            dereg[r] = t2 - t1;
        }
        rows.add(row("software NIC", "ibv_reg_mr", pages, len, reg, true));
        rows.add(row("software NIC", "ibv_dereg_mr", pages, len, dereg, true));
    }

    private static void timeCuda(final Config config, final List<Long> sizes, final List<Row> rows,
                                 final List<String> pinning, final List<String> notes) {
        if (config.gpu() == null) {
            notes.add("CUDA rows skipped: no --gpu given (cuda:N times cuMemHostRegister, cuMemAlloc and DMA-BUF "
                + "export on a real GPU)");
            return;
        }
        final GpuDevice gpu;
        try {
            gpu = GpuDevices.open(config.gpu());
        } catch (final IllegalArgumentException | GpuException e) {
            notes.add("CUDA rows skipped: " + e.getMessage());
            return;
        }
        try {
            if (gpu.isSimulated()) {
                notes.add("CUDA rows skipped: " + gpu.describe() + " is simulated, so the driver's costs do not "
                    + "exist there");
                return;
            }
            pinning.add("cuMemHostRegister: the CUDA driver page-locks the host range (the kernel pins every page) "
                + "and maps it for the GPU; cuMemAlloc: device memory, no host pinning; DMA-BUF export: an fd "
                + "for existing device memory, pinned by the importer when a NIC registers it");
            boolean dmabuf = true;
            for (final long pages : sizes) {
                final long len = pages * config.pageSize();
                final int reps = reps(config, pages);
                final long[] hostReg = new long[reps];
                final long[] hostUnreg = new long[reps];
                final long[] alloc = new long[reps];
                final long[] free = new long[reps];
                final long[] export = new long[reps];
                int exported = 0;
                try (Arena arena = Arena.ofConfined()) {
                    final MemorySegment host = arena.allocate(len, config.pageSize());
                    host.fill((byte) 0); // resident, so that the timing is the pinning, not first-touch faults
                    for (int r = 0; r < reps; r++) {
                        long t0 = System.nanoTime();
                        gpu.hostRegister(host);
                        long t1 = System.nanoTime();
                        gpu.hostUnregister(host);
                        long t2 = System.nanoTime();
                        hostReg[r] = t1 - t0;
                        hostUnreg[r] = t2 - t1;
                        t0 = System.nanoTime();
                        final DeviceBuffer b = gpu.alloc(len);
                        t1 = System.nanoTime();
                        try {
                            if (dmabuf) {
                                final long e0 = System.nanoTime();
                                final DmaBufExport x = gpu.exportDmaBuf(b);
                                final long e1 = System.nanoTime();
                                if (x.supported()) {
                                    DmaBuf.close(x.fd());
                                    export[exported++] = e1 - e0;
                                } else {
                                    dmabuf = false;
                                    notes.add("DMA-BUF export rows skipped: " + x.evidence());
                                }
                            }
                        } finally {
                            t2 = System.nanoTime();
                            gpu.free(b);
                            final long t3 = System.nanoTime();
                            alloc[r] = t1 - t0;
                            free[r] = t3 - t2;
                        }
                    }
                }
                rows.add(row("CUDA", "cuMemHostRegister", pages, len, hostReg, false));
                rows.add(row("CUDA", "cuMemHostUnregister", pages, len, hostUnreg, false));
                rows.add(row("CUDA", "cuMemAlloc", pages, len, alloc, false));
                rows.add(row("CUDA", "cuMemFree", pages, len, free, false));
                if (exported > 0) {
                    rows.add(row("CUDA", "DMA-BUF export (cuMemGetHandleForAddressRange)", pages, len,
                        Arrays.copyOf(export, exported), false));
                }
            }
            notes.add("CUDA rows: " + gpu.describe());
        } catch (final GpuException e) {
            notes.add("CUDA rows stopped: " + e.getMessage());
        } finally {
            gpu.close();
        }
    }

    /** The fewest samples that have a 99th percentile of their own (below, the nearest rank is the maximum). */
    public static final int P99_SAMPLES = 100;

    static Row row(final String layer, final String op, final long pages, final long bytes, final long[] samples,
                   final boolean simulated) {
        final long[] s = samples.clone();
        Arrays.sort(s);
        final int n = s.length;
        final long median = n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
        final int p99 = (int) Math.ceil(0.99 * n) - 1;
        return new Row(layer, op, pages, bytes, n, s[0], median, n >= P99_SAMPLES ? s[Math.max(0, p99)] : -1,
            s[n - 1], simulated);
    }
}
