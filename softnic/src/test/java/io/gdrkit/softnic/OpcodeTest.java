/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class OpcodeTest {
    @ParameterizedTest
    @ValueSource(ints = {0, 1, 255, 256, 4095, 4096, 4097, 65536, 1_000_003})
    void writeIsByteExact(final int size) {
        try (Fixture f = new Fixture(new SoftNicContext(), 2 << 20)) {
            final MemorySegment src = f.a.buf.asSlice(0, size);
            Fixture.fill(src, size);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(7)
                .sge(f.a.mr, 0, size).remote(f.b.mr.address() + 64, f.b.mr.rkey()));
            final WorkCompletion wc = f.awaitSuccess(f.a.scq, "WRITE completion");
            assertEquals(7, wc.wrId);
            assertEquals(WcOpcode.RDMA_WRITE, wc.opcode);
            Fixture.assertBytes(src, f.b.buf.asSlice(64, size), "written data");
            assertEquals(0, f.b.buf.get(ValueLayout.JAVA_BYTE, 64 + size), "byte after the write untouched");
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 8, 4096, 10_000, 300_000})
    void readIsByteExact(final int size) {
        try (Fixture f = new Fixture(new SoftNicContext(), 1 << 20)) {
            Fixture.fill(f.b.buf.asSlice(0, size), size + 1);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED).wrId(9)
                .sge(f.a.mr, 0, size).remote(f.b.mr.address(), f.b.mr.rkey()));
            final WorkCompletion wc = f.awaitSuccess(f.a.scq, "READ completion");
            assertEquals(WcOpcode.RDMA_READ, wc.opcode);
            assertEquals(size, wc.byteLen);
            Fixture.assertBytes(f.b.buf.asSlice(0, size), f.a.buf.asSlice(0, size), "read data");
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 100, 4096, 70_000})
    void sendWithImmConsumesReceive(final int size) {
        try (Fixture f = new Fixture(new SoftNicContext(), 1 << 20)) {
            f.b.qp.postRecv(new RecvWorkRequest().wrId(33).sge(f.b.mr, 0, 100_000));
            Fixture.fill(f.a.buf.asSlice(0, size), 5);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND_WITH_IMM).flags(SendFlags.SIGNALED)
                .imm(0xCAFEBABE).sge(f.a.mr, 0, size));
            f.awaitSuccess(f.a.scq, "SEND completion");
            final WorkCompletion rwc = f.awaitSuccess(f.b.rcq, "RECV completion");
            assertEquals(WcOpcode.RECV, rwc.opcode);
            assertEquals(33, rwc.wrId);
            assertEquals(size, rwc.byteLen);
            assertTrue(rwc.hasImm());
            assertEquals(0xCAFEBABE, rwc.immData);
            Fixture.assertBytes(f.a.buf.asSlice(0, size), f.b.buf.asSlice(0, size), "sent data");
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 5000})
    void writeWithImm(final int size) {
        try (Fixture f = new Fixture(new SoftNicContext(), 1 << 20)) {
            f.b.qp.postRecv(new RecvWorkRequest().wrId(44).sge(f.b.mr, 0, 0));
            Fixture.fill(f.a.buf.asSlice(0, size), 6);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
                .imm(1234).sge(f.a.mr, 0, size).remote(f.b.mr.address() + 8192, f.b.mr.rkey()));
            f.awaitSuccess(f.a.scq, "WRITE_WITH_IMM completion");
            final WorkCompletion rwc = f.awaitSuccess(f.b.rcq, "RECV_RDMA_WITH_IMM");
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, rwc.opcode);
            assertEquals(1234, rwc.immData);
            assertEquals(size, rwc.byteLen);
            assertEquals(44, rwc.wrId);
            Fixture.assertBytes(f.a.buf.asSlice(0, size), f.b.buf.asSlice(8192, size), "data");
        }
    }

    @org.junit.jupiter.api.Test
    void atomics() {
        try (Fixture f = new Fixture(new SoftNicContext(), 1 << 16)) {
            f.b.buf.set(ValueLayout.JAVA_LONG, 128, 40);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, 8).remote(f.b.mr.address() + 128, f.b.mr.rkey()).atomic(2, 0));
            assertEquals(WcOpcode.FETCH_ADD, f.awaitSuccess(f.a.scq, "FETCH_ADD").opcode);
            assertEquals(40, f.a.buf.get(ValueLayout.JAVA_LONG, 0));
            assertEquals(42, f.b.buf.get(ValueLayout.JAVA_LONG, 128));
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.ATOMIC_CMP_AND_SWP).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 8, 8).remote(f.b.mr.address() + 128, f.b.mr.rkey()).atomic(42, 99));
            assertEquals(WcOpcode.COMP_SWAP, f.awaitSuccess(f.a.scq, "CMP_AND_SWP").opcode);
            assertEquals(42, f.a.buf.get(ValueLayout.JAVA_LONG, 8));
            assertEquals(99, f.b.buf.get(ValueLayout.JAVA_LONG, 128));
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.ATOMIC_CMP_AND_SWP).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 16, 8).remote(f.b.mr.address() + 128, f.b.mr.rkey()).atomic(1, 5));
            f.awaitSuccess(f.a.scq, "failed compare");
            assertEquals(99, f.a.buf.get(ValueLayout.JAVA_LONG, 16));
            assertEquals(99, f.b.buf.get(ValueLayout.JAVA_LONG, 128), "compare mismatch leaves memory alone");
        }
    }
}
