/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
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
import org.junit.jupiter.api.Test;

/**
 * The NIC's read-ahead of memory that prefers bulk reads (a CUDA GPU behind its copy engine): one read buffer per
 * {@link DmaMemory#readBufferDomain} (a GPU), not one per memory. A collective reads its input and output buffers
 * in turn; each switch used to allocate and pin a new 1 MiB buffer, left to the GC to free.
 */
class DmaReadAheadTest {
    private static final int SIZE = 3 * 4096 + 100;

    @Test
    void memoriesOfOneDomainShareOneReadBufferAndAnotherDomainGetsItsOwn() {
        final Object domain0 = new Object();
        try (Fixture f = new Fixture(new SoftNicContext(), 1 << 20)) {
            final HostDma in = bulk(domain0);
            final HostDma out = bulk(domain0);
            final HostDma other = bulk(new Object());
            // a window over a memory (a DMA-BUF MR at an offset) serves the memory's domain
            assertSame(domain0, in.window(0, SIZE, in.address()).readBufferDomain());
            final HostDma[] order = {in, out, in, out, in, other};
            for (int i = 0; i < order.length; i++) {
                final HostDma m = order[i];
                Fixture.fill(m.mem, 100 + i); // new contents every time: a read-ahead served stale would show
                final MemoryRegion mr = f.a.pd.registerMr(m, AccessFlags.LOCAL_WRITE);
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .wrId(i).sge(mr, 0, SIZE).remote(f.b.mr.address() + (long) i * SIZE, f.b.mr.rkey()));
                f.awaitSuccess(f.a.scq, "WRITE " + i + " from DMA memory");
                Fixture.assertBytes(m.mem, f.b.buf.asSlice((long) i * SIZE, SIZE), "WRITE " + i);
                mr.deregister();
            }
            assertEquals(1, in.readBuffers + out.readBuffers, "one read buffer for every memory of domain 0");
            assertEquals(1, other.readBuffers, "another domain gets its own");
        }
    }

    private static HostDma bulk(final Object domain) {
        return new HostDma(Arena.ofAuto().allocate(SIZE, 4096), true, domain);
    }
}
