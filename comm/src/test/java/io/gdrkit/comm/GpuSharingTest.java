/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.gpu.MpsState;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Who shares a rank's GPU: the record every rank sends (its exact bytes), the checks a peer's record gets (each
 * malformed one a named error saying what is wrong), and the verdict from a set of records: rank processes on one
 * GPU of one host with MPS on, off or unknown, threads of one process, other hosts, other GPUs, simulated GPUs.
 */
class GpuSharingTest {
    private static final String HOST_A = "boot:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
    private static final String HOST_B = "boot:11111111-2222-3333-4444-555555555555";
    private static final String BUS = "00000000:06:00.0";
    private static final String P1 = "00000000000000a1";
    private static final String P2 = "00000000000000b2";

    private static byte[] rec(final String host, final String bus, final long pid, final String proc,
                              final MpsState mps) {
        return GpuSharing.record(host, bus, pid, proc, mps);
    }

    private static byte[] ascii(final String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    @Test
    void theRecordIsSixSpaceSeparatedPrintableFields() {
        assertArrayEquals(ascii("gpu1 " + HOST_A + " " + BUS + " 4242 " + P1 + " 0"),
            rec(HOST_A, BUS, 4242, P1, MpsState.OFF));
        assertArrayEquals(ascii("gpu1 " + HOST_A + " " + BUS + " 7 " + P1 + " 1"),
            rec(HOST_A, BUS, 7, P1, MpsState.ON));
        assertArrayEquals(ascii("gpu1 " + HOST_A + " " + BUS + " 7 " + P1 + " unknown"),
            rec(HOST_A, BUS, 7, P1, MpsState.UNKNOWN));
        // a simulated GPU has no bus id and no MPS
        assertArrayEquals(ascii("gpu1 " + HOST_A + " - 7 " + P1 + " n/a"),
            rec(HOST_A, null, 7, P1, MpsState.NOT_APPLICABLE));
        final GpuSharing.Entry e = GpuSharing.parse(rec(HOST_A, BUS, 4242, P1, MpsState.OFF), 3);
        assertEquals(new GpuSharing.Entry(HOST_A, BUS, 4242, P1, "0"), e);
    }

    @Test
    void thisHostHasAnIdentityThatAPeerAccepts() {
        final String host = GpuSharing.hostIdentity();
        assertTrue(host.startsWith("boot:") || host.startsWith("name:") || host.equals("unknown"), host);
        assertEquals(host, GpuSharing.parse(rec(host, BUS, 1, P1, MpsState.OFF), 0).host());
    }

    @ParameterizedTest(name = "[{index}] {1}")
    @CsvSource(delimiter = '|', quoteCharacter = '"', value = {
        "\"\"|its length 0 is outside 1..256",
        "gpu1 h 0000:06:00.0 1 00000000000000a1|it has 5 space-separated fields, not 6",
        "gpu1 h 0000:06:00.0 1 00000000000000a1 0 extra|it has 7 space-separated fields, not 6",
        "gpu1 h  0000:06:00.0 1 00000000000000a1 0|it has 7 space-separated fields, not 6",
        "gpu2 h 0000:06:00.0 1 00000000000000a1 0|it does not start with 'gpu1'",
        "gpu1 h 0000:06:00.0/x 1 00000000000000a1 0|its GPU bus id is neither '-' nor 1..32 hex digits",
        "gpu1 h 000000000000000000000000000000000 1 00000000000000a1 0|its GPU bus id is neither",
        "gpu1 h 0000:06:00.0 0 00000000000000a1 0|its process id is not 1..10 decimal digits above 0",
        "gpu1 h 0000:06:00.0 -5 00000000000000a1 0|its process id is not 1..10 decimal digits above 0",
        "gpu1 h 0000:06:00.0 12345678901 00000000000000a1 0|its process id is not 1..10 decimal digits",
        "gpu1 h 0000:06:00.0 1 00000000000000A1 0|its process identity is not 16 lowercase hex digits",
        "gpu1 h 0000:06:00.0 1 a1 0|its process identity is not 16 lowercase hex digits",
        "gpu1 h 0000:06:00.0 1 00000000000000a1 yes|its MPS value is not 1, 0, unknown or n/a",
        "gpu1 h 0000:06:00.0 1 00000000000000a1 n/a|bus id '-' (no CUDA GPU) goes with MPS n/a and only with it",
        "gpu1 h - 1 00000000000000a1 1|bus id '-' (no CUDA GPU) goes with MPS n/a and only with it",
    })
    void aMalformedRecordIsANamedErrorSayingWhatIsWrong(final String record, final String why) {
        final CollException e = assertThrows(CollException.class, () -> GpuSharing.parse(ascii(record), 1));
        assertTrue(e.getMessage().startsWith(GpuSharing.BAD_RECORD + ": rank 1 sent a GPU placement record"),
            e.getMessage());
        assertTrue(e.getMessage().contains(why), e.getMessage());
    }

    @Test
    void bytesThatAreNotPrintableOrTooManyAreNamedAndNotEchoedRaw() {
        final byte[] ctl = ascii("gpu1 h 0000:06:00.0 1 00000000000000a1 0");
        ctl[5] = 0x1b;
        CollException e = assertThrows(CollException.class, () -> GpuSharing.parse(ctl, 2));
        assertTrue(e.getMessage().contains("BAD_GPU_PLACEMENT_RECORD: rank 2 sent") && e.getMessage().contains(
            "a byte that is not printable ASCII (0x1b)") && e.getMessage().contains("'gpu1 \\x1b 0000"),
            e.getMessage());
        final byte[] high = ascii("gpu1 h 0000:06:00.0 1 00000000000000a1 0");
        high[6] = (byte) 0xc3;
        e = assertThrows(CollException.class, () -> GpuSharing.parse(high, 2));
        assertTrue(e.getMessage().contains("(0xc3)"), e.getMessage());
        final byte[] big = new byte[GpuSharing.MAX_RECORD + 1];
        java.util.Arrays.fill(big, (byte) 'a');
        e = assertThrows(CollException.class, () -> GpuSharing.parse(big, 0));
        assertTrue(e.getMessage().contains("its length 257 is outside 1..256") && e.getMessage().contains("... 257 "
            + "bytes"), e.getMessage());
        final String longHost = "h".repeat(97);
        e = assertThrows(CollException.class, () -> GpuSharing.parse(ascii("gpu1 " + longHost
            + " 0000:06:00.0 1 00000000000000a1 0"), 0));
        assertTrue(e.getMessage().contains("its host identity has 97 characters, not 1..96"), e.getMessage());
        e = assertThrows(CollException.class, () -> GpuSharing.parse(null, 4));
        assertTrue(e.getMessage().contains("rank 4 sent") && e.getMessage().contains("(none)"), e.getMessage());
    }

    @Test
    void aBadRecordFromAnyRankFailsTheSharingOfEveryRank() {
        final byte[][] all = {rec(HOST_A, BUS, 10, P1, MpsState.OFF), ascii("gpu1 x")};
        for (int r = 0; r < 2; r++) {
            final int rank = r;
            final CollException e = assertThrows(CollException.class, () -> GpuSharing.of(rank, all, "ev"));
            assertTrue(e.getMessage().startsWith("BAD_GPU_PLACEMENT_RECORD: rank 1 sent"), e.getMessage());
        }
    }

    @Test
    void twoRankProcessesOnOneGpuWithoutMpsTimeSliceAndGetANote() {
        final byte[][] all = {rec(HOST_A, BUS, 10, P1, MpsState.OFF), rec(HOST_A, BUS, 11, P2, MpsState.OFF)};
        final GpuSharing s = GpuSharing.of(0, all, "attr 133 = 0");
        assertEquals(GpuSharing.Verdict.TIME_SLICED, s.verdict());
        assertEquals(2, s.sharedBy());
        assertEquals(MpsState.OFF, s.mps());
        assertEquals(List.of(0, 1), s.ranks());
        assertEquals(List.of(10L, 11L), s.pids());
        assertEquals(List.of("0", "0"), s.mpsByRank());
        assertEquals(BUS, s.busId());
        assertEquals("2 rank processes (ranks 0,1, pids 10,11) share GPU " + BUS + " without MPS (attribute 133 "
            + "rank 0: 0, rank 1: 0): the GPU time-slices between their contexts", s.summary());
        assertTrue(s.note().startsWith("2 rank processes share GPU " + BUS + " (ranks 0,1) and MPS is off "
            + "(attribute 133 rank 0: 0, rank 1: 0)"), s.note());
        assertTrue(s.note().contains("Start MPS (nvidia-cuda-mps-control -d)") && s.note().contains(
            "--gpu cuda:rank"), s.note());
        assertTrue(s.evidence().startsWith("attr 133 = 0; host identified by kernel boot id"), s.evidence());
        // one process without MPS is enough for time-slicing
        final GpuSharing mixed = GpuSharing.of(1, new byte[][] {rec(HOST_A, BUS, 10, P1, MpsState.ON),
            rec(HOST_A, BUS, 11, P2, MpsState.OFF)}, "ev");
        assertEquals(GpuSharing.Verdict.TIME_SLICED, mixed.verdict());
        assertEquals(MpsState.OFF, mixed.mps());
    }

    @Test
    void withMpsOnEveryProcessThereIsNoNote() {
        final GpuSharing s = GpuSharing.of(1, new byte[][] {rec(HOST_A, BUS, 10, P1, MpsState.ON),
            rec(HOST_A, BUS, 11, P2, MpsState.ON)}, "ev");
        assertEquals(GpuSharing.Verdict.MPS, s.verdict());
        assertEquals(2, s.sharedBy());
        assertEquals(MpsState.ON, s.mps());
        assertNull(s.note());
        assertEquals("2 rank processes (ranks 0,1, pids 10,11) share GPU " + BUS + " through MPS (attribute 133 "
            + "rank 0: 1, rank 1: 1)", s.summary());
    }

    @Test
    void anUnansweredAttributeIsUnknownNeverAGuess() {
        final GpuSharing s = GpuSharing.of(0, new byte[][] {rec(HOST_A, BUS, 10, P1, MpsState.UNKNOWN),
            rec(HOST_A, BUS, 11, P2, MpsState.ON)}, "cuDeviceGetAttribute(133) = CUDA_ERROR_INVALID_VALUE");
        assertEquals(GpuSharing.Verdict.UNKNOWN, s.verdict());
        assertEquals(MpsState.UNKNOWN, s.mps());
        assertTrue(s.note().contains("MPS is not known to be on (attribute 133 rank 0: unknown, rank 1: 1)"),
            s.note());
        assertTrue(s.summary().contains("CUDA_ERROR_INVALID_VALUE"), s.summary());
    }

    @Test
    void threadsOfOneProcessShareOneContextAndAreNotTimeSliced() {
        final GpuSharing s = GpuSharing.of(1, new byte[][] {rec(HOST_A, BUS, 10, P1, MpsState.OFF),
            rec(HOST_A, BUS, 10, P1, MpsState.OFF), rec(HOST_A, BUS, 10, P1, MpsState.OFF)}, "ev");
        assertEquals(GpuSharing.Verdict.ONE_CONTEXT, s.verdict());
        assertEquals(1, s.sharedBy());
        assertEquals(List.of(0, 1, 2), s.ranks());
        assertNull(s.note());
        assertTrue(s.summary().startsWith("ranks 0,1,2 are threads of one process (pid 10) on GPU " + BUS
            + ": they share its one CUDA context, so the GPU does not time-slice between them"), s.summary());
    }

    @Test
    void otherHostsOtherGpusAndRepeatedPidsAreToldApart() {
        // the same bus id on another host is another GPU
        GpuSharing s = GpuSharing.of(0, new byte[][] {rec(HOST_A, BUS, 10, P1, MpsState.OFF),
            rec(HOST_B, BUS, 11, P2, MpsState.OFF)}, "ev");
        assertEquals(GpuSharing.Verdict.ALONE, s.verdict());
        assertEquals(1, s.sharedBy());
        assertNull(s.note());
        assertEquals("rank 0 alone on GPU " + BUS + " (pid 10); MPS (attribute 133) 0", s.summary());
        // another GPU of this host (cuda:rank)
        s = GpuSharing.of(1, new byte[][] {rec(HOST_A, BUS, 10, P1, MpsState.OFF),
            rec(HOST_A, "00000000:07:00.0", 11, P2, MpsState.OFF)}, "ev");
        assertEquals(GpuSharing.Verdict.ALONE, s.verdict());
        assertEquals(List.of(1), s.ranks());
        // containers with their own PID namespaces: one pid, two processes
        s = GpuSharing.of(0, new byte[][] {rec(HOST_A, BUS, 1, P1, MpsState.OFF),
            rec(HOST_A, BUS, 1, P2, MpsState.OFF)}, "ev");
        assertEquals(GpuSharing.Verdict.TIME_SLICED, s.verdict());
        assertEquals(2, s.sharedBy());
        // 4 ranks, 2 processes of 2 threads each (not built by gdrkit today, counted right anyway)
        s = GpuSharing.of(3, new byte[][] {rec(HOST_A, BUS, 10, P1, MpsState.ON), rec(HOST_A, BUS, 10, P1,
            MpsState.ON), rec(HOST_A, BUS, 11, P2, MpsState.ON), rec(HOST_A, BUS, 11, P2, MpsState.ON)}, "ev");
        assertEquals(GpuSharing.Verdict.MPS, s.verdict());
        assertEquals(2, s.sharedBy());
        assertEquals(List.of(0, 1, 2, 3), s.ranks());
    }

    @Test
    void aSimulatedGpuIsNotApplicable() {
        final GpuSharing s = GpuSharing.of(0, new byte[][] {rec(HOST_A, null, 10, P1, MpsState.NOT_APPLICABLE),
            rec(HOST_A, null, 10, P1, MpsState.NOT_APPLICABLE)}, "simulated GPU: no CUDA context");
        assertEquals(GpuSharing.Verdict.NOT_APPLICABLE, s.verdict());
        assertNull(s.sharedBy());
        assertNull(s.busId());
        assertEquals(MpsState.NOT_APPLICABLE, s.mps());
        assertNull(s.note());
        assertTrue(s.summary().startsWith("not applicable: simulated GPU: each rank opens its own"), s.summary());
    }

    /** Through CollWorld: ranks on simulated GPUs exchange records and say not applicable; host memory has none. */
    @Test
    void aCollectiveOnSimulatedGpusCarriesNotApplicable() {
        final SettingsReader none = SettingsReader.ofEnv(Map.of());
        final CollRun.Config cfg = new CollRun.Config(CollOp.ALLREDUCE, DataType.FLOAT32, RedOp.SUM, 0, 64, 64, 2,
            0, 1, 0, true, "ib", "injvm", true);
        final List<CollResult> gpu = CollLocal.run(2, CollWorld.TransportKind.IB, cfg, new CollContext()
            .settings(none), none, Duration.ofSeconds(30), r -> { }, (r, c) -> { }, "sim:h200");
        assertEquals(1, gpu.size());
        final GpuSharing s = gpu.get(0).placement().sharing();
        assertEquals(GpuSharing.Verdict.NOT_APPLICABLE, s.verdict(), String.valueOf(s));
        assertTrue(s.evidence().contains("MPS (attribute 133) does not apply"), s.evidence());
        final List<CollResult> host = CollLocal.run(2, CollWorld.TransportKind.IB, cfg, new CollContext()
            .settings(none), none, Duration.ofSeconds(30), r -> { });
        assertNull(host.get(0).placement().sharing());
    }
}
