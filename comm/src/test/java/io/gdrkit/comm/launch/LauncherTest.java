/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.bootstrap.BootstrapContext;
import io.gdrkit.comm.bootstrap.UniqueId;
import io.gdrkit.comm.CollContext;
import io.gdrkit.comm.CollOp;
import io.gdrkit.comm.CollResult;
import io.gdrkit.comm.CollRun;
import io.gdrkit.comm.CollWorld;
import io.gdrkit.comm.Fabric;
import io.gdrkit.comm.WorldContext;
import io.gdrkit.comm.DataType;
import io.gdrkit.comm.RedOp;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Ranks as real processes: collectives across them, and a rank that dies. */
class LauncherTest {
    private static List<String> java(final Class<?> main, final String... args) {
        final List<String> cmd = new java.util.ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin",
            "java").toString(), "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-cp",
            System.getProperty("java.class.path"), main.getName()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    private static Launcher.Spec spec(final int n, final List<String> cmd, final Path out) {
        return new Launcher.Spec(n, 0, n, null, new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), cmd,
            "t0ken-for-tests", Duration.ofSeconds(30), Duration.ofSeconds(60), Map.of("GDRKIT_TEST_OUT", out.toString()));
    }

    private static final Launcher.Listener QUIET = new Launcher.Listener() {
        @Override
        public void started(final UniqueId id) {
        }

        @Override
        public void rankFailed(final int rank, final int exitCode) {
        }
    };

    @ParameterizedTest(name = "{0} over {1}, {2} ranks")
    @CsvSource({"ib,shm,3", "ib,tcp,2", "socket,tcp,2"})
    void allreduceAcrossProcessesIsRightOnEveryRank(final String transport, final String fabric, final int n,
                                                    @TempDir final Path dir) throws Exception {
        final Launcher.Result r = Launcher.run(spec(n, java(CollRank.class, transport, fabric), dir), QUIET);
        assertEquals(0, r.exitCode(), r.toString());
        assertNull(r.rootFailure());
        for (int rank = 0; rank < n; rank++) {
            assertEquals("rows=5 wrong=0", Files.readString(dir.resolve("rank" + rank)).trim(), "rank " + rank);
        }
    }

    @Test
    void aRankThatDiesEndsTheOthersWithANamedRemoteErrorAndNoOrphans(@TempDir final Path dir) throws Exception {
        final Launcher.Result r = Launcher.run(spec(3, java(DyingRank.class), dir), QUIET);
        assertNotEquals(0, r.exitCode());
        assertEquals("rank 1 exited with 7", r.firstFailure());
        assertTrue(r.rootFailure().contains("rank 1 closed its bootstrap connection"), r.rootFailure());
        for (final int rank : new int[] {0, 2}) {
            final String said = Files.readString(dir.resolve("rank" + rank));
            assertTrue(said.startsWith("REMOTE"), said);
            assertTrue(said.contains("rank 1 closed its bootstrap connection"), said);
        }
        for (final Launcher.RankExit e : r.ranks()) {
            assertTrue(!e.killed(), "rank " + e.rank() + " had to be killed: it did not end on its own");
        }
    }

    @Test
    void theTokenReachesTheRanksAndTheRootChecksIt(@TempDir final Path dir) throws Exception {
        final Launcher.Result r = Launcher.run(spec(2, java(TokenRank.class), dir), QUIET);
        assertEquals(0, r.exitCode(), r.toString());
        assertEquals("joined with a token of 15 characters", Files.readString(dir.resolve("rank1")).trim());
    }

    /**
     * A stand-in for ssh: records its argument vector (what ps would show on this host), drops the host name and
     * runs the remote command here, as ssh's remote shell would.
     */
    private static List<String> fakeSsh(final Path dir) throws Exception {
        final Path script = dir.resolve("fake-ssh");
        Files.writeString(script, """
            #!/bin/sh
            log="$1"; shift
            printf 'host=%s argv=%s\\n' "$1" "$*" >> "$log"
            shift
            exec sh -c "$1"
            """);
        script.toFile().setExecutable(true);
        return List.of(script.toString(), dir.resolve("ssh.log").toString());
    }

    private static Launcher.Spec remote(final String hosts, final List<String> cmd, final Path out,
                                        final List<String> ssh) {
        final List<Launcher.Host> h = Launcher.Host.parseList(hosts, 1);
        final int n = h.stream().mapToInt(Launcher.Host::ranks).sum();
        return new Launcher.Spec(n, 0, n, null, new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), cmd,
            "t0ken-for-tests", Duration.ofSeconds(30), Duration.ofSeconds(60), Map.of("GDRKIT_TEST_OUT",
            out.toString()), h, ssh);
    }

    @Test
    void ranksOnOtherHostsStartThroughSshWithTheirEnvironmentOnStdinNotTheCommandLine(@TempDir final Path dir)
        throws Exception {
        final UniqueId[] id = new UniqueId[1];
        final Launcher.Result r = Launcher.run(remote("node-a:2,node-b", java(TokenRank.class), dir, fakeSsh(dir)),
            new Launcher.Listener() {
                @Override
                public void started(final UniqueId u) {
                    id[0] = u;
                }

                @Override
                public void rankFailed(final int rank, final int exitCode) {
                }
            });
        assertEquals(0, r.exitCode(), r.toString());
        for (int rank = 0; rank < 3; rank++) {
            assertEquals("joined with a token of 15 characters", Files.readString(dir.resolve("rank" + rank)).trim());
        }
        final List<String> ssh = Files.readAllLines(dir.resolve("ssh.log"));
        assertEquals(3, ssh.size(), ssh.toString());
        assertEquals(2, ssh.stream().filter(l -> l.startsWith("host=node-a ")).count());
        assertEquals(1, ssh.stream().filter(l -> l.startsWith("host=node-b ")).count());
        for (final String l : ssh) {
            assertFalse(l.contains("t0ken-for-tests"), "the token is on ssh's command line: " + l);
            assertFalse(l.contains(id[0].encode().substring(id[0].encode().indexOf('/') + 1)), "the run id is on ssh's command line: " + l);
            assertFalse(l.contains("GDRKIT_"), "environment on ssh's command line: " + l);
            assertTrue(l.contains("gdrkit-rank '" + Path.of(System.getProperty("java.home"), "bin", "java") + "'"), l);
        }
    }

    @Test
    void aRemoteRankThatDiesEndsTheOthersWithANamedRemoteErrorAndNoOrphans(@TempDir final Path dir)
        throws Exception {
        final Launcher.Result r = Launcher.run(remote("node-a:2,node-b", java(DyingRank.class), dir, fakeSsh(dir)),
            QUIET);
        assertNotEquals(0, r.exitCode());
        // the dying rank's own exit is recorded; which exit the launcher saw first is a race between rank 1's halt
        // and the others' named error after it (through ssh, on a loaded machine, either may arrive first)
        assertTrue(r.ranks().contains(new Launcher.RankExit(1, 7, false)), r.toString());
        assertTrue(r.firstFailure().equals("rank 1 on node-a exited with 7")
            || r.firstFailure().matches("rank [02] on node-[ab] exited with 3"), r.firstFailure());
        assertTrue(r.rootFailure().contains("rank 1 closed its bootstrap connection"), r.rootFailure());
        for (final int rank : new int[] {0, 2}) {
            final String said = Files.readString(dir.resolve("rank" + rank));
            assertTrue(said.startsWith("REMOTE"), said);
            assertTrue(said.contains("rank 1 closed its bootstrap connection"), said);
        }
        for (int rank = 0; rank < 3; rank++) {
            final long pid = Long.parseLong(Files.readString(dir.resolve("pid" + rank)).trim());
            assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "rank " + rank
                + " (pid " + pid + ") outlived the run");
        }
    }

    @Test
    void badHostsAndAnUnreachableHostAreNamed(@TempDir final Path dir) throws Exception {
        assertEquals("host '-oProxyCommand=x' is not a host name", org.junit.jupiter.api.Assertions.assertThrows(
            IllegalArgumentException.class, () -> Launcher.Host.parseList("-oProxyCommand=x", 1)).getMessage());
        assertEquals(List.of(new Launcher.Host("a", 3), new Launcher.Host("[::1]", 2), new Launcher.Host("b", 1)),
            Launcher.Host.parseList("a:3,[::1]:2,b", 1));
        // an ssh that cannot reach the host exits 255, as ssh does
        final Path noRoute = dir.resolve("no-route-ssh");
        Files.writeString(noRoute, "#!/bin/sh\necho \"ssh: connect to host $1: No route to host\" >&2\nexit 255\n");
        noRoute.toFile().setExecutable(true);
        final Launcher.Result r = Launcher.run(remote("node-a", java(TokenRank.class), dir,
            List.of(noRoute.toString())), QUIET);
        assertEquals(255, r.exitCode());
        assertTrue(r.firstFailure().startsWith("rank 0 on node-a exited with 255 (ssh's own failure code"),
            r.firstFailure());
        // the same ssh, certainly gone before the environment is written: 256 KiB of it cannot fit the pipe, so
        // the write fails with a broken pipe; the exit status still names what happened (it was a crash of the
        // launcher under load, when ssh happened to exit first)
        final Launcher.Spec s = remote("node-a", java(TokenRank.class), dir, List.of(noRoute.toString()));
        final Launcher.Spec big = new Launcher.Spec(s.localRanks(), s.firstRank(), s.nranks(), s.root(), s.bind(),
            s.command(), s.token(), s.grace(), s.joinTimeout(), Map.of("GDRKIT_TEST_OUT", dir.toString(),
            "GDRKIT_TEST_PAD", "x".repeat(256 * 1024)), s.hosts(), s.ssh());
        final Launcher.Result r2 = Launcher.run(big, QUIET);
        assertEquals(255, r2.exitCode());
        assertTrue(r2.firstFailure().startsWith("rank 0 on node-a exited with 255 (ssh's own failure code"),
            r2.firstFailure());
    }

    /** A rank: allreduce over 4 sizes on the given transport and fabric; writes rows and wrong count. */
    public static final class CollRank {
        public static void main(final String[] args) throws Exception {
            final Bootstrap b = Bootstrap.init(BootstrapContext.fromProcess());
            final SettingsReader none = SettingsReader.ofEnv(Map.of());
            try (CollWorld w = CollWorld.open(b, new WorldContext().fabric(Fabric.parse(args[1]))
                .transport(CollWorld.TransportKind.parse(args[0]))
                .coll(new CollContext().buffSize(8192).steps(4).channels(2).settings(none)).settings(none)
                .timeout(Duration.ofSeconds(30)))) {
                final List<CollResult> rows = CollRun.run(w.communicator(), new CollRun.Config(CollOp.ALLREDUCE,
                    DataType.FLOAT32, RedOp.SUM, 0, 8, 200_000, 8, 0, 2, 1, true, args[0], args[1], true), x -> { });
                long wrong = 0;
                for (final CollResult r : rows) {
                    wrong += r.wrong() + r.inPlaceWrong();
                }
                Files.writeString(Path.of(System.getenv("GDRKIT_TEST_OUT"), "rank" + b.rank()), "rows="
                    + rows.size() + " wrong=" + wrong);
            }
            b.close();
        }
    }

    /** Rank 1 dies after joining; the others wait in a barrier and write what they were told. */
    public static final class DyingRank {
        public static void main(final String[] args) throws Exception {
            final Bootstrap b = Bootstrap.init(BootstrapContext.fromProcess());
            Files.writeString(Path.of(System.getenv("GDRKIT_TEST_OUT"), "pid" + b.rank()),
                Long.toString(ProcessHandle.current().pid()));
            b.allGather(new byte[] {(byte) b.rank()});
            if (b.rank() == 1) {
                Runtime.getRuntime().halt(7);
            }
            try {
                b.barrier();
                Files.writeString(Path.of(System.getenv("GDRKIT_TEST_OUT"), "rank" + b.rank()), "no error");
                System.exit(0);
            } catch (final io.gdrkit.comm.bootstrap.BootstrapException e) {
                Files.writeString(Path.of(System.getenv("GDRKIT_TEST_OUT"), "rank" + b.rank()), e.reason() + " "
                    + e.getMessage());
                System.exit(3);
            }
        }
    }

    /** Joins (the root checks the token) and says how long the token it got was. */
    public static final class TokenRank {
        public static void main(final String[] args) throws Exception {
            final BootstrapContext c = BootstrapContext.fromProcess();
            try (Bootstrap b = Bootstrap.init(c)) {
                b.barrier();
                Files.writeString(Path.of(System.getenv("GDRKIT_TEST_OUT"), "rank" + b.rank()),
                    "joined with a token of " + c.token().length() + " characters");
            }
        }
    }
}
