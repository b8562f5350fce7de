/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.gdrkit.verbs.Device;
import io.gdrkit.verbs.VerbsProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The native provider: the RDMA devices libibverbs lists on this host (ConnectX, EFA, rxe, siw ...), driven through
 * FFM. Found through ServiceLoader next to the software NIC; lists nothing, and says why, where libibverbs is absent
 * or finds no device.
 */
public final class NativeProvider implements VerbsProvider {
    @Override
    public String name() {
        return "ibverbs";
    }

    @Override
    public List<Device> devices() {
        return probe().devices();
    }

    @Override
    public String evidence() {
        return probe().evidence();
    }

    /** What looking for native devices found, with the evidence of where it looked. */
    public record Probe(List<Device> devices, boolean libraryLoaded, String evidence) {
    }

    /** Loads libibverbs (once) and lists its devices; never throws. */
    public static Probe probe() {
        return probe(IbvLibrary.load());
    }

    /**
     * Probes a given libibverbs file instead of the process's (a test double, a second rdma-core install); the ABI
     * rule applies as for the default library.
     */
    public static Probe probe(final java.nio.file.Path library) {
        return probe(IbvLibrary.doLoad(library.toAbsolutePath().toString(), false));
    }

    static Probe probe(final IbvLibrary.Loaded l) {
        final String sysfs = sysfs();
        if (l.library() == null) {
            return new Probe(List.of(), false, l.unavailable() + "; " + sysfs);
        }
        final IbvLibrary lib = l.library();
        final List<Device> out = new ArrayList<>();
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment num = a.allocate(JAVA_INT);
            final MemorySegment st = lib.captureState(a);
            final MemorySegment list = (MemorySegment) lib.getDeviceList.invokeExact(st, num);
            if (list.equals(MemorySegment.NULL)) {
                final int errno = IbvLibrary.errnoOf(st);
                return new Probe(List.of(), true, lib.evidence() + "; ibv_get_device_list listed 0 device(s) "
                    + "(returned NULL, errno " + errno + " " + io.gdrkit.core.Errno.name(errno) + "); " + sysfs);
            }
            final int n = num.get(JAVA_INT, 0);
            final MemorySegment arr = list.reinterpret(ADDRESS.byteSize() * (n + 1L));
            for (int i = 0; i < n; i++) {
                final MemorySegment dev = arr.getAtIndex(ADDRESS, i);
                final String name = ((MemorySegment) lib.getDeviceName.invokeExact(dev)).getString(0);
                final long guid = Long.reverseBytes((long) lib.getDeviceGuid.invokeExact(dev));
                out.add(new NativeDevice(lib, list, dev, name, guid));
            }
            // the list stays allocated: the devices point into it (freed with the JVM, as rdma-core's tools do)
            return new Probe(List.copyOf(out), true, lib.evidence() + "; ibv_get_device_list listed " + n
                + " device(s); " + sysfs);
        } catch (final Throwable t) {
            return new Probe(List.of(), true, lib.evidence() + "; listing failed: " + t + "; " + sysfs);
        }
    }

    private static String sysfs() {
        final Path p = Path.of("/sys/class/infiniband");
        if (!Files.isDirectory(p)) {
            return p + " does not exist";
        }
        try (Stream<Path> s = Files.list(p)) {
            final List<String> names = s.map(x -> x.getFileName().toString()).sorted().toList();
            return p + (names.isEmpty() ? " is empty" : " lists " + names);
        } catch (final java.io.IOException e) {
            return p + " unreadable: " + e.getMessage();
        }
    }
}
