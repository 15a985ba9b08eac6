package io.kvledger.zmq;

import static io.kvledger.zmq.UnixBridgeTransportTest.bytes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.wire.Json;
import io.kvledger.wire.RejectReason;
import io.kvledger.wire.bridge.BridgeDecoded;
import io.kvledger.wire.bridge.BridgeNodeInfo;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The bridge's own ZMTP ROUTER ({@link ZmtpBridgeTransport}) against real peers: libzmq (Debian's
 * python3-zmq) and JeroMQ DEALERs and REQs, and raw sockets for what a ZMQ library would not
 * send; over loopback TCP and, for libzmq's {@code ipc://}, a Unix socket (JeroMQ cannot reach that:
 * its ipc is TCP on a port derived from the path, and a node asked for it refuses). The transport is served by an echo on its own thread (each message's last frame F
 * answered {@code "re:" + F}, a REQ's with its delimiter), as the server's socket thread would.
 * Waits are bounded in tries, and no assertion is on time.
 */
class ZmtpBridgeTransportTest {

    @TempDir
    Path dir;

    /** The transport bound on {@code endpoint}, served by an echo on its own thread. */
    static final class Echo implements AutoCloseable {
        final ZmtpBridgeTransport t;
        final String endpoint;
        final List<BridgeTransport.Message> calls = new CopyOnWriteArrayList<>();
        final List<BridgeTransport.Message> closed = new CopyOnWriteArrayList<>();
        private final Thread thread;
        private volatile boolean stop;

        Echo(String endpoint) throws IOException {
            this(EngineBridgeConfig.forEndpoint(endpoint));
        }

        Echo(EngineBridgeConfig config) throws IOException {
            this.t = new ZmtpBridgeTransport(config);
            try {
                this.endpoint = t.bind();
            } catch (RuntimeException e) {
                t.release();
                throw e;
            }
            this.thread = new Thread(this::serve, "zmtp-echo");
            thread.start();
        }

        private void serve() {
            while (!stop) {
                t.await(20);
                for (BridgeTransport.Message m; (m = t.receive()) != null; ) {
                    if (m.closed() != null) {
                        closed.add(m);
                        continue;
                    }
                    calls.add(m);
                    boolean req = m.parts() == 2 && m.frames().get(0).length == 0;
                    t.send(m.identity(), req, re(m.frames().get(m.frames().size() - 1)));
                }
            }
        }

        /** The identity the call {@code text} came with. */
        byte[] identityOf(String text) {
            for (BridgeTransport.Message m : calls) {
                if (new String(m.frames().get(m.frames().size() - 1), StandardCharsets.UTF_8).equals(text)) {
                    return m.identity();
                }
            }
            throw new AssertionError("no call " + text + " among " + calls.size());
        }

        /** The first connection closed for what it sent (waits a bounded number of looks). */
        BridgeTransport.Message firstClosed() throws InterruptedException {
            for (int i = 0; i < 1000 && closed.isEmpty(); i++) {
                Thread.sleep(10);
            }
            assertThat(closed).as("a connection closed with a reason").isNotEmpty();
            return closed.get(0);
        }

        @Override
        public void close() throws InterruptedException {
            stop = true;
            t.wake();
            thread.join(30_000);
            t.close();
            t.release();
        }
    }

    static byte[] re(byte[] f) {
        byte[] r = new byte[f.length + 3];
        r[0] = 'r';
        r[1] = 'e';
        r[2] = ':';
        System.arraycopy(f, 0, r, 3, f.length);
        return r;
    }


    private PythonPeer python(String endpoint, String mode) throws IOException {
        PythonPeer.assumeAvailable(dir);
        PythonPeer.copyScript(dir, "zmtp_caller.py");
        return PythonPeer.start(dir, "zmtp_caller.py", endpoint, mode);
    }

    @Test
    void libzmqDealersInterleavedAndANamedOneAreEachAnsweredByIdentity() throws Exception {
        try (Echo echo = new Echo("tcp://127.0.0.1:0"); PythonPeer py = python(echo.endpoint, "dealers")) {
            for (int i = 0; i < 3; i++) {
                Map<?, ?> line = (Map<?, ?>) Json.parse(py.line());
                assertThat(line.get("caller")).isEqualTo((long) i);
                assertThat(line.get("replies")).isEqualTo(List.of("re:c" + i + "-0", "re:c" + i + "-1", "re:c" + i + "-2",
                        "re:c" + i + "-3", "re:c" + i + "-4"));
            }
            assertThat(((Map<?, ?>) Json.parse(py.line())).get("long")).isEqualTo(true);
            py.awaitSuccess();
            byte[] a = echo.identityOf("c0-0");
            byte[] b = echo.identityOf("c1-0");
            byte[] c = echo.identityOf("c2-0");
            assertThat(new String(b, StandardCharsets.US_ASCII)).as("the Identity property names the caller").isEqualTo("py-named");
            assertThat(a).hasSize(5).startsWith((byte) 0);
            assertThat(c).hasSize(5).startsWith((byte) 0).isNotEqualTo(a);
            for (int k = 1; k < 5; k++) {
                assertThat(echo.identityOf("c0-" + k)).isEqualTo(a);
                assertThat(echo.identityOf("c1-" + k)).isEqualTo(b);
            }
            assertThat(echo.calls).allSatisfy(m -> assertThat(m.parts()).isEqualTo(1));
            assertThat(echo.closed).as("nothing closed for bad input").isEmpty();
        }
    }

    @Test
    void aLibzmqReqIsAnsweredBehindItsDelimiter() throws Exception {
        try (Echo echo = new Echo("tcp://127.0.0.1:0"); PythonPeer py = python(echo.endpoint, "req")) {
            assertThat(((Map<?, ?>) Json.parse(py.line())).get("replies")).isEqualTo(List.of("re:r-0", "re:r-1", "re:r-2"));
            py.awaitSuccess();
            assertThat(echo.calls).hasSize(3).allSatisfy(m -> {
                assertThat(m.parts()).isEqualTo(2);
                assertThat(m.frames().get(0)).isEmpty();
            });
        }
    }

    @Test
    void libzmqHeartbeatsAreAnsweredAndTheConnectionStays() throws Exception {
        try (Echo echo = new Echo("tcp://127.0.0.1:0"); PythonPeer py = python(echo.endpoint, "heartbeat")) {
            assertThat(((Map<?, ?>) Json.parse(py.line())).get("heartbeat")).isEqualTo(true);
            py.awaitSuccess();
            // without PONGs libzmq drops the connection after 300 ms and reconnects: a new routing id
            assertThat(echo.identityOf("h-1")).as("the same connection after 1.5 s of heartbeats").isEqualTo(echo.identityOf("h-0"));
            assertThat(echo.closed).isEmpty();
        }
    }

    @Test
    void aLibzmqDealerReconnectsToATransportRestartedOnItsPort() throws Exception {
        Echo first = new Echo("tcp://127.0.0.1:0");
        reconnectsAfterARestart(first, first.endpoint);
    }

    /**
     * A pyzmq DEALER with an identity calls {@code first}, which then closes; a transport started again on
     * {@code endpoint} takes the DEALER's reconnection and answers it under the same identity.
     */
    private void reconnectsAfterARestart(Echo first, String endpoint) throws Exception {
        try (PythonPeer py = python(endpoint, "reconnect")) {
            try {
                assertThat(((Map<?, ?>) Json.parse(py.line())).get("first")).isEqualTo(true);
            } finally {
                first.close();
            }
            try (Echo second = new Echo(endpoint)) {
                assertThat(second.endpoint).isEqualTo(endpoint);
                OutputStream in = py.stdin();
                in.write('\n');
                in.flush();
                assertThat(((Map<?, ?>) Json.parse(py.line())).get("second")).isEqualTo(true);
                py.awaitSuccess();
                assertThat(new String(second.identityOf("x-1"), StandardCharsets.US_ASCII)).isEqualTo("py-again");
            }
        }
        assertThat(first.identityOf("x-0")).isEqualTo("py-again".getBytes(StandardCharsets.US_ASCII));
    }

    @Test
    void jeromqDealerAndReqAreAnsweredShortAndLong() throws Exception {
        try (Echo echo = new Echo("tcp://127.0.0.1:0");
             BridgeClient dealer = new BridgeClient(echo.endpoint);
             BridgeClient req = new BridgeClient(echo.endpoint, true)) {
            for (int n : new int[] {3, 255, 256, 70_000}) {
                byte[] f = bytes(n, n);
                dealer.send(f);
                assertThat(dealer.frames(20_000)).singleElement().isEqualTo(re(f));
                req.send(f);
                assertThat(req.frames(20_000)).singleElement().isEqualTo(re(f));
            }
            assertThat(echo.calls).hasSize(8);
            assertThat(echo.closed).isEmpty();
        }
    }

    @Test
    void aBadGreetingClosesThatConnectionAloneWithItsReason() throws Exception {
        try (Echo echo = new Echo("tcp://127.0.0.1:0"); Raw raw = new Raw(echo.endpoint);
             BridgeClient dealer = new BridgeClient(echo.endpoint)) {
            assertThat(raw.read(10)).as("the signature first").isEqualTo(new byte[] {(byte) 0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F});
            raw.write("GET / HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            raw.awaitEnd();
            assertThat(echo.firstClosed().closed()).contains("not a ZMTP greeting (first byte 0x47)");
            dealer.send(bytes(5, 1));
            assertThat(dealer.frames(20_000)).singleElement().isEqualTo(re(bytes(5, 1)));
        }
    }

    @Test
    void aPeerBelowZmtp3IsRefusedAfterTheSignatureAndItsMajorVersion() throws Exception {
        try (Echo echo = new Echo("tcp://127.0.0.1:0"); Raw raw = new Raw(echo.endpoint)) {
            raw.write(new byte[] {(byte) 0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 1});
            assertThat(raw.read(10)).as("the signature alone: the rest waits for a ZMTP 3 peer")
                    .isEqualTo(new byte[] {(byte) 0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F});
            assertThat(raw.in.read()).as("nothing more, then the end").isEqualTo(-1);
            assertThat(echo.firstClosed().closed()).contains("ZMTP 1.x; this ROUTER speaks ZMTP 3");
        }
    }

    @Test
    void aMechanismOtherThanNullIsRefused() throws Exception {
        try (Echo echo = new Echo("tcp://127.0.0.1:0"); Raw raw = new Raw(echo.endpoint)) {
            raw.write(greeting("PLAIN\n"));
            assertThat(raw.read(64)[10]).as("the server's major version").isEqualTo((byte) 3);
            raw.awaitEnd();
            assertThat(echo.firstClosed().closed()).contains("security mechanism \"PLAIN?\"; this ROUTER takes NULL only");
            assertThat(echo.calls).isEmpty();
        }
    }

    @Test
    void anOversizedFrameClosesTheConnectionBeforeItIsRead() throws Exception {
        try (Echo echo = new Echo("tcp://127.0.0.1:0"); Raw raw = new Raw(echo.endpoint)) {
            raw.handshake("DEALER");
            long bound = echo.t.config.maxMessageBytes();
            raw.write(ByteBuffer.allocate(9).put((byte) 2).putLong(bound + 1).array());
            raw.awaitEnd();
            assertThat(echo.firstClosed().closed()).contains("a frame of " + (bound + 1) + " bytes, above the bound of " + bound);
        }
    }

    @Test
    void aMessageOfTooManyFramesClosesTheConnectionAndOneOfFourIsDeliveredCounted() throws Exception {
        try (Echo echo = new Echo("tcp://127.0.0.1:0"); Raw raw = new Raw(echo.endpoint)) {
            raw.handshake("DEALER");
            raw.write(new byte[] {1, 1, 'a', 1, 0, 1, 1, 'c', 0, 1, 'd'});
            // the echo answers the last frame kept: the first three are, the parts are all counted
            assertThat(raw.frame()).isEqualTo(new Frame(0, re("c".getBytes(StandardCharsets.US_ASCII))));
            BridgeTransport.Message four = echo.calls.get(0);
            assertThat(four.parts()).isEqualTo(4);
            assertThat(four.frames()).hasSize(3);
            assertThat(four.frames().get(0)).isEqualTo("a".getBytes(StandardCharsets.US_ASCII));
            assertThat(four.frames().get(1)).isEmpty();
            byte[] many = new byte[2 * (ZmtpBridgeTransport.MAX_PARTS + 1)];
            for (int i = 0; i < many.length; i += 2) {
                many[i] = 1;
            }
            raw.write(many);
            raw.awaitEnd();
            assertThat(echo.firstClosed().closed()).contains("a message of more than 1024 frames");
        }
    }

    @Test
    void aCallerLeavingMidFrameIsReportedAndItsRepliesAreGone() throws Exception {
        try (Echo echo = new Echo("tcp://127.0.0.1:0")) {
            byte[] who;
            try (Raw raw = new Raw(echo.endpoint)) {
                raw.handshake("DEALER");
                raw.write(new byte[] {0, 3, 'm', '-', '0'});
                assertThat(raw.frame()).isEqualTo(new Frame(0, re("m-0".getBytes(StandardCharsets.US_ASCII))));
                who = echo.identityOf("m-0");
                raw.write(new byte[] {0, 100, 1, 2, 3});
            }
            BridgeTransport.Message cut = echo.firstClosed();
            assertThat(cut.closed()).contains("in the middle of a frame (5 bytes of it read)");
            assertThat(cut.identity()).isEqualTo(who);
            assertThat(echo.t.send(who, false, bytes(3, 3))).isEqualTo(BridgeTransport.Send.GONE);
        }
    }

    @Test
    void aSocketTypeThatIsNotDealerOrReqGetsAnErrorCommand() throws Exception {
        try (Echo echo = new Echo("tcp://127.0.0.1:0"); Raw raw = new Raw(echo.endpoint)) {
            raw.write(greeting("NULL"));
            raw.read(64);
            raw.write(ZmtpBridgeTransport.command("READY", ZmtpBridgeTransport.property("Socket-Type", "PUB")));
            Frame ready = raw.frame();
            assertThat(ready.flags()).isEqualTo(4);
            assertThat(new String(ready.body(), StandardCharsets.US_ASCII)).startsWith("\u0005READY").contains("Socket-Type")
                    .endsWith("ROUTER");
            Frame error = raw.frame();
            assertThat(error.flags()).isEqualTo(4);
            assertThat(new String(error.body(), StandardCharsets.US_ASCII)).startsWith("\u0005ERROR").contains("socket type \"PUB\"");
            raw.awaitEnd();
            assertThat(echo.firstClosed().closed()).contains("socket type \"PUB\" cannot call the engine bridge");
        }
    }

    @Test
    void aPingIsAnsweredWithAPongCarryingItsContext() throws Exception {
        try (Echo echo = new Echo("tcp://127.0.0.1:0"); Raw raw = new Raw(echo.endpoint)) {
            raw.handshake("DEALER");
            byte[] ping = ByteBuffer.allocate(2 + 5).putShort((short) 10).put("ctx-7".getBytes(StandardCharsets.US_ASCII)).array();
            raw.write(ZmtpBridgeTransport.command("PING", ping));
            assertThat(raw.frame()).isEqualTo(new Frame(4, ("\u0004PONGctx-7").getBytes(StandardCharsets.US_ASCII)));
            raw.write(ZmtpBridgeTransport.command("SUBSCRIBE", new byte[] {1}));
            raw.write(new byte[] {0, 2, 'o', 'k'});
            assertThat(raw.frame()).isEqualTo(new Frame(0, re("ok".getBytes(StandardCharsets.US_ASCII))));
            assertThat(echo.closed).isEmpty();
        }
    }

    @Test
    void aHandshakeNotFinishedInTimeIsClosedAndOthersStay() throws Exception {
        java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong();
        try (Echo echo = new Echo(EngineBridgeConfig.forEndpoint("tcp://127.0.0.1:0").withClock(now::get));
             Raw silent = new Raw(echo.endpoint); BridgeClient dealer = new BridgeClient(echo.endpoint)) {
            assertThat(silent.read(10)).as("accepted: the signature came").hasSize(10);
            dealer.send(bytes(4, 1));
            assertThat(dealer.frames(20_000)).singleElement().isEqualTo(re(bytes(4, 1)));
            assertThat(echo.closed).as("not yet overdue").isEmpty();
            now.set(ZmtpBridgeTransport.HANDSHAKE_NS + 1);
            silent.awaitEnd();
            assertThat(echo.firstClosed().closed()).contains("no ZMTP handshake within 30 s");
            dealer.send(bytes(4, 2));
            assertThat(dealer.frames(20_000)).singleElement().isEqualTo(re(bytes(4, 2)));
            assertThat(echo.closed).hasSize(1);
        }
    }

    @Test
    void theServerReportsAClosedConnectionAsRejectedInput() throws Exception {
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).build();
        List<BridgeDecoded.Rejected> rejected = new CopyOnWriteArrayList<>();
        HookHandler handler = new HookHandler() {
            @Override
            public void onHook(BridgeCall call) {
                call.fail("not here");
            }

            @Override
            public void onRejected(long atNs, byte[] frame, BridgeDecoded.Rejected r) {
                rejected.add(r);
            }
        };
        try (EngineBridgeServer server = EngineBridgeServer.open(EngineBridgeConfig.forEndpoint("tcp://127.0.0.1:0"),
                BridgeNodeInfo.of(cfg), handler); Raw raw = new Raw(server.endpoint())) {
            raw.write(greeting("CURVE"));
            raw.read(64);
            raw.awaitEnd();
            for (int i = 0; i < 1000 && rejected.isEmpty(); i++) {
                Thread.sleep(10);
            }
            assertThat(rejected).singleElement().satisfies(r -> {
                assertThat(r.rejection().reason()).isEqualTo(RejectReason.BAD_FRAMING);
                assertThat(r.rejection().detail()).contains("security mechanism \"CURVE\"");
            });
            assertThat(server.rejected()).isEqualTo(1);
        }
    }

    // ---------------------------------------------------------------- ipc://: ZMTP over a Unix socket

    private Path privateDir() throws IOException {
        return UnixBridgeTransportTest.privateDir(dir);
    }

    @Test
    void libzmqDealersAndAReqOverIpcAreAnsweredAndTheSocketFileIsTheUsersAloneUntilClose() throws Exception {
        Path sock = privateDir().resolve("node.ipc");
        try (Echo echo = new Echo("ipc://" + sock)) {
            assertThat(echo.endpoint).isEqualTo("ipc://" + sock);
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(sock))).isEqualTo("rw-------");
            try (PythonPeer py = python(echo.endpoint, "dealers")) {
                for (int i = 0; i < 3; i++) {
                    assertThat(((Map<?, ?>) Json.parse(py.line())).get("caller")).isEqualTo((long) i);
                }
                assertThat(((Map<?, ?>) Json.parse(py.line())).get("long")).as("a 300- and a 70,000-byte call").isEqualTo(true);
                py.awaitSuccess();
            }
            assertThat(new String(echo.identityOf("c1-0"), StandardCharsets.US_ASCII)).isEqualTo("py-named");
            assertThat(echo.identityOf("c0-0")).hasSize(5).startsWith((byte) 0);
            try (PythonPeer py = python(echo.endpoint, "req")) {
                assertThat(((Map<?, ?>) Json.parse(py.line())).get("replies")).isEqualTo(List.of("re:r-0", "re:r-1", "re:r-2"));
                py.awaitSuccess();
            }
            assertThat(echo.identityOf("r-0")).isNotEqualTo(echo.identityOf("c0-0"));
            assertThat(echo.calls).hasSize(3 * 5 + 2 + 3);
            assertThat(echo.closed).as("nothing closed for bad input").isEmpty();
        }
        assertThat(Files.exists(sock, LinkOption.NOFOLLOW_LINKS)).as("the socket file is removed at close").isFalse();
    }

    @Test
    void aLibzmqDealerReconnectsToATransportRestartedOnTheSameIpcPath() throws Exception {
        String endpoint = "ipc://" + privateDir().resolve("node.ipc");
        reconnectsAfterARestart(new Echo(endpoint), endpoint);
    }

    @Test
    void anIpcSocketFileIsKeptAsAUnixOnesIs() throws Exception {
        Path shared = dir.resolve("shared");
        Files.createDirectory(shared);
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
        assertThatThrownBy(() -> new Echo("ipc://" + shared.resolve("node.ipc"))).hasMessageContaining("no one else may write");
        Path sock = privateDir().resolve("node.ipc");
        try (Echo live = new Echo("ipc://" + sock)) {
            assertThatThrownBy(() -> new Echo("ipc://" + sock)).hasMessageContaining("something listens there already");
        }
        assertThat(Files.exists(sock, LinkOption.NOFOLLOW_LINKS)).isFalse();
        // a socket file nothing answers on (a node killed before it could remove it) is replaced
        try (ServerSocketChannel stale = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            stale.bind(UnixDomainSocketAddress.of(sock));
        }
        assertThat(Files.exists(sock, LinkOption.NOFOLLOW_LINKS)).isTrue();
        try (Echo again = new Echo("ipc://" + sock); Raw raw = new Raw(again.endpoint)) {
            raw.handshake("DEALER");
            raw.write(new byte[] {0, 2, 'o', 'k'});
            assertThat(raw.frame()).isEqualTo(new Frame(0, re("ok".getBytes(StandardCharsets.US_ASCII))));
        }
        Path file = privateDir().resolve("not-a-socket");
        Files.writeString(file, "keep me");
        assertThatThrownBy(() -> new Echo("ipc://" + file)).hasMessageContaining("not a socket");
        assertThat(Files.readString(file)).isEqualTo("keep me");
    }

    @Test
    void jeromqIsRefusedForIpcWithItsReason() throws Exception {
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).build();
        Path sock = privateDir().resolve("node.ipc");
        assertThatThrownBy(() -> EngineBridgeServer.open(EngineBridgeConfig.forEndpoint("ipc://" + sock), BridgeNodeInfo.of(cfg),
                c -> c.reply(List.of()), false, true))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("-Dkvledger.bridge.zmq=jeromq cannot serve ipc://" + sock)
                .hasMessageContaining("JeroMQ 0.6.0 emulates ipc:// over a loopback TCP port");
        assertThat(Files.exists(sock, LinkOption.NOFOLLOW_LINKS)).as("nothing bound").isFalse();
    }

    // ---------------------------------------------------------------- a raw ZMTP peer

    record Frame(int flags, byte[] body) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Frame f && f.flags == flags && java.util.Arrays.equals(f.body, body);
        }

        @Override
        public int hashCode() {
            return flags * 31 + java.util.Arrays.hashCode(body);
        }

        @Override
        public String toString() {
            return "Frame[" + flags + ", " + new String(body, StandardCharsets.ISO_8859_1) + "]";
        }
    }

    /** A blocking TCP socket (reads give up after 20 s), or Unix socket for ipc://, speaking ZMTP by hand. */
    static final class Raw implements AutoCloseable {
        final Socket s;
        final SocketChannel unix;
        final DataInputStream in;

        Raw(String endpoint) throws IOException {
            if (endpoint.startsWith("ipc://")) {
                // a blocking Unix socket channel: its streams block as a Socket's (reads never time out)
                unix = SocketChannel.open(UnixDomainSocketAddress.of(endpoint.substring("ipc://".length())));
                s = null;
                in = new DataInputStream(Channels.newInputStream(unix));
                return;
            }
            unix = null;
            String rest = endpoint.substring("tcp://".length());
            int colon = rest.lastIndexOf(':');
            s = new Socket(rest.substring(0, colon), Integer.parseInt(rest.substring(colon + 1)));
            s.setSoTimeout(20_000);
            s.setTcpNoDelay(true);
            in = new DataInputStream(s.getInputStream());
        }

        void write(byte[] b) throws IOException {
            if (unix != null) {
                ByteBuffer buf = ByteBuffer.wrap(b);
                while (buf.hasRemaining()) {
                    unix.write(buf);
                }
                return;
            }
            s.getOutputStream().write(b);
            s.getOutputStream().flush();
        }

        byte[] read(int n) throws IOException {
            byte[] b = new byte[n];
            in.readFully(b);
            return b;
        }

        Frame frame() throws IOException {
            int flags = in.readUnsignedByte();
            long len = (flags & 2) != 0 ? in.readLong() : in.readUnsignedByte();
            return new Frame(flags, read((int) len));
        }

        /** The whole greeting, then READY as {@code type}; reads the server's greeting and READY. */
        void handshake(String type) throws IOException {
            write(greeting("NULL"));
            byte[] g = read(64);
            assertThat(g[0]).isEqualTo((byte) 0xFF);
            assertThat(g[10]).isEqualTo((byte) 3);
            assertThat(new String(g, 12, 4, StandardCharsets.US_ASCII)).isEqualTo("NULL");
            write(ZmtpBridgeTransport.command("READY", ZmtpBridgeTransport.property("Socket-Type", type)));
            Frame ready = frame();
            assertThat(ready.flags()).isEqualTo(4);
            assertThat(new String(ready.body(), StandardCharsets.US_ASCII)).startsWith("\u0005READY");
        }

        /** Reads until the server closes the connection. */
        void awaitEnd() throws IOException {
            try {
                while (in.read() >= 0) {
                    // what the server sent before closing
                }
            } catch (EOFException | SocketException e) {
                // closed (reset)
            }
        }

        @Override
        public void close() throws IOException {
            if (unix != null) {
                unix.close();
            } else {
                s.close();
            }
        }
    }

    static byte[] greeting(String mechanism) {
        ByteBuffer g = ByteBuffer.allocate(64);
        g.put(new byte[] {(byte) 0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F}).put((byte) 3).put((byte) 1);
        g.put(mechanism.getBytes(StandardCharsets.US_ASCII));
        return g.array();
    }
}
