/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static io.gdrkit.comm.ThreadRanks.shmRunFiles;
import io.gdrkit.core.config.SettingsReader;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The victim of {@link ShmCollTruncationAttackTest}, in a child JVM: two ranks loop allreduce over the shm path
 * while a third thread, playing a same-user process that opened rank 1's shared file before it was unlinked,
 * truncates it (to the size given) or overwrites its round, header and done words with garbage (size -1). Prints
 * each rank's outcome, the files the run left in /dev/shm, then DONE.
 */
public final class ShmCollTruncationProbe {
    private ShmCollTruncationProbe() {
    }

    public static void main(final String[] args) throws Exception {
        final long size = Long.parseLong(args[0]);
        // "ring": NCCL_ALGO=ring keeps allreduce on the NIC, and a small allgather takes the direct round, whose
        // slots are still these files; otherwise allreduce through the shm path
        final boolean ring = args.length > 1 && args[1].equals("ring");
        final Set<String> before = shmRunFiles();
        final FileChannel[] victim = new FileChannel[1];
        ShmDirect.beforeUnlink = f -> {
            if (f.getFileName().toString().equals("rank-1")) {
                try {
                    victim[0] = FileChannel.open(f, StandardOpenOption.READ, StandardOpenOption.WRITE);
                } catch (final IOException e) {
                    throw new IllegalStateException(e);
                }
            }
        };
        final CountDownLatch running = new CountDownLatch(1);
        final CountDownLatch attacked = new CountDownLatch(1);
        final Thread attacker = Thread.ofPlatform().start(() -> {
            try {
                if (!running.await(60, TimeUnit.SECONDS)) {
                    return;
                }
                if (size >= 0) {
                    victim[0].truncate(size);
                } else {
                    // garbage over every slot's round, header and length words and the done word, again and again
                    // (the ranks may write their own words back in between), seeded
                    final SplittableRandom rnd = new SplittableRandom(35);
                    final long bytes = victim[0].size();
                    try (Arena a = Arena.ofConfined()) {
                        final MemorySegment m = victim[0].map(FileChannel.MapMode.READ_WRITE, 0, bytes, a);
                        final long stride = (bytes - 128) / ShmDirect.DEPTH;
                        for (int k = 0; k < 20_000; k++) {
                            m.set(ValueLayout.JAVA_LONG, 64, rnd.nextLong());
                            for (int s = 0; s < ShmDirect.DEPTH; s++) {
                                final long at = 128 + s * stride;
                                m.set(ValueLayout.JAVA_LONG, at, rnd.nextLong());
                                m.set(ValueLayout.JAVA_LONG, at + 8, rnd.nextLong());
                                m.set(ValueLayout.JAVA_INT, at + 16, rnd.nextInt());
                            }
                            if (k % 100 == 0) {
                                Thread.yield();
                            }
                        }
                    }
                }
                attacked.countDown();
            } catch (final IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        final SettingsReader none = SettingsReader.ofEnv(Map.of());
        final Throwable[] err = ThreadRanks.run(2, CollWorld.TransportKind.IB,
            r -> new CollContext().channels(1).timeout(Duration.ofSeconds(5)).settings(none)
                .algo(ring ? CollContext.Algo.RING : CollContext.Algo.AUTO), none,
            Duration.ofSeconds(40), (rank, c, a) -> {
                final RegisteredBuffer s = c.register(a.allocate(1 << 20, 64));
                final RegisteredBuffer g = c.register(a.allocate(1 << 17, 64));
                final CollTuning.Choice ch = ring ? c.choose(CollOp.ALLGATHER, 8000) : c.choose(CollOp.ALLREDUCE, 4000);
                if (!ch.path().equals("shm") || ring && ch.kind() != CollTuning.NET_DIRECT) {
                    throw new IllegalStateException("not the path under test: " + ch);
                }
                // until the attack ends the run (or, bounded, until it is over and the ranks still ran)
                for (long i = 0; i < 2_000_000; i++) {
                    if (ring) {
                        Collectives.allGather(c, s, g, 1000, DataType.INT32);
                    } else {
                        // a small one (direct) and one above the direct limit (reduce-scatter + allgather, the
                        // reduction split over the reduce threads)
                        Collectives.allReduce(c, s, s, i % 2 == 0 ? 1000 : 200_000, DataType.INT32, RedOp.SUM);
                    }
                    if (i == 50 && rank == 0) {
                        running.countDown();
                    }
                    if (attacked.getCount() == 0 && i % 1000 == 999) {
                        // the words may all have been written back by then: the run went on, correct and named
                        throw new IllegalStateException("still running after the attack");
                    }
                }
            });
        running.countDown();
        attacker.join(60_000);
        for (int r = 0; r < 2; r++) {
            System.out.println("RESULT rank " + r + " " + err[r]);
        }
        final Set<String> after = shmRunFiles();
        after.removeAll(before);
        System.out.println("LEFT " + after);
        if (victim[0] != null) {
            victim[0].close();
        }
        System.out.println("DONE");
    }
}
