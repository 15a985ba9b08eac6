package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.journal.json.Json;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.node.cluster.Leg;
import io.kvledger.node.engine.Completion;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A {@code kvledger node} process whose loop stops by itself (its journal refuses an applied
 * input: the named fault {@code --fail-journal-after}) exits with status 3 after one stderr line
 * naming the node and the cause; restarted on the same journal it recovers and serves again, and
 * {@code replay --verify} of the journal is clean. A real process, a real journal on disk.
 */
class NodeLoopExitTest {

    @TempDir
    Path dir;

    @Test
    void aNodeWhoseJournalFailsExitsThreeAndARestartRecovers() throws Exception {
        NodeProcess p = new NodeProcess("P0", true, "write", dir);
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        int exit;
        try {
            p.start(List.of("--fail-journal-after", "3"));
            assertThat(p.awaitHealthy(client, Duration.ofSeconds(90))).as(p.logText()).isTrue();
            // the fault is armed before the node's start-up line
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (!p.errText().contains("node P0: producer write") && System.nanoTime() < end) {
                Thread.sleep(20);
            }
            Leg leg = p.leg(client);
            // a plain request: its hook calls are the node's first inputs; the fourth is refused
            CompletableFuture<Completion> first = leg.submit("req-1", 64, 2, null);
            exit = p.awaitExit(Duration.ofSeconds(30));
            assertThat(exit).as("the node exits by itself: %s", p.logText()).isEqualTo(NodeCommand.LOOP_STOPPED);
            assertThat(ok(first.get(120, TimeUnit.SECONDS))).as("its request did not succeed").isFalse();
        } finally {
            p.stop();
        }
        List<String> said = p.errText().lines().filter(l -> l.startsWith("kvledger node P0:")).toList();
        assertThat(said).as(p.logText()).hasSize(1);
        assertThat(said.getFirst())
                .startsWith("kvledger node P0: the node loop stopped: the journal refused an applied input (")
                .contains("injected fault (--fail-journal-after 3)")
                .endsWith("; exiting with status 3 (restart it: it recovers from its journal)");
        assertThat(p.logText()).as("the adapters were stopped and the journal closed as on a clean stop")
                .contains("node P0: stopped after 3 events; journal ");
        Map<?, ?> status = (Map<?, ?>) Json.parse(Files.readString(p.statusFile()).trim());
        assertThat(status.get("running")).isEqualTo(false);
        assertThat(String.valueOf(status.get("loop_stopped"))).contains("the journal refused an applied input");

        // restarted on the same journal, without the fault: it recovers what the journal took and serves
        int exit2;
        try {
            p.start(List.of());
            assertThat(p.awaitHealthy(client, Duration.ofSeconds(90))).as(p.logText()).isTrue();
            assertThat(p.errText()).contains("recovered 3 inputs in ");
            Completion again = p.leg(client).submit("req-2", 64, 2, null).get(120, TimeUnit.SECONDS);
            assertThat(ok(again)).as("after the restart: %s", again).isTrue();
        } finally {
            exit2 = p.stop();
        }
        assertThat(exit2).as("SIGTERM still stops it cleanly: %s", p.logText()).isZero();
        CliRun.Outcome verify = CliRun.run("replay", p.journal.toString(), "--verify");
        assertThat(verify.code()).as(verify.out() + verify.err()).isZero();
    }

    private static boolean ok(Completion c) {
        return c.error() == null && c.finishStatus() != FinishStatus.FINISHED_ERROR;
    }
}
