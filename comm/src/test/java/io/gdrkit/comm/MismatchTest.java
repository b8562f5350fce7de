/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.bootstrap.BootstrapContext;
import io.gdrkit.comm.bootstrap.BootstrapRoot;
import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Ranks that call different collectives (or the same one with other sizes) end with a named error, no hang. */
class MismatchTest {
    /** With shared-memory direct rounds both calls are direct rounds (a header mismatch); without, the ring's. */
    @ParameterizedTest(name = "{0} shm={1}")
    @CsvSource({"IB,true", "IB,false", "SOCKET,true", "SOCKET,false"})
    void differentOperationsAcrossRanksAreANamedErrorWithinTheTimeout(final CollWorld.TransportKind kind,
                                                                      final boolean shm)
        throws Exception {
        final SettingsReader none = SettingsReader.ofEnv(Map.of());
        final AtomicReferenceArray<Throwable> errors = new AtomicReferenceArray<>(2);
        try (BootstrapRoot root = BootstrapRoot.startLoopback(2, Duration.ofSeconds(30));
             io.gdrkit.softnic.SoftNicDriver driver = io.gdrkit.softnic.SoftNicDriver.launch(CollWorld.nicContext())) {
            final Thread[] t = new Thread[2];
            for (int r = 0; r < 2; r++) {
                final int rank = r;
                t[r] = Thread.ofPlatform().start(() -> {
                    try (Bootstrap b = Bootstrap.init(new BootstrapContext().id(root.id()).rank(rank).nranks(2)
                            .timeout(Duration.ofSeconds(30)));
                         CollWorld w = CollWorld.open(b, new WorldContext().fabric(Fabric.INJVM).sharedDriver(driver)
                             .transport(kind).coll(new CollContext().buffSize(4096)
                             .steps(2).channels(1).shmDirect(shm).timeout(Duration.ofSeconds(5)).settings(none))
                             .settings(none).timeout(Duration.ofSeconds(5)));
                         Arena a = Arena.ofShared()) {
                        final Communicator c = w.communicator();
                        final RegisteredBuffer s = c.register(a.allocate(8192, 64));
                        final RegisteredBuffer d = c.register(a.allocate(8192, 64));
                        if (rank == 0) {
                            Collectives.allReduce(c, s, d, 2000, DataType.FLOAT32, RedOp.SUM);
                        } else {
                            Collectives.broadcast(c, s, d, 10, DataType.FLOAT32, 1);
                        }
                    } catch (final Throwable e) {
                        errors.set(rank, e);
                    }
                });
            }
            for (final Thread th : t) {
                th.join(120_000);
                assertTrue(!th.isAlive(), "a rank hung");
            }
        }
        final Throwable e0 = errors.get(0);
        assertNotNull(e0, "rank 0 ran allreduce against a broadcast without an error");
        assertTrue(e0 instanceof CollException, String.valueOf(e0));
        assertTrue(e0.getMessage().contains("rank 0"), e0.getMessage());
    }
}
