/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Ranks started by a real single-node Slurm that the test sets up: a generated {@code slurm.conf} (auth/none, this
 * host as controller and only node, ports of its own), {@code slurmctld} and {@code slurmd} started here and stopped
 * after. {@code srun -n 2 --mpi=pmix} (world from PMIx) and {@code srun -n 2 --mpi=none} with
 * {@code GDRKIT_MASTER_ADDR}/{@code GDRKIT_MASTER_PORT} (world from Slurm's variables) each all-reduce with 0 wrong.
 * Skips, saying why, without Slurm's daemons (Debian: slurmctld, slurmd, slurm-client), without root, or when the
 * daemons do not come up.
 */
class SlurmTest {
    private static Path dir;
    private static Path conf;
    private static final List<Long> DAEMONS = new ArrayList<>();

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static String run(final long seconds, final List<String> cmd) throws Exception {
        final ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("SLURM_CONF", conf.toString());
        final Process p = pb.start();
        final String out = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException(cmd + ": no exit within " + seconds + " s: " + out);
        }
        return out;
    }

    @BeforeAll
    static void cluster() throws Exception {
        for (final String d : List.of("/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/srun", "/usr/bin/sinfo")) {
            assumeTrue(Files.isExecutable(Path.of(d)), d + " not installed (Debian: apt-get install slurmctld slurmd "
                + "slurm-client)");
        }
        assumeTrue("root".equals(System.getProperty("user.name")), "slurmd runs jobs as their user: needs root here");
        final String host = new String(new ProcessBuilder("hostname", "-s").start().getInputStream().readAllBytes())
            .trim();
        dir = Files.createTempDirectory("gdrkit-slurm");
        for (final String sub : List.of("state", "spool", "log")) {
            Files.createDirectories(dir.resolve(sub));
        }
        conf = dir.resolve("slurm.conf");
        Files.writeString(conf, String.join("\n",
            "ClusterName=gdrkit" + ProcessHandle.current().pid(),
            "SlurmctldHost=" + host + "(127.0.0.1)",
            "AuthType=auth/none",
            "CredType=cred/none",
            "SlurmUser=root",
            "SlurmdUser=root",
            "SlurmctldPort=" + freePort(),
            "SlurmdPort=" + freePort(),
            "StateSaveLocation=" + dir.resolve("state"),
            "SlurmdSpoolDir=" + dir.resolve("spool"),
            "SlurmctldPidFile=" + dir.resolve("slurmctld.pid"),
            "SlurmdPidFile=" + dir.resolve("slurmd.pid"),
            "SlurmctldLogFile=" + dir.resolve("log/slurmctld.log"),
            "SlurmdLogFile=" + dir.resolve("log/slurmd.log"),
            "ProctrackType=proctrack/pgid",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/builtin",
            "MpiDefault=none",
            "ReturnToService=2",
            "JobCompType=jobcomp/none",
            "NodeName=" + host + " NodeAddr=127.0.0.1 CPUs=" + Runtime.getRuntime().availableProcessors()
                + " RealMemory=1000 State=UNKNOWN",
            "PartitionName=gdrkit Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8", ""));
        run(30, List.of("/usr/sbin/slurmctld", "-f", conf.toString()));
        run(30, List.of("/usr/sbin/slurmd", "-f", conf.toString()));
        for (final String pid : List.of("slurmctld.pid", "slurmd.pid")) {
            for (int i = 0; i < 50 && Files.notExists(dir.resolve(pid)); i++) {
                Thread.sleep(100);
            }
            if (Files.exists(dir.resolve(pid))) {
                DAEMONS.add(Long.parseLong(Files.readString(dir.resolve(pid)).trim()));
            }
        }
        String state = "";
        for (int i = 0; i < 100 && !state.contains("idle"); i++) {
            state = run(10, List.of("/usr/bin/sinfo", "-h", "-o", "%t"));
            Thread.sleep(100);
        }
        assumeTrue(state.contains("idle"), "the single-node Slurm did not come up (sinfo: " + state.trim() + "; logs in "
            + dir.resolve("log") + ")");
    }

    @AfterAll
    static void stop() throws Exception {
        for (final long pid : DAEMONS) {
            ProcessHandle.of(pid).ifPresent(h -> {
                h.destroy();
                try {
                    h.onExit().get(10, TimeUnit.SECONDS);
                } catch (final Exception e) {
                    h.destroyForcibly();
                }
            });
        }
        if (dir != null) {
            try (var walk = Files.walk(dir)) {
                walk.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }

    private static String srun(final Path out, final List<String> srunArgs, final String fabric) throws Exception {
        final List<String> cmd = new ArrayList<>(List.of("/usr/bin/srun", "-n", "2", "--overcommit"));
        cmd.addAll(srunArgs);
        cmd.addAll(List.of("/usr/bin/env", Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-cp", System.getProperty("java.class.path"),
            CommFromEnvironmentTest.EnvRank.class.getName(), fabric));
        final ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
            .redirectOutput(out.resolve("srun.log").toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("GDRKIT_") || k.startsWith("PMIX_")
            || k.startsWith("OMPI_") || (k.startsWith("SLURM_") && !k.equals("SLURM_CONF"))
            || List.of("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT").contains(k));
        pb.environment().put("SLURM_CONF", conf.toString());
        pb.environment().put("GDRKIT_TEST_OUT", out.toString());
        final Process p = pb.start();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "srun did not end");
        final String log = Files.readString(out.resolve("srun.log"));
        assertEquals(0, p.exitValue(), log);
        return log;
    }

    @Test
    void srunWithPmixGivesTheWorldAndTheRanksAllReduceWithNothingWrong(@TempDir final Path out) throws Exception {
        assumeTrue(run(30, List.of("/usr/bin/srun", "--mpi=list")).contains("pmix"), "this Slurm has no PMIx plugin");
        final String log = srun(out, List.of("--mpi=pmix"), "SHM");
        for (int r = 0; r < 2; r++) {
            assertEquals("size=2 wrong=0 source=pmix", Files.readString(out.resolve("rank" + r)).trim(), log);
        }
    }

    @Test
    void srunWithoutPmixUsesSlurmsVariablesAndTheAddressGiven(@TempDir final Path out) throws Exception {
        final String log = srun(out, List.of("--mpi=none", "--export=ALL,GDRKIT_MASTER_ADDR=127.0.0.1,"
            + "GDRKIT_MASTER_PORT=" + freePort() + ",GDRKIT_TOKEN=slurm-test-token"), "TCP");
        for (int r = 0; r < 2; r++) {
            assertEquals("size=2 wrong=0 source=slurm", Files.readString(out.resolve("rank" + r)).trim(), log);
        }
    }
}
