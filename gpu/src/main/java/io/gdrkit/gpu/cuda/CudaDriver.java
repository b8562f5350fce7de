/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.cuda;

import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.gpu.GpuException;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * Downcall handles into the CUDA driver API ({@code libcuda.so.1}), made once when the library is first needed.
 * Signatures follow {@code cuda.h} (CUDA 13.0); the versioned symbols ({@code _v2}) are the ones the header's
 * macros select, so the ABI matches drivers from CUDA 11.x on. Functions newer than the oldest driver we accept
 * ({@code cuFlushGPUDirectRDMAWrites}: 11.3, {@code cuMemGetHandleForAddressRange}: 11.7) are optional and their
 * absence is reported, not assumed.
 *
 * <p>Types: {@code CUresult}, {@code CUdevice} and enums are {@code int}; {@code CUdeviceptr} and {@code size_t}
 * are 64-bit; handles ({@code CUcontext}, {@code CUstream}, ...) are pointers.
 */
// native access is this class's purpose; the JVM must run with --enable-native-access=ALL-UNNAMED
@SuppressWarnings("restricted")
public final class CudaDriver {
    /** What {@link #load()} looks for. */
    public static final String LIBRARY = "libcuda.so.1";
    /**
     * System property naming another library file to load instead (a path): for drivers installed outside the
     * loader's path, and for the test double that checks these bindings without a GPU.
     */
    public static final String LIBRARY_PROPERTY = io.gdrkit.gpu.config.GpuConfiguration.CUDA_LIBRARY.name();

    static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG;
    static final AddressLayout PTR = ValueLayout.ADDRESS;

    public static final int CUDA_SUCCESS = 0;
    public static final int CUDA_ERROR_NOT_READY = 600;

    private static volatile CudaDriver instance;
    private static volatile String loadFailure;

    private final Linker linker = Linker.nativeLinker();
    private final SymbolLookup lookup;

    final MethodHandle cuInit;
    final MethodHandle cuDriverGetVersion;
    final MethodHandle cuDeviceGetCount;
    final MethodHandle cuDeviceGet;
    final MethodHandle cuDeviceGetName;
    final MethodHandle cuDeviceGetAttribute;
    final MethodHandle cuDeviceTotalMem;
    final MethodHandle cuDeviceGetPCIBusId;
    final MethodHandle cuDevicePrimaryCtxRetain;
    final MethodHandle cuDevicePrimaryCtxRelease;
    final MethodHandle cuCtxSetCurrent;
    final MethodHandle cuCtxSynchronize;
    final MethodHandle cuCtxEnablePeerAccess;
    final MethodHandle cuDeviceCanAccessPeer;
    final MethodHandle cuMemAlloc;
    final MethodHandle cuMemFree;
    final MethodHandle cuMemAllocHost;
    final MethodHandle cuMemFreeHost;
    final MethodHandle cuMemHostGetDevicePointer;
    final MethodHandle cuMemcpyHtoD;
    final MethodHandle cuMemcpyDtoH;
    final MethodHandle cuMemcpyDtoD;
    final MethodHandle cuMemcpyHtoDAsync;
    final MethodHandle cuMemcpyDtoHAsync;
    final MethodHandle cuMemcpyDtoDAsync;
    final MethodHandle cuStreamCreate;
    final MethodHandle cuStreamQuery;
    final MethodHandle cuStreamSynchronize;
    final MethodHandle cuStreamDestroy;
    final MethodHandle cuEventCreate;
    final MethodHandle cuEventRecord;
    final MethodHandle cuEventQuery;
    final MethodHandle cuEventSynchronize;
    final MethodHandle cuEventElapsedTime;
    final MethodHandle cuEventDestroy;
    final MethodHandle cuModuleLoadData;
    final MethodHandle cuModuleGetFunction;
    final MethodHandle cuModuleUnload;
    final MethodHandle cuLaunchKernel;
    final MethodHandle cuPointerGetAttribute;
    final MethodHandle cuPointerSetAttribute;
    final MethodHandle cuGetErrorName;
    /** CUDA 11.7+; empty on older drivers. */
    final Optional<MethodHandle> cuMemGetHandleForAddressRange;
    /** CUDA 11.3+; empty on older drivers. */
    final Optional<MethodHandle> cuFlushGPUDirectRDMAWrites;
    /** cuMemHostRegister_v2 / cuMemHostUnregister (CUDA 4.0+); optional so that a stub driver still loads. */
    final Optional<MethodHandle> cuMemHostRegister;
    final Optional<MethodHandle> cuMemHostUnregister;
    /** cuMemHostAlloc (CUDA 2.2+): pinned host memory with flags (DEVICEMAP); optional, cuMemAllocHost stands in. */
    final Optional<MethodHandle> cuMemHostAlloc;
    /**
     * Stream memory operations (cuStreamWriteValue64_v2 / cuStreamWaitValue64_v2, CUDA 11.7+, else the CUDA 9 names):
     * the copy engine's completions signalled in mapped memory. Optional: without them the agent takes every span.
     */
    final Optional<MethodHandle> cuStreamWriteValue64;
    final Optional<MethodHandle> cuStreamWaitValue64;

