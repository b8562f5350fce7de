package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.gdrkit.core.mem.DmaMemory;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/**
 * The NIC's read-ahead of memory that prefers bulk reads (a CUDA GPU behind its copy engine): one read buffer per
 * {@link DmaMemory#readBufferDomain} (a GPU), not one per memory. A collective reads its input and output buffers
 * in turn; each switch used to allocate and pin a new 1 MiB buffer, left to the GC to free.
 */
class DmaReadAheadTest {
    private static final int SIZE = 3 * 4096 + 100;

    /** Bulk-read DMA memory backed by host memory, counting the read buffers asked of it. */
    private static final class BulkDma implements DmaMemory {
        final MemorySegment mem = Arena.ofAuto().allocate(SIZE, 4096);
        final Object domain;
        final int[] buffers;

        BulkDma(final Object domain, final int[] buffers) {
            this.domain = domain;
            this.buffers = buffers;
        }

        @Override
        public long address() {
            return mem.address();
        }

        @Override
        public long byteSize() {
            return mem.byteSize();
        }

        @Override
        public void dmaWrite(final long offset, final MemorySegment src, final long srcOffset, final long length) {
            MemorySegment.copy(src, srcOffset, mem, offset, length);
        }

        @Override
        public void dmaRead(final long offset, final MemorySegment dst, final long dstOffset, final long length) {
            MemorySegment.copy(mem, offset, dst, dstOffset, length);
        }

        @Override
        public void completionFence() {
        }

        @Override
        public boolean prefersBulkReads() {
            return true;
        }

        @Override
        public MemorySegment allocateReadBuffer(final long bytes) {
            buffers[0]++;
            return Arena.ofAuto().allocate(bytes, 4096);
        }

        @Override
        public Object readBufferDomain() {
            return domain;
        }

        @Override
        public long dmaAtomic(final long offset, final boolean compareAndSwap, final long operand, final long swap) {
            throw new UnsupportedOperationException();
        }

        @Override
        public String describe() {
            return "host-backed bulk-read DMA memory (test)";
        }
    }

    @Test
    void memoriesOfOneDomainShareOneReadBufferAndAnotherDomainGetsItsOwn() {
        final int[] gpu0 = {0};
        final int[] gpu1 = {0};
        final Object domain0 = new Object();
        try (Fixture f = new Fixture(new SoftNicContext(), 1 << 20)) {
            final BulkDma in = new BulkDma(domain0, gpu0);
            final BulkDma out = new BulkDma(domain0, gpu0);
            final BulkDma other = new BulkDma(new Object(), gpu1);
            // a window over a memory (a DMA-BUF MR at an offset) serves the memory's domain
            assertSame(domain0, in.window(0, SIZE, in.address()).readBufferDomain());
            final BulkDma[] order = {in, out, in, out, in, other};
            for (int i = 0; i < order.length; i++) {
                final BulkDma m = order[i];
                Fixture.fill(m.mem, 100 + i); // new contents every time: a read-ahead served stale would show
                final MemoryRegion mr = f.a.pd.registerMr(m, AccessFlags.LOCAL_WRITE);
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .wrId(i).sge(mr, 0, SIZE).remote(f.b.mr.address() + (long) i * SIZE, f.b.mr.rkey()));
                f.awaitSuccess(f.a.scq, "WRITE " + i + " from DMA memory");
                Fixture.assertBytes(m.mem, f.b.buf.asSlice((long) i * SIZE, SIZE), "WRITE " + i);
                mr.deregister();
            }
            assertEquals(1, gpu0[0], "one read buffer for every memory of domain 0");
            assertEquals(1, gpu1[0], "another domain gets its own");
        }
    }
}
