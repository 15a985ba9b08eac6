package io.kvledger.zmq;

import io.kvledger.core.model.TransferId;
import io.kvledger.wire.Json;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.wire.EffectFrames;
import io.kvledger.wire.NotifyEncoder;
import io.kvledger.wire.PythonNotifyListener;
import io.kvledger.wire.Registration;
import io.kvledger.wire.RegistrationCodec;
import java.io.OutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * kvledger against real Python peers (pyzmq and msgpack from Debian, run by /usr/bin/python3),
 * building and checking frames the way vLLM's MoRIIO code does. Skipped, with the reason, only
 * when that interpreter or its modules are missing.
 */
class PythonInteropTest {

    @TempDir
    Path dir;

    private static final HexFormat HEX = HexFormat.of();

    @Test
    void aPythonDealersFramesBecomeTheRightEvents() throws Exception {
        PythonPeer.assumeAvailable(dir);
        Collector<InboundFrame> sink = new Collector<>();
        try (NotifyListenerAdapter l = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint("tcp://127.0.0.1:*"), sink);
             PythonPeer py = PythonPeer.start(dir, "notify_sender.py", l.endpoint())) {
            List<String> names = new ArrayList<>();
            List<byte[]> sent = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                Map<?, ?> line = (Map<?, ?>) Json.parse(py.line());
                names.add((String) line.get("name"));
                sent.add(HEX.parseHex((String) line.get("hex")));
            }
            py.awaitSuccess();
            List<InboundFrame> got = sink.await(12, 30);
            for (int i = 0; i < 12; i++) {
                assertThat(got.get(i).payload()).as("frame %s arrives as sent", names.get(i)).isEqualTo(sent.get(i));
                assertThat(got.get(i).frames()).hasSize(1);
            }
            long t = 0;
            List<Object> events = new ArrayList<>();
            for (InboundFrame f : got) {
                events.add(normalize(f.event()));
            }
            assertThat(events).containsExactly(
                    new NodeEvent.RemoteBlocksReceived(t, "cmpl-py-1-0-1a2b3c4d", "tx-py-1", List.of(0, 1, 127, 128, 65535, 65536), 3, false),
                    new NodeEvent.ReleaseReceived(t, "tx-py-1", 8),
                    new NodeEvent.ReleaseReceived(t, "tx-py-2", 1),
                    new NodeEvent.ReleaseReceived(t, "tx-py-old", null),
                    new NodeEvent.WriteDoneReceived(t, "tx-py-3"),
                    new NodeEvent.RawCompletionReceived(t, "tx-py-raw"),
                    new NodeEvent.RemoteBlocksReceived(t, "d-py", "tx-py-legacy", List.of(5, 6), 0, true),
                    new NodeEvent.RemoteBlocksReceived(t, "d-e", "tx-py-empty", List.of(), 0, false),
                    List.of("NOT_UTF8", true),
                    List.of("UNKNOWN_TYPE", true),
                    List.of("BIN_KEY", true),
                    new NodeEvent.WriteDoneReceived(t, "tx-py-last"));
            NotifyEncoder enc = new NotifyEncoder();
            assertThat(HEX.formatHex(enc.remoteBlocks("cmpl-py-1-0-1a2b3c4d", "tx-py-1", List.of(0, 1, 127, 128, 65535, 65536), 3)))
                    .as("Java encodes the same dict to Python's bytes").isEqualTo(HEX.formatHex(sent.get(0)));
            assertThat(enc.release("tx-py-1", 8)).isEqualTo(sent.get(1));
            assertThat(enc.release("tx-py-old", null)).isEqualTo(sent.get(3));
            assertThat(enc.writeDone("tx-py-3")).isEqualTo(sent.get(4));
            assertThat(enc.remoteBlocksLegacy("d-py", "tx-py-legacy", List.of(5, 6))).isEqualTo(sent.get(6));
            assertThat(l.isRunning()).isTrue();
        }
    }

    /** Events without their time stamps, and rejections as (reason code name, kills Python). */
    private static Object normalize(NodeEvent e) {
        return switch (e) {
            case NodeEvent.RemoteBlocksReceived r -> new NodeEvent.RemoteBlocksReceived(0, r.reqId(), r.transferId(),
                    List.copyOf(r.blockNotifyList()), r.decodeRank(), r.legacyWithoutType());
            case NodeEvent.ReleaseReceived r -> new NodeEvent.ReleaseReceived(0, r.transferId(), r.consumerTpSize());
            case NodeEvent.WriteDoneReceived r -> new NodeEvent.WriteDoneReceived(0, r.transferId());
            case NodeEvent.RawCompletionReceived r -> new NodeEvent.RawCompletionReceived(0, r.completionId());
            case NodeEvent.FrameRejected r -> List.of(r.reason().substring(0, r.reason().indexOf(':')), r.wouldKillPythonListener());
            default -> e;
        };
    }

    @Test
    void aBurstFromPythonArrivesCompleteAndInOrder() throws Exception {
        PythonPeer.assumeAvailable(dir);
        Collector<InboundFrame> sink = new Collector<>();
        int n = 2000;
        try (NotifyListenerAdapter l = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint("tcp://127.0.0.1:*"), sink);
             PythonPeer py = PythonPeer.start(dir, "notify_sender.py", l.endpoint(), Integer.toString(n))) {
            assertThat(py.line()).isEqualTo("{\"sent\": " + n + "}");
            py.awaitSuccess();
            List<InboundFrame> got = sink.await(n, 30);
            for (int i = 0; i < n; i++) {
                assertThat(((NodeEvent.RemoteBlocksReceived) got.get(i).event()).transferId()).isEqualTo("tx-burst-" + i);
            }
            assertThat(l.rejected()).isZero();
        }
    }

    @Test
    void aPythonRouterLoadsThePublishersFrames() throws Exception {
        PythonPeer.assumeAvailable(dir);
        List<Effect.Notify> effects = List.of(
                new Effect.SendRemoteBlocks("127.0.0.1", 0, "cmpl-j-1", TransferId.of("tx-j-1"), List.of(0, 1, 127, 128, 65535, 65536, 1 << 20), 3),
                new Effect.SendRelease(Effect.Sender.WORKER, "127.0.0.1", 0, TransferId.of("tx-j-1"), 8),
                new Effect.SendRelease(Effect.Sender.SCHEDULER, "127.0.0.1", 0, TransferId.of("tx-é-日本"), 1),
                new Effect.SendWriteDone("127.0.0.1", 0, "tx-j-2"),
                new Effect.SendRemoteBlocks("127.0.0.1", 0, "d-e", TransferId.of("tx-j-empty"), null, 0));
        Collector<AdapterEvent> events = new Collector<>();
        try (PythonPeer py = PythonPeer.start(dir, "notify_receiver.py", Integer.toString(effects.size()));
             NotifyPublisher pub = NotifyPublisher.open(PublisherConfig.DEFAULT, events)) {
            int port = ((Number) ((Map<?, ?>) Json.parse(py.line())).get("port")).intValue();
            EffectFrames reference = new EffectFrames();
            List<byte[]> expected = new ArrayList<>();
            for (Effect.Notify e : effects) {
                Effect.Notify at = retarget(e, port);
                expected.add(reference.encode(at).frame());
                assertThat(pub.publish(at)).isTrue();
            }
            List<Map<?, ?>> lines = new ArrayList<>();
            for (int i = 0; i < effects.size(); i++) {
                lines.add((Map<?, ?>) Json.parse(py.line()));
            }
            py.awaitSuccess();
            for (int i = 0; i < lines.size(); i++) {
                Map<?, ?> m = lines.get(i);
                assertThat(m.get("error")).as("python error on frame %d: %s", i, m).isNull();
                assertThat(m.get("frames")).as("(identity, msg): one frame, no delimiter").isEqualTo(2L);
                assertThat(m.get("hex")).isEqualTo(HEX.formatHex(expected.get(i)));
            }
            assertThat(lines.get(0).get("keys")).isEqualTo(List.of("req_id", "transfer_id", "block_notify_list", "decode_rank", "type"));
            assertThat(pairs(lines.get(0).get("loads"))).containsExactly(
                    List.of("req_id", "cmpl-j-1"), List.of("transfer_id", "tx-j-1"),
                    List.of("block_notify_list", List.of(0L, 1L, 127L, 128L, 65535L, 65536L, 1048576L)),
                    List.of("decode_rank", 3L), List.of("type", "remote_blocks"));
            assertThat(lines.get(1).get("keys")).isEqualTo(List.of("type", "transfer_id", "consumer_tp_size"));
            assertThat(pairs(lines.get(2).get("loads"))).contains(List.of("transfer_id", "tx-é-日本"));
            assertThat(pairs(lines.get(3).get("loads"))).containsExactly(List.of("type", "write_done"), List.of("transfer_id", "tx-j-2"));
            assertThat(pairs(lines.get(4).get("loads"))).contains(List.of("block_notify_list", List.of()));
            assertThat(events.items()).isEmpty();
        }
    }

    private static Effect.Notify retarget(Effect.Notify e, int port) {
        return switch (e) {
            case Effect.SendRemoteBlocks s -> new Effect.SendRemoteBlocks(s.host(), port, s.reqId(), s.transferId(), s.blockNotifyList(), s.decodeRank());
            case Effect.SendRelease s -> new Effect.SendRelease(s.sender(), s.host(), port, s.transferId(), s.consumerTpSize());
            case Effect.SendWriteDone s -> new Effect.SendWriteDone(s.host(), port, s.transferId());
            case Effect.SendWriteFailed s -> new Effect.SendWriteFailed(s.host(), port, s.transferId(), s.reason());
        };
    }

    /** The [key, value] pairs of a {"$map": [...]} from common.to_json. */
    @SuppressWarnings("unchecked")
    private static List<Object> pairs(Object json) {
        return (List<Object>) ((Map<?, ?>) json).get("$map");
    }

    @Test
    void aPythonProxyLoadsTheRegistrationHeartbeat() throws Exception {
        PythonPeer.assumeAvailable(dir);
        Registration reg = new Registration("D", "10.0.0.2:8200", Registration.zmqAddress("10.0.0.2", 6301, 61005), 1, 8, "READ");
        try (PythonPeer py = PythonPeer.start(dir, "notify_receiver.py", "2")) {
            int port = ((Number) ((Map<?, ?>) Json.parse(py.line())).get("port")).intValue();
            try (RegistrationHeartbeat hb = RegistrationHeartbeat.start("tcp://127.0.0.1:" + port, reg, Duration.ofMillis(50),
                    EventSink.discarding(), System::nanoTime)) {
                for (int i = 0; i < 2; i++) {
                    Map<?, ?> m = (Map<?, ?>) Json.parse(py.line());
                    assertThat(m.get("error")).as("port %d, heartbeats sent %d, failed %d", port, hb.sent(), hb.failed()).isNull();
                    assertThat(m.get("frames")).isEqualTo(2L);
                    assertThat(m.get("keys")).isEqualTo(List.of("type", "http_address", "zmq_address", "dp_size", "tp_size", "transfer_mode"));
                    assertThat(pairs(m.get("loads"))).containsExactly(List.of("type", "D"), List.of("http_address", "10.0.0.2:8200"),
                            List.of("zmq_address", "host:10.0.0.2,handshake:6301,notify:61005"), List.of("dp_size", 1L),
                            List.of("tp_size", 8L), List.of("transfer_mode", "READ"));
                    assertThat(m.get("hex")).isEqualTo(
                            "86a474797065a144ac687474705f61646472657373ad31302e302e302e323a38323030ab7a6d715f61646472657373d929686f73743a31302e302e302e322c68616e647368616b653a363330312c6e6f746966793a3631303035a764705f73697a6501a774705f73697a6508ad7472616e736665725f6d6f6465a452454144");
                }
                assertThat(HEX.formatHex(new RegistrationCodec().encode(reg))).isEqualTo(
                        "86a474797065a144ac687474705f61646472657373ad31302e302e302e323a38323030ab7a6d715f61646472657373d929686f73743a31302e302e302e322c68616e647368616b653a363330312c6e6f746966793a3631303035a764705f73697a6501a774705f73697a6508ad7472616e736665725f6d6f6465a452454144");
            }
            py.awaitSuccess();
        }
    }

    @Test
    void aPythonHandshakeClientGetsTwoTwoFrameReplies() throws Exception {
        PythonPeer.assumeAvailable(dir);
        Collector<AdapterEvent> served = new Collector<>();
        try (HandshakeServer server = HandshakeServer.open("tcp://127.0.0.1:*", HandshakeTest.META, HandshakeTest.LAYERS, served, System::nanoTime);
             PythonPeer py = PythonPeer.start(dir, "handshake_client.py", server.endpoint())) {
            Map<?, ?> m = (Map<?, ?>) Json.parse(py.line());
            py.awaitSuccess();
            assertThat(m.get("error")).as("python: %s", m).isNull();
            assertThat(m.get("metadata_keys")).isEqualTo(List.of("engine_id", "agent_metadata", "kv_caches_base_addr", "num_blocks",
                    "block_len", "attn_backend_name"));
            assertThat(pairs(m.get("metadata"))).containsExactly(
                    List.of("engine_id", "10.0.0.1:6301"),
                    List.of("agent_metadata", Map.of("$bin", "00112233445566778899aabbccddeeff")),
                    List.of("kv_caches_base_addr", List.of(140234567680000L, 140234601234432L)),
                    List.of("num_blocks", 4096L), List.of("block_len", 262144L), List.of("attn_backend_name", "ROCM_AITER_FA"));
            assertThat(pairs(m.get("layers"))).containsExactly(
                    List.of("model.layers.0.self_attn.attn", List.of(Map.of("$bin", "deadbeef01"))),
                    List.of("model.layers.1.self_attn.attn", List.of(Map.of("$bin", "deadbeef02"))));
            assertThat(served.await(1, 10).get(0)).isInstanceOf(AdapterEvent.HandshakeServed.class);
        }
    }

    @Test
    void theModelOfThePythonListenerAgreesWithPython() throws Exception {
        PythonPeer.assumeAvailable(dir);
        List<byte[]> frames = VerdictFrames.generate(0x5eedL, Integer.getInteger("kvledger.verdict.frames", 3000));
        List<String> outcomes = new ArrayList<>();
        try (PythonPeer py = PythonPeer.start(dir, "listener_verdict.py")) {
            Thread feeder = new Thread(() -> {
                try (OutputStream in = py.stdin()) {
                    for (byte[] f : frames) {
                        in.write((HEX.formatHex(f) + "\n").getBytes(StandardCharsets.US_ASCII));
                    }
                    in.write("END\n".getBytes(StandardCharsets.US_ASCII));
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            feeder.start();
            for (int i = 0; i < frames.size(); i++) {
                outcomes.add(py.line());
            }
            feeder.join();
            py.awaitSuccess();
        }
        List<String> mismatches = new ArrayList<>();
        for (int i = 0; i < frames.size(); i++) {
            PythonNotifyListener.Verdict v = PythonNotifyListener.verdict(frames.get(i));
            if (!v.outcome().name().equals(outcomes.get(i))) {
                mismatches.add("frame " + i + " " + HEX.formatHex(frames.get(i)) + ": python " + outcomes.get(i) + ", model " + v);
            }
        }
        assertThat(mismatches).as("model vs real msgpack + listener logic").isEmpty();
        assertThat(outcomes).contains("REMOTE_BLOCKS", "WRITE_DONE", "RELEASE", "COMPLETION", "RAISES");
    }
}
