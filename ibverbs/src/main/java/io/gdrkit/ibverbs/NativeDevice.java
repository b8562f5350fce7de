/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import io.gdrkit.verbs.Device;
import io.gdrkit.verbs.VerbsContext;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** One device from {@code ibv_get_device_list}: real hardware (or rxe/siw), never simulated. */
final class NativeDevice implements Device {
    private final IbvLibrary lib;
    @SuppressWarnings("unused") // keeps the list the device pointer lives in reachable
    private final MemorySegment list;
    private final MemorySegment dev;
    private final String name;
    private final long guid;

    NativeDevice(final IbvLibrary lib, final MemorySegment list, final MemorySegment dev, final String name,
                 final long guid) {
        this.lib = lib;
        this.list = list;
        this.dev = dev;
        this.name = name;
        this.guid = guid;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public long guid() {
        return guid;
    }

    @Override
    public boolean isSimulated() {
        return false;
    }

    @Override
    public VerbsContext open() {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment st = lib.captureState(a);
            final MemorySegment ctx = (MemorySegment) lib.openDevice.invokeExact(st, dev);
            if (ctx.equals(MemorySegment.NULL)) {
                throw IbvLibrary.error("ibv_open_device(" + name + ")", IbvLibrary.errnoOf(st));
            }
            return new NativeContext(lib, this, ctx.reinterpret(IbvLayouts.CONTEXT.byteSize()));
        } catch (final RuntimeException e) {
            throw e;
        } catch (final Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    @Override
    public String toString() {
        return name + " (libibverbs)";
    }
}
