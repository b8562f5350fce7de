/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.devices;

import java.io.IOException;
import java.lang.foreign.AddressLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The RDMA devices libibverbs itself lists, asked through FFM: {@code ibv_get_device_list}, then per device its name,
 * node GUID ({@code ibv_get_device_guid}), port count ({@code ibv_query_device}) and each port's state, link layer,
 * active MTU and LID ({@code ibv_query_port}). Listing only: opening queue pairs on a real HCA is the future native
 * provider's job, not this class's. Never throws: when the list is empty the result says why, from what it looked
 * at (whether the library loads, what {@code /sys/class/infiniband} holds).
 */
// native access is this class's purpose; the JVM runs with --enable-native-access=ALL-UNNAMED
@SuppressWarnings("restricted")
public final class IbvDeviceList
{
    /** The library NCCL and rdma-core's tools load. */
    public static final String LIBRARY = "libibverbs.so.1";

    // struct ibv_device_attr (rdma-core verbs.h): fw_ver[64], node_guid, sys_image_guid, max_mr_size, page_size_cap,
    // vendor_id, vendor_part_id, hw_ver, 29 ints, max_pkeys (u16) at 224, local_ca_ack_delay (u8) at 226,
    // phys_port_cnt (u8) at 227. 512 bytes leaves room for any later growth.
    private static final long DEVICE_ATTR_BYTES = 512;
    private static final long PHYS_PORT_CNT = 227;
    // struct ibv_port_attr: state (enum) at 0, max_mtu at 4, active_mtu at 8, ..., lid (u16) at 34, link_layer (u8)
    // at 46. The compat symbol writes the old, shorter struct; 256 zeroed bytes hold either.
    private static final long PORT_ATTR_BYTES = 256;
    private static final long PORT_ACTIVE_MTU = 8;
    private static final long PORT_LID = 34;
    private static final long PORT_LINK_LAYER = 46;
    private static final String[] PORT_STATES = { "NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER" };
    private static final String[] LINK_LAYERS = { "unspecified", "InfiniBand", "Ethernet" };

    /**
     * One port.
     *
     * @param port      the port number (1-based).
     * @param state     PORT_ACTIVE and friends, by name; {@code unknown} when the query failed.
     * @param linkLayer InfiniBand, Ethernet or unspecified.
     * @param activeMtu bytes (256..4096), 0 when unknown.
     * @param lid       the LID (0 on Ethernet).
     */
    public record Port(int port, String state, String linkLayer, int activeMtu, int lid)
    {
    }

    /**
     * One device libibverbs listed.
     *
     * @param name     e.g. mlx5_0.
     * @param guid     the node GUID as ibv_devinfo prints it (xxxx:xxxx:xxxx:xxxx).
     * @param ports    its ports; empty when the device could not be opened.
     * @param real     always true: libibverbs lists hardware or a kernel software device (rxe, siw), never
     *                 gdrkit's in-JVM NICs.
     * @param evidence what was asked and what failed, if anything.
     */
    public record Device(String name, String guid, List<Port> ports, boolean real, String evidence)
    {
    }

    /**
     * The listing.
     *
     * @param library     the library asked.
     * @param loaded      whether it loaded.
     * @param devices     the devices, in libibverbs' order.
     * @param emptyReason when no device: why, in words; empty otherwise.
     * @param evidence    what was looked at.
     */
    public record Listing(String library, boolean loaded, List<Device> devices, String emptyReason, String evidence)
    {
    }

    private IbvDeviceList()
    {
    }

    /**
     * @return the devices of this host, via {@value #LIBRARY}, with {@code /} as the sysfs root.
     */
    public static Listing list()
    {
        return list(LIBRARY, Path.of("/"));
    }

