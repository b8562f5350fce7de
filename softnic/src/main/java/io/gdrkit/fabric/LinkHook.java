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

    LinkHook PASS = (s, d, b, o, l) -> DELIVER;
}
