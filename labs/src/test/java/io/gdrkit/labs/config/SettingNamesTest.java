/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.comm.CollContext;
import io.gdrkit.comm.config.CommConfiguration;
import io.gdrkit.comm.bootstrap.BootstrapContext;
import io.gdrkit.comm.transport.IbTransportContext;
import io.gdrkit.comm.transport.SocketTransportContext;
import io.gdrkit.core.config.CoreConfiguration;
import io.gdrkit.core.config.Catalogues;
import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.SettingDef;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.gdr.config.GdrConfiguration;
import io.gdrkit.gdr.gate.NcclSettings;
import io.gdrkit.gdr.gate.NetCaps;
import io.gdrkit.gdr.net.NetNic;
import io.gdrkit.softnic.config.SoftNicConfiguration;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.softnic.fabric.TcpFabricContext;
import io.gdrkit.verbs.VerbsContext;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every setting name main code reads is in a catalogue, and main code reads settings only through the descriptors:
 * a scan of every module's main sources, and each settings Context concluded with nothing set, whose recorded names
 * must be exactly the ones its catalogue says it reads.
 */
class SettingNamesTest {
    /** A setting-like name: a gdrkit property (not inside a package name) or an NCCL/GDRKIT variable. */
    private static final Pattern NAME = Pattern.compile(
        "(?<![\\w.])(gdrkit(?:\\.[a-z0-9]+)+|(?:NCCL|GDRKIT)_[A-Z0-9_]*[A-Z0-9])(?![\\w])(\\.?)");
    /** GDRKIT_* identifiers that are error codes, not settings (GpuException, the delivery agent's). */
    private static final Set<String> NOT_SETTINGS = Set.of("GDRKIT_TIMEOUT", "GDRKIT_FFM_ERROR",
        "GDRKIT_AGENT_STALLED", "GDRKIT_AGENT_FAULT", "GDRKIT_AGENT_CORRUPT",
        "GDRKIT_CUDA_NOT_FOUND", "GDRKIT_INTERRUPTED",
        // NCCL's topology and graph file variables, named in messages about file formats; gdrkit reads none of them
        // (gdrkit topo takes the file as --topo-file)
        "NCCL_TOPO_FILE", "NCCL_TOPO_DUMP_FILE", "NCCL_GRAPH_FILE", "NCCL_GRAPH_DUMP_FILE");
    /** A read that bypasses the descriptors: a literal name given to the reader, or the process asked directly. */
    private static final Pattern DIRECT_READ = Pattern.compile("\\.(?:integer|flag|text|choice|longValue|read)\\(\\s*\""
        + "(?:gdrkit\\.|NCCL_|GDRKIT_)|System\\.getenv\\([^)]|System\\.getProperty\\(\\s*(?:\"gdrkit|[A-Z]|[a-z]\\w*\\.[A-Z])"
        + "|Integer\\.getInteger\\(|Long\\.getLong\\(|Boolean\\.getBoolean\\(");
    /**
     * The cli module's direct reads, owned by the CLI's own work: each is named here so that any other direct read
     * fails. They read {@code GDRKIT_TOKEN}, {@code GDRKIT_RANK}, {@code GDRKIT_ROOT_ID}, {@code GDRKIT_JAVA_OPTS}
     * and
     * {@code gdrkit.progress.terminal}, all catalogued; each can become {@code <descriptor>.read(SettingsReader
     * .ofProcess())}.
     */
    private static final Set<String> CLI_DIRECT_READS = Set.of(
        "cli/src/main/java/io/gdrkit/cli/LaunchCommand.java: System.getenv(\"GDRKIT_JAVA_OPTS\")",
        "cli/src/main/java/io/gdrkit/cli/StderrProgress.java: Boolean.getBoolean(TERMINAL_PROPERTY)",
        "cli/src/main/java/io/gdrkit/cli/LaunchCommand.java: System.getenv(ENV_ROOT_ID)",
        "cli/src/main/java/io/gdrkit/cli/Mixins.java: System.getenv(\"GDRKIT_TOKEN\")",
        "cli/src/main/java/io/gdrkit/cli/ShmemMoeCommand.java: System.getenv(BootstrapContext.ENV_RANK)",
        "cli/src/main/java/io/gdrkit/cli/ShmemMoeCommand.java: System.getenv(\"GDRKIT_TOKEN\")",
        "cli/src/main/java/io/gdrkit/cli/LaunchCommand.java: System.getenv(\"GDRKIT_TOKEN\")",
        "cli/src/main/java/io/gdrkit/cli/CollCommand.java: System.getenv(\"GDRKIT_TOKEN\")");

