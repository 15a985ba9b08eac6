package io.kvledger.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.net.http.HttpClient;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Where {@code kvledger node} puts its engine bridge without {@code --bridge}: a bridge or drive
 * node listens on its journal directory's {@code bridge.sock}, says so at start, takes the socket
 * a killed node left behind, and refuses one another node answers on; a journal path too long for
 * a Unix socket is a usage error that names {@code --bridge}. With {@code --bridge ipc://PATH} it
 * speaks ZMTP on a Unix socket at PATH, a relative PATH taken from where the command runs.
 */
class NodeBridgeSocketTest {

    @TempDir
    Path tmp;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /** A ping over the socket, framed as the unix:// transport frames it; the reply's bytes. */
    private static byte[] ping(Path socket, int id) throws IOException {
        // {"v": 1, "id": id, "hook": "ping"} in msgpack
        byte[] req = {(byte) 0x83, (byte) 0xa1, 'v', 1, (byte) 0xa2, 'i', 'd', (byte) id, (byte) 0xa4, 'h', 'o', 'o', 'k',
                (byte) 0xa4, 'p', 'i', 'n', 'g'};
        try (var ch = java.nio.channels.SocketChannel.open(StandardProtocolFamily.UNIX)) {
            ch.connect(UnixDomainSocketAddress.of(socket));
            ch.write(new ByteBuffer[] {ByteBuffer.allocate(4).putInt(0, req.length), ByteBuffer.wrap(req)});
            ByteBuffer len = ByteBuffer.allocate(4);
            while (len.hasRemaining() && ch.read(len) >= 0) {
                // blocking read of the length
            }
            ByteBuffer body = ByteBuffer.allocate(len.getInt(0));
            while (body.hasRemaining() && ch.read(body) >= 0) {
                // blocking read of the reply
            }
            return body.array();
        }
    }

    /**
     * A ping over an {@code ipc://} socket, as a ZMQ DEALER sends it (ZMTP 3.1 by hand: greeting,
     * READY, one frame); the reply frame's bytes.
     */
    private static byte[] zmtpPing(Path socket, int id) throws IOException {
        byte[] req = {(byte) 0x83, (byte) 0xa1, 'v', 1, (byte) 0xa2, 'i', 'd', (byte) id, (byte) 0xa4, 'h', 'o', 'o', 'k',
                (byte) 0xa4, 'p', 'i', 'n', 'g'};
        ByteBuffer hello = ByteBuffer.allocate(64 + 2 + 28 + 2 + req.length);
        hello.put(new byte[] {(byte) 0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 3, 1}).put("NULL".getBytes(StandardCharsets.US_ASCII));
        hello.position(64);
        // READY with Socket-Type DEALER, then the call as one frame
        hello.put((byte) 4).put((byte) 28).put((byte) 5).put("READY".getBytes(StandardCharsets.US_ASCII))
                .put((byte) 11).put("Socket-Type".getBytes(StandardCharsets.US_ASCII)).putInt(6)
                .put("DEALER".getBytes(StandardCharsets.US_ASCII));
        hello.put((byte) 0).put((byte) req.length).put(req).flip();
        try (var ch = java.nio.channels.SocketChannel.open(StandardProtocolFamily.UNIX)) {
            ch.connect(UnixDomainSocketAddress.of(socket));
            while (hello.hasRemaining()) {
                ch.write(hello);
            }
            var in = new java.io.DataInputStream(java.nio.channels.Channels.newInputStream(ch));
            byte[] greeting = new byte[64];
            in.readFully(greeting);
            assertEquals(3, greeting[10], "the node's ZMTP major version");
            while (true) {
                int flags = in.readUnsignedByte();
                int len = (flags & 2) != 0 ? (int) in.readLong() : in.readUnsignedByte();
                byte[] body = new byte[len];
                in.readFully(body);
                if ((flags & 4) == 0) {
                    return body; // the reply (the node's READY came first)
                }
            }
        }
    }

    private static boolean answeredOk(byte[] reply, int id) {
        String s = new String(reply, StandardCharsets.ISO_8859_1);
        return s.contains("\u00a2ok\u00c3") && s.contains("\u00a2id" + (char) id);
    }

    @Test
    void aBridgeNodeListensOnItsJournalsSocketAndTakesItBackAfterAKill() throws Exception {
        NodeProcess n = new NodeProcess("P0", true, "write", tmp, "--engine", "bridge");
        Path socket = n.journal.resolve("bridge.sock").toAbsolutePath().normalize();
        n.start();
        try {
            assertTrue(n.awaitHealthy(http, Duration.ofSeconds(120)), n.logText());
            assertTrue(n.errText().contains("engine bridge unix://" + socket), n.errText());
            assertTrue(answeredOk(ping(socket, 7), 7), "a ping over the default socket");

            // a second node may not take a socket the first answers on
            NodeProcess other = new NodeProcess("P1", true, "write", tmp, "--engine", "bridge", "--bridge",
                    "unix://" + socket);
            other.start();
            assertEquals(2, other.awaitExit(Duration.ofSeconds(120)), other.logText());
            assertTrue(other.errText().contains("something listens there already"), other.errText());
            assertTrue(answeredOk(ping(socket, 8), 8), "the first node still answers");

            // a killed node leaves its socket; the restarted node replaces it
            n.kill();
            assertTrue(Files.exists(socket), "kill -9 leaves the socket file behind");
            n.start();
            assertTrue(n.awaitHealthy(http, Duration.ofSeconds(120)), n.logText());
            assertTrue(answeredOk(ping(socket, 9), 9), "a ping after the restart");
            assertEquals(0, n.stop(), n.logText());
            assertFalse(Files.exists(socket), "the node removes its socket at exit");
        } finally {
            n.stop();
        }
    }

    @Test
    void aBridgeNodeServesIpcAtAPathTakenFromWhereItRuns() throws Exception {
        Path run = tmp.resolve("run");
        Files.createDirectory(run);
        Files.setPosixFilePermissions(run, PosixFilePermissions.fromString("rwx------"));
        NodeProcess n = new NodeProcess("P0", true, "write", tmp, "--engine", "bridge", "--bridge", "ipc://node.ipc");
        n.workDir = run;
        Path socket = run.resolve("node.ipc").toAbsolutePath();
        n.start();
        try {
            assertTrue(n.awaitHealthy(http, Duration.ofSeconds(120)), n.logText());
            assertTrue(n.errText().contains("engine bridge ipc://" + socket), n.errText());
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)));
            assertTrue(answeredOk(zmtpPing(socket, 7), 7), "a ping over ipc://, ZMTP as a DEALER speaks it");
            assertEquals(0, n.stop(), n.logText());
            assertFalse(Files.exists(socket), "the node removes its socket at exit");
        } finally {
            n.stop();
        }
    }

    @Test
    void aJournalPathTooLongForAUnixSocketIsAUsageErrorNamingBridge() {
        Path deep = tmp.resolve("j".repeat(60)).resolve("k".repeat(60));
        CliRun.Outcome o = CliRun.run("node", "--engine", "drive", "--role", "producer", "--journal", deep.toString());
        assertEquals(2, o.code(), o.out() + o.err());
        assertTrue(o.err().contains("longer than a Unix socket path may be (107)"), o.err());
        assertTrue(o.err().contains("pass --bridge"), o.err());
        assertFalse(Files.exists(deep), "nothing is created");
    }

    @Test
    void tpWorkersOtherThanTcpAreAUsageError() {
        // rank 0 reaches its workers with JeroMQ: an ipc:// or unix:// worker would never be reached
        for (String worker : new String[] {"ipc://" + tmp.resolve("w.ipc"), "unix://" + tmp.resolve("w.sock")}) {
            CliRun.Outcome o = CliRun.run("node", "--engine", "sim", "--role", "producer", "--tp", "0/2",
                    "--tp-workers", worker, "--journal", tmp.resolve("j").toString());
            assertEquals(2, o.code(), o.out() + o.err());
            assertTrue(o.err().contains("--tp-workers takes tcp://HOST:PORT bridges") && o.err().contains(worker), o.err());
        }
    }
}
