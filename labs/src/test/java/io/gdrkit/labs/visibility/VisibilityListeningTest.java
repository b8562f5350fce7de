/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.visibility;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.auth.Token;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The lab does not print while it waits for senders started by hand: it tells its caller through a listener (the cli
 * prints), once, before it waits, and not at all when it starts the senders itself.
 */
class VisibilityListeningTest {
    private static int freePort() throws java.io.IOException {
        try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
            return probe.getLocalPort();
        }
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aListeningReceiverTellsItsCallerThePortAndSenderCountOnceBeforeItWaits() throws Exception {
        final int port = freePort();
        final List<VisibilityLab.Listening> heard = new CopyOnWriteArrayList<>();
        final Thread[] sender = new Thread[1];
        final java.util.concurrent.atomic.AtomicReference<Throwable> senderError = new java.util.concurrent.atomic
            .AtomicReference<>();
        // the sender is started only when the lab says it listens: had the lab not said so before its accept loop,
        // it would wait for a sender that never comes and fail on its accept timeout
        try (VisibilityLab lab = VisibilityLab.start(VisibilityLab.Transport.TCP, 1, port, true, Token.NONE, l -> {
            heard.add(l);
            sender[0] = Thread.ofPlatform().daemon(true).start(() -> {
                try {
                    SenderHost.serve(new InetSocketAddress("127.0.0.1", l.port()), VisibilityLab::openFabric);
                } catch (final RuntimeException e) {
                    senderError.set(e);
                }
            });
        })) {
            assertEquals(List.of(new VisibilityLab.Listening(port, 1)), heard);
            // one round, so that the sender is connected and served before BYE (not racing close to its fabric)
            final VisResult r = lab.run(new VisConfig().flag(VisConfig.Flag.IMM).readback(VisConfig.Readback.ON)
                .wrSplit(16).size(16384).rounds(1).senders(1).seed(7).conclude(), null);
            assertTrue(r.passed(), r::toString);
        }
        sender[0].join(10_000);
        assertFalse(sender[0].isAlive(), "the sender ends on BYE");
        assertNull(senderError.get(), () -> "the sender failed: " + senderError.get());
        assertEquals(1, heard.size(), "said once");
    }

    @Test
    void aReceiverThatStartsItsSendersSaysNothing() {
        final List<VisibilityLab.Listening> heard = new CopyOnWriteArrayList<>();
        try (VisibilityLab lab = VisibilityLab.start(VisibilityLab.Transport.JVM, 1, 0, false, Token.NONE,
            heard::add)) {
            assertEquals(List.of(), heard);
        }
    }

    @Test
    void theListenerIsRequired() {
        final NullPointerException e = assertThrows(NullPointerException.class,
            () -> VisibilityLab.start(VisibilityLab.Transport.JVM, 1, 0, false, Token.NONE, null));
        assertEquals("onListening", e.getMessage());
    }
}
