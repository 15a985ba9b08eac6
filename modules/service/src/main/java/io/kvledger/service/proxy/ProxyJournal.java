package io.kvledger.service.proxy;

import io.kvledger.core.config.TransferMode;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.proxy.ProxyEvent;
import java.nio.file.Path;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The proxy's journal: {@link ProxyEvent}s handed over from Netty and the registration thread
 * through one bounded queue to one writer thread ({@code kvledger-proxy-journal}), the only one
 * that touches the {@link JournalWriter}. A full queue drops the event and counts it (a handler
 * never waits for the disk); the count so far is journaled as {@code records_dropped} once there
 * is room again, so the journal says that it has a gap.
 */
final class ProxyJournal implements Consumer<ProxyEvent>, AutoCloseable {

    private static final int CAPACITY = 1 << 16;
    private static final ProxyEvent STOP = new ProxyEvent.RequestCompleted(0, null, null, 0, 0);

    private final BlockingQueue<ProxyEvent> queue = new ArrayBlockingQueue<>(CAPACITY);
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong written = new AtomicLong();
    private volatile JournalWriter writer;
    private Thread thread;

    private ProxyJournal() {}

    /**
     * A journal that queues events until {@link #start} opens the writer (the proxy binds its
     * sockets first, so that a failed start leaves no journal behind).
     */
    static ProxyJournal pending() {
        return new ProxyJournal();
    }

    /** Opens (or continues) the proxy journal in {@code dir} and starts writing what is queued. */
    void start(Path dir, String proxyId, TransferMode mode, String origin) {
        writer = JournalWriter.open(dir, JournalHeader.proxy(proxyId, mode == null ? TransferMode.WRITE : mode, origin));
        thread = new Thread(this::run, "kvledger-proxy-journal");
        thread.setDaemon(true);
        thread.start();
    }

    @Override
    public void accept(ProxyEvent e) {
        if (!queue.offer(e)) {
            dropped.incrementAndGet();
        }
    }

    /** Events appended so far. */
    long written() {
        return written.get();
    }

    /** Events dropped because the queue was full. */
    long dropped() {
        return dropped.get();
    }

    private void run() {
        long reported = 0;
        try {
            while (true) {
                ProxyEvent e = queue.take();
                if (e == STOP) {
                    return;
                }
                try {
                    writer.appendProxy(e);
                    written.incrementAndGet();
                } catch (RuntimeException ex) {
                    dropped.incrementAndGet();
                }
                long d = dropped.get();
                if (d != reported) {
                    reported = d;
                    writer.appendProxy(new ProxyEvent.RecordsDropped(e.atNs(), d));
                }
            }
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
        }
    }

    /** Writes what is queued, then closes the journal (a journal never started has nothing to close). */
    @Override
    public void close() {
        if (writer == null) {
            return;
        }
        try {
            while (!queue.offer(STOP, 100, TimeUnit.MILLISECONDS)) {
                if (!thread.isAlive()) {
                    break;
                }
            }
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        writer.close();
    }
}
