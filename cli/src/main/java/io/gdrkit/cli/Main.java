/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code gdrkit} command line: demo, perf, devices, GPU paths, the control plane tools and the experiments. */
@Command(name = "gdrkit", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
    description = "GPUDirect RDMA for the JVM. The NICs here are software NICs (simulated) on in-JVM, shared-memory or "
        + "TCP fabrics; GPUs are simulated (sim:*) or real through the CUDA driver (cuda:N). Outputs say which.",
    subcommands = {DemoCommand.class, PerfCommand.class, DevicesCommand.class, SocketPeerCommand.class,
        GpuPathCommand.class, TopoCommand.class, DoctorCommand.class, VisibilityCommand.class,
        VisibilitySenderCommand.class, OrderingCommand.class, AbiCheckCommand.class, RegTimingCommand.class,
        ShmemPerfCommand.class, ShmemMoeCommand.class, CollCommand.class, LaunchCommand.class, ModelCommand.class},
    footer = {"", "The ./gdrkit script also takes: ./gdrkit build (build the jar) and ./gdrkit test [MAVEN ARGS] "
        + "(the whole test suite, mvn install, then the examples/ project against the installed artifacts); "
        + "./gdrkit examples (the examples alone).",
        "Every command takes --set NAME=VALUE (repeatable): a setting (NCCL_*, GDRKIT_*, gdrkit.*) for this run "
            + "and the processes it starts.",
        "Exit codes: 0 done; 1 a failed run (a check, a timeout, a peer's error); 2 a bad flag or value; 3 a "
            + "requested GPU or RDMA device is not on this host; 70 an internal error."})
public final class Main implements Runnable {
    /** Exit code of a run that failed (a check, a timeout, an error completion); usage errors exit 2. */
    public static final int EXIT_FAILURE = 1;

    /** Exit code of a bad flag or value: one line (and a hint line) on stderr, before any output or work. */
    public static final int EXIT_USAGE = 2;

    /**
     * Exit code when a GPU or RDMA device the command line asked for (cuda:N, --mem gpu:N, --provider native) is not
     * on this host: one line naming it and what was found, before any output.
     */
    public static final int EXIT_NO_HARDWARE = 3;

    /**
     * Exit code of a run that an {@link Error} ended (out of memory, a stack overflow, classes of two builds mixed on
     * one class path): sysexits' EX_SOFTWARE.
     */
    public static final int EXIT_INTERNAL = 70;

    @picocli.CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    public static void main(final String[] args) {
        final PrintWriter out = new PrintWriter(System.out, true);
        final PrintWriter err = new PrintWriter(System.err, true);
        System.exit(execute(args, out, err));
    }

    /** Runs the CLI with the given streams and returns the exit code (tests call this in-process). */
    public static int execute(final String[] args, final PrintWriter out, final PrintWriter err) {
        return execute(commandLine(), args, out, err);
    }

    /**
     * The CLI's command tree: each command's defaults for the shared options ({@link SharedDefaults}), said in their
     * help as "(default: X)".
     */
    static CommandLine commandLine() {
        final CommandLine cl = new CommandLine(new Main());
        final SharedDefaults defaults = new SharedDefaults();
        cl.setDefaultValueProvider(defaults);
        describeDefaults(cl, defaults);
        return cl;
    }

    private static void describeDefaults(final CommandLine cl, final SharedDefaults defaults) {
        final CommandLine.Model.CommandSpec spec = cl.getCommandSpec();
        for (final CommandLine.Model.OptionSpec o : List.copyOf(spec.options())) {
            final String d = defaults.defaultValue(o);
            if (d != null && o.description().length > 0) {
                final String[] desc = o.description().clone();
                desc[desc.length - 1] = desc[desc.length - 1] + " Default: " + d + ".";
                spec.remove(o);
                spec.addOption(o.toBuilder().description(desc).build());
            }
        }
        cl.getSubcommands().values().forEach(c -> describeDefaults(c, defaults));
    }

