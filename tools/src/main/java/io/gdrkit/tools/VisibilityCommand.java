/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.tools;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gdrkit.tools.VisibilityExperiment.Config;
import io.gdrkit.tools.VisibilityExperiment.Consumer;
import io.gdrkit.tools.VisibilityExperiment.Flag;
import io.gdrkit.tools.VisibilityExperiment.Readback;
import io.gdrkit.tools.VisibilityExperiment.Result;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code gdrkit visibility}: is data an RDMA WRITE put into GPU memory visible to the GPU's consumer? One line (or
 * one JSON object) per configuration of the matrix. Sender and receiver run in one process for now.
 */
@Command(name = "visibility", mixinStandardHelpOptions = true,
    description = {"Visibility experiment (D1/D5/D6): RDMA WRITE into GPU memory, readback off/on/flush, verified on "
        + "the device by a launched or a persistent kernel.",
        "Simulated GPU and software NIC (simulated); sender and receiver in ONE process (separate processes: not yet)."})
public final class VisibilityCommand implements Callable<Integer> {
    /** Appended to every result line. */
    static final String SIM = "[simulated GPU, software NIC (simulated), one process]";

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--gpu", split = ",", defaultValue = "sim:v100",
        description = "sim:<v100|h100|h200|all-devices>, a list runs each (default ${DEFAULT-VALUE}).")
    List<String> gpus;

    @Option(names = "--consumer", split = ",", defaultValue = "persistent",
        description = "launch, persistent or a list (default ${DEFAULT-VALUE}).")
    List<String> consumers;

    @Option(names = "--flag", defaultValue = "receiver",
        description = "Who writes the persistent consumer's flag: receiver (implemented); sender-same-qp, "
            + "sender-other-qp, imm (not yet).")
    String flag;

    @Option(names = "--readback", split = ",", defaultValue = "off,on,flush",
        description = "off, on (1-byte loopback RDMA READ), flush (cuFlushGPUDirectRDMAWrites TO_OWNER), a list.")
    List<String> readbacks;

    @Option(names = "--wr-split", split = ",", defaultValue = "1", description = "1, 16, 256 or a list.")
    List<Integer> wrSplits;

    @Option(names = "--size", split = ",", defaultValue = "65536",
        description = "Bytes per round (suffix K or M), a list (max 4M).")
    List<String> sizes;

    @Option(names = "--rounds", defaultValue = "20", description = "Rounds per configuration.")
    int rounds;

    @Option(names = "--seed", defaultValue = "1", description = "Seed of the simulated GPU and the pattern.")
    long seed;

    @Option(names = "--skip-write-round", defaultValue = "0",
        description = "Negative control (D4): the sender skips the write of this round (0 = none).")
    int skipWriteRound;

    @Option(names = "--json", description = "One JSON object per configuration, one per line.")
    boolean json;

    @Override
    public Integer call() {
        final PrintWriter out = spec.commandLine().getOut();
        final List<Config> matrix;
        try {
            matrix = matrix();
        } catch (final IllegalArgumentException e) {
            // a bad or not-yet-supported option is a usage error (exit 2), said in one line before anything runs
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        final ObjectMapper mapper = new ObjectMapper();
        if (!json) {
            out.println("# visibility: simulated GPU, software NIC (simulated), in-JVM fabric; sender and receiver in"
                + " one process (separate processes are not implemented yet)");
        }
        for (final Config c : matrix) {
            final Result r = VisibilityExperiment.run(c);
            out.println(json ? toJson(mapper, r).toString() : line(r));
            out.flush();
        }
        return 0;
    }

    private List<Config> matrix() {
        final Flag f = parse(Flag.class, flag, "--flag", "receiver, sender-same-qp, sender-other-qp, imm");
        final List<Config> matrix = new ArrayList<>();
        for (final String g : gpus) {
            for (final String cons : consumers) {
                for (final String rb : readbacks) {
                    for (final int split : wrSplits) {
                        for (final String sz : sizes) {
                            matrix.add(new Config(g, parse(Consumer.class, cons, "--consumer", "launch, persistent"),
                                f, parse(Readback.class, rb, "--readback", "off, on, flush"), split, size(sz), rounds,
                                seed, skipWriteRound));
                        }
                    }
                }
            }
        }
        return matrix;
    }

    static String line(final Result r) {
        final Config c = r.config();
        return String.format(Locale.ROOT, "gpu=%s ordering=%s consumer=%s flag=%s readback=%s wr_split=%d size=%d "
                + "senders=1 rounds=%d failures=%d first_failing_round=%d first_failing_position=%d what=%s %s %s",
            c.gpu(), r.ordering(), low(c.consumer()), low(c.flag()), low(c.readback()), c.wrSplit(), c.size(),
            r.rounds(), r.failures(), r.firstFailingRound(), r.firstFailingPosition(), r.what(),
            r.failures() == 0 ? "PASS" : "FAIL", SIM);
    }

    static ObjectNode toJson(final ObjectMapper m, final Result r) {
        final Config c = r.config();
        final ObjectNode o = m.createObjectNode();
        o.put("gpu", c.gpu()).put("gpu_name", r.gpuName()).put("ordering", r.ordering())
            .put("consumer", low(c.consumer())).put("flag", low(c.flag())).put("readback", low(c.readback()))
            .put("wr_split", c.wrSplit()).put("size", c.size()).put("senders", 1).put("rounds", r.rounds())
            .put("seed", c.seed()).put("skip_write_round", c.skipWriteRound()).put("failures", r.failures())
            .put("first_failing_round", r.firstFailingRound()).put("first_failing_position", r.firstFailingPosition())
            .put("what", r.what()).put("stale_rounds", r.staleRounds()).put("partial_rounds", r.partialRounds())
            .put("reordered_rounds", r.reorderedRounds()).put("simulated", true)
            .put("nic", "software NIC (simulated), in-JVM fabric").put("processes", "one");
        return o;
    }

    private static String low(final Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    private static <E extends Enum<E>> E parse(final Class<E> type, final String v, final String opt,
                                               final String allowed) {
        try {
            return Enum.valueOf(type, v.trim().toUpperCase(Locale.ROOT).replace('-', '_'));
        } catch (final IllegalArgumentException e) {
            throw new IllegalArgumentException(opt + " must be one of " + allowed + ", not '" + v + "'");
        }
    }

    static int size(final String s) {
        final String t = s.trim().toUpperCase(Locale.ROOT);
        try {
            if (t.endsWith("M")) {
                return Math.multiplyExact(Integer.parseInt(t.substring(0, t.length() - 1)), 1 << 20);
            }
            if (t.endsWith("K")) {
                return Math.multiplyExact(Integer.parseInt(t.substring(0, t.length() - 1)), 1 << 10);
            }
            return Integer.parseInt(t);
        } catch (final NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException("--size must be a byte count like 4096, 64K or 1M, not '" + s + "'");
        }
    }
}
