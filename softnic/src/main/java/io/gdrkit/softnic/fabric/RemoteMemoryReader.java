/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * Reads bytes out of another process's address space: the shared-memory fabric's single-copy path (as UCX's
 * {@code cma} transport), where a packet carries the sender's address instead of its bytes and the receiver pulls
 * them straight into the destination memory. {@link #processVmReadv()} is {@code process_vm_readv(2)} called
 * through FFM; tests inject failing readers to drive the fallback and error paths.
 */
@FunctionalInterface
public interface RemoteMemoryReader {
    /** errno values a read may answer (negated). */
    int EPERM = 1;
    int ESRCH = 3;
    int ENOMEM = 12;
    int EFAULT = 14;
    int EINVAL = 22;
    int ENOSYS = 38;

    /**
     * Copies up to {@code length} bytes at {@code remoteAddress} in process {@code pid} to {@code dst} at
     * {@code dstOffset} (native memory; the range is checked by the caller and again here). Returns the bytes read,
     * which may be fewer (a range that ends in unmapped memory), or a negative errno. Never throws for a bad remote
     * range or a dead process. The kernel writes {@code dst} by address: unless {@link #guardsDestination()}, its
     * arena must not be closed by another thread while the call runs.
     */
    long read(long pid, MemorySegment dst, long dstOffset, long remoteAddress, long length);

    /** The name of a negative answer of {@link #read}: "EFAULT (bad address)" etc. */
    static String describe(final long result) {
        final int e = (int) -result;
        return switch (e) {
            case EPERM -> "EPERM (no ptrace permission over that process: yama ptrace_scope, a container, "
                + "or another user)";
            case ESRCH -> "ESRCH (no such process)";
            case ENOMEM -> "ENOMEM";
            case EFAULT -> "EFAULT (an address outside that process's memory)";
            case EINVAL -> "EINVAL";
            case ENOSYS -> "ENOSYS (process_vm_readv is not available)";
            default -> "errno " + e;
        };
    }

    /**
     * {@code process_vm_readv(2)} through the FFM linker on libc (no JNI), or, where it is missing, a reader
     * answering {@code -ENOSYS}. Each call builds its two iovecs in a buffer of the calling thread's own; one system
     * call per read.
     *
     * <p>The destination's lifetime: the local iovec holds the destination's raw address, which the kernel writes
     * through during the system call. A segment of a shared {@link Arena} closed by another thread meanwhile would
     * be freed under that write (memory malloc may have handed to someone else: silent corruption, not an error).
     * So on Linux x86-64, aarch64 and riscv64 the call goes through {@code syscall(2)}, whose variadic arguments
     * carry the destination segment once more, unused by the kernel: the FFM linker keeps every segment argument's
     * arena alive for the duration of a downcall, so such a {@code close()} fails with IllegalStateException (the
     * arena is in use) instead of freeing the memory. Where that binding is unavailable ({@link #guardsDestination()}
     * false), the arena is only checked alive before the call: the caller must not close it while a read may run
     * (for the soft NIC: deregister the MR first, as RDMA requires anyway).
     */
    static RemoteMemoryReader processVmReadv() {
        return ProcessVm.INSTANCE;
    }

    /**
     * Whether a read holds its destination's arena for the whole system call, so a concurrent {@code close()} of a
     * shared arena cannot free the memory the kernel writes (see {@link #processVmReadv()}). Injected readers
     * answer false.
     */
    default boolean guardsDestination() {
        return false;
    }

    /** The FFM binding. */
    final class ProcessVm implements RemoteMemoryReader {
        static final RemoteMemoryReader INSTANCE = create();
        private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
        private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
        /** local iovec (base, len) then remote iovec (base, len), then the captured errno. */
        private static final ThreadLocal<Iovecs> SCRATCH = ThreadLocal.withInitial(Iovecs::new);
        /** {@code long syscall(long nr, ...)} with the destination as a last, unused argument; null if unavailable. */
        private final MethodHandle guarded;
        private final long number;
        /** {@code process_vm_readv} itself, where the guarded binding is unavailable. */
        private final MethodHandle plain;

        private ProcessVm(final MethodHandle guarded, final long number, final MethodHandle plain) {
            this.guarded = guarded;
            this.number = number;
            this.plain = plain;
        }

        private static RemoteMemoryReader create() {
            final Linker linker = Linker.nativeLinker();
            final Linker.Option errno = Linker.Option.captureCallState("errno");
            final long nr = System.getProperty("os.name", "").equals("Linux")
                ? syscallNumber(System.getProperty("os.arch", "")) : -1;
            final MethodHandle guarded = nr < 0 ? null : linker.defaultLookup().find("syscall").map(sym ->
                linker.downcallHandle(sym, FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                    ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS,
                    ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS), errno,
                    Linker.Option.firstVariadicArg(1))).orElse(null);
            final MethodHandle plain = linker.defaultLookup().find("process_vm_readv").map(sym ->
                linker.downcallHandle(sym, FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT,
                    ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                    ValueLayout.JAVA_LONG), errno)).orElse(null);
            if (guarded == null && plain == null) {
                return (pid, dst, off, remote, len) -> -ENOSYS;
            }
            return new ProcessVm(guarded, nr, plain);
        }

        /** The unguarded binding alone, as used where the guarded one is unavailable (tests run it everywhere). */
        static RemoteMemoryReader unguarded() {
            return INSTANCE instanceof ProcessVm vm && vm.plain != null ? new ProcessVm(null, -1, vm.plain)
                : (pid, dst, off, remote, len) -> -ENOSYS;
        }

        /** {@code __NR_process_vm_readv} of the architectures the guarded binding knows; -1 for the others. */
        static long syscallNumber(final String arch) {
            return switch (arch) {
                case "amd64", "x86_64" -> 310;
                case "aarch64", "riscv64" -> 270; // asm-generic
                default -> -1;
            };
        }

        @Override
        public boolean guardsDestination() {
            return guarded != null;
        }

        @Override
        public long read(final long pid, final MemorySegment dst, final long dstOffset, final long remoteAddress,
                         final long length) {
            if (!dst.isNative() || dstOffset < 0 || length < 0 || dstOffset > dst.byteSize() - length
                || pid <= 0 || pid > Integer.MAX_VALUE) {
                return -EINVAL;
            }
            if (length == 0) {
                return 0;
            }
            final Iovecs v = SCRATCH.get();
            v.local.set(ValueLayout.JAVA_LONG, 0, dst.address() + dstOffset);
            v.local.set(ValueLayout.JAVA_LONG, 8, length);
            v.remote.set(ValueLayout.JAVA_LONG, 0, remoteAddress);
            v.remote.set(ValueLayout.JAVA_LONG, 8, length);
            final long n;
            try {
                if (guarded != null) {
                    // dst rides along as an argument the kernel never reads: the linker checks its arena alive and
                    // accessible, and holds it until the call returns
                    n = (long) guarded.invokeExact(v.state, number, pid, v.local, 1L, v.remote, 1L, 0L, dst);
                } else {
                    // checked alive here only: the system call writes into it by address (see processVmReadv)
                    dst.get(ValueLayout.JAVA_BYTE, dstOffset);
                    n = (long) plain.invokeExact(v.state, (int) pid, v.local, 1L, v.remote, 1L, 0L);
                }
            } catch (final IllegalStateException | WrongThreadException e) {
                return -EINVAL; // the destination's arena is closed or confined elsewhere: nothing written
            } catch (final Throwable t) {
                throw new IllegalStateException("process_vm_readv downcall failed: " + t, t);
            }
            return n >= 0 ? n : -(int) ERRNO.get(v.state, 0L);
        }

        /** One thread's iovecs and errno slot, made once: nothing is allocated per read. */
        private static final class Iovecs {
            final MemorySegment local;
            final MemorySegment remote;
            final MemorySegment state;

            Iovecs() {
                final MemorySegment s = Arena.ofAuto().allocate(32 + CALL_STATE.byteSize(), 16);
                local = s.asSlice(0, 16);
                remote = s.asSlice(16, 16);
                state = s.asSlice(32, CALL_STATE.byteSize());
            }
        }
    }
}
