package io.kvledger.zmq;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Set;

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
 * <p>Safety: hook calls carry no credentials, so the socket file goes only into a directory the
 * node's user owns and no one else may write, and is made readable and writable by that user
 * alone. An existing file at the path is replaced only when it is a socket nothing answers on
 * (one a node that ended left behind).
 */
final class UnixBridgeTransport extends StreamBridgeTransport {

    private static final int HEADER = 4;

    private final Path path;

    UnixBridgeTransport(EngineBridgeConfig config) throws IOException {
        super(config);
        this.path = config.unixPath();
    }

    /**
     * Why the directory of {@code socket} may not hold the bridge's socket, or {@code null}: it must
     * exist, be a directory (not a link) owned by this process's user, and not be writable by group
     * or others (anyone who can write it could put their own socket in the node's place).
     */
    static String directoryProblem(Path socket) {
        Path dir = socket.toAbsolutePath().getParent();
        if (dir == null || !Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            return "the directory of the engine bridge's socket " + socket + " does not exist (or is a link)";
        }
        try {
            Object owner = Files.getAttribute(dir, "unix:uid", LinkOption.NOFOLLOW_LINKS);
            long me = new com.sun.security.auth.module.UnixSystem().getUid();
            if (!(owner instanceof Integer uid) || uid.longValue() != me) {
                return "the engine bridge's socket goes only into a directory this user (uid " + me + ") owns; "
                        + dir + " belongs to uid " + owner;
            }
            Set<PosixFilePermission> perms = Files.getPosixFilePermissions(dir, LinkOption.NOFOLLOW_LINKS);
            if (perms.contains(PosixFilePermission.GROUP_WRITE) || perms.contains(PosixFilePermission.OTHERS_WRITE)) {
                return "the engine bridge's socket goes only into a directory no one else may write; " + dir + " is "
                        + PosixFilePermissions.toString(perms);
            }
        } catch (IOException | UnsupportedOperationException e) {
            return "cannot check the directory of the engine bridge's socket " + socket + ": " + e;
        }
        return null;
    }

    @Override
    public String bind() {
        String problem = directoryProblem(path);
        if (problem != null) {
            throw new IllegalArgumentException(problem);
        }
        ServerSocketChannel server = null;
        try {
            clearStale();
            server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
            server.bind(UnixDomainSocketAddress.of(path));
            Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-------"));
            listen(server);
        } catch (IOException e) {
            closeQuietly(server);
            throw new IllegalStateException("cannot bind the engine bridge at " + path + ": " + e, e);
        }
        return config.bindEndpoint();
    }

    /** Removes a socket file nothing answers on; refuses any other file, and a live socket. */
    private void clearStale() throws IOException {
        if (!Files.exists(path, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        Object mode = Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS);
        boolean socket = mode instanceof Integer m && (m & 0170000) == 0140000;
        if (!socket) {
            throw new IllegalStateException("cannot bind the engine bridge at " + path
                    + ": a file that is not a socket is there (remove it, or choose another path)");
        }
        try (SocketChannel probe = SocketChannel.open(UnixDomainSocketAddress.of(path))) {
            throw new IllegalStateException("cannot bind the engine bridge at " + path
                    + ": something listens there already (another node?)");
        } catch (IOException e) {
            // nothing answers: a socket a node that ended left behind
            Files.delete(path);
        }
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

    @Override
    void closed() {
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            // left behind: the next bind replaces it (nothing answers on it)
        }
    }
}
