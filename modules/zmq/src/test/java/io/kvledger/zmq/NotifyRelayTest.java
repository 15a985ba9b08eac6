package io.kvledger.zmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.wire.Json;
import io.kvledger.wire.NotifyEncoder;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.zeromq.ZMQ;

/** The tap's relay on real JeroMQ sockets: forwards every message byte for byte and reports what it decoded to. */
class NotifyRelayTest {

    private static final NotifyEncoder ENC = new NotifyEncoder();

    /** One wire vector of notify.json (the frames Python's msgpack produced, valid and malformed). */
    record Vector(String group, String name, byte[] bytes, String expect) {}

    @SuppressWarnings("unchecked")
    static List<Vector> notifyVectors() {
        String text;
        try (InputStream in = NotifyRelayTest.class.getResourceAsStream("/wire-vectors/notify.json")) {
            assertThat(in).as("the wire module's test resource wire-vectors/notify.json").isNotNull();
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        List<Vector> out = new ArrayList<>();
        for (Map.Entry<String, Object> g : ((Map<String, Object>) Json.parse(text)).entrySet()) {
            for (Object o : (List<Object>) g.getValue()) {
                Map<String, Object> m = (Map<String, Object>) o;
                String hex = (String) (m.containsKey("msgpack_hex") ? m.get("msgpack_hex") : m.get("raw_hex"));
                out.add(new Vector(g.getKey(), (String) m.get("name"), HexFormat.of().parseHex(hex), (String) m.get("expect")));
            }
        }
        return out;
    }

    /** Identity and frames of the next message a ROUTER receives (its receive timeout bounds the wait). */
    static List<byte[]> receive(ZMQ.Socket router) {
        List<byte[]> parts = new ArrayList<>();
        byte[] id = router.recv(0);
        assertThat(id).as("a message reached the target within its receive timeout").isNotNull();
        parts.add(id);
        while (router.hasReceiveMore()) {
            parts.add(router.recv(0));
        }
        return parts;
    }

    @Test
    void every_wire_vector_is_forwarded_byte_for_byte_and_reported_decoded_or_rejected() {
        List<Vector> vectors = notifyVectors();
        assertThat(vectors).hasSizeGreaterThan(10);
        Collector<NotifyRelay.Relayed> sink = new Collector<>();
        try (TestPeers peers = new TestPeers()) {
            ZMQ.Socket target = peers.router("tcp://127.0.0.1:*");
            String targetEndpoint = target.getLastEndpoint();
            try (NotifyRelay relay = NotifyRelay.open(NotifyListenerConfig.forEndpoint("tcp://127.0.0.1:*"), targetEndpoint,
                    16, sink)) {
                ZMQ.Socket sender = peers.dealer(relay.endpoint());
                for (Vector v : vectors) {
                    sender.send(v.bytes(), 0);
                }
                // a DEALER that adds an empty delimiter: forwarded as it is, rejected as BAD_FRAMING
                byte[] after = ENC.writeDone("tx-after-bad-frames");
                sender.sendMore(new byte[0]);
                sender.send(ENC.writeDone("tx-delimited"), 0);
                sender.send(after, 0);

                byte[] forwardingIdentity = null;
                for (Vector v : vectors) {
                    List<byte[]> got = receive(target);
                    assertThat(got).as(v.name()).hasSize(2);
                    assertThat(got.get(1)).as(v.name() + " forwarded byte for byte").isEqualTo(v.bytes());
                    if (forwardingIdentity == null) {
                        forwardingIdentity = got.get(0);
                    }
                    assertThat(got.get(0)).as("one forwarding DEALER per sender").isEqualTo(forwardingIdentity);
                }
                List<byte[]> delimited = receive(target);
                assertThat(delimited).hasSize(3);
                assertThat(delimited.get(1)).isEmpty();
                assertThat(delimited.get(2)).isEqualTo(ENC.writeDone("tx-delimited"));
                assertThat(receive(target).get(1)).isEqualTo(after);

                List<NotifyRelay.Relayed> relayed = sink.await(vectors.size() + 2, 10);
                for (int i = 0; i < vectors.size(); i++) {
                    Vector v = vectors.get(i);
                    NotifyRelay.Relayed r = relayed.get(i);
                    assertThat(r.forwarded()).as(v.name()).isTrue();
                    assertThat(r.target()).isEqualTo(targetEndpoint);
                    assertThat(r.frame().payload()).as(v.name()).isEqualTo(v.bytes());
                    NodeEvent e = r.frame().event();
                    switch (v.group()) {
                        case "valid" -> assertThat(e).as(v.name()).isNotInstanceOf(NodeEvent.FrameRejected.class);
                        case "raw" -> assertThat(e).as(v.name()).isInstanceOf(NodeEvent.RawCompletionReceived.class);
                        default -> {
                            if (v.expect().startsWith("reject:") || v.expect().equals("reject")) {
                                assertThat(e).as(v.name()).isInstanceOf(NodeEvent.FrameRejected.class);
                            }
                        }
                    }
                }
                NotifyRelay.Relayed bad = relayed.get(vectors.size());
                assertThat(bad.frame().event()).isInstanceOfSatisfying(NodeEvent.FrameRejected.class,
                        fr -> assertThat(fr.reason()).startsWith("BAD_FRAMING"));
                assertThat(bad.forwarded()).isTrue();
                assertThat(relayed.get(vectors.size() + 1).frame().event()).isEqualTo(new NodeEvent.WriteDoneReceived(
                        relayed.get(vectors.size() + 1).frame().atNs(), "tx-after-bad-frames"));
                assertThat(relay.isRunning()).isTrue();
                assertThat(relay.forwarded()).isEqualTo(vectors.size() + 2);
                assertThat(relay.forwardFailed()).isZero();
                assertThat(relay.rejected()).isGreaterThanOrEqualTo(7);
            }
        }
    }

    @Test
    void each_sender_gets_its_own_forwarding_dealer_and_keeps_its_order() {
        Set<String> before = Threads.kvledger();
        Collector<NotifyRelay.Relayed> sink = new Collector<>();
        try (TestPeers peers = new TestPeers()) {
            ZMQ.Socket target = peers.router("tcp://127.0.0.1:*");
            try (NotifyRelay relay = NotifyRelay.open(NotifyListenerConfig.forEndpoint("tcp://127.0.0.1:*"),
                    target.getLastEndpoint(), 16, sink)) {
                ZMQ.Socket a = peers.dealer(relay.endpoint());
                ZMQ.Socket b = peers.dealer(relay.endpoint());
                for (int i = 0; i < 5; i++) {
                    a.send(ENC.release("a-" + i, 1), 0);
                    b.send(ENC.release("b-" + i, 1), 0);
                }
                Map<String, List<String>> byIdentity = new java.util.LinkedHashMap<>();
                for (int i = 0; i < 10; i++) {
                    List<byte[]> got = receive(target);
                    byIdentity.computeIfAbsent(HexFormat.of().formatHex(got.get(0)), k -> new ArrayList<>())
                            .add(new String(got.get(1), StandardCharsets.ISO_8859_1));
                }
                assertThat(byIdentity).hasSize(2);
                Set<String> firsts = new HashSet<>();
                for (List<String> frames : byIdentity.values()) {
                    assertThat(frames).hasSize(5);
                    String who = frames.get(0).contains("a-0") ? "a-" : "b-";
                    firsts.add(who);
                    for (int i = 0; i < 5; i++) {
                        assertThat(frames.get(i)).contains(who + i);
                    }
                }
                assertThat(firsts).containsExactlyInAnyOrder("a-", "b-");
                assertThat(sink.await(10, 10)).allMatch(NotifyRelay.Relayed::forwarded);
            }
        }
        Threads.assertNoneLeftBeyond(before);
    }

    @Test
    void a_port_in_use_is_a_clear_failure_and_leaves_no_thread() {
        Set<String> before = Threads.kvledger();
        try (TestPeers peers = new TestPeers()) {
            ZMQ.Socket taken = peers.router("tcp://127.0.0.1:*");
            assertThatThrownBy(() -> NotifyRelay.open(NotifyListenerConfig.forEndpoint(taken.getLastEndpoint()),
                    "tcp://127.0.0.1:1", 4, r -> true))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("cannot bind notify relay at " + taken.getLastEndpoint());
        }
        Threads.assertNoneLeftBeyond(before);
    }
}
