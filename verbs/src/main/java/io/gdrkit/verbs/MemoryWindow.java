/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/**
 * A memory window (ibv_mw, from {@link ProtectionDomain#allocMw(int)}): remote access to part of an MR under its own
 * rkey, granted by a bind and taken back by an invalidation, without re-registering. Type 1 is bound with
 * {@link QueuePair#bindMw}; type 2 with an {@link WrOpcode#BIND_MW} work request, is then usable only through the
 * QP that bound it, and is invalidated by {@link WrOpcode#LOCAL_INV} or a peer's {@link WrOpcode#SEND_WITH_INV}.
 */
public interface MemoryWindow extends AutoCloseable {
    int TYPE_1 = 1;
    int TYPE_2 = 2;

    int type();

    /** The current rkey (it changes at every type 1 bind; a type 2 bind sets the one the WR gives). */
    int rkey();

    ProtectionDomain pd();

    /** Deallocates the window (ibv_dealloc_mw); a bound window is invalidated first. */
    @Override
    void close();
}
