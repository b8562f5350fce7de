/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;

/**
 * Asks libibverbs itself, through FFM, for its device list and each device's port 1 state
 * ({@code ibv_get_device_list}, {@code ibv_get_device_name}, {@code ibv_open_device}, {@code ibv_query_port},
 * {@code ibv_close_device}, {@code ibv_free_device_list}). Never throws: the result says what was found and how.
 */
// native access is this class's purpose; the JVM runs with --enable-native-access=ALL-UNNAMED
@SuppressWarnings("restricted")
final class VerbsProbe {
    /** ibv_port_attr is 48+ bytes in every rdma-core release; 256 is room to spare. state is its first field. */
    private static final long PORT_ATTR_BYTES = 256;
    private static final String[] PORT_STATES = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};

    record Result(boolean loaded, List<String> devices, String evidence) {
    }

    private VerbsProbe() {
    }

    static Result probe() {
        final SymbolLookup lib;
        try {
            lib = SymbolLookup.libraryLookup("libibverbs.so.1", Arena.global());
        } catch (final RuntimeException e) {
            return new Result(false, List.of(), "libibverbs.so.1 not loadable (" + e.getMessage() + ")");
        }
        final Linker linker = Linker.nativeLinker();
        final AddressLayout ptr = ValueLayout.ADDRESS;
        try (Arena arena = Arena.ofConfined()) {
            final MethodHandle getList = linker.downcallHandle(lib.findOrThrow("ibv_get_device_list"),
                FunctionDescriptor.of(ptr, ptr));
            final MethodHandle freeList = linker.downcallHandle(lib.findOrThrow("ibv_free_device_list"),
                FunctionDescriptor.ofVoid(ptr));
            final MethodHandle name = linker.downcallHandle(lib.findOrThrow("ibv_get_device_name"),
                FunctionDescriptor.of(ptr, ptr));
            final MethodHandle open = linker.downcallHandle(lib.findOrThrow("ibv_open_device"),
                FunctionDescriptor.of(ptr, ptr));
            final MethodHandle close = linker.downcallHandle(lib.findOrThrow("ibv_close_device"),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ptr));
            final MethodHandle queryPort = linker.downcallHandle(lib.findOrThrow("ibv_query_port"),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ptr, ValueLayout.JAVA_BYTE, ptr));
            final MemorySegment num = arena.allocate(ValueLayout.JAVA_INT);
            final MemorySegment list = (MemorySegment) getList.invokeExact(num);
            final int n = num.get(ValueLayout.JAVA_INT, 0);
            if (list.equals(MemorySegment.NULL)) {
                return new Result(true, List.of(), "ibv_get_device_list returned NULL (num = " + n + ")");
            }
            final List<String> devices = new ArrayList<>();
            try {
                final MemorySegment arr = list.reinterpret((long) (n + 1) * ptr.byteSize());
                for (int i = 0; i < n; i++) {
                    final MemorySegment dev = arr.getAtIndex(ptr, i);
                    final String devName = ((MemorySegment) name.invokeExact(dev)).reinterpret(256).getString(0);
                    final MemorySegment ctx = (MemorySegment) open.invokeExact(dev);
                    String port = "port state unknown (ibv_open_device failed)";
                    if (!ctx.equals(MemorySegment.NULL)) {
                        final MemorySegment attr = arena.allocate(PORT_ATTR_BYTES, 8);
                        final int rc = (int) queryPort.invokeExact(ctx, (byte) 1, attr);
                        final int state = attr.get(ValueLayout.JAVA_INT, 0);
                        port = rc != 0 ? "ibv_query_port(1) = " + rc : "port 1 "
                            + (state >= 0 && state < PORT_STATES.length ? PORT_STATES[state] : "state " + state);
                        final int ignored = (int) close.invokeExact(ctx);
                    }
                    devices.add(devName + " (" + port + ")");
                }
            } finally {
                freeList.invokeExact(list);
            }
            return new Result(true, devices, "ibv_get_device_list: " + n + " device(s)"
                + (devices.isEmpty() ? "" : " " + devices));
        } catch (final Throwable t) {
            return new Result(true, List.of(), "libibverbs loaded but the probe failed: " + t);
        }
    }
}
