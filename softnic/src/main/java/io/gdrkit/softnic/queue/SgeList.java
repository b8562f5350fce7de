/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.queue;

/**
 * The scatter/gather lists of a queue's WQEs, as the NIC reads them: one shape for send and receive queues, so one
 * walk (with one access check) serves gathering, scattering and referencing.
 */
public interface SgeList {
    int numSge(long index);

    long sgeAddr(long index, int sge);

    int sgeLength(long index, int sge);

    int sgeLkey(long index, int sge);
}
