package io.kvledger.node;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.json.Json;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * A live node driven over the engine bridge by a real Python engine (Debian's python3 with pyzmq
 * and msgpack): each hook call is journaled and applied by the node and answered with the
 * reducer's reply.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class BridgedNodeTest {

    /** The bridged node's /metrics, for promtool (the engine bridge's series exist only with a bridge). */
    private static volatile String bridgedScrape;

    @Test
    @Order(2)
    void theBridgedNodesMetricsPassPromtoolWithNoWarning() throws Exception {
        Path promtool = Promtool.require();
        assertThat(bridgedScrape).as("the bridged node's scrape (taken by the test before)").isNotNull()
                .contains("kvledger_bridge_calls_received_total");
        Promtool.Verdict v = Promtool.check(promtool, bridgedScrape);
        assertThat(v.output()).as("promtool check metrics on the bridged node's /metrics").isBlank();
        assertThat(v.exit()).isZero();
    }

    private static final String PYTHON = "/usr/bin/python3";

    private static final String ENGINE = """
            import json, sys, zmq, msgpack
            ctx = zmq.Context()
            s = ctx.socket(zmq.DEALER)
            s.connect(sys.argv[1])
            rid = sys.argv[2]
            replies = []
            n = 0
            def call(hook, args):
                global n
                n += 1
                s.send(msgpack.packb({"v": 1, "id": n, "hook": hook, "args": args}))
                if not s.poll(120000):
                    raise SystemExit("no reply to " + hook)
                r = msgpack.unpackb(s.recv())
                replies.append(r)
                return r
            params = {"remote_dp_size": 1, "remote_tp_size": 1, "transfer_id": "tx-bridged-1",
                      "do_remote_decode": True, "do_remote_prefill": False,
                      "remote_engine_id": None, "remote_block_ids": None}
            call("hello", {"kv_role": "kv_producer", "mode": "write"})
            call("add_request", {"request_id": rid, "num_prompt_tokens": 40, "prompt_token_ids_len": 40,
                                 "kv_transfer_params": params})
            call("get_num_new_matched_tokens", {"request_id": rid, "num_computed_tokens": 0})
            call("update_state_after_alloc", {"request_id": rid, "block_ids": [[3, 4, 5]], "num_external_tokens": 0})
            call("build_connector_meta", {"step": 1})
            call("start_load_kv", {})
            call("save_kv_layer", {"layer_name": "model.layers.0.self_attn.attn"})
            call("wait_for_save", {})
            call("get_finished", {})
            call("request_finished", {"request_id": rid, "status": "FINISHED_LENGTH_CAPPED", "block_ids": [[3, 4, 5]]})
            call("update_connector_output", {"finished_sending": None, "finished_recving": None})
            call("no_such_hook", {})
            print(json.dumps(replies, default=str))
            """;

    @TempDir
    Path dir;

    @Test
    @Order(1)
    void aPythonEngineDrivesTheNodeOverTheBridge() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isExecutable(Path.of(PYTHON)), PYTHON + " is missing");
        int base = TestNodes.freePortBase(2);
        NodeService p = NodeService.start(TestNodes.options("P0",
                TestNodes.config(Role.PRODUCER, TransferMode.WRITE, base, base + 1), dir.resolve("P0"))
                .withEngine(NodeOptions.EngineKind.BRIDGE));
        String rid = "cmpl-bridged-request-0-0000abcd";
        String stdout;
        try {
            assertThat(p.bridge().endpoint()).startsWith("tcp://127.0.0.1:");
            Path script = dir.resolve("engine.py");
            Files.writeString(script, ENGINE);
            Process py = new ProcessBuilder(PYTHON, script.toString(), p.bridge().endpoint(), rid)
                    .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            stdout = new String(py.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(py.waitFor(120, TimeUnit.SECONDS)).isTrue();
            assertThat(py.exitValue()).as(stdout).isZero();
            // the bridge's counts in /v1/status and /metrics: 12 calls, 10 hooks handed to the node, every reply delivered
            Map<?, ?> bridge = (Map<?, ?>) p.status().toJson().get("bridge");
            assertThat(bridge).as("/v1/status has the bridge's counts").isNotNull();
            assertThat(bridge.get("calls_received")).isEqualTo(12L);
            assertThat(bridge.get("calls_handed_off")).isEqualTo(10L);
            assertThat(bridge.get("replies_undeliverable")).isEqualTo(0L);
            assertThat(bridge.get("replies_undeliverable_applied")).isEqualTo(0L);
            assertThat(bridge.get("replies_held")).isEqualTo(0L);
            try (io.kvledger.node.metrics.NodeMetrics metrics = io.kvledger.node.metrics.NodeMetrics.attach(p.loop(), p.inbox(),
                    p.clock(), p.dataPlane())) {
                String scrape = metrics.scrape();
                bridgedScrape = scrape;
                assertThat(scrape).containsPattern("(?m)^kvledger_bridge_calls_received_total\\{[^}]*} 12\\.0$")
                        .containsPattern("(?m)^kvledger_bridge_replies_undeliverable_total\\{[^}]*} 0\\.0$")
                        .containsPattern("(?m)^kvledger_bridge_replies_undeliverable_applied_total\\{[^}]*} 0\\.0$")
                        .containsPattern("(?m)^kvledger_bridge_replies_held\\{[^}]*} 0\\.0$");
            }
        } finally {
            p.close();
        }
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> replies = (List<Map<String, Object>>) Json.parse(stdout.trim());
        assertThat(replies).hasSize(12);
        for (Map<String, Object> r : replies.subList(0, 11)) {
            assertThat(r.get("ok")).as("%s", r).isEqualTo(true);
        }
        Map<?, ?> matched = (Map<?, ?>) replies.get(2).get("result");
        assertThat(matched.get("num_tokens")).isEqualTo(0L);
        assertThat(matched.get("load_async")).isEqualTo(false);
        Map<?, ?> finished = (Map<?, ?>) replies.get(9).get("result");
        assertThat(finished.get("delay_free")).isEqualTo(true);
        assertThat(((Map<?, ?>) finished.get("kv_transfer_params")).get("transfer_id")).isEqualTo("tx-bridged-1");
        assertThat(((Map<?, ?>) finished.get("kv_transfer_params")).get("remote_block_ids")).isEqualTo(List.of(List.of(3L, 4L, 5L)));
        assertThat(replies.get(11).get("ok")).isEqualTo(false);
        assertThat(String.valueOf(replies.get(11).get("error"))).contains("no_such_hook");

        // Every engine hook the node answered is in its journal, in call order, then its shutdown.
        List<String> inputs = new ArrayList<>();
        try (JournalReader r = JournalReader.open(dir.resolve("P0"))) {
            for (JournalEntry e : r) {
                if (e instanceof JournalEntry.Input in && !(in.event() instanceof NodeEvent.Tick)) {
                    inputs.add(in.event().getClass().getSimpleName());
                }
            }
        }
        assertThat(inputs).containsExactly("RequestAdmitted", "MatchedTokensQueried", "BlocksAllocated", "StepScheduled",
                "LoadStarted", "LayerSaved", "SaveWaited", "FinishedPolled", "RequestFinished", "ConnectorOutputReceived",
                "ShutDown");
    }
}