    private CudaDriver(final SymbolLookup lookup) {
        this.lookup = lookup;
        cuInit = h("cuInit", INT);
        cuDriverGetVersion = h("cuDriverGetVersion", PTR);
        cuDeviceGetCount = h("cuDeviceGetCount", PTR);
        cuDeviceGet = h("cuDeviceGet", PTR, INT);
        cuDeviceGetName = h("cuDeviceGetName", PTR, INT, INT);
        cuDeviceGetAttribute = h("cuDeviceGetAttribute", PTR, INT, INT);
        cuDeviceTotalMem = h("cuDeviceTotalMem_v2", PTR, INT);
        cuDeviceGetPCIBusId = h("cuDeviceGetPCIBusId", PTR, INT, INT);
        cuDevicePrimaryCtxRetain = h("cuDevicePrimaryCtxRetain", PTR, INT);
        cuDevicePrimaryCtxRelease = h("cuDevicePrimaryCtxRelease_v2", INT);
        cuCtxSetCurrent = h("cuCtxSetCurrent", PTR);
        cuCtxSynchronize = h("cuCtxSynchronize");
        cuCtxEnablePeerAccess = h("cuCtxEnablePeerAccess", PTR, INT);
        cuDeviceCanAccessPeer = h("cuDeviceCanAccessPeer", PTR, INT, INT);
        cuMemAlloc = h("cuMemAlloc_v2", PTR, LONG);
        cuMemFree = h("cuMemFree_v2", LONG);
        cuMemAllocHost = h("cuMemAllocHost_v2", PTR, LONG);
        cuMemFreeHost = h("cuMemFreeHost", PTR);
        cuMemHostGetDevicePointer = h("cuMemHostGetDevicePointer_v2", PTR, PTR, INT);
        cuMemcpyHtoD = h("cuMemcpyHtoD_v2", LONG, PTR, LONG);
        cuMemcpyDtoH = h("cuMemcpyDtoH_v2", PTR, LONG, LONG);
        cuMemcpyDtoD = h("cuMemcpyDtoD_v2", LONG, LONG, LONG);
        cuMemcpyHtoDAsync = h("cuMemcpyHtoDAsync_v2", LONG, PTR, LONG, PTR);
        cuMemcpyDtoHAsync = h("cuMemcpyDtoHAsync_v2", PTR, LONG, LONG, PTR);
        cuMemcpyDtoDAsync = h("cuMemcpyDtoDAsync_v2", LONG, LONG, LONG, PTR);
        cuStreamCreate = h("cuStreamCreate", PTR, INT);
        cuStreamQuery = h("cuStreamQuery", PTR);
        cuStreamSynchronize = h("cuStreamSynchronize", PTR);
        cuStreamDestroy = h("cuStreamDestroy_v2", PTR);
        cuEventCreate = h("cuEventCreate", PTR, INT);
        cuEventRecord = h("cuEventRecord", PTR, PTR);
        cuEventQuery = h("cuEventQuery", PTR);
        cuEventSynchronize = h("cuEventSynchronize", PTR);
        // cuEventElapsedTime (not _v2, which needs CUDA 12.8): same signature, present in every driver
        cuEventElapsedTime = h("cuEventElapsedTime", PTR, PTR, PTR);
        cuEventDestroy = h("cuEventDestroy_v2", PTR);
        cuModuleLoadData = h("cuModuleLoadData", PTR, PTR);
        cuModuleGetFunction = h("cuModuleGetFunction", PTR, PTR, PTR);
        cuModuleUnload = h("cuModuleUnload", PTR);
        cuLaunchKernel = h("cuLaunchKernel", PTR, INT, INT, INT, INT, INT, INT, INT, PTR, PTR, PTR);
        cuPointerGetAttribute = h("cuPointerGetAttribute", PTR, INT, LONG);
        cuPointerSetAttribute = h("cuPointerSetAttribute", PTR, INT, LONG);
        cuGetErrorName = h("cuGetErrorName", INT, PTR);
        cuMemGetHandleForAddressRange = optional("cuMemGetHandleForAddressRange", PTR, LONG, LONG, INT, LONG);
        cuFlushGPUDirectRDMAWrites = optional("cuFlushGPUDirectRDMAWrites", INT, INT);
        cuMemHostRegister = optional("cuMemHostRegister_v2", PTR, LONG, INT);
        cuMemHostUnregister = optional("cuMemHostUnregister", PTR);
        cuMemHostAlloc = optional("cuMemHostAlloc", PTR, LONG, INT);
        cuStreamWriteValue64 = optional("cuStreamWriteValue64_v2", PTR, LONG, LONG, INT)
            .or(() -> optional("cuStreamWriteValue64", PTR, LONG, LONG, INT));
        cuStreamWaitValue64 = optional("cuStreamWaitValue64_v2", PTR, LONG, LONG, INT)
            .or(() -> optional("cuStreamWaitValue64", PTR, LONG, LONG, INT));
    }

