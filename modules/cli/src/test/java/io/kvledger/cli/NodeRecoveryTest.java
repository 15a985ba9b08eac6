package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.json.Json;
import io.kvledger.node.Recovery;
import io.kvledger.node.cluster.LiveRouter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * kill -9 of a prefill node in the middle of a run, then a restart on the same journal: the node
 * recovers its state, continues the journal, serves new requests, and afterwards every request is
 * terminal or named by {@code hangs}, and {@code replay --verify} of the whole journal agrees.
 */
class NodeRecoveryTest {

    @TempDir
    Path dir;

    @Test
    void aPrefillKilledMidRunRecoversFromItsJournal() throws Exception {
        String[] timeouts = {"--kv-transfer-config", "{\"kv_connector_extra_config\":{\"defer_timeout\":3,\"transfer_timeout\":3}}"};
        NodeProcess p = new NodeProcess("P0", true, "write", dir, timeouts);
        NodeProcess d = new NodeProcess("D0", false, "write", dir, timeouts);
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(30)).build();
        int pExit;
        int dExit;
        try {
            p.start();
            d.start();
            assertThat(p.awaitHealthy(client, Duration.ofSeconds(90))).as(p.logText()).isTrue();
            assertThat(d.awaitHealthy(client, Duration.ofSeconds(90))).as(d.logText()).isTrue();
            LiveRouter router = new LiveRouter(List.of(p.leg(client)), List.of(d.leg(client)), TransferMode.WRITE, 11);

            for (LiveRouter.Outcome o : await(send(router, 10))) {
                assertThat(o.ok()).as("before the kill: %s", o).isTrue();
            }
            List<CompletableFuture<LiveRouter.Outcome>> inFlight = send(router, 10);
            Thread.sleep(30);
            p.kill();
            await(inFlight); // some fail, some may have finished: either way they end

            p.start();
            assertThat(p.awaitHealthy(client, Duration.ofSeconds(90))).as(p.logText()).isTrue();
            assertThat(p.logText()).containsPattern("recovered \\d+ inputs in \\d+\\.\\d{6} s");
            for (LiveRouter.Outcome o : await(send(router, 10))) {
                assertThat(o.ok()).as("after the restart: %s", o).isTrue();
                assertThat(o.decodeLeg().verifiedBytes()).isPositive();
            }
            // past defer_timeout (3 s), what the old process left deferred is reaped: waited for on
            // the live node's status (bounded generously, ending when it holds), not slept for 4 s
            assertThat(heldRequestsReachZero(client, p)).as("the restarted prefill's engine frees what it held: %s",
                    p.logText()).isTrue();
        } finally {
            pExit = p.stop();
            dExit = d.stop();
        }
        assertThat(pExit).as("P0 exits 0 on SIGTERM: %s", p.logText()).isZero();
        assertThat(dExit).as("D0 exits 0 on SIGTERM: %s", d.logText()).isZero();

        // The restarted process continued the same journal: one header, seqs without a gap.
        long entries = 0;
        long lastSeq = -1;
        try (JournalReader r = JournalReader.open(dir.resolve("P0"))) {
            for (var e : r) {
                assertThat(e.seq()).isEqualTo(lastSeq + 1);
                lastSeq = e.seq();
                entries++;
            }
        }
        assertThat(entries).isGreaterThan(100);

        CliRun.Outcome verify = CliRun.run("replay", dir.resolve("P0").toString(), "--verify");
        assertThat(verify.code()).as(verify.out() + verify.err()).isZero();

        // Blocks: the restarted prefill's engine holds nothing once its deferrals ended.
        Map<?, ?> status = (Map<?, ?>) Json.parse(Files.readString(p.statusFile()).trim());
        assertThat(((Map<?, ?>) status.get("engine")).get("held_requests")).isEqualTo(0L);

        // Every request the journals left non-terminal is named by hangs: as stuck, or, when it had a
        // lifecycle event within the last second (the nodes are stopped as soon as the restarted
        // prefill holds nothing, so one may still be moving), on its in-flight line.
        CliRun.Outcome hangs = CliRun.run("hangs", dir.resolve("P0").toString(), dir.resolve("D0").toString(),
                "--stuck-after", "1", "--in-flight");
        List<String> open = new ArrayList<>();
        for (String node : List.of("P0", "D0")) {
            Role role = node.startsWith("P") ? Role.PRODUCER : Role.CONSUMER;
            Recovery rec = Recovery.replay(dir.resolve(node), io.kvledger.core.config.NodeConfig.builder(role,
                    TransferMode.WRITE).deferTimeoutNs(3_000_000_000L).transferTimeoutNs(3_000_000_000L).build());
            rec.state().phases().forEach((id, phase) -> {
                if (!phase.terminal()) {
                    open.add(id);
                }
            });
        }
        for (String id : open) {
            assertThat(hangs.out()).as("hangs names %s", id).contains(id.substring(id.lastIndexOf('_') + 1));
        }
        // With every request terminal, hangs may still name what the kill did (an ACK that reached only
        // the dead process leaves its deferral reaped without one): a finding, exit 1, never a usage error.
        assertThat(hangs.code()).as(hangs.out() + hangs.err()).isIn(open.isEmpty() ? List.of(0, 1) : List.of(1));
    }

    /** Polls the node's /v1/status until its engine holds no request (up to 120 s). */
    private static boolean heldRequestsReachZero(HttpClient client, NodeProcess node) throws InterruptedException {
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.http + "/v1/status"))
                .timeout(Duration.ofSeconds(30)).GET().build();
        long end = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (System.nanoTime() < end) {
            try {
                HttpResponse<String> r = client.send(req, HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200 && Json.parse(r.body()) instanceof Map<?, ?> st
                        && st.get("engine") instanceof Map<?, ?> e && Long.valueOf(0).equals(e.get("held_requests"))) {
                    return true;
                }
            } catch (java.io.IOException e) {
                // not answering this time: asked again
            }
            Thread.sleep(100);
        }
        return false;
    }

    private static List<CompletableFuture<LiveRouter.Outcome>> send(LiveRouter router, int n) {
        List<CompletableFuture<LiveRouter.Outcome>> all = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            all.add(router.send(40 + 23 * i, 1 + i % 3));
        }
        return all;
    }

    private static List<LiveRouter.Outcome> await(List<CompletableFuture<LiveRouter.Outcome>> all) throws Exception {
        List<LiveRouter.Outcome> out = new ArrayList<>();
        for (CompletableFuture<LiveRouter.Outcome> f : all) {
            out.add(f.get(90, TimeUnit.SECONDS));
        }
        return out;
    }
}
