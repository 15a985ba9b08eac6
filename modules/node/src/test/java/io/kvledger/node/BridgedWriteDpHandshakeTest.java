package io.kvledger.node;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A bridged WRITE prefill whose decode has DP 2, rank 1 answering its handshake late: the reply
 * to the {@code save_kv_layer} that started the handshakes waits for both ranks (the Python
 * worker busy-waits there), so the next layer's write for a decode on rank 1 finds its session.
 * Before, the reply came at once, rank 0 answered, the next layer was posted to rank 1's session
 * still handshaking, failed with no session (WRITE_FAILED, self-ACK) and the decode waited for
 * good (a one-in-sixteen failure of {@code ProxyDpFakeEnginesTest}).
 */
class BridgedWriteDpHandshakeTest {

    private static final String PYTHON = "/usr/bin/python3";

    /** argv: bridge endpoint, request id, transfer id, the producer's notify endpoint, layer names (comma-separated). */
    private static final String ENGINE = """
            import json, sys, time, zmq, msgpack
            ctx = zmq.Context()
            s = ctx.socket(zmq.DEALER)
            s.connect(sys.argv[1])
            rid, tid, notify, layers = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5].split(",")
            replies = []
            n = 0
            def call(hook, args):
                global n
                n += 1
                s.send(msgpack.packb({"v": 1, "id": n, "hook": hook, "args": args}))
                if not s.poll(120000):
                    raise SystemExit("no reply to " + hook)
                r = msgpack.unpackb(s.recv())
                if not r.get("ok"):
                    raise SystemExit("%s: %s" % (hook, r))
                replies.append(hook)
                return r.get("result") or {}
            params = {"remote_dp_size": 2, "remote_tp_size": 1, "transfer_id": tid,
                      "do_remote_decode": True, "do_remote_prefill": False,
                      "remote_engine_id": None, "remote_block_ids": None}
            call("hello", {"kv_role": "kv_producer", "mode": "write"})
            call("add_request", {"request_id": rid, "num_prompt_tokens": 8, "prompt_token_ids_len": 8,
                                 "kv_transfer_params": params})
            call("get_num_new_matched_tokens", {"request_id": rid, "num_computed_tokens": 0})
            call("update_state_after_alloc", {"request_id": rid, "block_ids": [[3]], "num_external_tokens": 0})
            call("build_connector_meta", {"step": 1})
            # the decode (DP rank 1) allocated block 7 and tells this prefill rank
            d = ctx.socket(zmq.DEALER)
            d.setsockopt(zmq.LINGER, 1000)
            d.connect(notify)
            d.send(msgpack.packb({"type": "remote_blocks", "req_id": "cmpl-decode-side", "transfer_id": tid,
                                  "block_notify_list": [7], "decode_rank": 1}))
            call("start_load_kv", {})
            call("save_kv_layer", {"layer_name": layers[0]})
            time.sleep(0.3)
            for layer in layers[1:]:
                call("save_kv_layer", {"layer_name": layer})
            call("wait_for_save", {})
            done = []
            end = time.time() + 120
            while rid not in done and time.time() < end:
                done += call("get_finished", {}).get("finished_sending") or []
                time.sleep(0.02)
            d.close()
            print(json.dumps({"hooks": replies, "finished_sending": done}))
            """;

    @TempDir
    Path dir;

    @Test
    void theSaveThatStartedTheHandshakesWaitsForEveryDecodeRankSoItsWritesFindTheirSessions() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isExecutable(Path.of(PYTHON)), PYTHON + " is missing");
        int d = TestNodes.freePortBase(4);
        int p = TestNodes.freePortBase(2);
        List<NodeService> nodes = new ArrayList<>();
        String stdout;
        try {
            nodes.add(decode(0, d));
            NodeService prefill = NodeService.start(TestNodes.options("P0",
                    TestNodes.config(Role.PRODUCER, TransferMode.WRITE, p, p + 1), dir.resolve("P0"))
                    .withEngine(NodeOptions.EngineKind.BRIDGE));
            nodes.add(prefill);
            String rid = "cmpl-___prefill_addr_host:127.0.0.1,handshake:" + p + ",notify:" + (p + 1)
                    + "___decode_addr_host:127.0.0.1,handshake:" + d + ",notify:" + (d + 2) + "_"
                    + "0123456789abcdef0123456789abcdef-0-abcd1234";
            Path script = dir.resolve("engine.py");
            Files.writeString(script, ENGINE);
            Process py = new ProcessBuilder(PYTHON, script.toString(), prefill.bridge().endpoint(), rid, "tx-dp-write",
                    "tcp://127.0.0.1:" + (p + 1), String.join(",", prefill.options().config().layerNames()))
                    .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            // decode rank 0 answers; rank 1 comes up a while later (its handshake is still within its bound)
            assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> prefill.dataPlane().sessionsBound() >= 1))
                    .as("decode rank 0 handshook").isTrue();
            Thread.sleep(1000);
            nodes.add(decode(1, d));
            stdout = new String(py.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(py.waitFor(120, TimeUnit.SECONDS)).isTrue();
            assertThat(py.exitValue()).as(stdout).isZero();
        } finally {
            for (NodeService n : nodes.reversed()) {
                n.close();
            }
        }

        List<String> writes = new ArrayList<>();
        List<String> anomalies = new ArrayList<>();
        List<Boolean> outcomes = new ArrayList<>();
        boolean writeDone = false;
        try (JournalReader r = JournalReader.open(dir.resolve("P0"))) {
            for (JournalEntry e : r) {
                if (e instanceof JournalEntry.Derived x && x.effect() instanceof Effect.PostWrite w) {
                    writes.add(w.layerName() + "@" + w.sessionKey());
                } else if (e instanceof JournalEntry.Derived x && x.effect() instanceof Effect.Anomaly a) {
                    anomalies.add(a.kind() + ": " + a.detail());
                } else if (e instanceof JournalEntry.Derived x && x.effect() instanceof Effect.SendWriteDone) {
                    writeDone = true;
                } else if (e instanceof JournalEntry.Input i && i.event() instanceof NodeEvent.TransferCompleted t) {
                    outcomes.add(t.succeeded());
                }
            }
        }
        String journal = TestNodes.dump(dir.resolve("P0"));
        String session = "127.0.0.1:" + d + "_dp1";
        assertThat(anomalies).as(journal).noneMatch(a -> a.startsWith(AnomalyKind.WRITE_FAILED.name()));
        assertThat(writes).as(journal).hasSize(2).allSatisfy(w -> assertThat(w).endsWith("@" + session));
        assertThat(outcomes).as(journal).containsExactly(true, true);
        assertThat(writeDone).as(journal).isTrue();
        assertThat(stdout).contains("\"finished_sending\": [\"cmpl-");
    }

    private NodeService decode(int rank, int base) {
        NodeConfig c = NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).hostIp("127.0.0.1").handshakePort(base)
                .notifyPort(base + 2).dp(rank, 2, 2).deferTimeoutNs(NodeConfig.seconds(20))
                .transferTimeoutNs(NodeConfig.seconds(10)).build();
        return NodeService.start(TestNodes.options("D0-dp" + rank, c, dir.resolve("D0-dp" + rank))
                .withEngine(NodeOptions.EngineKind.BRIDGE));
    }
}