    /**
     * @param library the libibverbs file name to load.
     * @param root    the file system root under which {@code sys/class/infiniband} is looked at (for the reason).
     * @return the devices.
     */
    public static Listing list(final String library, final Path root)
    {
        final String sysfs = sysfs(root);
        final SymbolLookup lib;
        try
        {
            lib = SymbolLookup.libraryLookup(library, Arena.global());
        }
        catch (final RuntimeException e)
        {
            return new Listing(library, false, List.of(), library + " is not loadable (" + e.getMessage() +
                "): install rdma-core's libibverbs; " + sysfs, "dlopen " + library + ": " + e.getMessage());
        }
        final Linker linker = Linker.nativeLinker();
        final AddressLayout ptr = ValueLayout.ADDRESS;
        try (Arena arena = Arena.ofConfined())
        {
            final Linker.Option errnoOption = Linker.Option.captureCallState("errno");
            final MethodHandle getList = linker.downcallHandle(lib.findOrThrow("ibv_get_device_list"),
                FunctionDescriptor.of(ptr, ptr), errnoOption);
            final MemorySegment callState = arena.allocate(Linker.Option.captureStateLayout());
            final MethodHandle freeList = linker.downcallHandle(lib.findOrThrow("ibv_free_device_list"),
                FunctionDescriptor.ofVoid(ptr));
            final MethodHandle name = linker.downcallHandle(lib.findOrThrow("ibv_get_device_name"),
                FunctionDescriptor.of(ptr, ptr));
            final MethodHandle guid = linker.downcallHandle(lib.findOrThrow("ibv_get_device_guid"),
                FunctionDescriptor.of(ValueLayout.JAVA_LONG, ptr));
            final MethodHandle open = linker.downcallHandle(lib.findOrThrow("ibv_open_device"),
                FunctionDescriptor.of(ptr, ptr));
            final MethodHandle close = linker.downcallHandle(lib.findOrThrow("ibv_close_device"),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ptr));
            final MethodHandle queryDevice = linker.downcallHandle(lib.findOrThrow("ibv_query_device"),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ptr, ptr));
            final MethodHandle queryPort = linker.downcallHandle(lib.findOrThrow("ibv_query_port"),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ptr, ValueLayout.JAVA_BYTE, ptr));
            final MemorySegment num = arena.allocate(ValueLayout.JAVA_INT);
            final MemorySegment list = (MemorySegment)getList.invokeExact(callState, num);
            final int n = num.get(ValueLayout.JAVA_INT, 0);
            if (list.equals(MemorySegment.NULL))
            {
                final int errno = callState.get(ValueLayout.JAVA_INT,
                    Linker.Option.captureStateLayout().byteOffset(
                        java.lang.foreign.MemoryLayout.PathElement.groupElement("errno")));
                final String why = errno == 38 ? "errno 38 (ENOSYS): the kernel has no RDMA verbs subsystem" :
                    "errno " + errno;
                return new Listing(library, true, List.of(), "libibverbs loaded but lists no device: " +
                    "ibv_get_device_list returned NULL, " + why + "; " + sysfs,
                    "ibv_get_device_list via FFM (" + library + "): NULL, " + why);
            }
            final List<Device> devices = new ArrayList<>();
            try
            {
                final MemorySegment arr = list.reinterpret((long)(n + 1) * ptr.byteSize());
                for (int i = 0; i < n; i++)
                {
                    final MemorySegment dev = arr.getAtIndex(ptr, i);
                    final String devName = ((MemorySegment)name.invokeExact(dev)).reinterpret(256).getString(0);
                    final long rawGuid = (long)guid.invokeExact(dev);
                    devices.add(describe(devName, formatGuid(rawGuid), dev, arena, open, close, queryDevice,
                        queryPort));
                }
            }
            finally
            {
                freeList.invokeExact(list);
            }
            final String evidence = "ibv_get_device_list via FFM (" + library + "): " + n + " device(s); " + sysfs;
            return new Listing(library, true, List.copyOf(devices), devices.isEmpty() ?
                "libibverbs loaded but lists no device; " + sysfs + emptyHint(root) : "", evidence);
        }
        catch (final Throwable t)
        {
            return new Listing(library, true, List.of(), "libibverbs loaded but the listing failed: " + t + "; " +
                sysfs, "listing failed: " + t);
        }
    }

    private static Device describe(
        final String devName, final String devGuid, final MemorySegment dev, final Arena arena,
        final MethodHandle open, final MethodHandle close, final MethodHandle queryDevice,
        final MethodHandle queryPort) throws Throwable
    {
        final MemorySegment ctx = (MemorySegment)open.invokeExact(dev);
        if (ctx.equals(MemorySegment.NULL))
        {
            return new Device(devName, devGuid, List.of(), true,
                "ibv_open_device failed (permissions on /dev/infiniband/uverbs*?)");
        }
        try
        {
            final MemorySegment attr = arena.allocate(DEVICE_ATTR_BYTES, 8);
            final int rc = (int)queryDevice.invokeExact(ctx, attr);
            if (rc != 0)
            {
                return new Device(devName, devGuid, List.of(), true, "ibv_query_device = " + rc);
            }
            final int ports = Byte.toUnsignedInt(attr.get(ValueLayout.JAVA_BYTE, PHYS_PORT_CNT));
            final List<Port> result = new ArrayList<>();
            for (int p = 1; p <= ports; p++)
            {
                final MemorySegment pa = arena.allocate(PORT_ATTR_BYTES, 8);
                final int prc = (int)queryPort.invokeExact(ctx, (byte)p, pa);
                if (prc != 0)
                {
                    result.add(new Port(p, "unknown (ibv_query_port = " + prc + ")", "unknown", 0, 0));
                    continue;
                }
                final int state = pa.get(ValueLayout.JAVA_INT, 0);
                final int mtu = pa.get(ValueLayout.JAVA_INT, PORT_ACTIVE_MTU);
                final int lid = Short.toUnsignedInt(pa.get(ValueLayout.JAVA_SHORT, PORT_LID));
                final int layer = Byte.toUnsignedInt(pa.get(ValueLayout.JAVA_BYTE, PORT_LINK_LAYER));
                result.add(new Port(p, state >= 0 && state < PORT_STATES.length ? PORT_STATES[state] :
                    "state " + state, layer < LINK_LAYERS.length ? LINK_LAYERS[layer] : "link layer " + layer,
                    mtu >= 1 && mtu <= 5 ? 128 << mtu : 0, lid));
            }
            return new Device(devName, devGuid, List.copyOf(result), true,
                "ibv_query_device: " + ports + " port(s)");
        }
        finally
        {
            final int ignored = (int)close.invokeExact(ctx);
        }
    }

    /**
     * @param beGuid the GUID as libibverbs returns it (big-endian in memory).
     * @return ibv_devinfo's form, xxxx:xxxx:xxxx:xxxx.
     */
    static String formatGuid(final long beGuid)
    {
        final long g = java.nio.ByteOrder.nativeOrder() == java.nio.ByteOrder.LITTLE_ENDIAN ?
            Long.reverseBytes(beGuid) : beGuid;
        return String.format("%04x:%04x:%04x:%04x", (g >>> 48) & 0xffff, (g >>> 32) & 0xffff, (g >>> 16) & 0xffff,
            g & 0xffff);
    }

    private static String sysfs(final Path root)
    {
        final Path dir = root.resolve("sys/class/infiniband");
        if (!Files.isDirectory(dir))
        {
            return "/sys/class/infiniband is absent: no RDMA driver is loaded (no HCA, or its kernel module, e.g. " +
                "mlx5_ib, is not loaded; a software one would be rdma_rxe or siw)";
        }
        try (Stream<Path> s = Files.list(dir))
        {
            final List<String> names = s.map(p -> p.getFileName().toString()).sorted().toList();
            return names.isEmpty() ? "/sys/class/infiniband is empty: the RDMA core is loaded but no device driver" :
                "/sys/class/infiniband lists " + names;
        }
        catch (final IOException e)
        {
            return "/sys/class/infiniband can not be listed (" + e.getMessage() + ")";
        }
    }

    private static String emptyHint(final Path root)
    {
        final Path dir = root.resolve("sys/class/infiniband");
        try (Stream<Path> s = Files.isDirectory(dir) ? Files.list(dir) : Stream.empty())
        {
            return s.findAny().isPresent() ? " (the kernel has devices that libibverbs does not list: its provider " +
                "library, e.g. libmlx5, may be missing from /usr/lib/*/libibverbs/)" : "";
        }
        catch (final IOException e)
        {
            return "";
        }
    }
}
