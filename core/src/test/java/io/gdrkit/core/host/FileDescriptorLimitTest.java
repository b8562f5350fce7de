/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;

class FileDescriptorLimitTest {
    @Test
    void exhaustionFailsEveryOpenWithEmfileAndCloseRestoresTheLimit() throws IOException {
        assumeTrue(FileDescriptorLimit.unavailable().isEmpty(), () -> FileDescriptorLimit.unavailable().get());
        final long before = FileDescriptorLimit.soft();
        try (FileDescriptorLimit.Exhaustion x = FileDescriptorLimit.exhaust()) {
            assertTrue(x.error().contains("Too many open files"), x::error);
            final IOException e = assertThrows(IOException.class,
                () -> FileChannel.open(Path.of("/dev/null"), StandardOpenOption.READ).close());
            assertTrue(e.getMessage().contains("Too many open files"), e::getMessage);
        }
        assertEquals(before, FileDescriptorLimit.soft());
        FileChannel.open(Path.of("/dev/null"), StandardOpenOption.READ).close();
    }
}
