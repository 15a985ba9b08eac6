package io.kvledger.zmq;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.List;

/**
 * The engine bridge over a Unix domain stream socket ({@code unix:///PATH}), for an engine on the
 * same host: no ZMQ I/O threads between the socket and the server's thread, so a call and its
 * reply each cross one thread fewer in each direction than over loopback TCP.
 *
 * <p>Framing: each request and each reply is a 4-byte big-endian length and then that many bytes
 * of one msgpack map (the bridge protocol's maps, unchanged). A length above
 * {@link EngineBridgeConfig#maxMessageBytes()} closes the connection before anything of it is
 * read into memory (as ZMQ's {@code MAXMSGSIZE} does).
 *
 * <p>The connections are read and written as {@link StreamBridgeTransport} does (directly, a reply
 * in one write, the rest of a reply the socket did not take kept and the caller's next replies
 * {@link BridgeTransport.Send#FULL FULL} meanwhile). Each connection is a caller (its identity: a
 * number the server gives it).
 *
 * <p>The socket file is kept as {@link SocketFile} says: only in a directory no one else may write,
 * readable and writable by the node's user alone, a stale one replaced, removed at close.
 */
final class UnixBridgeTransport extends StreamBridgeTransport {

    private static final int HEADER = 4;

    private final Path path;

    UnixBridgeTransport(EngineBridgeConfig config) throws IOException {
        super(config);
        this.path = config.socketPath();
    }

    @Override
    public String bind() {
        listen(path);
        return config.bindEndpoint();
    }

    @Override
    Conn connected(long id, SocketChannel ch, SelectionKey key) {
        Conn c = new Conn(id, ch, key);
        c.identity = ByteBuffer.allocate(8).putLong(id).array();
        return c;
    }

    @Override
    Conn find(byte[] identity) {
        return identity.length == 8 ? connection(ByteBuffer.wrap(identity).getLong()) : null;
    }

    /** Takes the whole frames at the start of the connection's buffer. */
    @Override
    long frames(Conn c, ByteBuffer b) {
        while (b.remaining() >= HEADER) {
            int len = b.getInt(b.position());
            if (len < 0 || len > config.maxMessageBytes()) {
                // as ZMQ's MAXMSGSIZE: the caller is disconnected before the frame is read
                close(c, "a frame of " + Integer.toUnsignedString(len) + " bytes, above the bound of "
                        + config.maxMessageBytes());
                return 0;
            }
            if (b.remaining() < HEADER + len) {
                return HEADER + (long) len;
            }
            b.position(b.position() + HEADER);
            byte[] frame = new byte[len];
            b.get(frame);
            deliver(new Message(c.identity, 1, List.of(frame)));
        }
        return 0;
    }

    @Override
    void header(ByteBuffer into, boolean reqFraming, int length) {
        into.putInt(length);
    }
}
