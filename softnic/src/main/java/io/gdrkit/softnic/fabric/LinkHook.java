/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import java.lang.foreign.MemorySegment;

/**
 * Sees every packet a link carries, before it is published. Fault injection and link models attach here.
 * The packet may be inspected (and, by a corrupting hook, changed) in place.
 */
@FunctionalInterface
public interface LinkHook {
    int DELIVER = 0;
    int DROP = 1;
    /** Deliver the packet twice. */
    int DUPLICATE = 2;
    /** Hold the packet for {@link #delayNanos()} before delivering it; later packets overtake it. */
    int DELAY = 3;

    /** Decides the packet's fate: {@link #DELIVER}, {@link #DROP}, {@link #DUPLICATE} or {@link #DELAY}. */
    int onPacket(int srcLid, int dstLid, MemorySegment buffer, long offset, int length);

    /** How long the packet just given {@link #DELAY} is held. */
    default long delayNanos() {
        return 0;
    }

    /**
     * Whether packets this hook sees may carry a reference to the sender's memory instead of their payload bytes
     * (the in-JVM single-copy path, see {@code Packet}). A hook answers true only if it never reads or changes
     * payload bytes: it may look at headers, drop, duplicate or delay. A duplicated or late reference is safe,
     * because the responder discards any packet that is not the next expected PSN before touching its payload,
     * and the sender's memory is stable until the WR completes. Default false: the hook sees real bytes.
     */
    default boolean passesReferences() {
        return false;
    }

    /**
     * Whether a packet this hook sees may be a segment-offload record standing for several packets of one message
     * (see {@code Packet}, "extra packets"). Only for a hook that {@link #passesReferences() passes references} and
     * whose verdicts need not fall on single packets: a dropped record is all its packets lost. Default false, so
     * fault injection and test hooks see (and drop, duplicate, delay) one packet at a time.
     */
    default boolean passesBatches() {
        return false;
    }

    /** Delivers everything and looks at nothing. */
    LinkHook PASS = new LinkHook() {
        @Override
        public int onPacket(final int srcLid, final int dstLid, final MemorySegment buffer, final long offset,
                            final int length) {
            return DELIVER;
        }

        @Override
        public boolean passesReferences() {
            return true;
        }

        @Override
        public boolean passesBatches() {
            return true;
        }

        @Override
        public String toString() {
            return "LinkHook.PASS";
        }
    };
}
