package io.kvledger.node;

import static io.kvledger.node.FakeEngineProcess.decodeLeg;
import static io.kvledger.node.FakeEngineProcess.post;
import static io.kvledger.node.FakeEngineProcess.requestId;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.ReqMeta;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.node.cluster.LoopbackPorts;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Python fake decode engine drives a WRITE decode node that runs vLLM 239b5ff30's profile, whose
 * WRITE consumer builds {@code reqs_to_recv} from {@code scheduled_new_reqs}. The engine sends each
 * step's new requests as vLLM's scheduler builds them: a request waiting for its KV is not one, and
 * once its KV arrived it comes back and is scheduled as a new request, so the node ships its
 * receive to the worker then, once. (The test writes the {@code write_done} itself: at 239b5ff30
 * the WRITE decode sends its {@code remote_blocks} to its own notify port, parsing the request id
 * for the producer's peer, so no prefill ever learns where to write; the node names that.)
 */
class FakeEngines239WriteTest {

    private static final String WRITE_DONE = """
            import sys, zmq, msgpack
            ctx = zmq.Context()
            s = ctx.socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 120000)
            s.connect(sys.argv[1])
            s.send(msgpack.packb({"type": "write_done", "transfer_id": sys.argv[2]}))
            s.close()
            ctx.term()
            """;

    @TempDir
    Path dir;

    private static List<JournalEntry> entries(Path journal, Predicate<JournalEntry> keep) {
        List<JournalEntry> out = new ArrayList<>();
        try (JournalReader r = JournalReader.open(journal)) {
            for (JournalEntry e : r) {
                if (keep.test(e)) {
                    out.add(e);
                }
            }
        }
        return out;
    }

    private static boolean input(JournalEntry e, Class<?> type) {
        return e instanceof JournalEntry.Input in && type.isInstance(in.event());
    }

    @Test
    void aReceivedRequestComesBackAsANewOneAndTheNodeShipsItsReceiveOnce() throws Exception {
        FakeEngineProcess.assumePython();
        int b = LoopbackPorts.freeRange(4);
        int http = LoopbackPorts.distinct(1)[0];
        NodeConfig cfg = TestNodes.config(Role.CONSUMER, TransferMode.WRITE, b + 2, b + 3).toBuilder()
                .behaviour(Behaviour.preset(Behaviour.V239B5FF30)).build();
        Path journal = dir.resolve("D0");
        NodeService d = NodeService.start(TestNodes.options("D0", cfg, journal).withEngine(NodeOptions.EngineKind.BRIDGE));
        String rid = requestId("host:127.0.0.1,handshake:" + b + ",notify:" + (b + 1),
                "host:127.0.0.1,handshake:" + (b + 2) + ",notify:" + (b + 3));
        try (FakeEngineProcess de = FakeEngineProcess.start("decode", "write", http, b + 2, b + 3, "--bridge",
                d.bridge().endpoint())) {
            var dl = post(HttpClient.newHttpClient(), http, rid, decodeLeg("tx-1"));
            // the decode's remote_blocks reach its own listener (239b5ff30's peer parsing)
            assertThat(TestNodes.eventually(Duration.ofSeconds(120),
                    () -> !entries(journal, e -> input(e, NodeEvent.RemoteBlocksReceived.class)).isEmpty()))
                    .as("remote_blocks sent").isTrue();
            Path script = dir.resolve("write_done.py");
            java.nio.file.Files.writeString(script, WRITE_DONE);
            Process py = new ProcessBuilder("/usr/bin/python3", script.toString(), "tcp://127.0.0.1:" + (b + 3), "tx-1")
                    .redirectErrorStream(true).start();
            assertThat(py.waitFor(120, TimeUnit.SECONDS)).isTrue();
            assertThat(py.exitValue()).as(new String(py.getInputStream().readAllBytes())).isZero();
            HttpResponse<String> dr = dl.get(120, TimeUnit.SECONDS);
            assertThat(dr.statusCode()).as(dr.body()).isEqualTo(200);
            assertThat(dr.body()).contains("\"text\": \" tok1 tok2\"");
        } finally {
            d.close();
        }
        List<String> scheduledNew = new ArrayList<>();
        List<String> received = new ArrayList<>();
        List<AnomalyKind> anomalies = new ArrayList<>();
        long steps = 0;
        for (JournalEntry e : entries(journal, x -> true)) {
            if (e instanceof JournalEntry.Input in && in.event() instanceof NodeEvent.StepScheduled s) {
                steps++;
                assertThat(s.scheduledNewReqs()).as("every step says which requests are new").isNotNull();
                assertThat(s.preemptedReqIds()).as("and which were preempted").isEqualTo(List.of());
                s.scheduledNewReqs().forEach(n -> scheduledNew.add(n.requestId()));
            } else if (e instanceof JournalEntry.Derived dv && dv.effect() instanceof Effect.MetadataBuilt m) {
                m.reqsToRecv().stream().map(ReqMeta::requestId).forEach(received::add);
            } else if (e instanceof JournalEntry.Derived dv && dv.effect() instanceof Effect.Anomaly a) {
                anomalies.add(a.kind());
            }
        }
        assertThat(steps).isGreaterThan(1);
        assertThat(scheduledNew).hasSize(1).allMatch(id -> id.contains(rid));
        assertThat(received).isEqualTo(scheduledNew);
        assertThat(anomalies).contains(AnomalyKind.NOTIFY_ROLE_MISMATCH);
    }
}
