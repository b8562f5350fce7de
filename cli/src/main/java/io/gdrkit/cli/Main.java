/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code gdrkit} command line: demo, perf, devices, GPU paths, the control plane tools and the experiments. */
@Command(name = "gdrkit", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
    description = "GPUDirect RDMA for the JVM. The NICs here are software NICs (simulated) on in-JVM, shared-memory or "
        + "TCP fabrics; GPUs are simulated (sim:*) or real through the CUDA driver (cuda:N). Outputs say which.",
    subcommands = {DemoCommand.class, PerfCommand.class, DevicesCommand.class, SocketPeerCommand.class,
        GpuPathCommand.class, TopoCommand.class, DoctorCommand.class, VisibilityCommand.class,
        VisibilitySenderCommand.class, OrderingCommand.class, AbiCheckCommand.class, RegTimingCommand.class,
        ShmemPerfCommand.class, ShmemMoeCommand.class, CollCommand.class, LaunchCommand.class, ModelCommand.class})
public final class Main implements Runnable {
    /** Exit code of a run that failed (a check, a timeout, an error completion); usage errors exit 2. */
    public static final int EXIT_FAILURE = 1;

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
        return execute(new CommandLine(new Main()), args, out, err);
    }

    /**
     * Runs {@code cl} (the CLI, or a test's command) with gdrkit's error handling. An {@link Error} from a command is
     * one line and {@link #EXIT_INTERNAL}, as a failed run is: picocli passes Errors through, and one that left
     * {@code main} would print a stack trace and end only the main thread, so a rank whose main thread died would
     * stay alive (its NIC and bootstrap threads) while its peers waited out their timeouts. {@code main} exits the
     * process with the code.
     */
    static int execute(final CommandLine cl, final String[] args, final PrintWriter out, final PrintWriter err) {
        cl.setOut(out);
        cl.setErr(err);
        cl.setExecutionExceptionHandler((ex, commandLine, parseResult) -> {
            // A failed run is reported as one line: what went wrong, not where in the code.
            commandLine.getErr().println((commandLine == cl ? "gdrkit" : "gdrkit " + commandLine.getCommandName())
                + ": error: " + Errors.describeWithInput(ex));
            commandLine.getErr().flush();
            return EXIT_FAILURE;
        });
        cl.setParameterExceptionHandler((ex, args2) -> {
            // A bad flag gets one line saying what is wrong and where to look, not the whole usage text.
            final CommandLine c = ex.getCommandLine();
            c.getErr().println((c == cl ? "gdrkit" : "gdrkit " + c.getCommandName()) + ": " + ex.getMessage());
            c.getErr().println("Try 'gdrkit " + (c == cl ? "" : c.getCommandName() + " ") + "--help' for the options.");
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
        }
        out.flush();
        err.flush();
        return rc;
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
