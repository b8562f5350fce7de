/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.gdrkit.core.Errno;
import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.ibverbs.config.IbverbsConfiguration;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * libibverbs through FFM: the exported functions as method handles, and the data-path calls ({@code post_send},
 * {@code post_recv}, {@code poll_cq}, {@code req_notify_cq}) through the context's ops table, as the
 * {@code static inline} wrappers in {@code verbs.h} call them (they are not exported symbols).
 *
 * <p>Loading checks the library's ABI against the versions the layouts were checked for
 * ({@link #CHECKED_ABI}); anything else is refused with a named error instead of calling into memory whose shape
 * is unknown.
 */
public final class IbvLibrary {
    /** Property naming the library to load (tests point it at a stub). */
    public static final String LIBRARY_PROPERTY = IbverbsConfiguration.LIBRARY.name();
    /** Property that lets a library with an unchecked ABI load anyway (at the user's risk, stated in evidence). */
    public static final String ABI_OVERRIDE_PROPERTY = IbverbsConfiguration.ABI_OVERRIDE.name();
    /**
     * libibverbs ABI versions (soname major.minor) whose struct layouts AbiCheckTest compared with these FFM layouts:
     * 1.14 is rdma-core 37 to 5x (Debian 12's rdma-core 44 was checked here).
     */
    public static final List<String> CHECKED_ABI = List.of("1.14");

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static volatile Loaded loaded;

    final Arena arena = Arena.ofShared();
    final String path;
    final String abi;
    final String evidence;
    final MethodHandle getDeviceList;
    final MethodHandle freeDeviceList;
    final MethodHandle getDeviceName;
    final MethodHandle getDeviceGuid;
    final MethodHandle openDevice;
    final MethodHandle closeDevice;
    final MethodHandle queryDevice;
    final MethodHandle queryPort;
    final MethodHandle queryGid;
    final MethodHandle allocPd;
    final MethodHandle deallocPd;
    final MethodHandle regMr;
    final MethodHandle regDmabufMr;
    final MethodHandle deregMr;
    final MethodHandle createCq;
    final MethodHandle destroyCq;
    final MethodHandle createCompChannel;
    final MethodHandle destroyCompChannel;
    final MethodHandle getCqEvent;
    final MethodHandle ackCqEvents;
    final MethodHandle createQp;
    final MethodHandle modifyQp;
    final MethodHandle queryQp;
    final MethodHandle destroyQp;
    final MethodHandle getAsyncEvent;
    final MethodHandle ackAsyncEvent;
    final MethodHandle wcStatusStr;
    /*
     * The ops-table entry points, called by address. static final so that the JIT treats each handle as a constant
     * and inlines the downcall into the post/poll path (an instance field would stay an opaque call). The pointer
     * arguments are passed as JAVA_LONG (the same register on x86-64 System V): a MemorySegment argument makes every
     * call acquire and release its arena's scope, which for the per-QP shared arenas costs atomic operations on the
     * data path. The QP and CQ own that memory and keep it alive until they are closed.
     */
    /** {@code int (*post_send)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **)}. */
    static final MethodHandle OPS_POST_SEND = LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, JAVA_LONG,
        JAVA_LONG, JAVA_LONG), Linker.Option.critical(false));
    /** {@code int (*post_recv)(struct ibv_qp *, struct ibv_recv_wr *, struct ibv_recv_wr **)}. */
    static final MethodHandle OPS_POST_RECV = OPS_POST_SEND;
    /** {@code int (*poll_cq)(struct ibv_cq *, int, struct ibv_wc *)}. */
    static final MethodHandle OPS_POLL_CQ = LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT,
        JAVA_LONG), Linker.Option.critical(false));
    /** {@code int (*req_notify_cq)(struct ibv_cq *, int)}. */
    static final MethodHandle OPS_REQ_NOTIFY_CQ = LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, JAVA_LONG,
        JAVA_INT));

    /** Outcome of loading: the library, or the reason there is none. */
    public record Loaded(IbvLibrary library, String unavailable) {
    }

    private IbvLibrary(final SymbolLookup l, final String path, final String abi, final String evidence) {
        this.path = path;
        this.abi = abi;
        this.evidence = evidence;
        getDeviceList = errno(l, "ibv_get_device_list", FunctionDescriptor.of(ADDRESS, ADDRESS));
        freeDeviceList = down(l, "ibv_free_device_list", FunctionDescriptor.ofVoid(ADDRESS));
        getDeviceName = down(l, "ibv_get_device_name", FunctionDescriptor.of(ADDRESS.withTargetLayout(
            MemoryLayout.sequenceLayout(64, JAVA_BYTE)), ADDRESS));
        getDeviceGuid = down(l, "ibv_get_device_guid", FunctionDescriptor.of(JAVA_LONG, ADDRESS));
        openDevice = errno(l, "ibv_open_device", FunctionDescriptor.of(ADDRESS, ADDRESS));
        closeDevice = down(l, "ibv_close_device", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        queryDevice = down(l, "ibv_query_device", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        queryPort = down(l, "ibv_query_port", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, ADDRESS));
        queryGid = down(l, "ibv_query_gid", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, JAVA_INT, ADDRESS));
        allocPd = errno(l, "ibv_alloc_pd", FunctionDescriptor.of(ADDRESS, ADDRESS));
        deallocPd = down(l, "ibv_dealloc_pd", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        regMr = errno(l, "ibv_reg_mr", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT));
        regDmabufMr = errno(l, "ibv_reg_dmabuf_mr", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG,
            JAVA_LONG, JAVA_INT, JAVA_INT));
        deregMr = down(l, "ibv_dereg_mr", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        createCq = errno(l, "ibv_create_cq", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS,
            JAVA_INT));
        destroyCq = down(l, "ibv_destroy_cq", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        createCompChannel = errno(l, "ibv_create_comp_channel", FunctionDescriptor.of(ADDRESS, ADDRESS));
        destroyCompChannel = down(l, "ibv_destroy_comp_channel", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        getCqEvent = down(l, "ibv_get_cq_event", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        ackCqEvents = down(l, "ibv_ack_cq_events", FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT));
        createQp = errno(l, "ibv_create_qp", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        modifyQp = down(l, "ibv_modify_qp", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
        queryQp = down(l, "ibv_query_qp", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS));
        destroyQp = down(l, "ibv_destroy_qp", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        getAsyncEvent = errno(l, "ibv_get_async_event", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        ackAsyncEvent = down(l, "ibv_ack_async_event", FunctionDescriptor.ofVoid(ADDRESS));
        wcStatusStr = down(l, "ibv_wc_status_str", FunctionDescriptor.of(ADDRESS.withTargetLayout(
            MemoryLayout.sequenceLayout(64, JAVA_BYTE)), JAVA_INT));
    }

    /** Loads libibverbs once per process; never throws: an absent or unchecked library is a reason. */
    public static Loaded load() {
        Loaded l = loaded;
        if (l == null) {
            synchronized (IbvLibrary.class) {
                l = loaded;
                if (l == null) {
                    l = load(SettingsReader.ofProcess());
                    loaded = l;
                }
            }
        }
        return l;
    }

    /**
     * Reads {@link IbverbsConfiguration#LIBRARY} and {@link IbverbsConfiguration#ABI_OVERRIDE} through {@code settings} (the one place
     * they are read) and loads; a malformed value is a reason naming the property, like an absent library.
     */
    static Loaded load(final SettingsReader settings) {
        final Setting<String> library;
        final Setting<Boolean> override;
        try {
            library = IbverbsConfiguration.LIBRARY.read(settings);
            override = IbverbsConfiguration.ABI_OVERRIDE.read(settings);
        } catch (final IllegalArgumentException e) {
            return new Loaded(null, "libibverbs not loaded: " + e.getMessage());
        }
        return doLoad(library.value(), override.value());
    }

    static Loaded doLoad(final String name, final boolean override) {
        final SymbolLookup lookup;
        try {
            lookup = SymbolLookup.libraryLookup(name, Arena.global());
        } catch (final IllegalArgumentException e) {
            return new Loaded(null, "libibverbs not loadable: cannot open " + name + " (" + e.getMessage() + ")");
        }
        final String real = name.contains("/") ? realPath(name) : mappedPath(name).orElse(name);
        final String abi = abiOf(real);
        final String evidence = "loaded " + real + " (ABI " + abi + ")";
        if (!CHECKED_ABI.contains(abi)) {
            if (!override) {
                return new Loaded(null, "libibverbs ABI " + abi + " (" + real + ") was not checked against gdrkit's "
                    + "layouts (checked: " + CHECKED_ABI + "); run the ABI check on this host, or set -D"
                    + ABI_OVERRIDE_PROPERTY + "=true at your own risk");
            }
        }
        try {
            return new Loaded(new IbvLibrary(lookup, real, abi, evidence + (CHECKED_ABI.contains(abi) ? ""
                : ", unchecked ABI allowed by " + ABI_OVERRIDE_PROPERTY)), null);
        } catch (final IllegalStateException | IllegalArgumentException e) {
            return new Loaded(null, "libibverbs at " + real + " lacks a symbol the provider binds: " + e.getMessage());
        }
    }

    /** {@code 1.14} from {@code libibverbs.so.1.14.44.0}; {@code unknown} when the name carries no version. */
    static String abiOf(final String path) {
        final String file = Path.of(path).getFileName().toString();
        final int so = file.indexOf(".so.");
        if (so < 0) {
            return "unknown";
        }
        final String[] v = file.substring(so + 4).split("\\.");
        return v.length >= 2 ? v[0] + "." + v[1] : "unknown";
    }

    private static String realPath(final String name) {
        try {
            return Path.of(name).toRealPath().toString();
        } catch (final IOException e) {
            return name;
        }
    }

    private static Optional<String> mappedPath(final String name) {
        final String base = Path.of(name).getFileName().toString();
        final String stem = base.contains(".so") ? base.substring(0, base.indexOf(".so") + 3) : base;
        try {
            for (final String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
                final int slash = line.indexOf('/');
                if (slash > 0 && line.substring(slash).contains("/" + stem)) {
                    return Optional.of(Path.of(line.substring(slash).trim()).toRealPath().toString());
                }
            }
        } catch (final IOException | RuntimeException e) {
            return Optional.empty();
        }
        return Optional.empty();
    }

    private static MethodHandle down(final SymbolLookup l, final String name, final FunctionDescriptor fd) {
        return LINKER.downcallHandle(find(l, name), fd);
    }

    private static MethodHandle errno(final SymbolLookup l, final String name, final FunctionDescriptor fd) {
        return LINKER.downcallHandle(find(l, name), fd, Linker.Option.captureCallState("errno"));
    }

    private static MemorySegment find(final SymbolLookup l, final String name) {
        return l.find(name).orElseThrow(() -> new IllegalStateException(name));
    }

    /** A capture buffer for errno-returning calls. */
    MemorySegment captureState(final Arena a) {
        return a.allocate(CAPTURE);
    }

    static int errnoOf(final MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    /** The library's own status text ({@code ibv_wc_status_str}). */
    String wcStatus(final int status) {
        try {
            final MemorySegment s = (MemorySegment) wcStatusStr.invokeExact(status);
            return s.getString(0);
        } catch (final Throwable t) {
            return "status " + status;
        }
    }

    /** A named verbs error: {@code ibv_create_qp: EINVAL}. */
    static io.gdrkit.verbs.VerbsException error(final String call, final int errno) {
        return new io.gdrkit.verbs.VerbsException(errno, call + " failed (errno " + errno + " "
            + Errno.name(errno) + ")");
    }

    /** The path of the loaded library and its ABI, for evidence lines. */
    public String evidence() {
        return evidence;
    }
}
