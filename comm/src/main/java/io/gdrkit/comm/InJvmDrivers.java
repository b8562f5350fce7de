/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.softnic.SoftNicDriver;
import java.util.HashMap;
import java.util.Map;

/**
 * The in-process NIC drivers of {@link Fabric#INJVM} runs: ranks that are threads of one JVM and share a run id
 * share one driver, launched by the first rank that opens and closed when the last one closes.
 */
final class InJvmDrivers {
    private static final Map<Long, Entry> DRIVERS = new HashMap<>();

    private static final class Entry {
        final SoftNicDriver driver;
        int users;

        Entry(final SoftNicDriver driver) {
            this.driver = driver;
        }
    }

    private InJvmDrivers() {
    }

    /** The driver of run {@code runId}, launched if this is its first user. */
    static synchronized SoftNicDriver acquire(final long runId) {
        final Entry e = DRIVERS.computeIfAbsent(runId, k -> new Entry(SoftNicDriver.launch(CollWorld.nicContext())));
        e.users++;
        return e.driver;
    }

    /** One user of run {@code runId} is done; the last one closes the driver. */
    static synchronized void release(final long runId) {
        final Entry e = DRIVERS.get(runId);
        if (e == null) {
            return;
        }
        if (--e.users == 0) {
            DRIVERS.remove(runId);
            e.driver.close();
        }
    }

    /** Runs with a live driver here (tests: none is left behind). */
    static synchronized int live() {
        return DRIVERS.size();
    }
}
