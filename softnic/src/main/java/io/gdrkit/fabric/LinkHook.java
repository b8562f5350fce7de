package io.gdrkit.fabric;

import java.lang.foreign.MemorySegment;

/**
 * Sees every packet a link carries, before it is published. Fault injection and link models attach here.
 * The packet may be inspected (and, by a corrupting hook, changed) in place.
 */
@FunctionalInterface
public interface LinkHook {
    int DELIVER = 0;
    int DROP = 1;

    /** Decides the packet's fate: {@link #DELIVER} or {@link #DROP}. */
    int onPacket(int srcLid, int dstLid, MemorySegment buffer, long offset, int length);

    LinkHook PASS = (s, d, b, o, l) -> DELIVER;
}
