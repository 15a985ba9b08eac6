package io.kvledger.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.json.Json;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A shadow or drive node started without {@code --profile} runs the behaviour profile kvledger's
 * table of upstream versions gives its engine's vLLM, taken from the first scheduler stream of its
 * engine (shadow) or the engine's {@code hello} (drive), over real sockets from a Python process
 * (Debian's python3 with pyzmq and msgpack); one started with {@code --profile} refuses such an
 * engine as before.
 */
class ProfileFromEngineTest {

    private static final String PYTHON = "/usr/bin/python3";
    private static final String V239 = "0.11.1.dev5+g239b5ff30.d20260518";
    private static final String C3C2 = "3c201bf24f9a5a2176b72c1c01d5645fdec8a7d0";

    /** Pushes the recorder messages of argv[2] (a JSON list of [envelope, header, lines]) to argv[1]. */
    private static final String PUSHER = """
            import json, sys, zmq
            ctx = zmq.Context()
            s = ctx.socket(zmq.PUSH)
            s.setsockopt(zmq.LINGER, 120000)
            s.connect(sys.argv[1])
            for env, header, lines in json.loads(open(sys.argv[2]).read()):
                s.send_multipart([env.encode(), header.encode(), lines.encode()])
            s.close()
            ctx.term()
            """;

    /**
     * Calls hello on the bridge at argv[1] (tcp://, or unix:// with length-prefixed frames) with
     * each argument set of argv[2]; prints the replies.
     */
    private static final String HELLO = """
            import json, socket, struct, sys, zmq, msgpack
            if sys.argv[1].startswith("unix://"):
                u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                u.settimeout(120)
                u.connect(sys.argv[1][len("unix://"):])
                def exact(n):
                    b = b""
                    while len(b) < n:
                        c = u.recv(n - len(b))
                        if not c:
                            raise SystemExit("the node closed the connection")
                        b += c
                    return b
                def call(frame):
                    u.sendall(struct.pack(">I", len(frame)) + frame)
                    return exact(struct.unpack(">I", exact(4))[0])
            else:
                ctx = zmq.Context()
                s = ctx.socket(zmq.DEALER)
                s.connect(sys.argv[1])
                def call(frame):
                    s.send(frame)
                    if not s.poll(120000):
                        raise SystemExit("no reply to hello")
                    return s.recv()
            out = []
            for n, args in enumerate(json.loads(sys.argv[2]), 1):
                out.append(msgpack.unpackb(call(msgpack.packb({"v": 1, "id": n, "hook": "hello", "args": args}))))
            print(json.dumps(out, default=str))
            """;

    static final String HEADER = "{\"kind\":\"header\",\"type\":\"header\",\"format_version\":1,\"node_id\":\"P0\","
            + "\"origin\":\"vllm-bridge test\",\"kv_role\":\"kv_producer\",\"transfer_mode\":\"WRITE\",%s\"dp_rank\":0,"
            + "\"dp_size\":1,\"tp_rank\":0,\"tp_size\":1}";
    static final String ADMIT = "{\"kind\":\"input\",\"type\":\"request_admitted\",\"at_ns\":100,\"request_id\":\"r1\","
            + "\"num_prompt_tokens\":4,\"prompt_token_ids_len\":4,\"kv_transfer_params\":null}";
    static final String QUERY = "{\"kind\":\"input\",\"type\":\"matched_tokens_queried\",\"at_ns\":300,\"request_id\":\"r1\","
            + "\"num_computed_tokens\":0}";
    static final String MATCHED = "{\"kind\":\"derived\",\"type\":\"matched_tokens\",\"request_id\":\"r1\",\"count\":0,"
            + "\"load_async\":false}";

    @TempDir
    Path dir;

    @BeforeEach
    void python() {
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isExecutable(Path.of(PYTHON)), PYTHON + " is missing");
    }

    private static NodeConfig p0() {
        return TestNodes.config(Role.PRODUCER, TransferMode.WRITE, 6301, 61005);
    }

    private NodeService shadow(Path journal, boolean fromEngine) {
        return NodeService.start(TestNodes.options("P0", p0(), journal).withEngine(NodeOptions.EngineKind.SHADOW)
                .withProfileFromEngine(fromEngine));
    }

    private static List<String> message(String stream, String role, String headerKeys, String... lines) {
        String env = "{\"v\":1,\"stream\":\"" + stream + "\",\"role\":\"" + role + "\",\"dp\":0,\"tp\":0,\"first\":1,\"count\":"
                + lines.length + ",\"end\":true,\"dropped\":0}";
        return List.of(env, HEADER.formatted(headerKeys), String.join("\n", lines));
    }

    /**
     * A worker stream (refused, noted), the scheduler stream of a vLLM 239b5ff30 engine, then a
     * scheduler stream of a vLLM that newest models.
     */
    private List<List<String>> engines() {
        return List.of(
                message("w1", "worker", "", "{\"kind\":\"input\",\"type\":\"save_waited\",\"at_ns\":1}"),
                message("s1", "scheduler", "\"vllm_version\":\"" + V239 + "\",", ADMIT, QUERY, MATCHED),
                message("s2", "scheduler", "\"vllm_commit\":\"" + C3C2 + "\",", ADMIT));
    }

    private void push(NodeService node, List<List<String>> messages) throws Exception {
        Path script = dir.resolve("push.py");
        Files.writeString(script, PUSHER);
        Path data = dir.resolve("messages.json");
        Files.writeString(data, Json.write(messages));
        Process py = new ProcessBuilder(PYTHON, script.toString(), node.shadowServer().endpoint(), data.toString())
                .redirectErrorStream(true).start();
        String out = new String(py.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(py.waitFor(120, TimeUnit.SECONDS)).as(out).isTrue();
        assertThat(py.exitValue()).as(out).isZero();
        assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> node.shadowServer().messages() >= messages.size()))
                .as("the node read the messages").isTrue();
    }

    /** The reasons of the journal's frame_rejected inputs, and the names of its other inputs. */
    private static List<String> inputs(Path journal) {
        List<String> out = new ArrayList<>();
        try (JournalReader r = JournalReader.open(journal)) {
            for (JournalEntry e : r) {
                if (e instanceof JournalEntry.Input in) {
                    out.add(in.event() instanceof NodeEvent.FrameRejected f ? f.reason() : in.event().getClass().getSimpleName());
                }
            }
        }
        return out;
    }

    private static String profileOf(Path journal) {
        try (JournalReader r = JournalReader.open(journal)) {
            return r.header().config().behaviour().profile();
        }
    }

    @Test
    void aShadowNodeWithoutProfileTakesItsEnginesAndRefusesAnotherLater() throws Exception {
        Path journal = dir.resolve("P0");
        NodeService node = shadow(journal, true);
        try {
            assertThat(node.config().behaviour().profile()).isEqualTo("newest");
            push(node, engines());
            assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> node.status().shadow().inputs() == 2))
                    .as("the 239b5ff30 stream's two hook calls were applied").isTrue();
            assertThat(node.config().behaviour().profile()).isEqualTo("vllm-239b5ff30");
            assertThat(node.status().shadow().divergences()).isZero();
        } finally {
            node.close();
        }
        // the journal opened at start (newest) was replaced; the note written before the stream came along
        assertThat(profileOf(journal)).isEqualTo("vllm-239b5ff30");
        assertThat(inputs(journal)).containsExactly(
                "kvledger shadow: stream w1 (worker P0) refused: a worker stream: a shadow node follows the scheduler of its"
                        + " rank (record workers to a file)",
                "RequestAdmitted", "MatchedTokensQueried",
                "kvledger shadow: stream s2 (scheduler P0) refused: not this node's engine: profile newest (the recorded "
                        + "vLLM's) != vllm-239b5ff30 (the node follows stream s1 of P0 (vLLM " + V239 + "); start a node "
                        + "with --profile newest for this one)",
                "ShutDown");
        // restarted without --profile, it recovers under its journal's profile
        NodeService again = shadow(journal, true);
        try {
            assertThat(again.config().behaviour().profile()).isEqualTo("vllm-239b5ff30");
            assertThat(again.recovery().inputs()).isEqualTo(5);
        } finally {
            again.close();
        }
        // with --profile newest the journal is another configuration's
        assertThatThrownBy(() -> shadow(journal, false)).hasMessageContaining("belongs to another node or configuration");
    }

    @Test
    void aShadowNodeWithProfileRefusesAnEngineOfAnotherOne() throws Exception {
        Path journal = dir.resolve("P0");
        NodeService node = shadow(journal, false);
        try {
            push(node, engines());
            assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> node.status().shadow().inputs() == 1))
                    .as("the newest stream's hook call was applied").isTrue();
            assertThat(node.config().behaviour().profile()).isEqualTo("newest");
        } finally {
            node.close();
        }
        assertThat(profileOf(journal)).isEqualTo("newest");
        List<String> in = inputs(journal);
        assertThat(in).hasSize(4);
        assertThat(in.get(1)).isEqualTo("kvledger shadow: stream s1 (scheduler P0) refused: not this node's engine: profile "
                + "vllm-239b5ff30 (the recorded vLLM's, " + V239 + ") != newest (start the node with --profile vllm-239b5ff30)");
        assertThat(in.get(2)).isEqualTo("RequestAdmitted");
    }

    @SuppressWarnings("unchecked")
    private List<Map<String, Object>> hellos(NodeService node, String argsJson) throws Exception {
        Path script = dir.resolve("hello.py");
        Files.writeString(script, HELLO);
        Process py = new ProcessBuilder(PYTHON, script.toString(), node.bridge().endpoint(), argsJson)
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(py.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(py.waitFor(120, TimeUnit.SECONDS)).as(out).isTrue();
        assertThat(py.exitValue()).as(out).isZero();
        return (List<Map<String, Object>>) Json.parse(out.strip());
    }

    @Test
    void aDriveNodeWithoutProfileTakesTheOneItsEnginesHelloNames() throws Exception {
        Path journal = dir.resolve("D");
        NodeService node = NodeService.start(TestNodes.options("P0", p0(), journal).withEngine(NodeOptions.EngineKind.DRIVE)
                .withProfileFromEngine(true));
        List<Map<String, Object>> replies;
        try {
            replies = hellos(node, "[{\"kv_role\":\"kv_consumer\",\"vllm_version\":\"" + V239 + "\"},"
                    + "{\"kv_role\":\"kv_producer\",\"mode\":\"write\",\"vllm_version\":\"" + V239 + "\"},"
                    + "{\"kv_role\":\"kv_producer\",\"vllm_commit\":\"" + C3C2 + "\"}]");
            assertThat(node.config().behaviour().profile()).isEqualTo("vllm-239b5ff30");
        } finally {
            node.close();
        }
        // another role's engine gives the node nothing, its profile included
        assertThat(replies.get(0).get("ok")).as("%s", replies).isEqualTo(false);
        assertThat(String.valueOf(replies.get(0).get("error"))).contains("kv_role kv_consumer != kv_producer")
                .contains("this node runs newest");
        assertThat(replies.get(1).get("ok")).as("%s", replies).isEqualTo(true);
        assertThat(((Map<?, ?>) replies.get(1).get("result")).get("profile")).isEqualTo("vllm-239b5ff30");
        // the first engine settled it: a hello of another vLLM is refused as before
        assertThat(replies.get(2).get("ok")).isEqualTo(false);
        assertThat(String.valueOf(replies.get(2).get("error"))).contains("is modelled by profile newest, this node runs "
                + "vllm-239b5ff30 (start it with --profile newest)");
        assertThat(profileOf(journal)).isEqualTo("vllm-239b5ff30");
    }

    /**
     * Over a Unix socket the node loop reads the hello itself (it serves the socket while idle): it
     * starts over with the hello's profile on its own thread, without waiting for itself.
     */
    @Test
    void aDriveNodeOverAUnixSocketTakesTheProfileOnItsLoopThread() throws Exception {
        Path journal = dir.resolve("D");
        NodeService node = NodeService.start(TestNodes.options("P0", p0(), journal).withEngine(NodeOptions.EngineKind.DRIVE)
                .withProfileFromEngine(true).withBridge("unix://" + journal.toAbsolutePath().resolve("bridge.sock")));
        List<Map<String, Object>> replies;
        try {
            assertThat(node.bridge().servedByCaller()).isTrue();
            replies = hellos(node, "[{\"kv_role\":\"kv_producer\",\"mode\":\"write\",\"vllm_version\":\"" + V239
                    + "\"}]");
            assertThat(node.config().behaviour().profile()).isEqualTo("vllm-239b5ff30");
        } finally {
            node.close();
        }
        assertThat(replies.get(0).get("ok")).as("%s", replies).isEqualTo(true);
        assertThat(((Map<?, ?>) replies.get(0).get("result")).get("profile")).isEqualTo("vllm-239b5ff30");
        assertThat(profileOf(journal)).isEqualTo("vllm-239b5ff30");
    }

    @Test
    void aDriveNodeWithProfileRefusesAHelloOfAnotherVllm() throws Exception {
        NodeService node = NodeService.start(TestNodes.options("P0", p0(), dir.resolve("D"))
                .withEngine(NodeOptions.EngineKind.DRIVE));
        List<Map<String, Object>> replies;
        try {
            replies = hellos(node, "[{\"kv_role\":\"kv_producer\",\"vllm_version\":\"" + V239 + "\"}]");
            assertThat(node.config().behaviour().profile()).isEqualTo("newest");
        } finally {
            node.close();
        }
        assertThat(replies.get(0).get("ok")).isEqualTo(false);
        assertThat(String.valueOf(replies.get(0).get("error"))).contains("is modelled by profile vllm-239b5ff30, this node "
                + "runs newest (start it with --profile vllm-239b5ff30)");
    }
}
