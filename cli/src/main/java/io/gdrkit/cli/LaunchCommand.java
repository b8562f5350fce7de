/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.comm.bootstrap.UniqueId;
import io.gdrkit.comm.launch.Launcher;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code gdrkit launch -n N -- command}: starts N rank processes with rank, size and the root in their env. */
@Command(name = "launch", mixinStandardHelpOptions = true,
    description = {"Start N rank processes of one run, like mpirun: each gets GDRKIT_ID (root host:port/run id), "
        + "GDRKIT_RANK, GDRKIT_NRANKS, GDRKIT_LOCAL_RANK (and GDRKIT_TOKEN if set) in its environment.",
        "Ranks on another host join with GDRKIT_ROOT_ID=ID in the environment and --join --first-rank K --nranks "
            + "TOTAL (the id is never taken on the command line, where every local user can read it). When one "
            + "rank fails, the others "
            + "end with a named remote error; whatever still runs after --grace-ms is killed. Exit code: the first "
            + "failing rank's.",
        "--hosts a:2,b:2 --ssh 'ssh -o BatchMode=yes' --bind ADDR starts the ranks on other hosts through ssh; "
            + "--bind is where the root listens, which other hosts' ranks must reach."})
public final class LaunchCommand implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = {"-n", "--np"}, required = true, description = "Ranks to start on this host (with --hosts: "
        + "on each host without a :K).")
    int n;

    @Option(names = "--hosts", paramLabel = "H[:K],...", description = "Start the ranks on these hosts through "
        + "--ssh instead of here, K (default -n) on each, in order: rank numbers follow the list. The root still "
        + "runs here: give --bind an address the hosts reach. Each rank's environment (GDRKIT_ID with the run id, "
        + "GDRKIT_TOKEN) goes over ssh's stdin, never on a command line.")
    String hosts;

    @Option(names = "--ssh", defaultValue = "ssh -o BatchMode=yes", paramLabel = "CMD", description = "The remote "
        + "shell command for --hosts, split at spaces (default '${DEFAULT-VALUE}'); it gets the host, then one "
        + "argument with the remote command.")
    String ssh;

    @Option(names = "--nranks", description = "Ranks of the whole run (default: -n).")
    Integer total;

    @Option(names = "--first-rank", defaultValue = "0", description = "Rank of the first process started here.")
    int firstRank;

    /** Where a joining launcher finds the id of the run it joins. */
    static final String ENV_ROOT_ID = "GDRKIT_ROOT_ID";

    @Option(names = "--join", description = "Join the run of another launcher instead of starting a root: its "
        + "printed id (host:port/runid) comes from the GDRKIT_ROOT_ID environment variable, never from the command "
        + "line.")
    boolean join;

    @Option(names = "--root", paramLabel = "ID", hidden = true,
        description = "Refused: the run id on a command line is readable by every local user (ps).")
    String root;

    /** --bind: the address the root listens on (another host's ranks need a routable one); --token: the run's. */
    @CommandLine.Mixin
    Mixins.Endpoint endpoint;

    @Option(names = "--port", defaultValue = "0", description = "Root port (default: any free one).")
    int port;

    @Option(names = "--grace-ms", defaultValue = "30000",
        description = "How long the other ranks may take to end after one failed (default ${DEFAULT-VALUE}).")
    long graceMs;

    @Option(names = "--join-timeout-ms", defaultValue = "60000",
        description = "How long the root waits for every rank to join (default ${DEFAULT-VALUE}).")
    long joinMs;

    @CommandLine.Mixin
    Mixins.SetValues set;

    @Parameters(paramLabel = "COMMAND", arity = "1..*", description = "The rank command, after --.")
    List<String> command;

    @Override
    public Integer call() throws Exception {
        final PrintWriter err = spec.commandLine().getErr();
        final Launcher.Spec s;
        // every value checked before a rank starts: a bad one is a usage error
        try {
            if (n < 1 || port < 0 || port > 65535 || graceMs < 0 || joinMs < 1) {
                throw new IllegalArgumentException(n < 1 ? "-n must be >= 1, not " + n : port < 0 || port > 65535
                    ? "--port " + port + " outside 0..65535" : "--grace-ms and --join-timeout-ms must be positive");
            }
            final List<Launcher.Host> on = hosts == null ? List.of() : Launcher.Host.parseList(hosts, n);
            final int here = on.isEmpty() ? n : on.stream().mapToInt(Launcher.Host::ranks).sum();
            final List<String> sshCmd = List.of(ssh.trim().split("\\s+"));
            final String bind = endpoint.bind;
            endpoint.checkExposure(spec.commandLine());
            final InetAddress addr;
            try {
                addr = InetAddress.getByName(bind);
            } catch (final java.net.UnknownHostException e) {
                throw new IllegalArgumentException("--bind " + bind + ": not an address");
            }
            if (root != null) {
                throw new IllegalArgumentException("--root ID puts the run id where every local user can read it "
                    + "(ps): export " + ENV_ROOT_ID + "=ID and give --join");
            }
            UniqueId joining = null;
            if (join) {
                final String id = System.getenv(ENV_ROOT_ID);
                if (id == null || id.isBlank()) {
                    throw new IllegalArgumentException("--join needs " + ENV_ROOT_ID + " (the id the first launcher "
                        + "printed) in the environment");
                }
                try {
                    joining = UniqueId.parse(id.trim());
                } catch (final IllegalArgumentException e) {
                    throw new IllegalArgumentException(ENV_ROOT_ID + ": " + e.getMessage());
                }
            }
            s = new Launcher.Spec(here, firstRank, total == null ? here : total, joining,
                new InetSocketAddress(addr, port),
                command, endpoint.token != null ? endpoint.token : System.getenv("GDRKIT_TOKEN"), Duration.ofMillis(graceMs), Duration.ofMillis(joinMs),
                rankEnvironment(), on, on.isEmpty() ? List.of() : sshCmd);
        } catch (final IllegalArgumentException e) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        final int n = s.localRanks();
        final Launcher.Result r = Launcher.run(s, new Launcher.Listener() {
            @Override
            public void started(final UniqueId id) {
                err.println("# gdrkit launch: run " + id.encode() + ", ranks " + firstRank + ".." + (firstRank + n - 1)
                    + " of " + s.nranks());
                err.flush();
            }

            @Override
            public void rankFailed(final int rank, final int exitCode) {
                err.println("# gdrkit launch: rank " + rank + " exited with " + exitCode + "; the others get "
                    + graceMs + " ms to end");
                err.flush();
            }
        });
        if (r.exitCode() != 0) {
            err.println("gdrkit launch: error: " + (r.firstFailure() != null ? r.firstFailure() : "the run failed")
                + (r.rootFailure() != null ? "; root: " + r.rootFailure() : ""));
            for (final Launcher.RankExit e : r.ranks()) {
                err.println("#   rank " + e.rank() + ": exit " + e.exitCode() + (e.killed() ? " (killed)" : ""));
            }
            err.flush();
        }
        return r.exitCode();
    }

    /**
     * This command line's --set values for the ranks: NCCL_* and GDRKIT_* as environment variables, property names
     * as -D flags in GDRKIT_JAVA_OPTS (which ./gdrkit passes to java), after any the caller set.
     */
    private static Map<String, String> rankEnvironment() {
        final Map<String, String> env = new java.util.TreeMap<>(
            io.gdrkit.core.config.SettingsReader.processOverrideEnvironment());
        final List<String> flags = io.gdrkit.core.config.SettingsReader.processOverrideFlags();
        if (!flags.isEmpty()) {
            final String before = System.getenv("GDRKIT_JAVA_OPTS");
            env.put("GDRKIT_JAVA_OPTS", (before == null || before.isBlank() ? "" : before + " ")
                + String.join(" ", flags));
        }
        return env;
    }
}
