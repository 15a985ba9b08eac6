package io.kvledger.zmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.wire.DecodeResult;
import io.kvledger.wire.bridge.BridgeCodec;
import io.kvledger.wire.bridge.BridgeNodeInfo;
import io.kvledger.wire.bridge.BridgeReply;
import io.kvledger.wire.bridge.BridgeRequest;
import io.kvledger.wire.bridge.HookCall;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The engine bridge over a Unix domain socket ({@code unix://}), in front of a real reducer loop. */
class UnixBridgeTransportTest {

    @TempDir
    Path tmp;

    private final NodeConfig cfg = NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).build();

    /** A directory only this user may write, as the transport asks. */
    private Path privateDir() throws IOException {
        Path d = tmp.resolve("run");
        Files.createDirectory(d);
        Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwx------"));
        return d;
    }

    private EngineBridgeConfig at(Path socket) {
        return EngineBridgeConfig.forEndpoint("unix://" + socket.toAbsolutePath());
    }

    /** A caller: length-prefixed msgpack frames over a blocking Unix socket. */
    static final class UnixClient implements AutoCloseable {
        final SocketChannel ch;
        private long nextId = 1;

        UnixClient(String endpoint) throws IOException {
            ch = SocketChannel.open(StandardProtocolFamily.UNIX);
            ch.connect(UnixDomainSocketAddress.of(endpoint.substring("unix://".length())));
        }

        void send(byte[] frame) throws IOException {
            ByteBuffer[] out = {ByteBuffer.allocate(4).putInt(0, frame.length), ByteBuffer.wrap(frame)};
            while (out[1].hasRemaining()) {
                ch.write(out);
            }
        }

        /** The next reply, or {@code null} when the node closed the connection. */
        BridgeReply read() throws IOException {
            ByteBuffer len = ByteBuffer.allocate(4);
            if (!fill(len)) {
                return null;
            }
            ByteBuffer frame = ByteBuffer.allocate(len.getInt(0));
            if (!fill(frame)) {
                return null;
            }
            DecodeResult<BridgeReply> r = BridgeCodec.decodeReply(frame.array());
            if (!r.isOk()) {
                throw new AssertionError("unreadable reply: " + r.rejectionOrNull());
            }
            return r.valueOrNull();
        }

        private boolean fill(ByteBuffer b) throws IOException {
            while (b.hasRemaining()) {
                if (ch.read(b) < 0) {
                    return false;
                }
            }
            return true;
        }

        BridgeReply call(HookCall call) throws IOException {
            send(BridgeCodec.encodeRequest(new BridgeRequest(nextId++, call)));
            return read();
        }

        @Override
        public void close() throws IOException {
            ch.close();
        }
    }

    @Test
    void callsAreAnsweredOverTheSocketAndTheFileIsTheUsersAlone() throws Exception {
        Path sock = privateDir().resolve("node.sock");
        try (BridgeNodeLoop loop = new BridgeNodeLoop(cfg);
             EngineBridgeServer server = EngineBridgeServer.open(at(sock), BridgeNodeInfo.of(cfg), loop);
             UnixClient engine = new UnixClient(server.endpoint())) {
            assertThat(server.endpoint()).isEqualTo("unix://" + sock.toAbsolutePath());
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(sock))).isEqualTo("rw-------");
            assertThat(engine.call(new HookCall.Ping()).ok()).isTrue();
            BridgeReply hello = engine.call(new HookCall.Hello("kv_consumer", "write", 0, 0, "scheduler"));
            assertThat(hello.ok()).as("%s", hello).isTrue();
            for (int i = 0; i < 100; i++) {
                BridgeReply r = engine.call(new HookCall.GetFinished());
                assertThat(r.ok()).as("%s", r).isTrue();
                assertThat(r.id()).isEqualTo(i + 3L);
            }
            // a frame that is not msgpack: answered, and the connection goes on
            engine.send(new byte[] {(byte) 0xc1});
            BridgeReply bad = engine.read();
            assertThat(bad.ok()).isFalse();
            assertThat(engine.call(new HookCall.GetFinished()).ok()).isTrue();
            assertThat(server.rejected()).isEqualTo(1);
            assertThat(loop.appliedCount()).isEqualTo(101);
        }
        assertThat(Files.exists(sock)).as("the socket file is removed at close").isFalse();
    }

    /**
     * A batch over the Unix socket, where the node loop writes answers itself: its calls' answers
     * go into the batch's one reply frame (never out alone, which left the batch unanswered), and
     * a lone call after it is answered as usual.
     */
    @Test
    @SuppressWarnings("unchecked")
    void aBatchIsAnsweredInOneFrameWhenTheLoopAnswersDirectly() throws Exception {
        Path sock = privateDir().resolve("node.sock");
        try (BridgeNodeLoop loop = new BridgeNodeLoop(cfg);
             EngineBridgeServer server = EngineBridgeServer.open(at(sock), BridgeNodeInfo.of(cfg), loop);
             UnixClient engine = new UnixClient(server.endpoint())) {
            for (int round = 0; round < 50; round++) {
                java.util.List<Object> calls = new java.util.ArrayList<>();
                for (long i = 1; i <= 3; i++) {
                    calls.add(member(round * 10L + i, new HookCall.GetFinished()));
                }
                java.util.Map<String, Object> env = new java.util.LinkedHashMap<>();
                env.put("v", 1L);
                env.put("id", 1000L + round);
                env.put("hook", "batch");
                env.put("args", java.util.Map.of("calls", calls));
                engine.send(io.kvledger.wire.PyMsgpack.encode(env));
                BridgeReply r = engine.read();
                assertThat(r).isNotNull();
                assertThat(r.id()).as("the batch's own reply, not one of its calls'").isEqualTo(1000L + round);
                assertThat(r.ok()).as("%s", r).isTrue();
                java.util.List<java.util.Map<String, Object>> replies =
                        (java.util.List<java.util.Map<String, Object>>) (java.util.List<?>)
                                ((java.util.Map<?, ?>) r.result().toObject()).get("replies");
                assertThat(replies).extracting(m -> m.get("id"))
                        .containsExactly(round * 10L + 1, round * 10L + 2, round * 10L + 3);
                assertThat(replies).extracting(m -> m.get("ok")).containsOnly(true);
            }
            assertThat(engine.call(new HookCall.GetFinished()).ok()).isTrue();
            assertThat(loop.appliedCount()).isEqualTo(151);
            assertThat(server.inFlight()).isZero();
        }
    }

    /**
     * "steady": a compact step's ids as the number of the last step read on the same connection. The
     * node remembers it per connection: another connection, or the same engine reconnected, has
     * nothing remembered and is refused, naming why; a step in full there is taken, and numbers then.
     */
    @Test
    @SuppressWarnings("unchecked")
    void aSteadyStepsNumberIsTheLastStepOfItsOwnConnection() throws Exception {
        Path sock = privateDir().resolve("node.sock");
        java.util.List<Object> ids = java.util.List.of("r1", "r2");
        try (BridgeNodeLoop loop = new BridgeNodeLoop(cfg);
             EngineBridgeServer server = EngineBridgeServer.open(at(sock), BridgeNodeInfo.of(cfg), loop)) {
            try (UnixClient a = new UnixClient(server.endpoint()); UnixClient b = new UnixClient(server.endpoint())) {
                assertThat(steps(a, 10, java.util.List.of(1L, ids), java.util.List.of(2L, 1L))).containsExactly(true, true);
                assertThat(steps(b, 20, java.util.List.of(3L, 2L))).containsExactly(false);
                assertThat(steps(a, 30, java.util.List.of(3L, 2L))).containsExactly(true);
                assertThat(steps(b, 40, java.util.List.of(4L, ids), java.util.List.of(5L, 4L))).containsExactly(true, true);
            }
            try (UnixClient again = new UnixClient(server.endpoint())) {
                assertThat(steps(again, 50, java.util.List.of(4L, 3L), java.util.List.of(5L, ids)))
                        .containsExactly(false, true);
            }
            assertThat(server.rejected()).isEqualTo(2);
            assertThat(loop.appliedCount()).isEqualTo(6);
        }
    }

    /** Compact build_connector_meta calls [step, ids] in one batch; whether each was answered ok. */
    @SuppressWarnings("unchecked")
    private static java.util.List<Boolean> steps(UnixClient engine, long id, java.util.List<Object>... steps)
            throws IOException {
        java.util.List<Object> calls = new java.util.ArrayList<>();
        for (int i = 0; i < steps.length; i++) {
            calls.add(java.util.List.of(id + i + 1, "build_connector_meta", steps[i].get(0), steps[i].get(1),
                    java.util.Map.of()));
        }
        java.util.Map<String, Object> env = new java.util.LinkedHashMap<>();
        env.put("v", 1L);
        env.put("id", id);
        env.put("hook", "batch");
        env.put("args", java.util.Map.of("calls", calls));
        engine.send(io.kvledger.wire.PyMsgpack.encode(env));
        BridgeReply r = engine.read();
        assertThat(r.ok()).as("%s", r).isTrue();
        java.util.List<Object> replies = (java.util.List<Object>) ((java.util.Map<?, ?>) r.result().toObject()).get("replies");
        java.util.List<Boolean> ok = new java.util.ArrayList<>();
        for (Object x : replies) {
            java.util.Map<?, ?> m = (java.util.Map<?, ?>) x;
            if (!Boolean.TRUE.equals(m.get("ok"))) {
                assertThat((String) m.get("error")).contains("no step is remembered on this connection");
            }
            ok.add(Boolean.TRUE.equals(m.get("ok")));
        }
        return ok;
    }

    /** One call of a batch, as the Python side packs it: {"id", "hook", "args"}. */
    private static java.util.Map<String, Object> member(long id, HookCall call) {
        java.util.Map<?, ?> full = (java.util.Map<?, ?>) io.kvledger.wire.PyMsgpack.decodeValue(
                BridgeCodec.encodeRequest(new BridgeRequest(id, call)), io.kvledger.wire.WireLimits.DEFAULT).valueOrNull()
                .toObject();
        java.util.Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("id", id);
        m.put("hook", full.get("hook"));
        m.put("args", full.get("args"));
        return m;
    }

    /**
     * 20,000 {@code get_finished} calls sent without reading a reply, then read: every call the
     * loop applied is answered ok, none twice, and every call is answered or counted undeliverable
     * (the replies-under-burst guarantee, over the Unix socket).
     */
    @Test
    void everyAppliedCallOfABurstIsAnswered() throws Exception {
        burst(false);
    }

    /**
     * The same burst when a caller's thread reads the socket ({@link EngineBridgeServer#serve}, as
     * the node loop does while idle) and the socket thread only keeps time and sends held replies.
     */
    @Test
    void everyAppliedCallOfABurstIsAnsweredWhenTheCallerServesTheSocket() throws Exception {
        burst(true);
    }

    private void burst(boolean callerServes) throws Exception {
        int n = 20_000;
        Path sock = privateDir().resolve("node.sock");
        try (BridgeNodeLoop loop = new BridgeNodeLoop(cfg);
             EngineBridgeServer server = callerServes
                     ? EngineBridgeServer.openServedByCaller(at(sock), BridgeNodeInfo.of(cfg), loop)
                     : EngineBridgeServer.open(at(sock), BridgeNodeInfo.of(cfg), loop);
             UnixClient engine = new UnixClient(server.endpoint())) {
            assertThat(server.servedByCaller()).isEqualTo(callerServes);
            Thread serving = new Thread(() -> {
                while (server.serve(100_000_000L)) {
                    // the node loop's idle wait, with nothing else in its inbox
                }
            }, "test-serving");
            if (callerServes) {
                serving.start();
            } else {
                assertThat(server.serve(1_000_000L)).as("a server with a socket thread is not served by callers").isFalse();
            }
            // the writer sends all while this thread reads: the server holds what the socket cannot take
            Thread writer = new Thread(() -> {
                try {
                    for (long id = 1; id <= n; id++) {
                        engine.send(BridgeCodec.encodeRequest(new BridgeRequest(id, new HookCall.GetFinished())));
                        if (id == n / 2) {
                            Collector.sleep(200); // the replies pile up unread meanwhile
                        }
                    }
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
            });
            writer.start();
            Collector.sleep(500); // nothing read for a while: the node's replies back up
            Set<Long> ok = new HashSet<>();
            Set<Long> refused = new HashSet<>();
            long duplicates = 0;
            while (ok.size() + refused.size() + server.undeliverable() < n) {
                BridgeReply r = engine.read();
                assertThat(r).as("the node keeps the connection").isNotNull();
                if (!(r.ok() ? ok : refused).add(r.id())) {
                    duplicates++;
                }
            }
            writer.join();
            int applied = loop.appliedCount();
            assertThat(duplicates).as("answered twice").isZero();
            assertThat(ok.size()).as("ok answers: one per applied call (refused %d)", refused.size()).isEqualTo(applied);
            assertThat(server.undeliverableApplied()).isZero();
            assertThat(ok.size() + refused.size() + server.undeliverable()).isEqualTo(n);
            assertThat(applied).isPositive();
            server.close();
            serving.join(30_000);
            assertThat(serving.isAlive()).as("serve says false once the server closed").isFalse();
        }
    }

    @Test
    void theSocketGoesOnlyIntoADirectoryTheUserAloneMayWrite() throws Exception {
        Path shared = tmp.resolve("shared");
        Files.createDirectory(shared);
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
        BridgeNodeLoop loop = new BridgeNodeLoop(cfg);
        try (loop) {
            assertThatThrownBy(() -> EngineBridgeServer.open(at(shared.resolve("node.sock")), BridgeNodeInfo.of(cfg), loop))
                    .hasStackTraceContaining("no one else may write");
            assertThat(Files.exists(shared.resolve("node.sock"))).isFalse();
            assertThatThrownBy(() -> EngineBridgeServer.open(at(tmp.resolve("missing").resolve("node.sock")),
                    BridgeNodeInfo.of(cfg), loop)).hasStackTraceContaining("does not exist");
            assertThatThrownBy(() -> EngineBridgeConfig.forEndpoint("unix://node.sock"))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("absolute path");

            Path dir = privateDir();
            Path file = dir.resolve("not-a-socket");
            Files.writeString(file, "keep me");
            assertThatThrownBy(() -> EngineBridgeServer.open(at(file), BridgeNodeInfo.of(cfg), loop))
                    .hasStackTraceContaining("not a socket");
            assertThat(Files.readString(file)).isEqualTo("keep me");

            Path sock = dir.resolve("node.sock");
            try (EngineBridgeServer first = EngineBridgeServer.open(at(sock), BridgeNodeInfo.of(cfg), loop)) {
                assertThatThrownBy(() -> EngineBridgeServer.open(at(sock), BridgeNodeInfo.of(cfg), loop))
                        .hasStackTraceContaining("something listens there already");
                try (UnixClient engine = new UnixClient(first.endpoint())) {
                    assertThat(engine.call(new HookCall.Ping()).ok()).as("the first node still answers").isTrue();
                }
            }
            // a socket file nothing answers on (a node that ended without removing it) is replaced
            try (var stale = java.nio.channels.ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
                stale.bind(UnixDomainSocketAddress.of(sock));
            }
            assertThat(Files.exists(sock)).isTrue();
            try (EngineBridgeServer again = EngineBridgeServer.open(at(sock), BridgeNodeInfo.of(cfg), loop);
                 UnixClient engine = new UnixClient(again.endpoint())) {
                assertThat(engine.call(new HookCall.Ping()).ok()).isTrue();
            }
        }
    }
}
