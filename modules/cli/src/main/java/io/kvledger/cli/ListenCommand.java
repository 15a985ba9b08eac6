package io.kvledger.cli;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalFormat;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.tap.FrameJournal;
import io.kvledger.zmq.InboundFrame;
import io.kvledger.zmq.NotifyListenerAdapter;
import io.kvledger.zmq.NotifyListenerConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.zeromq.ZMQException;
import zmq.ZError;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger listen}: a standalone notify listener that journals every frame it receives,
 * decoded or rejected, until it is stopped (SIGINT/SIGTERM, or {@code --max-frames}), flushing
 * the journal on the way out and exiting 0. A message above ZMQ's cap ({@code ZMQ_MAXMSGSIZE},
 * 16 MiB) never reaches it: ZMQ drops the sender's connection on reading its size. The first piece of a tap in front of real vLLM MoRIIO ranks: point
 * their decode schedulers or workers at it, then {@code kvledger dump DIR} shows one line per frame.
 *
 * <p>A failed start is one line naming the command and exit status 2, and leaves nothing behind:
 * the socket is bound before the journal is opened, and a journal directory the start created is
 * removed again. A frame the journal cannot take as received is journaled as a
 * {@code FrameRejected} saying so, and the listener goes on.
 *
 * <p>Threads: the listener's socket thread hands frames to a bounded queue; this command's thread
 * is the journal's single writer.
 */
@Command(name = "listen", mixinStandardHelpOptions = true,
        description = "Bind a MoRIIO notify ROUTER and journal every frame it receives until stopped.")
