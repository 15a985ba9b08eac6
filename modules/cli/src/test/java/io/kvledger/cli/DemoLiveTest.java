package io.kvledger.cli;

import io.kvledger.node.demo.LiveDeployment;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.proxy.ProxyEvent;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvledger demo --live} end to end: the proxy and the tap in the test's JVM, two
 * {@code kvledger node --engine bridge} processes, two Python fake engines registering with the
 * proxy, HTTP completions through the proxy, then tap-report and the merged hangs report. One
 * run goes through the {@code kvledger} launcher from another directory with a relative
 * {@code --out}, as a user types it.
 */
class DemoLiveTest {

    @TempDir
    Path dir;

    @BeforeAll
    static void python() throws IOException, InterruptedException {
        Assumptions.assumeTrue(Files.isExecutable(Path.of(LiveDeployment.PYTHON)), LiveDeployment.PYTHON + " not found");
        Process p = new ProcessBuilder(LiveDeployment.PYTHON, "-c", "import zmq, msgpack").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        Assumptions.assumeTrue(p.waitFor(120, TimeUnit.SECONDS) && p.exitValue() == 0,
                "python3 cannot import zmq and msgpack (install python3-zmq and python3-msgpack): " + out);
    }

    @Test
    void aCleanRunAnswersEveryRequestAndHangsFindsNothing() throws Exception {
        Path out = dir.resolve("clean");
        CliRun.Outcome r = CliRun.run("demo", "--live", "--clean", "--requests", "40", "--out", out.toString());
        assertThat(r.code()).as(r.out() + r.err()).isZero();
        assertThat(r.out()).contains("40 requests sent through the proxy").contains("answers by status {200=40}")
                .doesNotContain("fewer tokens");
        assertThat(r.out()).contains("40 transfer(s), 0 with a frame that never crossed");
        assertThat(r.out()).contains("no findings").contains("clean run: every request answered 200, hangs found nothing");
        // every request is in the proxy's journal, answered
        long completed = 0;
        try (JournalReader jr = JournalReader.open(out.resolve("proxy"))) {
            for (JournalEntry e : jr) {
                if (e instanceof JournalEntry.Proxy px && px.event() instanceof ProxyEvent.RequestCompleted) {
                    completed++;
                }
            }
        }
        assertThat(completed).isEqualTo(40);
        assertThat(out.resolve("nodes/P0")).isDirectory();
        assertThat(out.resolve("nodes/D0")).isDirectory();
    }

    @Test
    void droppedNotifiesAndAKilledDecodeEngineAreAnsweredAndNamedByHangs() {
        CliRun.Outcome r = CliRun.run("demo", "--live", "--requests", "40", "--faults", "drop=0.05", "--kill-decode-at",
                "20", "--out", dir.resolve("faulty").toString());
        assertThat(r.out()).as(r.err()).contains("kill -9 of the decode's fake engine").contains("after 20 requests");
        assertThat(r.out()).contains("as expected for the injected faults: every request answered");
        assertThat(r.out()).doesNotContain("no findings").containsPattern("summary: [1-9]\\d* findings");
        // the requests the killed engine held are left in the decode node's journal, or the proxy saw their decode leg fail
        assertThat(r.out()).containsPattern("(stuck|stuck-waiting|proxy-decode-unanswered|notify-no-listener): [1-9]\\d* finding");
        assertThat(r.out()).contains("inspect a hung request").contains("./kvledger inspect ");
        // the tap's journals are among hangs' inputs: a notify the tap saw crossing is not taken for one sent nowhere,
        // and the tap's own clock does not stretch the nodes' journals
        assertThat(r.out()).doesNotContain("where no journaled node listens")
                .containsPattern("hangs: 4 journal\\(s\\) \\(D0, P0, tap D [^)]+\\), tap P [^)]+\\)\\) and proxy journal\\(s\\) proxy, "
                        + "\\d+ events over \\d{1,3}\\.\\d{6} s");
        assertThat(r.code()).as(r.out() + r.err()).isZero();
    }

    @Test
    void withoutThePythonSourcesItSaysWhereTheyAreLooked() {
        String before = System.getProperty("kvledger.home");
        System.setProperty("kvledger.home", dir.toString());
        try {
            CliRun.Outcome r = CliRun.run("demo", "--live", "--requests", "5", "--out", dir.resolve("x").toString());
            assertThat(r.code()).isEqualTo(2);
            assertThat(r.err().strip()).doesNotContain("\n").contains("needs the Python fake engines")
                    .contains("kvledger.home");
        } finally {
            if (before == null) {
                System.clearProperty("kvledger.home");
            } else {
                System.setProperty("kvledger.home", before);
            }
        }
    }

