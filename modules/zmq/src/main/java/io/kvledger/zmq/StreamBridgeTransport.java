package io.kvledger.zmq;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;

/**
 * The loop the bridge's stream transports share ({@link UnixBridgeTransport},
 * {@link ZmtpBridgeTransport}): one selector, non-blocking connections read by the serving thread
 * itself, replies written by whichever thread answers. A subclass binds the listening channel and
 * says how bytes become messages ({@link #frames}) and how a reply is framed ({@link #header}).
 *
 * <p>Reading: each {@link #await} first reads every connection directly (a call that is there costs
 * one {@code read}); the selector is asked before any wait, and, between the looks of a serving
 * thread that spins, at every 16th look (new connections, replies to drain). A reply up to
 * {@link #OUT_BYTES} leaves in one {@code write} from the connection's own direct buffer.
 *
 * <p>A reply the socket cannot take whole is kept (the rest of its bytes) and written as the
 * caller reads; while that is so, further replies to the caller are
 * {@link BridgeTransport.Send#FULL FULL}, and the server holds them and refuses the caller's new
 * calls. A reply to a closed connection is {@link BridgeTransport.Send#GONE GONE}. A connection
 * closed for what it sent (or for leaving in the middle of a frame) is reported to the server as a
 * {@link BridgeTransport.Message#closed closing} message, with the reason.
 */
abstract class StreamBridgeTransport implements BridgeTransport {

    /** The largest reply (with its header) written from a connection's own direct buffer in one write. */
    static final int OUT_BYTES = 64 * 1024;
    /** Room for the longest header a transport writes before a reply's bytes. */
    private static final int HEADER_ROOM = 16;

    final EngineBridgeConfig config;
    private final Selector selector;
    private ServerSocketChannel server;
    /** The socket file {@link #listen(Path)} bound, removed at close; {@code null} for a TCP port. */
    private Path socketFile;
    /** The connections; their writes ({@link #send}, {@link #flush}, {@link #drop}) synchronize on this transport. */
    private final Map<Long, Conn> conns = new ConcurrentHashMap<>();
    /** The same connections, for the serving thread's reads without a selector round (replaced on each change). */
    private volatile Conn[] readers = new Conn[0];
    private final ArrayDeque<Message> ready = new ArrayDeque<>();
    private long nextConn = 1;
    /** Looks without waiting since the selector was last asked. Serving thread only. */
    private int looks;

    /** One connected caller (a transport keeps its own state in a subclass). */
    static class Conn {
        final long id;
        final SocketChannel ch;
        final SelectionKey key;
        /** The caller's identity as replies name it; {@code null} until the connection may carry calls. */
        volatile byte[] identity;
        /** What was read and not yet taken as frames (direct: the socket reads into it with no copy). */
        ByteBuffer in = ByteBuffer.allocateDirect(4096);
        /** A reply up to {@link #OUT_BYTES} with its header, written with one {@code write}; made at the first. */
        ByteBuffer out;
        /** The unwritten rest of what was written last (header and frame), or {@code null}. */
        ByteBuffer[] rest;
        volatile boolean closed;

        Conn(long id, SocketChannel ch, SelectionKey key) {
            this.id = id;
            this.ch = ch;
            this.key = key;
        }
    }

    StreamBridgeTransport(EngineBridgeConfig config) throws IOException {
        this.config = config;
        this.selector = Selector.open();
    }

    /** Starts serving {@code listening} (bound, by the subclass's {@link #bind}). */
    final void listen(ServerSocketChannel listening) throws IOException {
        server = listening;
        server.configureBlocking(false);
        server.register(selector, SelectionKey.OP_ACCEPT);
    }

    /**
     * Starts serving a Unix domain socket bound at {@code path} ({@link SocketFile#bind}); its file
     * is removed at {@link #close}.
     */
    final void listen(Path path) {
        ServerSocketChannel listening = SocketFile.bind(path);
        socketFile = path;
        try {
            listen(listening);
        } catch (IOException e) {
            closeQuietly(listening);
            SocketFile.remove(path);
            throw new IllegalStateException("cannot bind the engine bridge at " + path + ": " + e, e);
        }
    }

    /** The listening channel ({@code null} before {@link #listen}). */
    final ServerSocketChannel server() {
        return server;
    }

    /** The open connection numbered {@code id}, or {@code null}. */
    final Conn connection(long id) {
        return conns.get(id);
    }

    /** A new connection's state; may {@link #write} to it (a greeting). Under this transport's lock. */
    abstract Conn connected(long id, SocketChannel ch, SelectionKey key) throws IOException;

    /**
     * Takes the whole frames at the start of {@code b} (flipped: from its position to its limit),
     * {@link #deliver delivering} each whole message, and leaves the position at the first byte
     * not taken. Returns how many bytes the buffer must hold for the next frame to fit (0: it fits
     * or is not known yet). Closes the connection ({@link #close(Conn, String)}) on bad input.
     */
    abstract long frames(Conn c, ByteBuffer b);

    /** The connection a reply to {@code identity} goes to, or {@code null}. */
    abstract Conn find(byte[] identity);

    /** Writes the framing (at most 16 bytes) before a reply of {@code length} bytes. */
    abstract void header(ByteBuffer into, boolean reqFraming, int length);

