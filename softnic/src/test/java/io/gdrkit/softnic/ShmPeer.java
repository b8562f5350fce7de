/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.softnic.fabric.ShmFabric;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Path;

/**
 * The other process of {@link ShmFabricTest}: a software NIC with LID 2 on a shared-memory fabric, the passive
 * half of {@link PassiveEcho} (prints its QP, waits for a WRITE_WITH_IMM, checks every byte, writes it back).
 */
public final class ShmPeer {
    private ShmPeer() {
    }

    public static void main(final String[] args) throws Exception {
        final Path dir = Path.of(args[0]);
        final int size = Integer.parseInt(args[1]);
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        // optional: "nocrc" (no link CRC: the cma path may run), then "cma=false" (this process neither sends nor
        // grants cross-process references)
        final boolean crc = args.length < 3 || !args[2].equals("nocrc");
        final boolean cma = args.length < 4 || !args[3].equals("cma=false");
        try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext().shmCma(cma),
            new ShmFabric(dir, 4 << 20, 4, null, crc))) {
            PassiveEcho.run(driver.addDevice("shm-peer", 2), size, "READY", in, System.out);
        } catch (final IllegalStateException e) {
            System.out.println("BAD " + e.getMessage());
            System.out.flush();
            System.exit(3);
        }
    }
}
