/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A child JVM running a test main with this JVM's class path, optionally under a command prefix (such as
 * {@code ip netns exec ns}). Its output lines are read by a daemon thread so that every wait for a line has a
 * timeout; closing kills it.
 */
final class ChildJvm implements AutoCloseable {
    private static final String EOF = "\u0000EOF";
    final Process process;
    private final PrintStream in;
    private final LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();

    ChildJvm(final List<String> prefix, final Class<?> main, final String... args) throws IOException {
        final List<String> cmd = new ArrayList<>(prefix);
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("-Xmx512m");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(main.getName());
        cmd.addAll(List.of(args));
        process = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        in = new PrintStream(process.getOutputStream(), true);
        final Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream()))) {
                String line;
                while ((line = r.readLine()) != null) {
                    lines.add(line);
                }
            } catch (final IOException ignored) {
                // the child died: EOF below
            }
            lines.add(EOF);
        }, "child-stdout-" + main.getSimpleName());
        reader.setDaemon(true);
        reader.start();
    }

    /** The child's next output line; fails if none comes within {@code seconds} or the child ends. */
    String expect(final String prefix, final int seconds) throws InterruptedException {
        final String line = lines.poll(seconds, TimeUnit.SECONDS);
        if (line == null) {
            throw new AssertionError("child printed no line within " + seconds + " s (waiting for " + prefix + ")");
        }
        if (line.equals(EOF) || !line.startsWith(prefix)) {
            throw new AssertionError("waiting for '" + prefix + "' the child said: "
                + (line.equals(EOF) ? "<end of output>" : line));
        }
        return line;
    }

    /** The next output line if there is one, else null; never waits. */
    String poll() {
        return lines.poll();
    }

    PrintStream input() {
        return in;
    }

    void send(final String line) {
        in.println(line);
    }

    /** Kills the child at once and waits (bounded) for it to be gone. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            throw new AssertionError("child " + process.pid() + " still alive 10 s after SIGKILL");
        }
    }

    int awaitExit(final int seconds) throws InterruptedException {
        if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
            throw new AssertionError("child did not exit within " + seconds + " s");
        }
        return process.exitValue();
    }

    @Override
    public void close() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }
}
