/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDevice;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The data side of a {@link Comm}: the checks of a call's arguments, the registrations kept for native segments
 * and device buffers, the staging that heap data is copied through, and the bodies of the calls on the engine
 * ({@link Collectives}, {@link Communicator#exchange}). Used by one call at a time (the Comm's lock).
 */
final class CommData {
    /** The most bytes one buffer of one call may hold. */
    static final long MAX_BYTES = Comm.MAX_BYTES;
    /** Registrations of native segments kept for reuse; the least recently used is dropped beyond this. */
    static final int REGISTRATION_CACHE = 64;
    static final int SEND = 0;
    static final int RECV = 1;
    static final int SCRATCH = 2;

    private final Communicator engine;
    private final LinkedHashMap<Key, Reg> regs = new LinkedHashMap<>(16, 0.75f, true);
    private final Map<DeviceBuffer, RegisteredBuffer> devRegs = new IdentityHashMap<>();
    private final List<Stage> stages = new ArrayList<>();
    private final List<DeviceBuffer> devScratch = new ArrayList<>();

    /** A native segment's registration, by where it lies. */
    private record Key(long address, long size) {
    }

    private record Reg(MemorySegment seg, RegisteredBuffer buf) {
    }

    /** Registered staging memory for heap data and copies, grown on demand. */
    private record Stage(Arena arena, RegisteredBuffer buf, long capacity) {
    }

    /** Native segments registered so far (each cache miss). */
    private long registrations;

    /** {@return native segments registered so far} */
    long registrationsMade() {
        return registrations;
    }

    CommData(final Communicator engine) {
        this.engine = engine;
    }

    private int rank() {
        return engine.rank();
    }

    private int size() {
        return engine.nranks();
    }

    private GpuDevice gpu() {
        final DeviceReducer dr = engine.deviceReducer();
        return dr == null ? null : dr.gpu();
    }

    /** Drops the registration kept for {@code seg}, if any. */
    void deregister(final MemorySegment seg) {
        final Reg r = regs.remove(new Key(seg.address(), seg.byteSize()));
        if (r != null) {
            engine.deregister(r.buf());
        }
    }

    /** Drops the registration kept for a device buffer, if any. */
    void deregister(final DeviceBuffer buf) {
        final RegisteredBuffer b = devRegs.remove(buf);
        if (b != null) {
            engine.deregister(b);
            hostHalves.remove(buf).close();
        }
    }

    /** Gives back every registration and staging buffer (closing: errors are the NIC's being gone already). */
    void close() {
        for (final Reg r : regs.values()) {
            quietly(() -> engine.deregister(r.buf()));
        }
        regs.clear();
        for (final Stage s : stages) {
            if (s != null) {
                quietly(() -> engine.deregister(s.buf()));
                s.arena().close();
            }
        }
        stages.clear();
        for (final Map.Entry<DeviceBuffer, RegisteredBuffer> e : devRegs.entrySet()) {
            quietly(() -> engine.deregister(e.getValue()));
        }
        devRegs.clear();
        final GpuDevice g = gpu();
        for (final DeviceBuffer d : devScratch) {
            quietly(() -> g.free(d));
        }
        devScratch.clear();
    }

    /** Host halves of the registered device buffers: closed after the world, whose NICs may still read them. */
    void closeHostHalves() {
        hostHalves.values().forEach(Arena::close);
        hostHalves.clear();
    }

    private static void quietly(final Runnable r) {
        try {
            r.run();
        } catch (final RuntimeException ignored) {
            // closing after a failure: the NIC may be gone already, and the rest must still be given back
        }
    }

    static long bytes(final long count, final DataType t, final String what) {
        if (count < 0) {
            throw new IllegalArgumentException(what + ": count " + count + " is negative");
        }
        if (count > MAX_BYTES / t.size()) {
            throw new IllegalArgumentException(what + ": " + count + " elements of " + t.ncclName() + " exceed "
                + MAX_BYTES + " bytes");
        }
        return count * t.size();
    }

    static void holds(final MemorySegment seg, final long bytes, final String what) {
        Objects.requireNonNull(seg, what);
        if (seg.byteSize() < bytes) {
            throw new IllegalArgumentException(what + " holds " + seg.byteSize() + " bytes, the call needs " + bytes);
        }
        if (seg.isReadOnly()) {
            throw new IllegalArgumentException(what + " is read-only");
        }
    }

    void root(final int root) {
        if (root < 0 || root >= size()) {
            throw new IllegalArgumentException("root " + root + " outside 0.." + (size() - 1));
        }
    }

    void peer(final int peer) {
        if (peer < 0 || peer >= size()) {
            throw new IllegalArgumentException("peer " + peer + " outside 0.." + (size() - 1));
        }
        if (peer == rank()) {
            throw new IllegalArgumentException("peer " + peer + " is this rank: copy locally instead");
        }
    }

    static Object base(final MemorySegment s) {
        return s.heapBase().orElse(null);
    }

    static boolean same(final MemorySegment a, final MemorySegment b, final long bOff) {
        return base(a) == base(b) && a.address() == b.address() + bOff;
    }

    static boolean overlap(final MemorySegment a, final long aBytes, final MemorySegment b,
                                   final long bBytes) {
        return base(a) == base(b) && a.address() < b.address() + bBytes && b.address() < a.address() + aBytes;
    }

    RegisteredBuffer stage(final int slot, final long bytes) {
        while (stages.size() <= slot) {
            stages.add(null);
        }
        Stage s = stages.get(slot);
        if (s == null || s.capacity() < bytes) {
            if (s != null) {
                engine.deregister(s.buf());
                s.arena().close();
            }
            final long cap = Math.max(4096, Long.highestOneBit(Math.max(1, bytes) - 1) << 1);
            final Arena a = Arena.ofShared();
            try {
                s = new Stage(a, engine.register(a.allocate(cap, 4096)), cap);
            } catch (final RuntimeException e) {
                a.close();
                stages.set(slot, null);
                throw e;
            }
            stages.set(slot, s);
        }
        return s.buf();
    }

    RegisteredBuffer registered(final MemorySegment seg) {
        final Key k = new Key(seg.address(), seg.byteSize());
        final Reg r = regs.get(k);
        if (r != null) {
            if (r.seg().scope().isAlive() && r.seg().scope().equals(seg.scope())) {
                return r.buf();
            }
            regs.remove(k);
            engine.deregister(r.buf());
        }
        final RegisteredBuffer b = engine.register(seg);
        registrations++;
        regs.put(k, new Reg(seg, b));
        if (regs.size() > REGISTRATION_CACHE) {
            final Iterator<Map.Entry<Key, Reg>> it = regs.entrySet().iterator();
            final Reg old = it.next().getValue();
            it.remove();
            engine.deregister(old.buf());
        }
        return b;
    }

    RegisteredBuffer input(final MemorySegment seg, final long bytes, final int slot) {
        if (seg.isNative()) {
            return registered(seg);
        }
        final RegisteredBuffer s = stage(slot, bytes);
        MemorySegment.copy(seg, 0, s.seg(), 0, bytes);
        return s;
    }

    RegisteredBuffer output(final MemorySegment seg, final long bytes, final int slot) {
        return seg.isNative() ? registered(seg) : stage(slot, bytes);
    }

    static void copyOut(final RegisteredBuffer b, final MemorySegment seg, final long bytes) {
        if (!seg.isNative() && bytes > 0) {
            MemorySegment.copy(b.seg(), 0, seg, 0, bytes);
        }
    }

    static RegisteredBuffer slice(final RegisteredBuffer b, final long off) {
        if (b.direct()) {
            return new RegisteredBuffer(b.seg().asSlice(off), b.mr(), b.dev(), b.devOff() + off, true, b.hostMr());
        }
        return new RegisteredBuffer(b.seg().asSlice(off), b.mr(), b.dev(), b.devOff() + off, false, b.hostMr());
    }

    static void checkArgs(final Runnable check) {
        check.run();
    }

    static void hostArgs(final MemorySegment send, final MemorySegment recv, final long sendBytes,
                                 final long recvBytes) {
        holds(send, sendBytes, "send buffer");
        holds(recv, recvBytes, "receive buffer");
    }

    void barrier() {
        Collectives.barrier(engine);
    }

    void hostAllReduce(final MemorySegment send, final MemorySegment recv, final long count,
                               final DataType type, final RedOp op) {
        if (count == 0) {
            return; // every rank skips it alike: nothing moves
        }
        Objects.requireNonNull(op, "op");
        final long bytes = bytes(count, type, "allReduce");
        hostArgs(send, recv, bytes, bytes);
        final boolean inPlace = same(send, recv, 0);
        final RegisteredBuffer out = output(recv, bytes, RECV);
        final RegisteredBuffer in = inPlace ? out : overlap(send, bytes, recv, bytes) || !send.isNative()
            ? stagedCopy(send, bytes, SEND) : registered(send);
        if (inPlace && !recv.isNative()) {
            MemorySegment.copy(send, 0, out.seg(), 0, bytes);
        }
        Collectives.allReduce(engine, in, out, count, type, op);
        copyOut(out, recv, bytes);
    }

    RegisteredBuffer stagedCopy(final MemorySegment seg, final long bytes, final int slot) {
        final RegisteredBuffer s = stage(slot, bytes);
        MemorySegment.copy(seg, 0, s.seg(), 0, bytes);
        return s;
    }

    void hostAllGather(final MemorySegment send, final MemorySegment recv, final long count,
                               final DataType type) {
        if (count == 0) {
            return; // every rank skips it alike: nothing moves
        }
        final long bb = bytes(count, type, "allGather");
        final long total = bytes(count * size(), type, "allGather");
        hostArgs(send, recv, bb, total);
        final boolean inPlace = same(send, recv, rank() * bb);
        final RegisteredBuffer out = output(recv, total, RECV);
        final RegisteredBuffer in;
        if (inPlace) {
            if (!recv.isNative()) {
                MemorySegment.copy(send, 0, out.seg(), rank() * bb, bb);
            }
            in = slice(out, rank() * bb);
        } else {
            in = overlap(send, bb, recv, total) || !send.isNative() ? stagedCopy(send, bb, SEND) : registered(send);
        }
        Collectives.allGather(engine, in, out, count, type);
        copyOut(out, recv, total);
    }

    void hostReduceScatter(final MemorySegment send, final MemorySegment recv, final long recvCount,
                                   final DataType type, final RedOp op) {
        if (recvCount == 0) {
            return; // every rank skips it alike: nothing moves
        }
        Objects.requireNonNull(op, "op");
        final long bb = bytes(recvCount, type, "reduceScatter");
        final long total = bytes(recvCount * size(), type, "reduceScatter");
        hostArgs(send, recv, total, bb);
        final RegisteredBuffer in = send.isNative() && !overlap(send, total, recv, bb) ? registered(send)
            : stagedCopy(send, total, SEND);
        final RegisteredBuffer out = recv.isNative() && !overlap(send, total, recv, bb) ? registered(recv) : stage(RECV, bb);
        Collectives.reduceScatter(engine, in, stage(SCRATCH, total), out, recvCount, type, op);
        if (!recv.isNative() || overlap(send, total, recv, bb)) {
            MemorySegment.copy(out.seg(), 0, recv, 0, bb);
        }
    }

    void hostBroadcast(final MemorySegment send, final MemorySegment recv, final long count,
                               final DataType type, final int root) {
        if (count == 0) {
            return; // every rank skips it alike: nothing moves
        }
        final long bytes = bytes(count, type, "broadcast");
        hostArgs(send, recv, bytes, bytes);
        root(root);
        final boolean inPlace = same(send, recv, 0);
        final RegisteredBuffer out = output(recv, bytes, RECV);
        final RegisteredBuffer in;
        if (inPlace) {
            if (!recv.isNative() && rank() == root) {
                MemorySegment.copy(send, 0, out.seg(), 0, bytes);
            }
            in = out;
        } else if (rank() != root) {
            in = out; // not read off the root
        } else {
            in = overlap(send, bytes, recv, bytes) || !send.isNative() ? stagedCopy(send, bytes, SEND)
                : registered(send);
        }
        Collectives.broadcast(engine, in, out, count, type, root);
        copyOut(out, recv, bytes);
    }

    void hostReduce(final MemorySegment send, final MemorySegment recv, final long count,
                            final DataType type, final RedOp op, final int root) {
        if (count == 0) {
            return; // every rank skips it alike: nothing moves
        }
        Objects.requireNonNull(op, "op");
        final long bytes = bytes(count, type, "reduce");
        root(root);
        holds(send, bytes, "send buffer");
        final MemorySegment r = rank() == root ? recv : null;
        if (r != null) {
            holds(r, bytes, "receive buffer");
        }
        // the engine reduces through the output on every rank on the way to the root: off the root it is scratch
        final boolean inPlace = r != null && same(send, r, 0);
        final RegisteredBuffer out = r == null ? stage(RECV, bytes) : output(r, bytes, RECV);
        final RegisteredBuffer in = inPlace ? out : (r != null && overlap(send, bytes, r, bytes)) || !send.isNative()
            ? stagedCopy(send, bytes, SEND) : registered(send);
        if (inPlace && !r.isNative()) {
            MemorySegment.copy(send, 0, out.seg(), 0, bytes);
        }
        Collectives.reduce(engine, in, out, count, type, op, root);
        if (r != null) {
            copyOut(out, r, bytes);
        }
    }

    void hostAllToAll(final MemorySegment send, final MemorySegment recv, final long count,
                              final DataType type) {
        if (count == 0) {
            return; // every rank skips it alike: nothing moves
        }
        final long total = bytes(count * size(), type, "allToAll");
        hostArgs(send, recv, total, total);
        final RegisteredBuffer out = output(recv, total, RECV);
        final RegisteredBuffer in = overlap(send, total, recv, total) || !send.isNative() ? stagedCopy(send, total, SEND)
            : registered(send);
        Collectives.allToAll(engine, in, out, count, type);
        copyOut(out, recv, total);
    }

    void p2p(final Comm.Recorded s, final Comm.Recorded r) {
        final int sendSlot = 3;
        final int recvSlot = 4;
        final long sb = s == null ? 0 : s.count() * s.type().size();
        final long rb = r == null ? 0 : r.count() * r.type().size();
        final RegisteredBuffer sendBuf = s == null ? null : p2pBuffer(s.buf(), sb, sendSlot, true);
        final RegisteredBuffer recvBuf = r == null ? null : p2pBuffer(r.buf(), rb, recvSlot, false);
        final DataType t = s != null ? s.type() : r.type();
        final DeviceReducer dr = engine.deviceReducer();
        if (sendBuf != null && dr != null && sendBuf.dev() != null && !sendBuf.direct()) {
            dr.bounceUp(sendBuf, sb);
        }
        engine.exchange(s == null ? -1 : s.sendTo(), sendBuf == null ? recvBuf : sendBuf, 0, sb,
            r == null ? -1 : r.recvFrom(), recvBuf == null ? sendBuf : recvBuf, 0, rb, null, t);
        if (recvBuf != null) {
            if (r.buf() instanceof MemorySegment m) {
                copyOut(recvBuf, m, rb);
            } else if (dr != null && !recvBuf.direct()) {
                dr.bounceDown(recvBuf, rb);
            }
        }
    }

    RegisteredBuffer p2pBuffer(final Object buf, final long bytes, final int slot, final boolean in) {
        if (buf instanceof MemorySegment m) {
            return in ? input(m, bytes, slot) : output(m, bytes, slot);
        }
        return device((DeviceBuffer) buf);
    }

    RegisteredBuffer device(final DeviceBuffer d) {
        Objects.requireNonNull(d, "device buffer");
        final GpuDevice g = gpu();
        if (g == null) {
            throw new IllegalArgumentException("a device buffer on a communicator without a GPU: open it with "
                + "CommConfig.gpu(...)");
        }
        RegisteredBuffer b = devRegs.get(d);
        if (b == null) {
            final Arena a = Arena.ofShared();
            try {
                b = engine.register(a.allocate(Math.max(1, d.size()), 4096), d);
            } catch (final RuntimeException e) {
                a.close();
                throw e;
            }
            devRegs.put(d, b);
            hostHalves.put(d, a);
        }
        return b;
    }

    private final Map<DeviceBuffer, Arena> hostHalves = new IdentityHashMap<>();

    RegisteredBuffer deviceScratch(final long bytes) {
        final GpuDevice g = gpu();
        if (!devScratch.isEmpty() && devScratch.get(0).size() >= bytes) {
            return device(devScratch.get(0));
        }
        if (!devScratch.isEmpty()) {
            final DeviceBuffer old = devScratch.remove(0);
            engine.deregister(devRegs.remove(old));
            hostHalves.remove(old).close();
            g.free(old);
        }
        final DeviceBuffer d = g.alloc((Math.max(1, bytes) + 4095) / 4096 * 4096);
        devScratch.add(d);
        return device(d);
    }

    static void holds(final DeviceBuffer d, final long bytes, final String what) {
        Objects.requireNonNull(d, what);
        if (d.size() < bytes) {
            throw new IllegalArgumentException(what + " holds " + d.size() + " bytes, the call needs " + bytes);
        }
    }

    interface GpuBody {
        void run(RegisteredBuffer in, RegisteredBuffer out);
    }

    /**
     * Runs a collective on device buffers: without GDR the input goes up into its host half first and the output
     * comes down after; with GDR the NIC and the reduction kernels work in device memory.
     */
    void gpuCall(final DeviceBuffer send, final long sendBytes, final DeviceBuffer recv,
                         final long recvBytes, final GpuBody body) {
        final RegisteredBuffer in = device(send);
        final RegisteredBuffer out = recv == send ? in : device(recv);
        final DeviceReducer dr = engine.deviceReducer();
        if (!in.direct()) {
            dr.bounceUp(in, sendBytes);
        }
        body.run(in, out);
        if (!out.direct()) {
            dr.bounceDown(out, recvBytes);
        }
    }

    static void distinct(final DeviceBuffer a, final DeviceBuffer b, final String what) {
        if (a == b) {
            throw new IllegalArgumentException(what + " on device buffers needs different send and receive buffers");
        }
    }
}
