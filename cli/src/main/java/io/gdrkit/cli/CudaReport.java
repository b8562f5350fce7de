/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.gpu.cuda.CudaGpu;
import io.gdrkit.gpu.cuda.CudaProbe;
import io.gdrkit.gpu.cuda.CudaDriver;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.DmaBufExport;
import io.gdrkit.gpu.FlushResult;
import io.gdrkit.gpu.FlushScope;
import io.gdrkit.gpu.GpuAttributes;
import io.gdrkit.gpu.GpuEvent;
import io.gdrkit.gpu.GpuException;
import io.gdrkit.gpu.GpuFunction;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;

import java.io.IOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Prints what a real CUDA device reports, and writes it as JSON: the GPUDirect attributes (116, 117, 118, 124),
 * MPS (133), compute capability, BAR1 (NVML, else "unknown" with the reason), the DMA-BUF export result, the flush
 * results for both scopes, SYNC_MEMOPS, a fill/verify kernel round trip, kernel launch cost through FFM, and pinned H2D, D2H and
 * D2D bandwidth timed with CUDA events. Needs only java.base and {@code --enable-native-access=ALL-UNNAMED}.
 *
 * <pre>java --enable-native-access=ALL-UNNAMED -cp gdrkit-gpu.jar io.gdrkit.gpu.cuda.CudaReport [out.json]
 *      [--device N] [--bytes N] [--iters N]</pre>
 * Exit status: 0 measured, 3 CUDA not found (the JSON then says what was looked for), 1 a failure.
 */
// native access is this class's purpose; the JVM must run with --enable-native-access=ALL-UNNAMED
@SuppressWarnings("restricted")
public final class CudaReport {
    private static final com.fasterxml.jackson.databind.ObjectMapper JSON =
        new com.fasterxml.jackson.databind.ObjectMapper();
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    private CudaReport() {
    }