    /** Forgets what names the connection (it closed). Under this transport's lock. */
    void forget(Conn c) {}

    /** Why a connection that ended with {@code unread} bytes of a frame unread is reported, or {@code null}. */
    String leftMidway(Conn c, int unread) {
        return unread == 0 ? null : "the caller left in the middle of a frame (" + unread + " bytes of it read)";
    }

    /** Queues a whole message for {@link #receive}. Serving thread. */
    final void deliver(Message m) {
        ready.add(m);
    }

    /** Closes the connection for {@code reason}, reported to the server through {@link #receive}. */
    final void close(Conn c, String reason) {
        if (c.closed) {
            return;
        }
        drop(c);
        byte[] id = c.identity;
        ready.add(Message.closed(id != null ? id : new byte[0], "connection " + c.id + " from " + remote(c)
                + " closed: " + reason));
    }

    private static String remote(Conn c) {
        try {
            Object a = c.ch.getRemoteAddress();
            return a == null || a.toString().isEmpty() ? "a local peer" : a.toString();
        } catch (IOException | RuntimeException e) {
            return "a peer";
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
        if (waitMs > 0) {
            closeOverdue();
        }
        try {
            if (waitMs <= 0) {
                selector.selectNow();
            } else {
                selector.select(waitMs);
            }
        } catch (IOException | ClosedSelectorException e) {
            // closed under a serving thread (the server closing): nothing more to read
            return;
        }
        Iterator<SelectionKey> it;
        try {
            it = selector.selectedKeys().iterator();
        } catch (ClosedSelectorException e) {
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

    /** Closes, before a wait, each connection {@link #overdue} names. */
    private void closeOverdue() {
        long now = config.clock().getAsLong();
        for (Conn c : readers) {
            String why = c.closed ? null : overdue(c, now);
            if (why != null) {
                close(c, why);
            }
        }
    }

    /** Why the connection is closed at {@code nowNs} (the config's clock), or {@code null}: never by default. */
    String overdue(Conn c, long nowNs) {
        return null;
    }

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
                Conn c = connected(id, ch, key);
                key.attach(c);
                conns.put(id, c);
                readers = conns.values().toArray(new Conn[0]);
            }
        } catch (IOException e) {
            // the caller went away before it was accepted
        }
    }

    /** Reads what the connection has and takes each whole frame. */
    private void read(Conn c) {
        try {
            while (true) {
                if (!c.in.hasRemaining()) {
                    grow(c, c.in.capacity() * 2L);
                }
                int room = c.in.remaining();
                int n = c.ch.read(c.in);
                if (n < 0) {
                    String why = leftMidway(c, c.in.position());
                    if (why != null) {
                        close(c, why);
                    } else {
                        drop(c);
                    }
                    return;
                }
                take(c);
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

    private void take(Conn c) {
        ByteBuffer b = c.in;
        b.flip();
        long need = frames(c, b);
        if (c.closed) {
            return;
        }
        b.compact();
        if (need > b.capacity()) {
            grow(c, need);
        }
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
        Conn c = find(identity);
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
        ByteBuffer one = null;
        ByteBuffer[] two = null;
        if (frame.length <= OUT_BYTES - HEADER_ROOM) {
            if (c.out == null) {
                c.out = ByteBuffer.allocateDirect(OUT_BYTES);
            }
            one = c.out.clear();
            header(one, reqFraming, frame.length);
            one.put(frame).flip();
        } else {
            ByteBuffer h = ByteBuffer.allocate(HEADER_ROOM);
            header(h, reqFraming, frame.length);
            two = new ByteBuffer[] {h.flip(), ByteBuffer.wrap(frame)};
        }
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
     * Writes protocol bytes of the transport's own (a greeting, a command) behind what the
     * connection has not written yet; false when they were not taken (the connection closed, or
     * {@code droppable} and the caller is not reading what it was sent).
     */
    final synchronized boolean write(Conn c, ByteBuffer bytes, boolean droppable) {
        if (c.closed) {
            return false;
        }
        if (c.rest != null) {
            if (droppable) {
                return false;
            }
            ByteBuffer[] more = java.util.Arrays.copyOf(c.rest, c.rest.length + 1);
            more[c.rest.length] = ByteBuffer.allocate(bytes.remaining()).put(bytes).flip();
            c.rest = more;
            return true;
        }
        try {
            c.ch.write(bytes);
        } catch (IOException e) {
            drop(c);
            return false;
        }
        if (bytes.hasRemaining()) {
            c.rest = new ByteBuffer[] {ByteBuffer.allocate(bytes.remaining()).put(bytes).flip()};
            c.key.interestOps(SelectionKey.OP_READ | SelectionKey.OP_WRITE);
        }
        return true;
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

    final synchronized void drop(Conn c) {
        if (c.closed) {
            return;
        }
        c.closed = true;
        conns.remove(c.id);
        forget(c);
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
                    LockSupport.parkNanos(1_000_000L);
                }
            }
            drop(c);
        }
        closeQuietly(server);
        if (socketFile != null) {
            SocketFile.remove(socketFile);
        }
    }

    @Override
    public void release() {
        closeQuietly(selector);
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

    static void closeQuietly(java.io.Closeable c) {
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
