package io.kvledger.zmq;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.wire.Json;
import io.kvledger.wire.bridge.BridgeNodeInfo;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Real Python (Debian's /usr/bin/python3 with pyzmq and msgpack) as the engine in front of the
 * engine bridge and a real reducer loop: a WRITE producer's request from admission to the freeing
 * of its blocks, then calls a buggy shim might make. Skipped, with the reason, only when that
 * interpreter or its modules are missing.
 */
class PythonBridgeInteropTest {

    @TempDir
    Path dir;

    /** Over loopback TCP, and over {@code ipc://} (ZMTP on a Unix socket, libzmq's own ipc). */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ipc"})
    void aPythonEngineDrivesTheNodeThroughTheBridge(String scheme) throws Exception {
        PythonPeer.assumeAvailable(dir);
        PythonPeer.copyScript(dir, "bridge_engine.py");
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).build();
        String rid = EngineBridgeServerTest.rid("py-1");
        String endpoint = scheme.equals("tcp") ? "tcp://127.0.0.1:0" : "ipc://" + UnixBridgeTransportTest.privateDir(dir).resolve("node.ipc");
        try (BridgeNodeLoop loop = new BridgeNodeLoop(cfg);
             EngineBridgeServer server = EngineBridgeServer.open(EngineBridgeConfig.forEndpoint(endpoint),
                     BridgeNodeInfo.of(cfg), loop);
             PythonPeer py = PythonPeer.start(dir, "bridge_engine.py", server.endpoint(), rid)) {
            List<Map<?, ?>> lines = new ArrayList<>();
            for (int i = 0; i < 15; i++) {
                lines.add((Map<?, ?>) Json.parse(py.line()));
            }
            py.awaitSuccess();
            for (Map<?, ?> l : lines) {
                assertThat(l.get("canonical")).as("%s reply is packed exactly as Python packs it", l.get("hook")).isEqualTo(true);
            }
            assertThat(lines.stream().map(l -> (Object) l.get("hook")).toList()).containsExactly("hello", "ping", "add_request",
                    "get_num_new_matched_tokens", "update_state_after_alloc", "build_connector_meta", "request_finished",
                    "get_finished", "update_connector_output", "save_kv_layer", "wait_for_save",
                    "get_num_new_matched_tokens", "getfinished", "raw-c1", "req-ping");

            Map<?, ?> hello = result(lines.get(0));
            assertThat(hello.get("kv_role")).isEqualTo("kv_producer");
            assertThat(hello.get("protocol")).isEqualTo(1L);
            assertThat(result(lines.get(1))).isEmpty();
            assertThat(result(lines.get(2))).isEmpty();
            assertThat(result(lines.get(3))).isEqualTo(Map.of("num_tokens", 0L, "load_async", false));
            Map<?, ?> meta = result(lines.get(5));
            Map<?, ?> save = (Map<?, ?>) ((Map<?, ?>) meta.get("reqs_to_save")).get(rid);
            assertThat(save.get("local_block_ids")).isEqualTo(List.of(List.of(1L, 2L)));
            assertThat(save.get("remote_host")).isEqualTo("10.0.0.2");
            Map<?, ?> fin = result(lines.get(6));
            assertThat(fin.get("delay_free")).isEqualTo(true);
            Map<?, ?> params = (Map<?, ?>) fin.get("kv_transfer_params");
            assertThat(params.get("transfer_id")).isEqualTo("tx-py-7f3a");
            // the handoff P returns for the proxy to copy to D (newest shape: grouped ids, the base ports as configured)
            assertThat(params.get("do_remote_prefill")).isEqualTo(true);
            assertThat(params.get("remote_block_ids")).isEqualTo(List.of(List.of(1L, 2L)));
            assertThat(params.get("remote_engine_id")).isEqualTo(cfg.engineId());
            assertThat(params.get("remote_handshake_port")).as("Python's default is the string").isEqualTo("6301");
            assertThat(params.get("remote_dp_rank_override")).isEqualTo(true);
            Map<?, ?> polled = result(lines.get(7));
            assertThat(polled.get("finished_sending")).isNull();
            assertThat(polled.get("load_error_blocks")).isEqualTo(List.of());
            assertThat(result(lines.get(8)).get("finished_sending")).isEqualTo(List.of(rid));
            assertThat(result(lines.get(9))).isEmpty();
            assertThat(result(lines.get(10))).isEmpty();
            assertThat(error(lines.get(11))).isEqualTo("WRONG_FIELD_TYPE: args.num_computed_tokens must be int, got str");
            assertThat(error(lines.get(12))).startsWith("UNKNOWN_TYPE: unknown hook \"getfinished\"");
            Map<?, ?> raw = (Map<?, ?>) lines.get(13).get("reply");
            assertThat(raw.get("id")).isNull();
            assertThat((String) raw.get("error")).startsWith("INVALID_FORMAT: ");
            assertThat(((Map<?, ?>) lines.get(14).get("reply")).get("id")).isEqualTo(9000L);
            assertThat(result(lines.get(14))).isEmpty();

            // what reached the reducer: Python's shapes became the core's events
            List<NodeEvent> applied = loop.applied();
            assertThat(applied).hasSize(9);
            NodeEvent.RequestAdmitted admitted = (NodeEvent.RequestAdmitted) applied.get(0);
            assertThat(admitted.requestId()).isEqualTo(rid);
            assertThat(admitted.params().asMap().keySet()).containsExactly("remote_dp_size", "remote_tp_size", "transfer_id",
                    "do_remote_decode", "do_remote_prefill", "remote_engine_id", "remote_block_ids", "ratio", "tags", "nested");
            assertThat(admitted.params().get("ratio")).isEqualTo(0.25);
            assertThat(admitted.params().get("tags")).isEqualTo(List.of("é", "日本"));
            assertThat(admitted.params().get("nested")).isEqualTo(Map.of("a", List.of(1L, -1L, 1L << 40)));
            assertThat(admitted.params().get("remote_engine_id")).isNull();
            assertThat(admitted.params().has("remote_engine_id")).isTrue();
            assertThat(applied.get(2)).isEqualTo(new NodeEvent.BlocksAllocated(applied.get(2).atNs(), rid, BlockGroups.single(1, 2), 0));
            assertThat(applied.get(4)).isEqualTo(new NodeEvent.RequestFinished(applied.get(4).atNs(), rid,
                    FinishStatus.FINISHED_LENGTH_CAPPED, BlockGroups.single(1, 2)));
            assertThat(server.rejected()).isEqualTo(3);
            assertThat(server.control()).isEqualTo(3);
            assertThat(server.timedOut()).isZero();
        }
    }

    /**
     * The vLLM bridge's drive client (its NodeBridge, from modules/vllm-bridge's source) over the
     * engine bridge's Unix socket, {@code unix://} (its own framing) and {@code ipc://} (a pyzmq
     * DEALER): each call answered, an unknown hook refused and the connection kept.
     */
    @ParameterizedTest
    @ValueSource(strings = {"unix", "ipc"})
    void theDriveClientCallsTheNodeOverAUnixSocket(String scheme) throws Exception {
        PythonPeer.assumeAvailable(dir);
        PythonPeer.copyScript(dir, "bridge_unix_engine.py");
        Path drivePy = Path.of("..", "vllm-bridge", "src", "kvledger_vllm", "drive.py").toAbsolutePath().normalize();
        assertThat(drivePy).as("the vLLM bridge's drive client, next to this module").exists();
        Path socket = UnixBridgeTransportTest.privateDir(dir).resolve("node.sock");
        NodeConfig cfg = NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).build();
        try (BridgeNodeLoop loop = new BridgeNodeLoop(cfg);
             EngineBridgeServer server = EngineBridgeServer.open(
                     EngineBridgeConfig.forEndpoint(scheme + "://" + socket), BridgeNodeInfo.of(cfg), loop);
             PythonPeer py = PythonPeer.start(dir, "bridge_unix_engine.py", server.endpoint(), drivePy.toString(), "200")) {
            List<Map<?, ?>> lines = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                lines.add((Map<?, ?>) Json.parse(py.line()));
            }
            py.awaitSuccess();
            assertThat(((Map<?, ?>) lines.get(0).get("result")).get("kv_role")).isEqualTo("kv_consumer");
            assertThat(lines.get(1).get("result")).isEqualTo(Map.of());
            assertThat(lines.get(2).get("calls")).isEqualTo(200L);
            assertThat((String) lines.get(3).get("error")).contains("UNKNOWN_TYPE: unknown hook \"getfinished\"");
            assertThat(lines.get(4).get("result")).isInstanceOf(Map.class);
            assertThat(loop.appliedCount()).isEqualTo(201);
            assertThat(server.rejected()).isEqualTo(1);
            assertThat(server.control()).isEqualTo(2);
        }
    }

    private static Map<?, ?> result(Map<?, ?> line) {
        Map<?, ?> reply = (Map<?, ?>) line.get("reply");
        assertThat(reply.get("ok")).as("%s: %s", line.get("hook"), reply.get("error")).isEqualTo(true);
        return (Map<?, ?>) reply.get("result");
    }

    private static String error(Map<?, ?> line) {
        Map<?, ?> reply = (Map<?, ?>) line.get("reply");
        assertThat(reply.get("ok")).isEqualTo(false);
        return (String) reply.get("error");
    }

    /** Puts one more script next to the ones {@link PythonPeer} copies (it imports nothing of theirs). */
}