    /**
     * {@code ../checkout/kvledger demo --live --out rel/run} typed in a directory beside the
     * checkout: the commands it prints name the launcher and the journals as typed (relative, not
     * absolute), the journals are under the caller's directory and not the checkout's, and the
     * printed {@code hangs} command, run as printed from the same directory, reads them. The
     * checkout is a scratch copy of the launcher whose CLI jar is a pathing jar over the test
     * classpath (as in LauncherTest), with this checkout's Python sources copied in.
     */
    @Test
    void throughTheLauncherFromAnotherDirectoryTheRelativeOutIsPrintedAsTypedAndHoldsTheJournals() throws Exception {
        Path checkout = dir.resolve("checkout");
        Path caller = dir.resolve("elsewhere");
        scratchCheckout(checkout);
        Files.createDirectories(caller);
        Launched r = launch(caller, "../checkout/kvledger", "demo", "--live", "--clean", "--requests", "6", "--out", "rel/run");
        assertThat(r.code()).as(r.out() + r.err()).isZero();
        assertThat(r.out()).contains("6 requests sent through the proxy").contains("answers by status {200=6}");
        assertThat(r.out()).contains("\njournals: rel/run\n", "\n== ../checkout/kvledger tap-report rel/run/tap ==\n")
                .containsPattern("(?m)^== \\.\\./checkout/kvledger hangs --stuck-after \\S+ rel/run/nodes rel/run/proxy rel/run/tap ==$")
                .contains("\nno hung request; follow any request with ../checkout/kvledger inspect rel/run/nodes rel/run/proxy "
                        + "--request <uuid>\n");
        assertThat(r.out()).as("no absolute path of the caller's directory is printed").doesNotContain(caller.toString())
                .doesNotContain(caller.toRealPath().toString());
        for (String j : List.of("nodes/P0", "nodes/D0", "proxy", "tap")) {
            Path d = caller.resolve("rel/run").resolve(j);
            assertThat(d).as("journal directory " + j + " under the caller's rel/run").isDirectory();
            try (Stream<Path> files = Files.list(d)) {
                assertThat(files.toList()).as(j + " holds journal files").isNotEmpty();
            }
        }
        assertThat(checkout.resolve("rel")).as("nothing written in the checkout").doesNotExist();

        Matcher hangs = Pattern.compile("(?m)^== \\.\\./checkout/kvledger (hangs .*) ==$").matcher(r.out());
        assertThat(hangs.find()).isTrue();
        Launched again = launch(caller, "../checkout/kvledger", hangs.group(1).split(" "));
        assertThat(again.code()).as(again.out() + again.err()).isZero();
        assertThat(again.out()).as("the printed command reads the same journals").contains("no findings")
                .contains("proxy journal(s) proxy");
    }

    private record Launched(int code, String out, String err) {}

    /** Runs {@code bash script args...} in {@code cwd} with this JVM as JAVA_HOME and no AOT cache. */
    private Launched launch(Path cwd, String script, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("bash", script));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(cwd.toFile());
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        pb.environment().put("KVLEDGER_AOT", "0");
        Path o = dir.resolve("launch.out");
        Path e = dir.resolve("launch.err");
        pb.redirectOutput(o.toFile()).redirectError(e.toFile());
        Process p = pb.start();
        if (!p.waitFor(10, TimeUnit.MINUTES)) {
            p.destroyForcibly();
        }
        assertThat(p.isAlive()).as("the launcher ends").isFalse();
        return new Launched(p.exitValue(), Files.readString(o, StandardCharsets.UTF_8), Files.readString(e, StandardCharsets.UTF_8));
    }

    /** A checkout holding the launcher, an up-to-date pathing jar over the test classpath and the Python package. */
    private static void scratchCheckout(Path checkout) throws IOException {
        Path script = Path.of(System.getProperty("kvledger.launcher", "../../kvledger"));
        assertThat(script).as("the launcher script (system property kvledger.launcher)").isRegularFile();
        Path bridge = script.toAbsolutePath().getParent().resolve("modules/vllm-bridge");
        assertThat(bridge.resolve("src/kvledger_vllm/fake_engine.py")).as("the Python fake engine beside the launcher").isRegularFile();
        Files.createDirectories(checkout.resolve("modules/cli/target"));
        Files.copy(script, checkout.resolve("kvledger"));
        try (Stream<Path> walk = Files.walk(bridge.resolve("src"))) {
            for (Path f : walk.filter(Files::isRegularFile).toList()) {
                Path to = checkout.resolve("modules/vllm-bridge").resolve(bridge.relativize(f).toString());
                Files.createDirectories(to.getParent());
                Files.copy(f, to);
            }
        }
        Files.writeString(checkout.resolve("pom.xml"), "<project/>\n");
        Files.setLastModifiedTime(checkout.resolve("pom.xml"), FileTime.fromMillis(System.currentTimeMillis() - 3_600_000));
        Manifest m = new Manifest();
        m.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        m.getMainAttributes().put(Attributes.Name.MAIN_CLASS, Main.class.getName());
        List<String> urls = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (!entry.isBlank()) {
                urls.add(Path.of(entry).toAbsolutePath().toUri().toString());
            }
        }
        m.getMainAttributes().put(Attributes.Name.CLASS_PATH, String.join(" ", urls));
        try (OutputStream o = Files.newOutputStream(checkout.resolve("modules/cli/target/kvledger.jar"));
             JarOutputStream j = new JarOutputStream(o, m)) {
            j.flush();
        }
    }
}
