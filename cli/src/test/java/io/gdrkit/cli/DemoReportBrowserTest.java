/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo's report as a browser lays it out: headless Chromium loads the page at 1400 px with a small script that
 * measures it, and nothing may stick out of the page or need a sideways scroll. Skips where no Chromium is installed
 * (Debian's package {@code chromium}).
 */
class DemoReportBrowserTest {
    /** Runs on load, after layout: elements past the viewport's right edge, and scroll wrappers that would scroll. */
    private static final String PROBE = """
        <script>
        window.addEventListener('load', function () {
          var vw = document.documentElement.clientWidth, bad = [];
          document.querySelectorAll('body *').forEach(function (e) {
            var r = e.getBoundingClientRect();
            if (r.width > 0 && r.right > vw + 1 && !e.closest('.scroll')) bad.push('outside ' + e.tagName);
          });
          document.querySelectorAll('.scroll').forEach(function (e) {
            if (e.scrollWidth > e.clientWidth + 1) {
              var s = e.closest('section');
              bad.push('scrolls ' + (s ? s.querySelector('h2').textContent : 'header') + ' ' + e.scrollWidth + '>'
                + e.clientWidth);
            }
          });
          var p = document.createElement('pre');
          p.id = 'layout';
          p.textContent = 'vw=' + vw + ' docw=' + document.documentElement.scrollWidth + ' bad=' + bad.join('; ');
          document.body.appendChild(p);
        });
        </script>
        """;

    @Test
    void theReportFitsA1400PixelWindowInChromium(@TempDir final Path dir) throws Exception {
        final Optional<Path> chromium = chromium();
        assumeTrue(chromium.isPresent(), "no chromium, chromium-browser or google-chrome on PATH: the report's "
            + "layout is not checked in a browser here (apt-get install chromium)");
        final Cli r = Cli.run("demo", "--report", dir.resolve("report").toString());
        assertEquals(0, r.exitCode(), r::toString);
        final String page = Files.readString(dir.resolve("report/report.html"));
        final Path probe = dir.resolve("report/probe.html");
        Files.writeString(probe, page.replace("</body>", PROBE + "</body>"));
        final String dom = run(chromium.get(), dir, "--window-size=1400,1000", "--dump-dom", probe.toUri().toString());
        final Matcher m = Pattern.compile("<pre id=\"layout\">vw=(\\d+) docw=(\\d+) bad=([^<]*)</pre>").matcher(dom);
        assertTrue(m.find(), () -> "the probe did not run; Chromium printed: " + dom.substring(0,
            Math.min(dom.length(), 2000)));
        assertEquals(m.group(1), m.group(2), "the page is no wider than the window");
        assertEquals("", m.group(3), "nothing sticks out or scrolls sideways at 1400 px");
        // a screenshot beside the report, for a person to look at when this fails
        run(chromium.get(), dir, "--window-size=1400,4000", "--screenshot=" + dir.resolve("report/shot.png"),
            dir.resolve("report/report.html").toUri().toString());
        assertTrue(Files.size(dir.resolve("report/shot.png")) > 0);
    }

    private static Optional<Path> chromium() {
        final String path = System.getenv().getOrDefault("PATH", "/usr/bin:/bin");
        return Stream.of("chromium", "chromium-browser", "google-chrome")
            .flatMap(n -> Stream.of(path.split(":")).map(d -> Path.of(d, n)))
            .filter(Files::isExecutable).findFirst();
    }

    private static String run(final Path chromium, final Path dir, final String... args)
        throws IOException, InterruptedException {
        final List<String> cmd = new java.util.ArrayList<>(List.of(chromium.toString(), "--headless", "--no-sandbox",
            "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--hide-scrollbars",
            "--user-data-dir=" + dir.resolve("chromium-profile")));
        cmd.addAll(List.of(args));
        final Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        final byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("chromium did not finish within 120 s: " + cmd);
        }
        assertEquals(0, p.exitValue(), () -> "chromium failed: " + cmd);
        return new String(out, StandardCharsets.UTF_8);
    }
}
