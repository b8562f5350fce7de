/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Best-effort BAR1 size through NVML ({@code libnvidia-ml.so.1}), the only API that reports it; the CUDA driver API
 * does not. Optional: when NVML is missing or fails, the size is unknown and the evidence says why.
 */
// native access is this class's purpose; the JVM must run with --enable-native-access=ALL-UNNAMED
@SuppressWarnings("restricted")
final class Nvml {
    static final String LIBRARY = "libnvidia-ml.so.1";

    /** BAR1 total and used bytes (-1 when unknown) and how they were obtained. */
    record Bar1(long totalBytes, long usedBytes, String evidence) {
    }

    private Nvml() {
    }

    /** BAR1 of the GPU at {@code pciBusId} (as {@code cuDeviceGetPCIBusId} writes it). */
    static Bar1 bar1(final String pciBusId) {
        final SymbolLookup lib;
        try {
            lib = SymbolLookup.libraryLookup(LIBRARY, Arena.global());
        } catch (final RuntimeException e) {
            return new Bar1(-1, -1, "unknown: " + LIBRARY + " not loadable (" + e.getMessage()
                + "); the CUDA driver API has no BAR1 query");
        }
        final Linker linker = Linker.nativeLinker();
        try (Arena a = Arena.ofConfined()) {
            final MethodHandle init = linker.downcallHandle(lib.findOrThrow("nvmlInit_v2"),
                FunctionDescriptor.of(ValueLayout.JAVA_INT));
            final MethodHandle byBus = linker.downcallHandle(lib.findOrThrow("nvmlDeviceGetHandleByPciBusId_v2"),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
            final MethodHandle bar1 = linker.downcallHandle(lib.findOrThrow("nvmlDeviceGetBAR1MemoryInfo"),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
            final MethodHandle shutdown = linker.downcallHandle(lib.findOrThrow("nvmlShutdown"),
                FunctionDescriptor.of(ValueLayout.JAVA_INT));
            int rc = (int) init.invokeExact();
            if (rc != 0) {
                return new Bar1(-1, -1, "unknown: nvmlInit_v2 returned " + rc);
            }
            try {
                final MemorySegment handle = a.allocate(ValueLayout.ADDRESS);
                rc = (int) byBus.invokeExact(a.allocateFrom(pciBusId), handle);
                if (rc != 0) {
                    return new Bar1(-1, -1, "unknown: nvmlDeviceGetHandleByPciBusId_v2(" + pciBusId + ") returned " + rc);
                }
                // nvmlBAR1Memory_t { unsigned long long bar1Total, bar1Free, bar1Used; }
                final MemorySegment info = a.allocate(24, 8);
                rc = (int) bar1.invokeExact(handle.get(ValueLayout.ADDRESS, 0), info);
                if (rc != 0) {
                    return new Bar1(-1, -1, "unknown: nvmlDeviceGetBAR1MemoryInfo returned " + rc);
                }
                final long total = info.get(ValueLayout.JAVA_LONG, 0);
                final long used = info.get(ValueLayout.JAVA_LONG, 16);
                return new Bar1(total, used, "NVML nvmlDeviceGetBAR1MemoryInfo(" + pciBusId + "): total " + total
                    + " B, used " + used + " B");
            } finally {
                final int ignored = (int) shutdown.invokeExact();
            }
        } catch (final Throwable t) {
            return new Bar1(-1, -1, "unknown: NVML call failed: " + t);
        }
    }
}
