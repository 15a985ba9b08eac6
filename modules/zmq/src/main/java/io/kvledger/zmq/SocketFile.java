package io.kvledger.zmq;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * The socket file of a bridge served over a Unix domain stream socket: {@code unix://}
 * ({@link UnixBridgeTransport}) and {@code ipc://} ({@link ZmtpBridgeTransport}, ZMTP over the
 * socket as libzmq's {@code ipc://} speaks it).
 *
 * <p>Safety: hook calls carry no credentials, so the socket file goes only into a directory the
 * node's user owns and no one else may write, and is made readable and writable by that user
 * alone. An existing file at the path is replaced only when it is a socket nothing answers on
 * (one a node that ended left behind). The file is removed when the transport closes.
 */
final class SocketFile {

    private SocketFile() {}

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

    /**
     * A listening Unix domain socket at {@code path}, its file readable and writable by this user
     * alone.
     *
     * @throws IllegalArgumentException when the directory may not hold it ({@link #directoryProblem})
     * @throws IllegalStateException    when it cannot be bound (a live socket or another file is there)
     */
    static ServerSocketChannel bind(Path path) {
        String problem = directoryProblem(path);
        if (problem != null) {
            throw new IllegalArgumentException(problem);
        }
        ServerSocketChannel server = null;
        try {
            clearStale(path);
            server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
            server.bind(UnixDomainSocketAddress.of(path));
            Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-------"));
            return server;
        } catch (IOException e) {
            StreamBridgeTransport.closeQuietly(server);
            throw new IllegalStateException("cannot bind the engine bridge at " + path + ": " + e, e);
        }
    }

    /** Removes a socket file nothing answers on; refuses any other file, and a live socket. */
    private static void clearStale(Path path) throws IOException {
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

    /** Removes the socket file at close; one left behind is replaced at the next bind (nothing answers on it). */
    static void remove(Path path) {
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            // left behind: the next bind replaces it
        }
    }
}