    /**
     * Runs {@code cl} (the CLI, or a test's command) with gdrkit's error handling. An {@link Error} from a command is
     * one line and {@link #EXIT_INTERNAL}, as a failed run is: picocli passes Errors through, and one that left
     * {@code main} would print a stack trace and end only the main thread, so a rank whose main thread died would
     * stay alive (its NIC and bootstrap threads) while its peers waited out their timeouts. {@code main} exits the
     * process with the code.
     */
    static int execute(final CommandLine cl, final String[] args, final PrintWriter rawOut,
                       final PrintWriter rawErr) {
        // the progress line on stderr is cleared before any other line, on stdout or stderr
        final TerminalLine line = new TerminalLine(rawErr);
        final PrintWriter out = line.out(rawOut);
        final PrintWriter err = line.err();
        final TerminalLine before = TerminalLine.current();
        TerminalLine.current(line);
        cl.setOut(out);
        cl.setErr(err);
        cl.setExecutionExceptionHandler((ex, commandLine, parseResult) -> {
            // A failed run is reported as one line: what went wrong, not where in the code.
            final boolean absent = ex instanceof HardwareAbsentException
                || ex instanceof io.gdrkit.labs.provider.NoDeviceException;
            commandLine.getErr().println(name(cl, commandLine) + ": error: " + Errors.describeWithInput(ex));
            commandLine.getErr().flush();
            return absent ? EXIT_NO_HARDWARE : EXIT_FAILURE;
        });
        cl.setExecutionStrategy(parseResult -> {
            // --set NAME=VALUE holds for the whole run (and the processes it starts), then is taken back
            final Map<String, String> set = new LinkedHashMap<>();
            for (CommandLine.ParseResult pr = parseResult; pr != null; pr = pr.subcommand()) {
                final List<Map.Entry<String, String>> v = pr.matchedOptionValue("--set", List.of());
                v.forEach(e -> set.put(e.getKey(), e.getValue()));
            }
            final Runnable restore = Settings.apply(set);
            try {
                return new CommandLine.RunLast().execute(parseResult);
            } finally {
                restore.run();
            }
        });
        cl.setParameterExceptionHandler((ex, args2) -> {
            // A bad flag gets one line saying what is wrong and where to look, not the whole usage text.
            final CommandLine c = ex.getCommandLine();
            c.getErr().println(name(cl, c) + ": " + firstLine(ex.getMessage()));
            c.getErr().println("Try '" + name(cl, c) + " --help' for the options.");
            c.getErr().flush();
            return c.getCommandSpec().exitCodeOnInvalidInput();
        });
        int rc;
        try {
            rc = cl.execute(args);
        } catch (final Error e) {
            err.println("gdrkit: error: internal error, the run ends: " + e.getClass().getName()
                + (e.getMessage() != null ? ": " + e.getMessage() : ""));
            rc = EXIT_INTERNAL;
        } finally {
            TerminalLine.current(before);
        }
        out.flush();
        err.flush();
        return rc;
    }

    /** "gdrkit", "gdrkit coll", "gdrkit model crossover". */
    private static String name(final CommandLine root, final CommandLine c) {
        if (c == root) {
            return "gdrkit";
        }
        final String q = c.getCommandSpec().qualifiedName(" ");
        return q.startsWith("gdrkit ") ? q : "gdrkit " + q;
    }

    /** A message's first line: a usage error is one line. */
    private static String firstLine(final String m) {
        if (m == null) {
            return "bad command line";
        }
        final int nl = m.indexOf('\n');
        return (nl < 0 ? m : m.substring(0, nl)).strip();
    }

    /** Version from the jar manifest when packaged. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            final String v = Main.class.getPackage().getImplementationVersion();
            return new String[] {"gdrkit " + (v != null ? v : "0.1.0-SNAPSHOT")
                + " (software NIC, simulated; in-JVM fabric)", "Java " + Runtime.version()};
        }
    }
}