    public static void main(final String[] args) throws IOException {
        Path out = null;
        int device = 0;
        long bytes = 256L << 20;
        int iters = 20;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--device" -> device = Integer.parseInt(args[++i]);
                case "--bytes" -> bytes = Long.parseLong(args[++i]);
                case "--iters" -> iters = Integer.parseInt(args[++i]);
                default -> out = Path.of(args[i]);
            }
        }
        final Map<String, Object> report = new LinkedHashMap<>();
        report.put("tool", "gdrkit CudaReport");
        report.put("time", Instant.now().toString());
        report.put("java", Runtime.version().toString());
        int status = 0;
        final CudaProbe probe = CudaGpu.probe();
        final Map<String, Object> p = new LinkedHashMap<>();
        p.put("found", probe.found());
        p.put("library", probe.library());
        p.put("driverVersion", probe.driverVersion());
        p.put("deviceCount", probe.deviceCount());
        p.put("devices", probe.devices());
        p.put("evidence", probe.evidence());
        report.put("probe", p);
        System.out.println(probe);
        if (!probe.found()) {
            status = 3;
        } else {
            try (CudaGpu gpu = CudaGpu.open(device)) {
                measure(gpu, bytes, iters, report);
            } catch (final GpuException e) {
                report.put("error", ordered("name", e.errorName(), "message", String.valueOf(e.getMessage())));
                System.out.println("FAILED: " + e.getMessage());
                status = 1;
            }
        }
        final String json;
        try {
            json = JSON.writer(new com.fasterxml.jackson.core.util.DefaultPrettyPrinter().withSeparators(
                com.fasterxml.jackson.core.util.Separators.createDefaultInstance().withObjectFieldValueSpacing(
                    com.fasterxml.jackson.core.util.Separators.Spacing.AFTER))).writeValueAsString(report) + "\n";
        } catch (final com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException("the report is not serialisable: " + e.getMessage(), e);
        }
        if (out != null) {
            Files.writeString(out, json);
            System.out.println("wrote " + out.toAbsolutePath());
        }
        System.exit(status);
    }

    private static void measure(final CudaGpu gpu, final long bytes, final int iters, final Map<String, Object> r) {
        final GpuAttributes a = gpu.attributes();
        System.out.println(gpu.describe());
        final Map<String, Object> dev = new LinkedHashMap<>();
        dev.put("ordinal", gpu.ordinal());
        dev.put("name", a.name());
        dev.put("pciBusId", gpu.pciBusId());
        dev.put("computeCapability", a.computeCapability());
        dev.put("totalMemBytes", a.totalMemBytes());
        dev.put("attr116_gpuDirectRdmaSupported", a.gpuDirectRdmaSupported());
        dev.put("attr117_flushWritesOptions", a.flushWritesOptions());
        dev.put("attr117_decoded", (a.flushWritesOptions() & GpuAttributes.FLUSH_OPTION_HOST) != 0 ? "HOST"
            + ((a.flushWritesOptions() & GpuAttributes.FLUSH_OPTION_MEMOPS) != 0 ? "|MEMOPS" : "")
            : (a.flushWritesOptions() & GpuAttributes.FLUSH_OPTION_MEMOPS) != 0 ? "MEMOPS" : "none");
        dev.put("attr118_writesOrdering", a.writesOrdering().value());
        dev.put("attr118_decoded", a.writesOrdering().name());
        dev.put("attr124_dmaBufSupported", a.dmaBufSupported());
        dev.put("attr133_mpsEnabled", a.mpsEnabled().attributeText());
        dev.put("attr133_evidence", a.mpsEvidence());
        dev.put("bar1Bytes", a.bar1Bytes() < 0 ? "unknown" : a.bar1Bytes());
        dev.put("bar1Evidence", a.bar1Evidence());
        r.put("device", dev);

        // DMA-BUF export of a 2 MiB (page-aligned) allocation
        final DeviceBuffer small = gpu.alloc(2L << 20);
        final DmaBufExport x = gpu.exportDmaBuf(small);
        System.out.println("DMA-BUF export: " + (x.supported() ? "fd " + x.fd() : "not supported") + " - " + x.evidence());
        r.put("dmaBufExport", ordered("supported", x.supported(), "fd", x.fd(), "evidence", x.evidence()));
        if (x.fd() >= 0) {
            closeFd(x.fd());
        }

        // SYNC_MEMOPS round trip
        final Map<String, Object> sm = new LinkedHashMap<>();
        try {
            sm.put("initial", gpu.syncMemops(small));
            gpu.setSyncMemops(small, true);
            sm.put("afterSet1", gpu.syncMemops(small));
        } catch (final GpuException e) {
            sm.put("error", e.getMessage());
        }
        System.out.println("SYNC_MEMOPS: " + sm);
        r.put("syncMemops", sm);

        // flush, both scopes
        final List<Object> flushes = new ArrayList<>();
        for (final FlushScope scope : FlushScope.values()) {
            try {
                final FlushResult f = gpu.flushGpuDirectRdmaWrites(scope);
                System.out.println("flush " + scope + ": " + (f.noOp() ? "no-op by the ordering rule" : "needed")
                    + " - " + f.evidence());
                flushes.add(ordered("scope", scope.name(), "noOpByRule", f.noOp(), "evidence", f.evidence()));
            } catch (final GpuException e) {
                System.out.println("flush " + scope + ": " + e.getMessage());
                flushes.add(ordered("scope", scope.name(), "error", e.errorName(), "message", e.getMessage()));
            }
        }
        r.put("flush", flushes);

        kernels(gpu, small, r);
        gpu.free(small);
        bandwidth(gpu, bytes, iters, r);
    }

    private static void kernels(final CudaGpu gpu, final DeviceBuffer buf, final Map<String, Object> r) {
        final Map<String, Object> k = new LinkedHashMap<>();
        final GpuFunction fill = gpu.function("kernels", "fill_pattern");
        final GpuFunction verify = gpu.function("kernels", "verify_pattern");
        final GpuFunction noop = gpu.function("kernels", "noop");
        k.put("module", gpu.moduleSource("kernels"));
        final DeviceBuffer result = gpu.alloc(32);
        final MemorySegment host = gpu.allocHost(32);
        // kernels take pinned host memory by address (VisKernels' results and flags): unified addressing says so
        k.put("pinnedDevicePointerIsHostAddress", gpu.devicePointer(host) == host.address());
        final KernelArgs args = new KernelArgs(8);
        final GpuStream s = gpu.createStream();
        final int round = 7;
        final int seed = 12345;
        gpu.launch(fill, Dim3.of(264), Dim3.of(256), s, args.clear().ptr(buf).u64(buf.size()).u32(round).u32(seed));
        host.fill((byte) 0);
        host.set(ValueLayout.JAVA_LONG, 8, -1L);
        gpu.copyHtoDAsync(result, 0, host, 0, 32, s);
        gpu.launch(verify, Dim3.of(264), Dim3.of(256), s,
            args.clear().ptr(buf).u64(buf.size()).u32(round).u32(seed).ptr(result));
        gpu.copyDtoHAsync(host, 0, result, 0, 32, s);
        gpu.synchronize(s, TIMEOUT);
        final long good = host.get(ValueLayout.JAVA_LONG, 0);
        // negative control: verify against another round must find mismatches
        host.fill((byte) 0);
        host.set(ValueLayout.JAVA_LONG, 8, -1L);
        gpu.copyHtoDAsync(result, 0, host, 0, 32, s);
        gpu.launch(verify, Dim3.of(264), Dim3.of(256), s,
            args.clear().ptr(buf).u64(buf.size()).u32(round + 1).u32(seed).ptr(result));
        gpu.copyDtoHAsync(host, 0, result, 0, 32, s);
        gpu.synchronize(s, TIMEOUT);
        final long bad = host.get(ValueLayout.JAVA_LONG, 0);
        k.put("verifySameRoundMismatches", good);
        k.put("verifyOtherRoundMismatches", bad);
        k.put("fillVerifyOk", good == 0 && bad > 0);
        System.out.println("kernels: fill+verify mismatches " + good + " (want 0), other round " + bad + " (want > 0)");

        // launch cost through FFM: host time per cuLaunchKernel of an empty kernel, then the stream drained
        final int n = 10_000;
        for (int i = 0; i < 1000; i++) {
            gpu.launch(noop, Dim3.of(1), Dim3.of(1), s, args.clear());
        }
        gpu.synchronize(s, TIMEOUT);
        final long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            gpu.launch(noop, Dim3.of(1), Dim3.of(1), s, args.clear());
        }
        final long t1 = System.nanoTime();
        gpu.synchronize(s, TIMEOUT);
        final long t2 = System.nanoTime();
        k.put("launchHostNanosPerCall", (t1 - t0) / (double) n);
        k.put("launchThroughputNanosPerKernel", (t2 - t0) / (double) n);
        System.out.printf("kernel launch via FFM: %.0f ns host time per cuLaunchKernel, %.0f ns per kernel incl. drain%n",
            (t1 - t0) / (double) n, (t2 - t0) / (double) n);
        gpu.destroyStream(s);
        gpu.freeHost(host);
        gpu.free(result);
        r.put("kernels", k);
    }

    private static void bandwidth(final CudaGpu gpu, final long bytes, final int iters, final Map<String, Object> r) {
        final Map<String, Object> bw = new LinkedHashMap<>();
        bw.put("bytes", bytes);
        bw.put("iterations", iters);
        bw.put("method", "cuMemcpy*Async_v2 on one stream, timed by CUDA events around " + iters
            + " copies after 2 warm-ups; GB/s = 1e9 bytes/s; D2D counts bytes copied (not read+written)");
        final MemorySegment host = gpu.allocHost(bytes);
        final DeviceBuffer d1 = gpu.alloc(bytes);
        final DeviceBuffer d2 = gpu.alloc(bytes);
        host.fill((byte) 1);
        final GpuStream s = gpu.createStream();
        final GpuEvent e0 = gpu.createEvent();
        final GpuEvent e1 = gpu.createEvent();
        for (final String kind : new String[] {"H2D", "D2H", "D2D"}) {
            final double[] gbps = new double[3];
            for (int rep = 0; rep < gbps.length; rep++) {
                for (int w = 0; w < 2; w++) {
                    copy(gpu, kind, host, d1, d2, bytes, s);
                }
                gpu.record(e0, s);
                for (int i = 0; i < iters; i++) {
                    copy(gpu, kind, host, d1, d2, bytes, s);
                }
                gpu.record(e1, s);
                gpu.synchronize(e1, TIMEOUT);
                final float ms = gpu.elapsedMillis(e0, e1);
                gbps[rep] = bytes * (double) iters / (ms / 1e3) / 1e9;
            }
            Arrays.sort(gbps);
            bw.put(kind + "_GBps_median", gbps[1]);
            bw.put(kind + "_GBps_all", List.of(gbps[0], gbps[1], gbps[2]));
            System.out.printf("pinned %s: %.1f GB/s (median of 3; %d x %d MiB)%n", kind, gbps[1], iters, bytes >> 20);
        }
        gpu.destroyEvent(e0);
        gpu.destroyEvent(e1);
        gpu.destroyStream(s);
        gpu.free(d1);
        gpu.free(d2);
        gpu.freeHost(host);
        r.put("bandwidth", bw);
    }

    private static void copy(final CudaGpu gpu, final String kind, final MemorySegment host, final DeviceBuffer d1,
                             final DeviceBuffer d2, final long bytes, final GpuStream s) {
        switch (kind) {
            case "H2D" -> gpu.copyHtoDAsync(d1, 0, host, 0, bytes, s);
            case "D2H" -> gpu.copyDtoHAsync(host, 0, d1, 0, bytes, s);
            default -> gpu.copyDtoDAsync(d2, 0, d1, 0, bytes, s);
        }
    }

    /** A map that keeps the key order given, so the JSON reads in a fixed order. */
    private static Map<String, Object> ordered(final Object... kv) {
        final Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    private static void closeFd(final int fd) {
        try {
            final Linker l = Linker.nativeLinker();
            final var close = l.downcallHandle(l.defaultLookup().findOrThrow("close"),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
            final int ignored = (int) close.invokeExact(fd);
        } catch (final Throwable t) {
            // best effort
        }
    }

}