final class ListenCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--bind", required = true, paramLabel = "tcp://HOST:PORT",
            description = "Where to bind the ROUTER, e.g. tcp://0.0.0.0:61005 (a rank listens on notify_port + dp + tp).")
    String bind;

    @Option(names = "--journal", required = true, paramLabel = "DIR", description = "The journal to write (created, or appended to).")
    Path journal;

    @Option(names = "--node", defaultValue = "tap", description = "Node id written to the journal header (default: ${DEFAULT-VALUE}).")
    String node;

    @Option(names = "--role", defaultValue = "producer", description = "Role of the rank being tapped: producer or consumer (default: ${DEFAULT-VALUE}).")
    String role;

    @Option(names = "--mode", defaultValue = "write", description = "Transfer mode: read or write (default: ${DEFAULT-VALUE}).")
    String mode;

    @Option(names = "--max-frames", defaultValue = "0", description = "Stop after this many frames (0: run until stopped).")
    long maxFrames;

    @Option(names = "--duration-s", defaultValue = "0", description = "Stop after this many seconds (0: run until stopped).")
    double durationS;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (!bind.startsWith("tcp://") || bind.lastIndexOf(':') <= "tcp://".length()) {
            throw new ParameterException(spec.commandLine(), "--bind takes tcp://HOST:PORT, got " + bind);
        }
        Role r = switch (role.toLowerCase(java.util.Locale.ROOT)) {
            case "producer", "prefill", "p" -> Role.PRODUCER;
            case "consumer", "decode", "d" -> Role.CONSUMER;
            default -> throw new ParameterException(spec.commandLine(), "--role takes producer or consumer, got " + role);
        };
        TransferMode m = ModeOption.parse(spec, mode);
        String host = bind.substring("tcp://".length(), bind.lastIndexOf(':'));
        NodeConfig config = NodeConfig.builder(r, m).hostIp(host.equals("*") || host.equals("0.0.0.0") ? "127.0.0.1" : host)
                .behaviour(Behaviour.newest()).build();
        EventQueue queue = new EventQueue(QUEUED_BYTES, QUEUED_EVENTS);
        String name = spec.qualifiedName();
        // Bind first: a failed bind leaves nothing behind (no header-only journal).
        NotifyListenerAdapter listener;
        try {
            listener = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint(bind).withReceiveHwm(RECEIVE_HWM),
                    queue::offer);
        } catch (IllegalStateException e) {
            err.println(name + ": " + bindFailure(bind, e));
            return 2;
        }
        boolean dirExisted = Files.exists(journal);
        JournalWriter opened;
        try {
            opened = JournalWriter.open(journal, JournalHeader.of(node, config, "kvledger listen --bind " + bind));
        } catch (JournalException e) {
            listener.close();
            if (!dirExisted) {
                deleteCreated(journal);
            }
            err.println(name + ": " + journalFailure(journal, e));
            return 2;
        } catch (RuntimeException e) {
            listener.close();
            throw e;
        }
        Tally tally = new Tally();
        // closed last: a signal's hook waits until the journal is flushed and closed
        try (StopOnSignal stop = new StopOnSignal("kvledger-listen-shutdown"); JournalWriter writer = opened; listener) {
            err.println("listen: bound " + listener.endpoint() + "; journaling every frame to " + journal
                    + (maxFrames > 0 ? " (stopping after " + maxFrames + " frames)" : "; stop with Ctrl-C"));
            err.flush();
            long deadline = durationS > 0 ? System.nanoTime() + (long) (durationS * 1e9) : Long.MAX_VALUE;
            while (!stop.stopping() && (maxFrames == 0 || tally.frames < maxFrames) && System.nanoTime() < deadline) {
                NodeEvent e = queue.poll(100, TimeUnit.MILLISECONDS);
                if (e != null) {
                    journalFrame(writer, e, tally, err);
                }
            }
            // drain what the listener already handed over
            NodeEvent e;
            while ((maxFrames == 0 || tally.frames < maxFrames) && (e = queue.poll(0, TimeUnit.NANOSECONDS)) != null) {
                journalFrame(writer, e, tally, err);
            }
            writer.flush();
            out.println("listen: " + tally.frames + " frame(s) journaled (" + tally.rejected + " rejected"
                    + (tally.substituted > 0 ? ", " + tally.substituted + " too large to journal as received: journaled as rejections" : "")
                    + ")" + (tally.lost > 0 ? ", " + tally.lost + " lost: the journal refused them" : "") + " to " + journal);
            out.flush();
        }
        return 0;
    }

    /**
     * Messages ZMQ buffers per peer before it stops reading that peer's stream: with ZMQ's cap of
     * 16 MiB per message, at most 4 of them (64 MiB) wait in ZMQ per flooding peer.
     */
    static final int RECEIVE_HWM = 4;

    /** Bytes of frames (as events keep them) waiting for the journal before the listener backs off. */
    static final long QUEUED_BYTES = 16L << 20;

    /** Events waiting for the journal before the listener backs off, however small. */
    static final int QUEUED_EVENTS = 65_536;

    /**
     * The hand-off from the listener's socket thread to the journal's writer, bounded in events
     * and in the bytes the events keep (a rejected frame keeps up to 4 MiB): when full, the
     * listener backs off and ZMQ stops reading the peers (backpressure, nothing dropped), so memory
     * stays bounded under a flood. Only the decoded event is kept, not the raw frames. One event is
     * always taken when none waits, whatever its size.
     */
    static final class EventQueue {
        private final ArrayBlockingQueue<NodeEvent> events;
        private final long maxBytes;
        private final java.util.concurrent.atomic.AtomicLong bytes = new java.util.concurrent.atomic.AtomicLong();

        EventQueue(long maxBytes, int maxEvents) {
            this.events = new ArrayBlockingQueue<>(maxEvents);
            this.maxBytes = maxBytes;
        }

        /** The listener's sink: false (the listener backs off) when the bound is reached. */
        boolean offer(InboundFrame f) {
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

        NodeEvent poll(long timeout, TimeUnit unit) throws InterruptedException {
            NodeEvent e = events.poll(timeout, unit);
            if (e != null) {
                bytes.addAndGet(-size(e));
            }
            return e;
        }

        /** Bytes the queued events keep. */
        long bytes() {
            return bytes.get();
        }

        static long size(NodeEvent e) {
            return e instanceof NodeEvent.FrameRejected r ? 256L + r.frame().length + r.reason().length() : 256L;
        }
    }

    /** What {@link #journalFrame} did with the frames so far. */
    static final class Tally extends FrameJournal.Tally {
    }

    /** Bytes of a frame the journal could not take that its substitute rejection keeps. */
    static final int KEPT_WHEN_REFUSED = FrameJournal.KEPT_WHEN_REFUSED;

    /** Journals one received frame ({@link FrameJournal#append}, shared with {@code kvledger tap}). */
    static void journalFrame(JournalWriter writer, NodeEvent event, Tally tally, PrintWriter err) {
        FrameJournal.append(writer, event, tally, err, "listen");
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
    static String journalFailure(Path dir, JournalException e) {
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
