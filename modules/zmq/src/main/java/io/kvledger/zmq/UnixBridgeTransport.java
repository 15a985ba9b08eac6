package io.kvledger.zmq;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
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
 * <p>Reading: each {@link #await} first reads every connection directly (a call that is there costs
 * one {@code read}); the selector is asked before any wait, and, between the looks of a serving
 * thread that spins, at every 16th look (new connections, replies to drain). A reply up to
 * {@link #OUT_BYTES} leaves in one {@code write} from the connection's own direct buffer.
 *
 * <p>Each connection is a caller (its identity: a number the server gives it). A reply the socket
 * cannot take whole is kept (the rest of its bytes) and written as the caller reads; while that is
 * so, further replies to the caller are {@link BridgeTransport.Send#FULL FULL}, and the server
 * holds them and refuses the caller's new calls, as over ZMQ. A reply to a closed connection is
 * {@link BridgeTransport.Send#GONE GONE}.
 *
 * <p>Safety: hook calls carry no credentials, so the socket file goes only into a directory the
 * node's user owns and no one else may write, and is made readable and writable by that user
 * alone. An existing file at the path is replaced only when it is a socket nothing answers on
 * (one a node that ended left behind).
 */
final class UnixBridgeTransport implements BridgeTransport {

    private static final int HEADER = 4;
    /** The largest reply (with its header) written from a connection's own direct buffer in one write. */
    static final int OUT_BYTES = 64 * 1024;

    private final EngineBridgeConfig config;
    private final Path path;
    private final Selector selector;
    private ServerSocketChannel server;
    /** The connections; their writes ({@link #send}, {@link #flush}, {@link #drop}) synchronize on this transport. */
    private final Map<Long, Conn> conns = new java.util.concurrent.ConcurrentHashMap<>();
    /** The same connections, for the serving thread's reads without a selector round (replaced on each change). */
    private volatile Conn[] readers = new Conn[0];
    private final ArrayDeque<Message> ready = new ArrayDeque<>();
    private long nextConn = 1;

    /** One connected caller. */
    private static final class Conn {
        final long id;
        final byte[] identity;
        final SocketChannel ch;
        final SelectionKey key;
        /** What was read and not yet taken as frames (direct: the socket reads into it with no copy). */
        ByteBuffer in = ByteBuffer.allocateDirect(4096);
        /** A reply up to {@link #OUT_BYTES} with its header, written with one {@code write}; made at the first. */
        ByteBuffer out;
        /** The unwritten rest of the last reply (header and frame), or {@code null}. */
        ByteBuffer[] rest;
        boolean closed;

        Conn(long id, SocketChannel ch, SelectionKey key) {
            this.id = id;
            this.identity = ByteBuffer.allocate(8).putLong(id).array();
            this.ch = ch;
            this.key = key;
        }
    }

    UnixBridgeTransport(EngineBridgeConfig config) throws IOException {
        this.config = config;
        this.path = config.unixPath();
        this.selector = Selector.open();
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
        try {
            clearStale();
            server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
            server.bind(UnixDomainSocketAddress.of(path));
            Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-------"));
            server.configureBlocking(false);
            server.register(selector, SelectionKey.OP_ACCEPT);
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
    public void await(long waitMs) {
        if (!ready.isEmpty()) {
            return;
        }
        // a call already on a connection is taken with one read, without a selector round (an
        // epoll_wait, then the read, per call); the selector is asked only when none was there
        if (readDirectly()) {
            return;
        }
        if (waitMs <= 0 && (++looks & 15) != 0 && readers.length > 0 && !draining()) {
            // a look between two of the node loop's spins: the next look reads again; the selector
            // (new connections, a reply to drain) is asked at every 16th, and before any wait
            return;
        }
        try {
            if (waitMs <= 0) {
                selector.selectNow();
            } else {
                selector.select(waitMs);
            }
        } catch (IOException | java.nio.channels.ClosedSelectorException e) {
            // closed under a serving thread (the server closing): nothing more to read
            return;
        }
        Iterator<SelectionKey> it;
        try {
            it = selector.selectedKeys().iterator();
        } catch (java.nio.channels.ClosedSelectorException e) {
            return;
        }
        while (it.hasNext()) {
            SelectionKey k = it.next();
            it.remove();
            if (!k.isValid()) {
                continue;
            }
            if (k.isAcceptable()) {
                accept();
                continue;
            }
            Conn c = (Conn) k.attachment();
            if (k.isValid() && k.isWritable()) {
                flush(c);
            }
            if (k.isValid() && k.isReadable()) {
                read(c);
            }
        }
    }

    /** Looks without waiting since the selector was last asked. Serving thread only. */
    private int looks;

    /**
     * Whether a connection waits for the rest of a reply to drain (a hint, read without the lock:
     * the selector, asked at once, then writes it).
     */
    private boolean draining() {
        for (Conn c : readers) {
            if (c.rest != null) {
                return true;
            }
        }
        return false;
    }

    /**
     * Reads what each connection has (a non-blocking read that finds nothing costs one syscall, as
     * a selector round does); true when that queued a message. A connection the selector reports
     * afterwards is read again there, finding what came since.
     */
    private boolean readDirectly() {
        for (Conn c : readers) {
            if (!c.closed) {
                read(c);
            }
        }
        return !ready.isEmpty();
    }

    private synchronized void accept() {
        try {
            SocketChannel ch;
            while ((ch = server.accept()) != null) {
                ch.configureBlocking(false);
                long id = nextConn++;
                SelectionKey key = ch.register(selector, SelectionKey.OP_READ);
                Conn c = new Conn(id, ch, key);
                key.attach(c);
                conns.put(id, c);
                readers = conns.values().toArray(new Conn[0]);
            }
        } catch (IOException e) {
            // the caller went away before it was accepted
        }
    }

    /** Reads what the connection has and queues each whole frame. */
    private void read(Conn c) {
        try {
            while (true) {
                if (!c.in.hasRemaining()) {
                    grow(c, c.in.capacity() * 2L);
                }
                int room = c.in.remaining();
                int n = c.ch.read(c.in);
                if (n < 0) {
                    drop(c);
                    return;
                }
                frames(c);
                if (c.closed || n < room) {
                    // the socket had no more than this (a read that fills the room may leave more):
                    // no second read to learn it is empty
                    return;
                }
            }
        } catch (IOException e) {
            drop(c);
        }
    }

    /** Takes the whole frames at the start of the connection's buffer. */
    private void frames(Conn c) {
        ByteBuffer b = c.in;
        b.flip();
        while (b.remaining() >= HEADER) {
            int len = b.getInt(b.position());
            if (len < 0 || len > config.maxMessageBytes()) {
                // as ZMQ's MAXMSGSIZE: the caller is disconnected before the frame is read
                drop(c);
                return;
            }
            if (b.remaining() < HEADER + len) {
                if (b.capacity() < HEADER + len) {
                    b.compact();
                    grow(c, HEADER + (long) len);
                    return;
                }
                break;
            }
            b.position(b.position() + HEADER);
            byte[] frame = new byte[len];
            b.get(frame);
            ready.add(new Message(c.identity, 1, List.of(frame)));
        }
        b.compact();
    }

    private static void grow(Conn c, long want) {
        int size = (int) Math.min(Integer.MAX_VALUE - 16, Math.max(want, c.in.capacity()));
        // direct up to the size of a common step's frame; a larger one on the heap, as the GC frees it
        ByteBuffer bigger = size <= OUT_BYTES ? ByteBuffer.allocateDirect(size) : ByteBuffer.allocate(size);
        c.in.flip();
        bigger.put(c.in);
        c.in = bigger;
    }

    @Override
    public void wake() {
        selector.wakeup();
    }

    @Override
    public Message receive() {
        return ready.poll();
    }

    @Override
    public synchronized Send send(byte[] identity, boolean reqFraming, byte[] frame) {
        Conn c = conns.get(ByteBuffer.wrap(identity).getLong());
        if (c == null || c.closed) {
            return Send.GONE;
        }
        if (c.rest != null) {
            flush(c);
            if (c.closed) {
                return Send.GONE;
            }
            if (c.rest != null) {
                return Send.FULL;
            }
        }
        // a reply that fits the connection's buffer goes out with one write, else header and frame gathered
        ByteBuffer one = frame.length <= OUT_BYTES - HEADER ? outBuffer(c, frame) : null;
        ByteBuffer[] two = one != null ? null
                : new ByteBuffer[] {ByteBuffer.allocate(HEADER).putInt(0, frame.length), ByteBuffer.wrap(frame)};
        try {
            if (one != null) {
                c.ch.write(one);
            } else {
                c.ch.write(two);
            }
        } catch (IOException e) {
            drop(c);
            return Send.GONE;
        }
        if (one != null ? one.hasRemaining() : two[1].hasRemaining()) {
            // taken: the rest leaves as the caller reads (copied out of the connection's buffer, which the next reply reuses)
            c.rest = one != null ? new ByteBuffer[] {ByteBuffer.allocate(one.remaining()).put(one).flip()} : two;
            c.key.interestOps(SelectionKey.OP_READ | SelectionKey.OP_WRITE);
        }
        return Send.SENT;
    }

    /**
     * The reply with its header in the connection's direct buffer, as one buffer: one {@code write}
     * with no gathering and no copy into a temporary direct buffer.
     */
    private static ByteBuffer outBuffer(Conn c, byte[] frame) {
        if (c.out == null) {
            c.out = ByteBuffer.allocateDirect(OUT_BYTES);
        }
        return c.out.clear().putInt(frame.length).put(frame).flip();
    }

    /** Writes what is left of the connection's last reply. */
    private synchronized void flush(Conn c) {
        if (c.rest == null) {
            return;
        }
        try {
            c.ch.write(c.rest);
        } catch (IOException e) {
            drop(c);
            return;
        }
        if (!c.rest[c.rest.length - 1].hasRemaining()) {
            c.rest = null;
            if (c.key.isValid()) {
                c.key.interestOps(SelectionKey.OP_READ);
            }
        }
    }

    private synchronized void drop(Conn c) {
        c.closed = true;
        conns.remove(c.id);
        readers = conns.values().toArray(new Conn[0]);
        c.key.cancel();
        closeQuietly(c.ch);
    }

    @Override
    public synchronized void close() {
        // give the last replies up to a second to leave
        long end = System.nanoTime() + 1_000_000_000L;
        for (Conn c : List.copyOf(conns.values())) {
            while (c.rest != null && !c.closed && System.nanoTime() < end) {
                flush(c);
                if (c.rest != null) {
                    java.util.concurrent.locks.LockSupport.parkNanos(1_000_000L);
                }
            }
            drop(c);
        }
        closeQuietly(server);
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            // left behind: the next bind replaces it (nothing answers on it)
        }
    }

    @Override
    public void release() {
        try {
            selector.close();
        } catch (IOException e) {
            // nothing left to release
        }
    }

    /** Yes: the node loop writes its answers itself while the socket thread waits for calls. */
    @Override
    public boolean answersDirectly() {
        return true;
    }

    @Override
    public boolean wakeUpOpen() {
        return selector.isOpen();
    }

    private static void closeQuietly(java.io.Closeable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (IOException e) {
            // closing anyway
        }
    }
}