    private MethodHandle h(final String name, final MemoryLayout... args) {
        return linker.downcallHandle(lookup.findOrThrow(name), FunctionDescriptor.of(INT, args));
    }

    private Optional<MethodHandle> optional(final String name, final MemoryLayout... args) {
        return lookup.find(name).map(s -> linker.downcallHandle(s, FunctionDescriptor.of(INT, args)));
    }

    /**
     * The driver, loading {@code libcuda.so.1} on first use.
     *
     * @return empty when the library cannot be loaded; {@link #loadFailure()} says why
     */
    public static Optional<CudaDriver> load() {
        CudaDriver d = instance;
        if (d != null || loadFailure != null) {
            return Optional.ofNullable(d);
        }
        synchronized (CudaDriver.class) {
            if (instance == null && loadFailure == null) {
                try {
                    // global arena: the driver stays loaded for the life of the process, as CUDA expects
                    final String lib = library();
                    instance = new CudaDriver(lib.contains("/")
                        ? SymbolLookup.libraryLookup(java.nio.file.Path.of(lib), Arena.global())
                        : SymbolLookup.libraryLookup(lib, Arena.global()));
                } catch (final IllegalArgumentException | java.util.NoSuchElementException e) {
                    loadFailure = "cannot load " + library() + " (dlopen through SymbolLookup.libraryLookup): "
                        + e.getMessage();
                } catch (final IllegalCallerException e) {
                    loadFailure = "native access is not enabled: run java with --enable-native-access=ALL-UNNAMED ("
                        + e.getMessage() + ")";
                }
            }
            return Optional.ofNullable(instance);
        }
    }

    /** The library {@link #load()} opens: {@value #LIBRARY} unless {@link io.gdrkit.gpu.config.GpuConfiguration#CUDA_LIBRARY} names another. */
    public static String library() {
        return librarySetting().value();
    }

    /**
     * {@link io.gdrkit.gpu.config.GpuConfiguration#CUDA_LIBRARY} with its source: read once per JVM through {@link SettingsReader}, the one place it
     * is read, so the library loaded and the one reported cannot differ.
     */
    public static Setting<String> librarySetting() {
        return LibrarySetting.VALUE;
    }

    /** Holder: the property is read on first use (a test's -D is in place by then), and only once. */
    private static final class LibrarySetting {
        static final Setting<String> VALUE = io.gdrkit.gpu.config.GpuConfiguration.CUDA_LIBRARY.read(SettingsReader.ofProcess());
    }

    /** Why {@link #load()} found no driver, or null. */
    public static String loadFailure() {
        return loadFailure;
    }

    /** {@code cuGetErrorName}, or "CUresult &lt;n&gt;" when the driver does not know the code. */
    public String errorName(final int rc) {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment p = a.allocate(PTR);
            final int r = (int) cuGetErrorName.invokeExact(rc, p);
            if (r != CUDA_SUCCESS) {
                return "CUresult " + rc;
            }
            return p.get(PTR, 0).reinterpret(256).getString(0);
        } catch (final Throwable t) {
            return "CUresult " + rc;
        }
    }

    /** Throws a {@link GpuException} named by CUDA unless {@code rc} is CUDA_SUCCESS. */
    public void check(final int rc, final String call) {
        if (rc != CUDA_SUCCESS) {
            throw new GpuException(errorName(rc), rc, call);
        }
    }

    /** Wraps a Throwable from invokeExact (which cannot really throw for these handles). */
    static GpuException linkage(final String call, final Throwable t) {
        if (t instanceof GpuException g) {
            return g;
        }
        return new GpuException("GDRKIT_FFM_ERROR", -1, call + " failed in the FFM downcall: " + t);
    }
}