    @Test
    void everyNameInMainCodeIsCataloguedAndLiteralsStayInTheCatalogues() throws IOException {
        final Map<String, SettingDef<?>> known = Catalogues.byName();
        final List<String> unknown = new ArrayList<>();
        final List<String> outside = new ArrayList<>();
        final Set<String> seen = new TreeSet<>();
        for (final Path f : mainSources()) {
            final String rel = root().relativize(f).toString();
            final boolean catalogue = f.getFileName().toString().endsWith("Configuration.java");
            for (final String lit : literals(Files.readString(f, StandardCharsets.UTF_8))) {
                final Matcher m = NAME.matcher(lit);
                while (m.find()) {
                    final String n = m.group(1);
                    if (NOT_SETTINGS.contains(n) || !m.group(2).isEmpty() && isPrefix(n + ".", known.keySet())) {
                        continue; // an error code, or a prefix such as "gdrkit.nic." for a properties snapshot
                    }
                    seen.add(n);
                    if (!known.containsKey(n)) {
                        unknown.add(rel + ": \"" + n + "\"");
                    } else if (!catalogue && !rel.startsWith("cli/")) {
                        outside.add(rel + ": \"" + n + "\" (use its descriptor's name())");
                    }
                }
            }
        }
        assertEquals(List.of(), unknown, "setting names in main code that no catalogue lists");
        assertEquals(List.of(), outside, "setting names spelled outside the catalogues");
        assertTrue(seen.containsAll(known.keySet()), "catalogued but spelled nowhere: "
            + known.keySet().stream().filter(n -> !seen.contains(n)).toList());
    }

    @Test
    void nothingReadsASettingAroundTheDescriptors() throws IOException {
        final List<String> direct = new ArrayList<>();
        final Set<String> known = new TreeSet<>();
        for (final Path f : mainSources()) {
            final String rel = root().relativize(f).toString();
            if (f.getFileName().toString().endsWith("Configuration.java")) {
                continue; // the catalogues declare the names (SettingDef.integer("...")); they read nothing
            }
            final String code = Files.readString(f, StandardCharsets.UTF_8);
            final Matcher m = DIRECT_READ.matcher(code);
            while (m.find()) {
                final int end = code.indexOf(')', m.start());
                final String at = rel + ": " + code.substring(m.start(), end + 1).strip();
                if (CLI_DIRECT_READS.contains(at)) {
                    known.add(at);
                } else if (!rel.endsWith("core/config/SettingsReader.java")) {
                    direct.add(at);
                }
            }
        }
        assertEquals(List.of(), direct, "reads that bypass the SettingDef descriptors");
        assertEquals(new TreeSet<>(CLI_DIRECT_READS), known, "a listed cli read is gone: take it off the list");
    }

