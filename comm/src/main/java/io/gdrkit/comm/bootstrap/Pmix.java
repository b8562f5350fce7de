/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.bootstrap;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.gdrkit.comm.bootstrap.BootstrapException.Reason;
import io.gdrkit.comm.config.CommConfiguration;
import io.gdrkit.core.config.SettingsReader;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The PMIx client through FFM (libpmix, Debian's {@code libpmix2}; no MPI library): {@code PMIx_Init}, the job's
 * rank, size, local rank and local size ({@code PMIx_Get}), rank 0's bootstrap id through PMIx's key-value store
 * ({@code PMIx_Put}, {@code PMIx_Commit}, {@code PMIx_Fence}, {@code PMIx_Get}), {@code PMIx_Finalize}.
 *
 * <p>The struct layouts are those of PMIx 3 to 5 on LP64 Linux ({@code pmix_proc_t} 260 bytes, {@code pmix_value_t}
 * 32, {@code pmix_info_t} 552); {@code PmixAbiTest} compiles a program against the installed headers and checks
 * every size and offset used here.
 */
final class Pmix {
    private Pmix() {
    }

    /** Property naming the library to load (default libpmix.so.2). */
    static final String LIBRARY_PROPERTY = CommConfiguration.PMIX_LIBRARY.name();
    /** The key rank 0 puts its bootstrap id under, in PMIx's store. */
    static final String ID_KEY = "io.gdrkit:bootstrap-id";

    static final int NSPACE_BYTES = 256;
    static final long PROC_SIZE = 260;
    static final long PROC_RANK = 256;
    static final long VALUE_SIZE = 32;
    static final long VALUE_DATA = 8;
    static final int KEY_BYTES = 512;
    static final long INFO_SIZE = 552;
    static final long INFO_FLAGS = 512;
    static final long INFO_VALUE = 520;

    static final short TYPE_BOOL = 1;
    static final short TYPE_STRING = 3;
    static final short TYPE_INT = 6;
    static final short TYPE_INT32 = 9;
    static final short TYPE_UINT8 = 12;
    static final short TYPE_UINT16 = 13;
    static final short TYPE_UINT32 = 14;
    static final short TYPE_PROC_RANK = 40;
    static final byte SCOPE_GLOBAL = 3;
    static final int RANK_WILDCARD = 0xFFFFFFFE;

    /** PMIx could not be used at all (library absent, init refused): the caller may fall back to another source. */
    static final class Unavailable extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        Unavailable(final String message) {
            super(message);
        }
    }

    /** The bound entry points. */
    private record Lib(MethodHandle init, MethodHandle finalizeH, MethodHandle get, MethodHandle put,
                       MethodHandle commit, MethodHandle fence, MethodHandle error) {
    }

    private static Lib load() {
        final String name = CommConfiguration.PMIX_LIBRARY.read(SettingsReader.ofProcess()).value();
        final SymbolLookup l;
        try {
            l = SymbolLookup.libraryLookup(name, Arena.global());
        } catch (final IllegalArgumentException e) {
            throw new Unavailable("libpmix cannot be loaded (" + name + ": " + e.getMessage() + "); install Debian's "
                + "libpmix2 or set -D" + LIBRARY_PROPERTY + "=PATH");
        }
        final Linker k = Linker.nativeLinker();
        final java.util.function.BiFunction<String, FunctionDescriptor, MethodHandle> f = (sym, d) -> k.downcallHandle(
            l.find(sym).orElseThrow(() -> new Unavailable(name + " has no " + sym + ": not a PMIx client library")),
            d);
        return new Lib(
            f.apply("PMIx_Init", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG)),
            f.apply("PMIx_Finalize", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG)),
            f.apply("PMIx_Get", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS)),
            f.apply("PMIx_Put", FunctionDescriptor.of(JAVA_INT, JAVA_BYTE, ADDRESS, ADDRESS)),
            f.apply("PMIx_Commit", FunctionDescriptor.of(JAVA_INT)),
            f.apply("PMIx_Fence", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG)),
            f.apply("PMIx_Error_string", FunctionDescriptor.of(ADDRESS, JAVA_INT)));
    }

    /**
     * Joins the PMIx job: its rank, size and local values, and rank 0's bootstrap root (started here) known to all.
     *
     * @param hint    the world the environment hinted at (PMIX_RANK, PMIX_NAMESPACE, the token)
     * @param env     the environment, read for {@link WorldEnvironment#ENV_BIND_ADDR}
     * @param timeout how long the fence may take
     * @return the world ready to join
     * @throws Unavailable        when libpmix cannot be loaded or PMIx_Init fails
     * @throws BootstrapException TIMEOUT when the fence or the id's lookup does not complete in time, REMOTE when
     *                            PMIx reports an error
     */
    static WorldEnvironment.Resolved resolve(final WorldEnvironment.World hint, final Map<String, String> env,
                                             final Duration timeout) {
        final Lib lib = load();
        final Arena arena = Arena.ofShared();
        final MemorySegment me = arena.allocate(PROC_SIZE, 8);
        final int st = (int) call(() -> (int) lib.init().invokeExact(me, MemorySegment.NULL, 0L));
        if (st != 0) {
            throw new Unavailable("PMIx_Init failed: " + error(lib, st) + " (the launcher's PMIx server is not "
                + "reachable: started by a PMIx launcher?)");
        }
        BootstrapRoot root = null;
        boolean ok = false;
        boolean finalized = false;
        try {
            final String nspace = me.getString(0);
            final int rank = me.get(JAVA_INT, PROC_RANK);
            final MemorySegment all = proc(arena, nspace, RANK_WILDCARD);
            final int size = (int) number(lib, arena, all, "pmix.job.size", true);
            final int localRank = (int) number(lib, arena, me, "pmix.lrank", false);
            final int localSize = (int) number(lib, arena, all, "pmix.local.size", false);
            if (size < 1 || size > BootstrapWire.MAX_RANKS || rank < 0 || rank >= size) {
                throw new BootstrapException(Reason.PROTOCOL, "PMIx says rank " + rank + " of " + size
                    + " (outside 1.." + BootstrapWire.MAX_RANKS + " ranks)");
            }
            if (hint.rank() != rank) {
                throw new IllegalArgumentException("PMIX_RANK=" + hint.rank() + " but PMIx says rank " + rank);
            }
            final List<String> ev = new ArrayList<>(hint.evidence());
            ev.add("PMIx " + nspace + ": rank " + rank + " of " + size + ", local " + localRank + " of " + localSize);
            UniqueId id = null;
            if (rank == 0) {
                final InetAddress bind = bindAddress(env, localSize == size, ev);
                root = BootstrapRoot.start(new InetSocketAddress(bind, 0), size, hint.token(), timeout);
                id = new UniqueId(bind.getHostAddress(), root.id().port(), root.id().runId());
                final MemorySegment value = arena.allocate(VALUE_SIZE, 8);
                value.set(JAVA_SHORT, 0, TYPE_STRING);
                value.set(ADDRESS, VALUE_DATA, arena.allocateFrom(id.encode()));
                final MemorySegment key = arena.allocateFrom(ID_KEY);
                check(lib, "PMIx_Put", (int) call(() -> (int) lib.put().invokeExact(SCOPE_GLOBAL, key, value)));
            }
            check(lib, "PMIx_Commit", (int) call(() -> (int) lib.commit().invokeExact()));
            final MemorySegment collect = arena.allocate(INFO_SIZE, 8);
            collect.setString(0, "pmix.collect");
            collect.set(JAVA_SHORT, INFO_VALUE, TYPE_BOOL);
            collect.set(JAVA_BYTE, INFO_VALUE + VALUE_DATA, (byte) 1);
            timedRun(timeout, "PMIx_Fence of the " + size + " ranks (a rank that never reaches it: killed, hung, or not "
                + "part of this job)", () -> check(lib, "PMIx_Fence", (int) call(() -> (int) lib.fence().invokeExact(
                    MemorySegment.NULL, 0L, collect, 1L))));
            if (id == null) {
                final MemorySegment zero = proc(arena, nspace, 0);
                final String text = timed(timeout, "rank 0's bootstrap id from PMIx (" + ID_KEY + ")",
                    () -> string(lib, arena, zero, ID_KEY));
                id = UniqueId.parse(text);
            }
            ev.add("bootstrap root of rank 0 at " + id.host() + ":" + id.port() + " (id exchanged through PMIx)");
            // the client leaves PMIx now: the launcher counts a process that exits without finalizing as failed
            finalized = true;
            final int fs = (int) call(() -> (int) lib.finalizeH().invokeExact(MemorySegment.NULL, 0L));
            if (fs != 0) {
                ev.add("PMIx_Finalize: " + error(lib, fs));
            }
            ok = true;
            return new WorldEnvironment.Resolved(new WorldEnvironment.World(WorldEnvironment.Source.PMIX, ev, rank,
                size, localRank, localSize, id, hint.token()), id, root);
        } finally {
            if (!ok && root != null) {
                root.close();
            }
            if (!finalized) {
                try {
                    final int ignored = (int) call(() -> (int) lib.finalizeH().invokeExact(MemorySegment.NULL, 0L));
                } catch (final RuntimeException ignored) {
                    // already failing: the first error is the one to report
                }
            }
        }
    }

    private static InetAddress bindAddress(final Map<String, String> env, final boolean oneHost,
                                           final List<String> ev) {
        final String given = env.get(WorldEnvironment.ENV_BIND_ADDR);
        try {
            if (given != null && !given.isBlank()) {
                ev.add(WorldEnvironment.ENV_BIND_ADDR + "=" + given);
                return InetAddress.getByName(given.trim());
            }
            if (oneHost) {
                return InetAddress.getLoopbackAddress();
            }
            InetAddress a = InetAddress.getLocalHost();
            if (a.isLoopbackAddress()) { // Debian's /etc/hosts names this host 127.0.1.1: useless to other hosts
                a = firstInterfaceAddress(a);
            }
            ev.add("root on this host's address " + a.getHostAddress() + " (set " + WorldEnvironment.ENV_BIND_ADDR
                + " to choose)");
            return a;
        } catch (final UnknownHostException e) {
            throw new IllegalArgumentException("bootstrap root address does not resolve: " + e.getMessage());
        }
    }

    /** The first IPv4 address of an interface that is up and not loopback; {@code fallback} if there is none. */
    private static InetAddress firstInterfaceAddress(final InetAddress fallback) {
        try {
            for (final java.net.NetworkInterface n : java.util.Collections.list(
                java.net.NetworkInterface.getNetworkInterfaces())) {
                if (!n.isUp() || n.isLoopback()) {
                    continue;
                }
                for (final InetAddress a : java.util.Collections.list(n.getInetAddresses())) {
                    if (a instanceof java.net.Inet4Address && !a.isLinkLocalAddress()) {
                        return a;
                    }
                }
            }
        } catch (final java.net.SocketException e) {
            // keep the fallback
        }
        return fallback;
    }

    static MemorySegment proc(final Arena arena, final String nspace, final int rank) {
        final MemorySegment p = arena.allocate(PROC_SIZE, 8);
        final byte[] ns = nspace.getBytes(StandardCharsets.UTF_8);
        MemorySegment.copy(ns, 0, p, JAVA_BYTE, 0, Math.min(ns.length, NSPACE_BYTES - 1));
        p.set(JAVA_INT, PROC_RANK, rank);
        return p;
    }

    /** A number-valued key; -1 when absent and not required. */
    private static long number(final Lib lib, final Arena arena, final MemorySegment proc, final String key,
                               final boolean required) {
        final MemorySegment v = get(lib, arena, proc, key, required);
        if (v == null) {
            return -1;
        }
        final short type = v.get(JAVA_SHORT, 0);
        return switch (type) {
            case TYPE_UINT32, TYPE_PROC_RANK -> Integer.toUnsignedLong(v.get(JAVA_INT, VALUE_DATA));
            case TYPE_INT, TYPE_INT32 -> v.get(JAVA_INT, VALUE_DATA);
            case TYPE_UINT16 -> Short.toUnsignedInt(v.get(JAVA_SHORT, VALUE_DATA));
            case TYPE_UINT8 -> Byte.toUnsignedInt(v.get(JAVA_BYTE, VALUE_DATA));
            default -> throw new BootstrapException(Reason.PROTOCOL, "PMIx key " + key + " has type " + type
                + ", not a number");
        };
    }

    private static String string(final Lib lib, final Arena arena, final MemorySegment proc, final String key) {
        final MemorySegment v = get(lib, arena, proc, key, true);
        if (v.get(JAVA_SHORT, 0) != TYPE_STRING) {
            throw new BootstrapException(Reason.PROTOCOL, "PMIx key " + key + " has type " + v.get(JAVA_SHORT, 0)
                + ", not a string");
        }
        return v.get(ADDRESS, VALUE_DATA).reinterpret(4096).getString(0);
    }

    private static MemorySegment get(final Lib lib, final Arena arena, final MemorySegment proc, final String key,
                                     final boolean required) {
        final MemorySegment out = arena.allocate(ADDRESS);
        final MemorySegment k = arena.allocateFrom(key);
        final int st = (int) call(() -> (int) lib.get().invokeExact(proc, k, MemorySegment.NULL, 0L, out));
        if (st != 0) {
            if (!required) {
                return null;
            }
            throw new BootstrapException(Reason.REMOTE, "PMIx_Get(" + key + ") failed: " + error(lib, st));
        }
        // the value PMIx allocated is left to the process (a few bytes, once per run)
        return out.get(ADDRESS, 0).reinterpret(VALUE_SIZE);
    }

    private static void check(final Lib lib, final String what, final int status) {
        if (status != 0) {
            throw new BootstrapException(Reason.REMOTE, what + " failed: " + error(lib, status));
        }
    }

    private static String error(final Lib lib, final int status) {
        try {
            final MemorySegment s = (MemorySegment) lib.error().invokeExact(status);
            return s.equals(MemorySegment.NULL) ? "status " + status : s.reinterpret(256).getString(0) + " ("
                + status + ")";
        } catch (final Throwable t) {
            return "status " + status;
        }
    }

    /** Runs {@code body} on a thread of its own; a call that does not return in time is a named TIMEOUT. */
    private static <T> T timed(final Duration timeout, final String what, final java.util.function.Supplier<T> body) {
        final CompletableFuture<T> f = new CompletableFuture<>();
        Thread.ofPlatform().daemon(true).name("gdrkit-pmix").start(() -> {
            try {
                f.complete(body.get());
            } catch (final Throwable t) {
                f.completeExceptionally(t);
            }
        });
        try {
            return f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (final TimeoutException e) {
            throw new BootstrapException(Reason.TIMEOUT, what + " did not complete within " + timeout.toMillis()
                + " ms");
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new BootstrapException(Reason.TIMEOUT, what + ": interrupted");
        } catch (final ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new BootstrapException(Reason.REMOTE, what + ": " + e.getCause(), e.getCause());
        }
    }

    private static void timedRun(final Duration timeout, final String what, final Runnable body) {
        timed(timeout, what, () -> {
            body.run();
            return Boolean.TRUE;
        });
    }

    @FunctionalInterface
    private interface NativeCall {
        Object call() throws Throwable;
    }

    private static Object call(final NativeCall c) {
        try {
            return c.call();
        } catch (final RuntimeException | Error e) {
            throw e;
        } catch (final Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
