package io.kvledger.zmq;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The engine bridge over loopback TCP as a ZMQ ROUTER that speaks ZMTP 3.x itself (the default for
 * {@code tcp://}; {@link ZmqBridgeTransport}, JeroMQ's ROUTER, on request), or over a Unix domain
 * stream socket for {@code ipc:///PATH} (libzmq's {@code ipc://} is ZMTP over such a socket, so a
 * pyzmq DEALER connects to it as to any ROUTER; the socket file is kept as {@link SocketFile}
 * says): the connections are read and written by the server's own threads as
 * {@link StreamBridgeTransport} does, so a call and its reply cross no I/O thread of a ZMQ library.
 *
 * <p>What it speaks (ZMTP 3.1, RFC 37, with the NULL mechanism only): the greeting in pieces as
 * libzmq sends it (the 10-byte signature at once, the rest once the peer's signature and major
 * version are read; a peer below version 3 is refused), the {@code READY} command with
 * {@code Socket-Type} {@code ROUTER}, and the peer's {@code READY}: a DEALER or a REQ is served
 * (any other socket type gets an {@code ERROR} command and is closed), its {@code Identity}
 * property names it when set (a routing id that does not start with a zero byte), else a 5-byte
 * routing id is made for it (a zero byte and a number), as a ROUTER does; a second connection
 * with an identity in use is closed (no hand-over). Then frames, short and long, with the
 * {@code MORE} flag (a message's frames after the routing id: one for a DEALER, an empty
 * delimiter and one for a REQ; the server checks that), and commands: {@code PING} answered
 * {@code PONG} with its context (ZMTP 3.1 heartbeats), {@code ERROR} closes the connection, others
 * are ignored. It sends no heartbeats of its own.
 *
 * <p>Bounds: a frame, and a message, above {@link EngineBridgeConfig#maxMessageBytes()} (as ZMQ's
 * {@code MAXMSGSIZE}), a message of more than {@link #MAX_PARTS} frames, and a command above
 * {@link #MAX_COMMAND_BYTES}, close the connection before their bytes are read. So do a greeting that is not ZMTP 3, a mechanism other than {@code NULL},
 * reserved flag bits, a malformed command, a message before {@code READY}, a handshake not
 * finished within {@link #HANDSHAKE_NS} (looked at before the serving thread waits), and leaving
 * in the middle of a frame or a message; each is reported to the server with its reason, and the other
 * connections go on. A reply to a caller that has gone is {@link BridgeTransport.Send#GONE GONE}
 * (as {@code ROUTER_MANDATORY}); one behind a reply the socket has not taken whole is
 * {@link BridgeTransport.Send#FULL FULL}.
 */
final class ZmtpBridgeTransport extends StreamBridgeTransport {

    /** How long a connection may take to finish its handshake (libzmq's {@code ZMQ_HANDSHAKE_IVL} default). */
    static final long HANDSHAKE_NS = 30_000_000_000L;
    /** The largest command read (a {@code READY} with its properties); larger closes the connection. */
    static final int MAX_COMMAND_BYTES = 8 * 1024;
    /** The most frames one message may have (a call has one, or two from a REQ). */
    static final int MAX_PARTS = 1024;
    private static final int MORE = 1;
    private static final int LONG = 2;
    private static final int COMMAND = 4;
    /** The signature: 0xFF, 8 bytes of padding (a ZMTP 1.0 length of 1), 0x7F. */
    private static final byte[] SIGNATURE = {(byte) 0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F};
    private static final int GREETING = 64;
    /** The greeting after the signature: version 3.1, mechanism NULL, as-server 0, filler. */
    private static final byte[] GREETING_REST = greetingRest();
    private static final byte[] READY = command("READY", property("Socket-Type", "ROUTER"));

    private static final int STAGE_SIGNATURE = 0;
    private static final int STAGE_GREETING = 1;
    private static final int STAGE_READY = 2;
    private static final int STAGE_TRAFFIC = 3;

    /** The connections that may carry calls, by routing id. */
    private final Map<ByteBuffer, Zconn> byIdentity = new ConcurrentHashMap<>();

    /** A connection and where its handshake and its current message are. Serving thread. */
    private static final class Zconn extends Conn {
        int stage = STAGE_SIGNATURE;
        /** When it was accepted (the config's clock). */
        long acceptedNs;
        /** The frames of the message being read, its byte count, and its first three frames. */
        int parts;
        long bytes;
        List<byte[]> frames = new ArrayList<>(3);

        Zconn(long id, SocketChannel ch, SelectionKey key) {
            super(id, ch, key);
        }
    }

    ZmtpBridgeTransport(EngineBridgeConfig config) throws IOException {
        super(config);
    }

    @Override
    public String bind() {
        if (config.isIpc()) {
            listen(config.socketPath());
            return config.bindEndpoint();
        }
        String rest = config.bindEndpoint().substring("tcp://".length());
        int colon = rest.lastIndexOf(':');
        String host = rest.substring(0, colon);
        String port = rest.substring(colon + 1);
        ServerSocketChannel server = null;
        try {
            InetAddress addr = InetAddress.getByName(host.startsWith("[") ? host.substring(1, host.length() - 1) : host);
            server = ServerSocketChannel.open();
            server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            server.bind(new InetSocketAddress(addr, port.equals("*") ? 0 : Integer.parseInt(port)), 128);
            listen(server);
            int bound = ((InetSocketAddress) server.getLocalAddress()).getPort();
            String shown = host.startsWith("[") ? host : addr.getHostAddress();
            return "tcp://" + shown + ":" + bound;
        } catch (IOException e) {
            closeQuietly(server);
            throw new IllegalStateException("cannot bind the engine bridge at " + config.bindEndpoint() + ": " + e, e);
        }
    }

    @Override
    Conn connected(long id, SocketChannel ch, SelectionKey key) throws IOException {
        if (!config.isIpc()) {
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        }
        Zconn c = new Zconn(id, ch, key);
        c.acceptedNs = config.clock().getAsLong();
        write(c, ByteBuffer.wrap(SIGNATURE), false);
        return c;
    }

    @Override
    Conn find(byte[] identity) {
        return byIdentity.get(ByteBuffer.wrap(identity));
    }

    @Override
    void forget(Conn c) {
        byte[] id = c.identity;
        if (id != null) {
            byIdentity.remove(ByteBuffer.wrap(id), c);
        }
    }

    @Override
    String overdue(Conn c, long nowNs) {
        Zconn z = (Zconn) c;
        return z.stage < STAGE_TRAFFIC && nowNs - z.acceptedNs > HANDSHAKE_NS
                ? "no ZMTP handshake within " + HANDSHAKE_NS / 1_000_000_000L + " s" : null;
    }

    @Override
    String leftMidway(Conn c, int unread) {
        Zconn z = (Zconn) c;
        if (z.stage < STAGE_TRAFFIC) {
            return unread == 0 && z.stage == STAGE_SIGNATURE ? null : "the caller left during the ZMTP handshake";
        }
        if (unread > 0) {
            return "the caller left in the middle of a frame (" + unread + " bytes of it read)";
        }
        return z.parts > 0 ? "the caller left in the middle of a message (" + z.parts + " frames of it read)" : null;
    }

    @Override
    void header(ByteBuffer into, boolean reqFraming, int length) {
        if (reqFraming) {
            into.put((byte) MORE).put((byte) 0);
        }
        if (length <= 255) {
            into.put((byte) 0).put((byte) length);
        } else {
            into.put((byte) LONG).putLong(length);
        }
    }

    @Override
    long frames(Conn conn, ByteBuffer b) {
        Zconn c = (Zconn) conn;
        while (!c.closed) {
            int p = b.position();
            if (c.stage == STAGE_SIGNATURE) {
                if (b.remaining() > 0 && (b.get(p) & 0xFF) != 0xFF) {
                    close(c, "not a ZMTP greeting (first byte 0x" + HexFormat.of().toHexDigits(b.get(p)) + ")");
                    return 0;
                }
                if (b.remaining() < SIGNATURE.length + 1) {
                    return 0;
                }
                if ((b.get(p + 9) & 1) == 0) {
                    close(c, "not a ZMTP 3 greeting (the signature's tenth byte 0x"
                            + HexFormat.of().toHexDigits(b.get(p + 9)) + ")");
                    return 0;
                }
                int major = b.get(p + 10) & 0xFF;
                if (major < 3) {
                    close(c, "ZMTP " + major + ".x; this ROUTER speaks ZMTP 3");
                    return 0;
                }
                c.stage = STAGE_GREETING;
                write(c, ByteBuffer.wrap(GREETING_REST), false);
                continue;
            }
            if (c.stage == STAGE_GREETING) {
                if (b.remaining() < GREETING) {
                    return 0;
                }
                byte[] mech = new byte[20];
                b.get(p + 12, mech);
                String mechanism = printable(new String(mech, StandardCharsets.US_ASCII).replace("\0", ""));
                if (!mechanism.equals("NULL")) {
                    close(c, "security mechanism \"" + mechanism + "\"; this ROUTER takes NULL only");
                    return 0;
                }
                b.position(p + GREETING);
                c.stage = STAGE_READY;
                write(c, ByteBuffer.wrap(READY), false);
                continue;
            }
            if (b.remaining() < 2) {
                return 0;
            }
            int flags = b.get(p) & 0xFF;
            if ((flags & ~(MORE | LONG | COMMAND)) != 0) {
                close(c, "a frame with reserved flag bits set (flags 0x" + HexFormat.of().toHexDigits((byte) flags) + ")");
                return 0;
            }
            int head = (flags & LONG) != 0 ? 9 : 2;
            if (b.remaining() < head) {
                return 0;
            }
            long len = head == 9 ? b.getLong(p + 1) : b.get(p + 1) & 0xFF;
            boolean command = (flags & COMMAND) != 0;
            long bound = command ? MAX_COMMAND_BYTES : config.maxMessageBytes();
            if (len < 0 || len > bound || (!command && c.bytes + len > config.maxMessageBytes())) {
                close(c, (command ? "a command of " : len > bound ? "a frame of " : "a message of ")
                        + Long.toUnsignedString(command || len > bound ? len : c.bytes + len) + " bytes, above the bound of "
                        + bound);
                return 0;
            }
            if (b.remaining() < head + len) {
                return head + len;
            }
            b.position(p + head);
            if (command) {
                if ((flags & MORE) != 0 || c.parts > 0) {
                    close(c, "a command inside a message");
                    return 0;
                }
                byte[] body = new byte[(int) len];
                b.get(body);
                command(c, body);
                continue;
            }
            if (c.stage != STAGE_TRAFFIC) {
                close(c, "a message before the READY command");
                return 0;
            }
            if (c.parts == MAX_PARTS) {
                // a call is one frame, or two (REQ); empty frames would otherwise count without bound
                close(c, "a message of more than " + MAX_PARTS + " frames");
                return 0;
            }
            c.parts++;
            c.bytes += len;
            if (c.frames.size() < 3) {
                byte[] frame = new byte[(int) len];
                b.get(frame);
                c.frames.add(frame);
            } else {
                b.position(b.position() + (int) len);
            }
            if ((flags & MORE) == 0) {
                deliver(new Message(c.identity, c.parts, c.frames));
                c.frames = new ArrayList<>(3);
                c.parts = 0;
                c.bytes = 0;
            }
        }
        return 0;
    }

    /** Handles one command: READY, PING, ERROR; others are ignored. */
    private void command(Zconn c, byte[] body) {
        int nameLen = body.length == 0 ? -1 : body[0] & 0xFF;
        if (nameLen < 1 || 1 + nameLen > body.length) {
            close(c, "a malformed command (" + body.length + " bytes)");
            return;
        }
        String name = new String(body, 1, nameLen, StandardCharsets.US_ASCII);
        int at = 1 + nameLen;
        switch (name) {
            case "READY" -> ready(c, body, at);
            case "PING" -> {
                if (body.length < at + 2 || body.length - at - 2 > 16) {
                    close(c, "a malformed PING (" + body.length + " bytes)");
                    return;
                }
                byte[] context = java.util.Arrays.copyOfRange(body, at + 2, body.length);
                // dropped when the caller is not reading what it was sent: its data then counts as traffic
                write(c, ByteBuffer.wrap(command("PONG", context)), true);
            }
            case "ERROR" -> {
                int n = body.length > at ? body[at] & 0xFF : 0;
                String reason = new String(body, Math.min(at + 1, body.length), Math.min(n, Math.max(0, body.length - at - 1)),
                        StandardCharsets.UTF_8);
                close(c, "the caller sent ERROR \"" + printable(reason) + "\"");
            }
            default -> {
                // PONG (this ROUTER sends no PING), SUBSCRIBE and CANCEL (not a DEALER's), and
                // commands of later versions: nothing to do
            }
        }
    }

    /** The peer's READY: its socket type must be DEALER or REQ; its Identity names it when set. */
    private void ready(Zconn c, byte[] body, int at) {
        if (c.stage != STAGE_READY) {
            close(c, "a second READY command");
            return;
        }
        String type = null;
        byte[] identity = null;
        int i = at;
        while (i < body.length) {
            int nl = body[i] & 0xFF;
            if (nl == 0 || i + 1 + nl + 4 > body.length) {
                close(c, "a malformed READY property at byte " + i);
                return;
            }
            String prop = new String(body, i + 1, nl, StandardCharsets.US_ASCII).toLowerCase(Locale.ROOT);
            i += 1 + nl;
            int vl = ByteBuffer.wrap(body, i, 4).getInt();
            i += 4;
            if (vl < 0 || vl > body.length - i) {
                close(c, "a malformed READY property \"" + prop + "\"");
                return;
            }
            byte[] value = java.util.Arrays.copyOfRange(body, i, i + vl);
            i += vl;
            if (prop.equals("socket-type")) {
                type = printable(new String(value, StandardCharsets.US_ASCII));
            } else if (prop.equals("identity")) {
                identity = value;
            }
        }
        if (!"DEALER".equals(type) && !"REQ".equals(type)) {
            String why = "socket type " + (type == null ? "(none)" : "\"" + type + "\"")
                    + " cannot call the engine bridge; use a DEALER or a REQ";
            write(c, ByteBuffer.wrap(command("ERROR", reason(why))), false);
            close(c, why);
            return;
        }
        byte[] id = identity != null && identity.length > 0 && identity[0] != 0 && identity.length <= 255 ? identity
                : ByteBuffer.allocate(5).put((byte) 0).putInt((int) c.id).array();
        synchronized (this) {
            if (byIdentity.putIfAbsent(ByteBuffer.wrap(id), c) != null) {
                close(c, "routing id 0x" + HexFormat.of().formatHex(id) + " is taken by another connection");
                return;
            }
            c.identity = id;
        }
        c.stage = STAGE_TRAFFIC;
    }

    /** What a peer sent, fit for a log line: anything but printable ASCII becomes {@code ?}. */
    private static String printable(String text) {
        return text.replaceAll("[^\\x20-\\x7E]", "?");
    }

    private static byte[] reason(String why) {
        byte[] text = why.getBytes(StandardCharsets.UTF_8);
        byte[] r = new byte[1 + Math.min(200, text.length)];
        r[0] = (byte) (r.length - 1);
        System.arraycopy(text, 0, r, 1, r.length - 1);
        return r;
    }

    private static byte[] greetingRest() {
        ByteBuffer g = ByteBuffer.allocate(GREETING - SIGNATURE.length);
        g.put((byte) 3).put((byte) 1).put("NULL".getBytes(StandardCharsets.US_ASCII));
        return g.array();
    }

    static byte[] property(String name, String value) {
        byte[] n = name.getBytes(StandardCharsets.US_ASCII);
        byte[] v = value.getBytes(StandardCharsets.US_ASCII);
        return ByteBuffer.allocate(1 + n.length + 4 + v.length).put((byte) n.length).put(n).putInt(v.length).put(v).array();
    }

    /** A command frame: short (every command here is under 256 bytes). */
    static byte[] command(String name, byte[] data) {
        byte[] n = name.getBytes(StandardCharsets.US_ASCII);
        int len = 1 + n.length + data.length;
        return ByteBuffer.allocate(2 + len).put((byte) COMMAND).put((byte) len).put((byte) n.length).put(n).put(data).array();
    }
}
