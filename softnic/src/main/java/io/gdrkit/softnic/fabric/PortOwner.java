package io.gdrkit.softnic.fabric;

/**
 * The NIC attached to a {@link FabricPort}, as the other ports of an in-JVM fabric may find it by LID to resolve a
 * reference packet against the sender's memory. The fabric stores owners without knowing their class (it sits below
 * the NIC, with no dependency on it); {@link FabricPort#peer(int, Class)} hands them back typed.
 */
public interface PortOwner {
    /**
     * For a port that sends a reference packet's bytes itself (TCP, where the receiver cannot read this process):
     * the memory segment of the owner's MR with {@code lkey} when it holds {@code length} bytes at {@code va} and may
     * be referenced; the bytes lie at {@code va - segment.address()}. Null otherwise (no such MR any more, a window,
     * device memory, out of range, or memory no longer alive). Called on the owner's duty thread.
     */
    default java.lang.foreign.MemorySegment referencedMemory(final int lkey, final long va, final int length) {
        return null;
    }
}
