package io.gdrkit.verbs;

/** A scatter/gather element (ibv_sge): a virtual address inside a registered MR, a length and the MR's lkey. */
public final class Sge {
    public long addr;
    public int length;
    public int lkey;

    public Sge set(final long addr, final int length, final int lkey) {
        this.addr = addr;
        this.length = length;
        this.lkey = lkey;
        return this;
    }

    /** Points at {@code length} bytes at {@code offset} inside {@code mr}. */
    public Sge set(final MemoryRegion mr, final long offset, final int length) {
        return set(mr.address() + offset, length, mr.lkey());
    }

    @Override
    public String toString() {
        return "Sge{addr=0x" + Long.toHexString(addr) + ", length=" + length + ", lkey=0x" + Integer.toHexString(lkey) + '}';
    }
}
