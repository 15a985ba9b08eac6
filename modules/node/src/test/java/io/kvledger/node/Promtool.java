package io.kvledger.node;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Prometheus's {@code promtool check metrics}: the exposition format's parser and the naming
 * linter, run on a scrape. promtool comes with the Debian package {@code prometheus}, which the
 * launcher installs for the tests ({@code test_packages}); a test is skipped, saying so, only when
 * it is absent. Shared with the proxy's tests through the test jar.
 */
public final class Promtool {

    private Promtool() {}

    /** What promtool said about one scrape: its exit status and its output (problems, one a line). */
    public record Verdict(int exit, String output) {}

    /** promtool, or a skip of the calling test saying why there is none. */
    public static Path require() {
        Path p = Chromium.onPath("promtool");
        Assumptions.assumeTrue(p != null, "skipped: promtool is not installed (the ./kvledger launcher installs it "
                + "for the tests: apt-get install prometheus)");
        return p;
    }

    /** Runs {@code promtool check metrics} with {@code scrape} on its standard input. */
    public static Verdict check(Path promtool, String scrape) throws IOException, InterruptedException {
        Process proc = new ProcessBuilder(promtool.toString(), "check", "metrics").redirectErrorStream(true).start();
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> drain(proc.getInputStream()));
        try (OutputStream in = proc.getOutputStream()) {
            in.write(scrape.getBytes(StandardCharsets.UTF_8));
        }
        if (!proc.waitFor(120, TimeUnit.SECONDS)) {
            proc.destroyForcibly();
            throw new IllegalStateException("promtool check metrics did not finish in 120 s");
        }
        return new Verdict(proc.exitValue(), out.join());
    }

    private static String drain(InputStream s) {
        try (s) {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            s.transferTo(b);
            return b.toString(StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(promtool's output could not be read: " + e + ")";
        }
    }
}
