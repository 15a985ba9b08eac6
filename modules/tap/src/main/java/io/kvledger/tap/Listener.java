package io.kvledger.tap;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalFormat;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.zmq.InboundFrame;
import io.kvledger.zmq.NotifyListenerAdapter;
import io.kvledger.zmq.NotifyListenerConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.zeromq.ZMQException;
import zmq.ZError;

/**
 * {@code kvledger listen}: a standalone notify listener that journals every frame it receives,
 * decoded or rejected ({@link FrameJournal}), until it is stopped or reaches its limits. A message
 * above ZMQ's cap ({@code ZMQ_MAXMSGSIZE}, 16 MiB) never reaches it: ZMQ drops the sender's
 * connection on reading its size.
 *
 * <p>A failed {@link #start} leaves nothing behind: the socket is bound before the journal is
 * opened, and a journal directory the start created is removed again.
 *
 * <p>Threads: the listener's socket thread hands frames to a bounded {@link EventQueue}; the
 * thread that calls {@link #run} is the journal's single writer.
 */
public final class Listener implements AutoCloseable {

    /**
     * Messages ZMQ buffers per peer before it stops reading that peer's stream: with ZMQ's cap of
     * 16 MiB per message, at most 4 of them (64 MiB) wait in ZMQ per flooding peer.
     */
    static final int RECEIVE_HWM = 4;

    /** Bytes of frames (as events keep them) waiting for the journal before the listener backs off. */
    static final long QUEUED_BYTES = 16L << 20;

    /** Events waiting for the journal before the listener backs off, however small. */
    static final int QUEUED_EVENTS = 65_536;

    /** A start that failed; its message is the one line to print. Nothing was left behind. */
    public static final class StartFailed extends Exception {
        StartFailed(String message) {
            super(message);
        }
    }

    private final NotifyListenerAdapter listener;
    private final JournalWriter writer;
    private final EventQueue queue;

    private Listener(NotifyListenerAdapter listener, JournalWriter writer, EventQueue queue) {
        this.listener = listener;
        this.writer = writer;
        this.queue = queue;
    }

    /**
     * The configuration journaled for the rank at {@code bind} ({@code tcp://HOST:PORT}): its
     * role and mode, its host ({@code 127.0.0.1} for a wildcard bind), the newest behaviour.
     */
    public static NodeConfig config(String bind, Role role, TransferMode mode) {
        String host = bind.substring("tcp://".length(), bind.lastIndexOf(':'));
        return NodeConfig.builder(role, mode).hostIp(host.equals("*") || host.equals("0.0.0.0") ? "127.0.0.1" : host)
                .behaviour(Behaviour.newest()).build();
    }

