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
        return privateDir(tmp);
    }

    /** {@code parent/run}, made if missing, that only this user may write (a socket file's directory). */
    static Path privateDir(Path parent) throws IOException {
        Path d = parent.resolve("run");
        Files.createDirectories(d);
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


    /** The transport alone, bound at {@code sock} (the tests below read and write it as the server's thread would). */
    private UnixBridgeTransport bound(Path sock) throws IOException {
        UnixBridgeTransport t = new UnixBridgeTransport(at(sock));
        t.bind();
        return t;
    }

    /** The next message, looking and waiting in turn (a bound on tries, not on time). */
    private static BridgeTransport.Message next(UnixBridgeTransport t) {
        for (int i = 0; i < 2000; i++) {
            BridgeTransport.Message m = t.receive();
            if (m != null) {
                return m;
            }
            t.await(i % 2 == 0 ? 0 : 20);
        }
        throw new AssertionError("no message came");
    }

    static byte[] bytes(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (i * 31 + seed);
        }
        return b;
    }

    private static ByteBuffer framed(byte[]... frames) {
        int n = 0;
        for (byte[] f : frames) {
            n += 4 + f.length;
        }
        ByteBuffer b = ByteBuffer.allocate(n);
        for (byte[] f : frames) {
            b.putInt(f.length).put(f);
        }
        return b.flip();
    }

    private static void writeAll(SocketChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    /**
     * The reads the serving thread makes without a selector round: a frame that arrives in pieces
     * (its header split, its body over several reads, one larger than the first buffer) is taken
     * whole once its last byte is there, several frames in one read are each taken, in order; a
     * reply that fits the connection's buffer (one write) and one that does not (header and frame
     * gathered, more than the socket takes at once: the rest leaves as the caller reads) arrive whole.
     */
    @Test
    void framesInPiecesAndSeveralInOneReadAreTakenWholeAndRepliesOfAnySizeArrive() throws Exception {
        Path sock = privateDir().resolve("node.sock");
        UnixBridgeTransport t = bound(sock);
        try (SocketChannel engine = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            engine.connect(UnixDomainSocketAddress.of(sock));
            byte[] small = bytes(10, 1);
            ByteBuffer first = framed(small);
            // the header in two pieces, then the body, each read on its own
            for (int[] piece : new int[][] {{0, 2}, {2, 4}, {4, 14}}) {
                writeAll(engine, first.duplicate().position(piece[0]).limit(piece[1]));
                t.await(0);
                t.await(20);
                if (piece[1] < 14) {
                    assertThat(t.receive()).as("nothing before the frame's last byte (%s)", piece[1]).isNull();
                }
            }
            BridgeTransport.Message m = next(t);
            assertThat(m.frames().get(0)).isEqualTo(small);
            byte[] identity = m.identity();
            // larger than the connection's first buffer, in pieces of 3,000 bytes
            byte[] large = bytes(10_000, 2);
            ByteBuffer second = framed(large);
            while (second.hasRemaining()) {
                writeAll(engine, second.slice().limit(Math.min(3000, second.remaining())));
                second.position(Math.min(second.limit(), second.position() + 3000));
                t.await(0);
            }
            assertThat(next(t).frames().get(0)).isEqualTo(large);
            // three frames in one write, the last of them empty
            byte[][] three = {bytes(5, 3), bytes(300, 4), new byte[0]};
            writeAll(engine, framed(three));
            for (byte[] f : three) {
                BridgeTransport.Message got = next(t);
                assertThat(got.frames().get(0)).isEqualTo(f);
                assertThat(got.identity()).isEqualTo(identity);
            }
            assertThat(t.receive()).isNull();

            byte[] big = bytes(UnixBridgeTransport.OUT_BYTES * 8, 5);
            byte[] reply = bytes(40, 6);
            java.util.concurrent.CompletableFuture<java.util.List<byte[]>> read = java.util.concurrent.CompletableFuture
                    .supplyAsync(() -> {
                        try {
                            return java.util.List.of(readFrame(engine), readFrame(engine));
                        } catch (IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    });
            assertThat(t.send(identity, false, big)).isEqualTo(BridgeTransport.Send.SENT);
            BridgeTransport.Send s = t.send(identity, false, reply);
            for (int i = 0; i < 2000 && s == BridgeTransport.Send.FULL; i++) {
                t.await(20); // the selector writes the rest as the caller reads
                s = t.send(identity, false, reply);
            }
            assertThat(s).isEqualTo(BridgeTransport.Send.SENT);
            java.util.List<byte[]> got = read.get(60, java.util.concurrent.TimeUnit.SECONDS);
            assertThat(got.get(0)).isEqualTo(big);
            assertThat(got.get(1)).isEqualTo(reply);
        } finally {
            t.close();
            t.release();
        }
    }

    private static byte[] readFrame(SocketChannel ch) throws IOException {
        ByteBuffer len = ByteBuffer.allocate(4);
        while (len.hasRemaining()) {
            if (ch.read(len) < 0) {
                throw new java.io.EOFException();
            }
        }
        ByteBuffer f = ByteBuffer.allocate(len.getInt(0));
        while (f.hasRemaining()) {
            if (ch.read(f) < 0) {
                throw new java.io.EOFException();
            }
        }
        return f.array();
    }

    /**
     * A caller that goes away in the middle of a frame: nothing of it is taken, its connection is
     * dropped (a reply to it is {@code GONE}), and another caller's frames go on.
     */
    @Test
    void aCallerThatLeavesMidFrameIsDroppedAndOthersGoOn() throws Exception {
        Path sock = privateDir().resolve("node.sock");
        UnixBridgeTransport t = bound(sock);
        try (SocketChannel other = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            byte[] gone;
            try (SocketChannel leaving = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                leaving.connect(UnixDomainSocketAddress.of(sock));
                writeAll(leaving, framed(bytes(8, 7)));
                gone = next(t).identity();
                writeAll(leaving, framed(bytes(100, 8)).limit(4 + 40));
                t.await(0);
                t.await(20);
            }
            other.connect(UnixDomainSocketAddress.of(sock));
            byte[] frame = bytes(64, 9);
            writeAll(other, framed(frame));
            BridgeTransport.Message m = next(t);
            BridgeTransport.Message cut = null;
            if (m.closed() != null) {
                cut = m;
                m = next(t);
            }
            assertThat(m.frames().get(0)).isEqualTo(frame);
            assertThat(m.identity()).isNotEqualTo(gone);
            BridgeTransport.Send s = t.send(gone, false, bytes(4, 10));
            for (int i = 0; i < 2000 && s != BridgeTransport.Send.GONE; i++) {
                t.await(i % 2 == 0 ? 0 : 20);
                s = t.send(gone, false, bytes(4, 10));
            }
            assertThat(s).as("a reply to the caller that left").isEqualTo(BridgeTransport.Send.GONE);
            if (cut == null) {
                cut = t.receive();
            }
            assertThat(cut).as("the cut frame is reported").isNotNull();
            assertThat(cut.closed()).contains("in the middle of a frame (44 bytes of it read)");
            assertThat(cut.identity()).isEqualTo(gone);
            assertThat(t.receive()).as("nothing of the cut frame").isNull();
            assertThat(t.send(m.identity(), false, bytes(4, 11))).isEqualTo(BridgeTransport.Send.SENT);
            assertThat(readFrame(other)).isEqualTo(bytes(4, 11));
        } finally {
            t.close();
            t.release();
        }
    }

    /**
     * Calls that arrive together (one write) at a node loop that reads the socket itself: each is
     * applied and answered, in order, one read bringing them all.
     */
    @Test
    void callsInOneWriteAreEachAnsweredInOrderWhenTheCallerServes() throws Exception {
        Path sock = privateDir().resolve("node.sock");
        try (BridgeNodeLoop loop = new BridgeNodeLoop(cfg);
             EngineBridgeServer server = EngineBridgeServer.openServedByCaller(at(sock), BridgeNodeInfo.of(cfg), loop);
             UnixClient engine = new UnixClient(server.endpoint())) {
            Thread serving = new Thread(() -> {
                while (server.serve(100_000_000L)) {
                    // the node loop's idle wait
                }
            }, "test-serving");
            serving.start();
            byte[][] calls = new byte[5][];
            for (int i = 0; i < calls.length; i++) {
                calls[i] = BridgeCodec.encodeRequest(new BridgeRequest(i + 1, new HookCall.GetFinished()));
            }
            writeAll(engine.ch, framed(calls));
            for (int i = 0; i < calls.length; i++) {
                BridgeReply r = engine.read();
                assertThat(r.ok()).as("%s", r).isTrue();
                assertThat(r.id()).isEqualTo(i + 1L);
            }
            assertThat(loop.appliedCount()).isEqualTo(calls.length);
            server.close();
            serving.join(30_000);
            assertThat(serving.isAlive()).isFalse();
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