    @Test
    void eachContextReadsExactlyTheSettingsItsCatalogueSaysItReads() {
        final SettingsReader none = SettingsReader.ofEnv(Map.of());
        assertReads("SoftNicContext", new SoftNicContext().properties(Map.of()).conclude().settings());
        assertReads("TcpFabricContext", TcpFabricContext.defaults().settings());
        assertReads("NcclSettings", new NcclSettings.Context().reader(none).conclude().all());
        assertReads("CollContext", new CollContext().settings(none).conclude().recorded());
        assertReads("SocketTransportContext", new SocketTransportContext().settings(none).conclude().recorded());
        final SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext().properties(Map.of()));
        try (VerbsContext c = driver.addDevice("names0").open(); NetNic nic = new NetNic(0, c,
            NetCaps.probe(0, c, null))) {
            assertReads("IbTransportContext", new IbTransportContext().nic(nic).settings(none).conclude().recorded());
        } finally {
            driver.close();
        }
        final List<Setting<?>> boot = BootstrapContext.fromEnvironment(Map.of(
            CommConfiguration.BOOTSTRAP_ID.name(), "127.0.0.1:4000/0123456789abcdef",
            CommConfiguration.BOOTSTRAP_RANK.name(), "1", CommConfiguration.BOOTSTRAP_NRANKS.name(), "2",
            CommConfiguration.BOOTSTRAP_LOCAL_RANK.name(), "1", CoreConfiguration.TOKEN_ENV.name(), "secret-token"),
            Map.of()).settings();
        assertEquals(List.of("GDRKIT_ID", "GDRKIT_NRANKS", "GDRKIT_RANK", "GDRKIT_LOCAL_RANK", "GDRKIT_TOKEN",
            "gdrkit.bootstrap.timeout.ms"), boot.stream().map(Setting::name).toList());
        assertTrue(boot.stream().allMatch(s -> Catalogues.find(s.name()).isPresent()));
        assertEquals(GdrConfiguration.CONTROL_PLANE.stream().map(SettingDef::name).toList(), NcclSettings.NAMES);
        assertEquals(SoftNicConfiguration.WINDOW.name(), SoftNicContext.WINDOW_PROP);
    }

    /** The names {@code recorded} are catalogued, and are exactly the catalogued names read by {@code reader}. */
    private static void assertReads(final String reader, final Collection<Setting<?>> recorded) {
        final Set<String> names = new TreeSet<>();
        for (final Setting<?> s : recorded) {
            assertTrue(Catalogues.find(s.name()).isPresent(), reader + " reads " + s.name() + ", not catalogued");
            names.add(s.name());
        }
        final Set<String> said = new TreeSet<>();
        Catalogues.byName().values().stream().filter(d -> d.readBy().contains(reader)).forEach(d -> said.add(d.name()));
        assertEquals(said, names, reader + ": what it reads and what the catalogues say it reads");
    }

    private static boolean isPrefix(final String p, final Collection<String> names) {
        return names.stream().anyMatch(n -> n.startsWith(p));
    }

    private static Path root() {
        return ConfigurationDoc.page().getParent().getParent();
    }

    private static List<Path> mainSources() throws IOException {
        final List<Path> all = new ArrayList<>();
        try (Stream<Path> modules = Files.list(root())) {
            for (final Path m : modules.sorted().toList()) {
                final Path src = m.resolve("src/main/java");
                if (Files.isDirectory(src)) {
                    try (Stream<Path> s = Files.walk(src)) {
                        s.filter(p -> p.toString().endsWith(".java")).sorted().forEach(all::add);
                    }
                }
            }
        }
        assertTrue(all.size() > 100, "main sources found under " + root());
        return all;
    }

    /** The string literals (text blocks included) of Java source, comments and character literals skipped. */
    static List<String> literals(final String src) {
        final List<String> out = new ArrayList<>();
        int i = 0;
        final int n = src.length();
        while (i < n) {
            final char c = src.charAt(i);
            if (c == '/' && i + 1 < n && src.charAt(i + 1) == '/') {
                i = src.indexOf('\n', i);
                i = i < 0 ? n : i;
            } else if (c == '/' && i + 1 < n && src.charAt(i + 1) == '*') {
                i = src.indexOf("*/", i + 2);
                i = i < 0 ? n : i + 2;
            } else if (c == '\'') {
                i++;
                while (i < n && src.charAt(i) != '\'') {
                    i += src.charAt(i) == '\\' ? 2 : 1;
                }
                i++;
            } else if (src.startsWith("\"\"\"", i)) {
                final int end = src.indexOf("\"\"\"", i + 3);
                out.add(src.substring(src.indexOf('\n', i) + 1, end));
                i = end + 3;
            } else if (c == '"') {
                final StringBuilder b = new StringBuilder();
                i++;
                while (i < n && src.charAt(i) != '"') {
                    if (src.charAt(i) == '\\') {
                        b.append(src.charAt(i + 1));
                        i += 2;
                    } else {
                        b.append(src.charAt(i++));
                    }
                }
                out.add(b.toString());
                i++;
            } else {
                i++;
            }
        }
        return out;
    }

    @Test
    void literalScannerSkipsCommentsAndCharacters() {
        assertEquals(List.of("a", "b\"c", "d\n"), literals("x = \"a\"; // \"no\"\n/* \"no\" */ char q = '\"'; "
            + "y = \"b\\\"c\"; z = \"\"\"\nd\n\"\"\";"));
    }
}