    /**
     * Binds {@code bind}, then opens (or appends to) the journal in {@code journal} under node id
     * {@code node}.
     *
     * @throws StartFailed when the bind or the journal fails (the socket closed, a directory the
     *                     start created removed)
     */
    public static Listener start(String bind, Path journal, String node, NodeConfig config) throws StartFailed {
        EventQueue queue = new EventQueue(QUEUED_BYTES, QUEUED_EVENTS);
        // Bind first: a failed bind leaves nothing behind (no header-only journal).
        NotifyListenerAdapter listener;
        try {
            listener = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint(bind).withReceiveHwm(RECEIVE_HWM),
                    queue::offer);
        } catch (IllegalStateException e) {
            throw new StartFailed(bindFailure(bind, e));
        }
        boolean dirExisted = Files.exists(journal);
        try {
            JournalWriter w = JournalWriter.open(journal, JournalHeader.of(node, config, "kvledger listen --bind " + bind));
            return new Listener(listener, w, queue);
        } catch (JournalException e) {
            listener.close();
            if (!dirExisted) {
                deleteCreated(journal);
            }
            throw new StartFailed(journalFailure(journal, e));
        } catch (RuntimeException e) {
            listener.close();
            throw e;
        }
    }

    /** The endpoint bound. */
    public String endpoint() {
        return listener.endpoint();
    }

    /**
     * Journals the frames received until {@code stopping}, {@code maxFrames} frames (0: no limit)
     * or {@code deadlineNs} on {@link System#nanoTime()}'s clock, then what the listener already
     * handed over, and flushes the journal. Lines about frames the journal refused go to
     * {@code err}.
     */
    public FrameJournal.Tally run(long maxFrames, long deadlineNs, BooleanSupplier stopping, PrintWriter err)
            throws InterruptedException {
        FrameJournal.Tally tally = new FrameJournal.Tally();
        while (!stopping.getAsBoolean() && (maxFrames == 0 || tally.frames < maxFrames) && System.nanoTime() < deadlineNs) {
            NodeEvent e = queue.poll(100, TimeUnit.MILLISECONDS);
            if (e != null) {
                FrameJournal.append(writer, e, tally, err, "listen");
            }
        }
        // drain what the listener already handed over
        NodeEvent e;
        while ((maxFrames == 0 || tally.frames < maxFrames) && (e = queue.poll(0, TimeUnit.NANOSECONDS)) != null) {
            FrameJournal.append(writer, e, tally, err, "listen");
        }
        writer.flush();
        return tally;
    }

    /** Closes the socket, then the journal. */
    @Override
    public void close() {
        try {
            listener.close();
        } finally {
            writer.close();
        }
    }

    /**
     * The hand-off from the listener's socket thread to the journal's writer, bounded in events
     * and in the bytes the events keep (a rejected frame keeps up to 4 MiB): when full, the
     * listener backs off and ZMQ stops reading the peers (backpressure, nothing dropped), so memory
     * stays bounded under a flood. Only the decoded event is kept, not the raw frames. One event is
     * always taken when none waits, whatever its size.
     */
    public static final class EventQueue {
        private final ArrayBlockingQueue<NodeEvent> events;
        private final long maxBytes;
        private final AtomicLong bytes = new AtomicLong();

        public EventQueue(long maxBytes, int maxEvents) {
            this.events = new ArrayBlockingQueue<>(maxEvents);
            this.maxBytes = maxBytes;
        }

        /** The listener's sink: false (the listener backs off) when the bound is reached. */
        public boolean offer(InboundFrame f) {
            NodeEvent e = f.event();
            long size = size(e);
            if (!events.isEmpty() && bytes.get() + size > maxBytes) {
                return false;
            }
            bytes.addAndGet(size);
            if (!events.offer(e)) {
                bytes.addAndGet(-size);
                return false;
            }
            return true;
        }

        public NodeEvent poll(long timeout, TimeUnit unit) throws InterruptedException {
            NodeEvent e = events.poll(timeout, unit);
            if (e != null) {
                bytes.addAndGet(-size(e));
            }
            return e;
        }

        /** Bytes the queued events keep. */
        public long bytes() {
            return bytes.get();
        }

        static long size(NodeEvent e) {
            return e instanceof NodeEvent.FrameRejected r ? 256L + r.frame().length + r.reason().length() : 256L;
        }
    }

    /** The line for a bind that failed: the endpoint in use, or the reason ZMQ gave. */
    static String bindFailure(String bind, IllegalStateException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof ZMQException z) {
                if (z.getErrorCode() == ZError.EADDRINUSE) {
                    return bind + " is already in use";
                }
                if (z.getErrorCode() == ZError.EADDRNOTAVAIL) {
                    return "cannot bind " + bind + ": the address is not one of this machine's";
                }
                return "cannot bind " + bind + ": " + ZError.toString(z.getErrorCode());
            }
        }
        Throwable c = e.getCause() == null ? e : e.getCause();
        return "cannot bind " + bind + ": " + (c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage());
    }

    /** The line for a journal that could not be opened for writing. */
    public static String journalFailure(Path dir, JournalException e) {
        String msg = String.valueOf(e.getMessage());
        if (msg.contains("is being written by another process")) {
            long pid = lockHolder(dir.resolve(JournalFormat.LOCK_FILE));
            return "journal " + dir + " is being written by another process" + (pid > 0 ? " (pid " + pid + ")" : "");
        }
        return msg;
    }

    /**
     * The process holding a lock on {@code lockFile}, from {@code /proc/locks} (Linux; the JDK
     * locks with {@code fcntl}, whose entries name the holder's pid), or -1 when unknown.
     */
    static long lockHolder(Path lockFile) {
        Path locks = Path.of("/proc/locks");
        try {
            Object ino = Files.getAttribute(lockFile, "unix:ino");
            if (!(ino instanceof Long inode) || !Files.isReadable(locks)) {
                return -1;
            }
            String suffix = ":" + inode;
            for (String line : Files.readAllLines(locks)) {
                String[] f = line.trim().split("\\s+");
                // "1: POSIX  ADVISORY  WRITE 12345 08:01:1234567 0 EOF"
                if (f.length >= 6 && f[5].endsWith(suffix)) {
                    try {
                        long pid = Long.parseLong(f[4]);
                        if (pid > 0) {
                            return pid;
                        }
                    } catch (NumberFormatException ignored) {
                        // a line of another shape ("->" for a waiter)
                    }
                }
            }
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException | SecurityException e) {
            return -1;
        }
        return -1;
    }

    /** Removes a journal directory a failed start created (it did not exist before). */
    private static void deleteCreated(Path dir) {
        if (!Files.isDirectory(dir)) {
            return;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException ignored) {
            // best effort: the start already failed with its own message
        }
    }
}
