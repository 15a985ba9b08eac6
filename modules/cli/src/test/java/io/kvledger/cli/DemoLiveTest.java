package io.kvledger.cli;

import io.kvledger.node.demo.LiveDeployment;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.proxy.ProxyEvent;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvledger demo --live} end to end: the proxy and the tap in the test's JVM, two
 * {@code kvledger node --engine bridge} processes, two Python fake engines registering with the
 * proxy, HTTP completions through the proxy, then tap-report and the merged hangs report.
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
}
