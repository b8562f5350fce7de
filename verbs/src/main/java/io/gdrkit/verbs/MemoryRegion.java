package io.gdrkit.verbs;

import java.lang.foreign.MemorySegment;

/** A registered memory region (ibv_mr). */
public interface MemoryRegion extends AutoCloseable {
    ProtectionDomain pd();

    MemorySegment segment();

    /** Virtual address of the first byte. */
    long address();

    long length();

    int lkey();

    int rkey();

    int access();

    /** Deregisters (ibv_dereg_mr): afterwards the keys are refused, by local and remote access alike. */
    void deregister();

    @Override
    default void close() {
        deregister();
    }
}
