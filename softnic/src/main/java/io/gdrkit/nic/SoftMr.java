package io.gdrkit.nic;

import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import java.lang.foreign.MemorySegment;

/** A memory region of the software NIC. lkey == rkey: 24-bit table index, 8-bit generation. */
final class SoftMr implements MemoryRegion {
    final SoftPd pd;
    final MemorySegment segment;
    final long address;
    final long length;
    final int access;
    final int key;
    volatile boolean valid = true;

    SoftMr(final SoftPd pd, final MemorySegment segment, final int access, final int key) {
        this.pd = pd;
        this.segment = segment;
        this.address = segment.address();
        this.length = segment.byteSize();
        this.access = access;
        this.key = key;
    }

    /** Is [va, va+len) inside this MR? Overflow-safe. */
    boolean contains(final long va, final long len) {
        return len >= 0 && va >= address && va - address <= length - len;
    }

    @Override
    public ProtectionDomain pd() {
        return pd;
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    @Override
    public long address() {
        return address;
    }

    @Override
    public long length() {
        return length;
    }

    @Override
    public int lkey() {
        return key;
    }

    @Override
    public int rkey() {
        return key;
    }

    @Override
    public int access() {
        return access;
    }

    @Override
    public void deregister() {
        pd.device().deregisterMr(this);
    }

    @Override
    public String toString() {
        return "MR{addr=0x" + Long.toHexString(address) + ", len=" + length + ", key=0x" + Integer.toHexString(key)
            + '}';
    }
}
