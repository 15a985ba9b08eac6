package io.kvledger.tap;

import static io.kvledger.node.FakeEngineProcess.decodeLeg;
import static io.kvledger.node.FakeEngineProcess.post;
import static io.kvledger.node.FakeEngineProcess.prefillLeg;
import static io.kvledger.node.FakeEngineProcess.requestId;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.node.cluster.LoopbackPorts;
import io.kvledger.node.FakeEngineProcess;
import io.kvledger.node.NodeOptions;
import io.kvledger.node.NodeService;
import io.kvledger.node.TestNodes;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The live demo's chain without the proxy (the test sends what the proxy would): two Python fake
 * engines drive a prefill and a decode node over their engine bridges; the nodes' MoRIIO frames
 * go through the tap because the request ids carry the shifted notify ports; the KV moves on the
 * nodes' data plane. Every request completes, and the tap's journals alone show each transfer's
 * remote_blocks and write_done crossing.
 */
class LiveTapChainTest {

    @TempDir
    Path dir;

    @Test
    void fake_engines_drive_bridged_nodes_whose_notifies_cross_the_tap() throws Exception {
        FakeEngineProcess.assumePython();
        int b = LoopbackPorts.freeRange(4);
        int shift = LoopbackPorts.freeRange(4) - b;
        int[] http = LoopbackPorts.distinct(2);
        NodeService p = NodeService.start(TestNodes.options("P0", TestNodes.config(Role.PRODUCER, TransferMode.WRITE, b, b + 1),
                dir.resolve("nodes/P0")).withEngine(NodeOptions.EngineKind.BRIDGE));
        NodeService d = null;
        try {
            d = NodeService.start(TestNodes.options("D0", TestNodes.config(Role.CONSUMER, TransferMode.WRITE, b + 2, b + 3),
                    dir.resolve("nodes/D0")).withEngine(NodeOptions.EngineKind.BRIDGE));
            List<TapTarget> targets = List.of(new TapTarget(Role.PRODUCER, "127.0.0.1", b + 1, shift),
                    new TapTarget(Role.CONSUMER, "127.0.0.1", b + 3, shift));
            StringWriter err = new StringWriter();
            HttpClient client = HttpClient.newHttpClient();
            try (Tap tap = Tap.open(new Tap.Config(targets, "127.0.0.1", dir.resolve("tap"), TransferMode.WRITE, "test",
                    System::nanoTime), new PrintWriter(err));
                 FakeEngineProcess pe = FakeEngineProcess.start("prefill", "write", http[0], b, b + 1, "--bridge",
                         p.bridge().endpoint());
                 FakeEngineProcess de = FakeEngineProcess.start("decode", "write", http[1], b + 2, b + 3, "--bridge",
                         d.bridge().endpoint())) {
                for (int i = 1; i <= 3; i++) {
                    String rid = requestId("host:127.0.0.1,handshake:" + b + ",notify:" + (b + 1 + shift),
                            "host:127.0.0.1,handshake:" + (b + 2) + ",notify:" + (b + 3 + shift));
                    var pl = post(client, http[0], rid, prefillLeg("tx-" + i));
                    var dl = post(client, http[1], rid, decodeLeg("tx-" + i));
                    HttpResponse<String> pr = pl.get(120, TimeUnit.SECONDS);
                    assertThat(pr.statusCode()).as(pr.body()).isEqualTo(200);
                    assertThat(pr.body()).contains("\"do_remote_prefill\": true").contains("\"transfer_id\": \"tx-" + i + "\"");
                    HttpResponse<String> dr = dl.get(120, TimeUnit.SECONDS);
                    assertThat(dr.statusCode()).as(dr.body()).isEqualTo(200);
                    assertThat(dr.body()).contains("\"text\": \" tok1 tok2\"");
                }
                long deadline = System.nanoTime() + 120_000_000_000L;
                while (tap.framesJournaled() < 6 && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                assertThat(tap.framesJournaled()).isEqualTo(6);
            }
            assertThat(err.toString()).isEmpty();
            TapReport report = TapReport.read(JournalInputs.resolve(List.of(dir.resolve("tap"))));
            assertThat(report.transfers()).extracting(TapReport.Transfer::transferId).containsExactly("tx-1", "tx-2", "tx-3");
            assertThat(report.transfers()).allMatch(TapReport.Transfer::complete);
            assertThat(report.transfers()).allSatisfy(t -> assertThat(t.crossed()).extracting(c -> c.type() + "->" + c.to().label())
                    .containsExactly("remote_blocks->P+0 127.0.0.1:" + (b + 1), "write_done->D+0 127.0.0.1:" + (b + 3)));
            assertThat(report.hasFindings()).isFalse();
        } finally {
            if (d != null) {
                d.close();
            }
            p.close();
        }
    }
}
