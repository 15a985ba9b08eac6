package io.kvledger.proxy;

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
import java.util.function.LongSupplier;

/**
 * The proxy's journal: {@link ProxyEvent}s handed over from Netty and the registration thread
 * through one bounded queue to one writer thread ({@code kvledger-proxy-journal}), the only one
 * that touches the {@link JournalWriter}. A full queue drops the event and counts it (a handler
 * never waits for the disk); the count so far is journaled as {@code records_dropped} once there
 * is room again, so the journal says that it has a gap.
 *
 * <p>Time: an entry's {@code at_ns} is when its record was handed over ({@link #accept}), read
 * from the proxy's clock under the same lock as the queue's offer, so the journal's order is its
 * time order whatever thread a record comes from (records stamped on several threads and queued
 * in another order made {@code verify} say "time goes back"). The record's own time, taken where
 * it happened, can be earlier by the time it took to get here (a routed request's by the reading
 * of its body); durations ({@code elapsed_ns}) are measured where they happened and are exact.
 */
final class ProxyJournal implements Consumer<ProxyEvent>, AutoCloseable {

    private static final int CAPACITY = 1 << 16;
    private static final ProxyEvent STOP = new ProxyEvent.RequestCompleted(0, null, null, 0, 0);

    private final BlockingQueue<ProxyEvent> queue = new ArrayBlockingQueue<>(CAPACITY);
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong written = new AtomicLong();
    private final LongSupplier clock;
    private final Object handOver = new Object();
    private volatile JournalWriter writer;
    private Thread thread;

    private ProxyJournal(LongSupplier clock) {
        this.clock = clock;
    }

    /**
     * A journal that queues events until {@link #start} opens the writer (the proxy binds its
     * sockets first, so that a failed start leaves no journal behind).
     */
    static ProxyJournal pending(LongSupplier clock) {
        return new ProxyJournal(clock);
    }

    /** Opens (or continues) the proxy journal in {@code dir} and starts writing what is queued. */
    void start(Path dir, String proxyId, TransferMode mode, String origin) {
        writer = JournalWriter.open(dir, JournalHeader.proxy(proxyId, mode == null ? TransferMode.WRITE : mode, origin));
        thread = new Thread(this::run, "kvledger-proxy-journal");
        thread.setDaemon(true);
        thread.start();
    }

    /** Queues {@code e}, stamped with the time of its hand-over (see the class comment). */
    @Override
    public void accept(ProxyEvent e) {
        synchronized (handOver) {
            if (!queue.offer(at(e, clock.getAsLong()))) {
                dropped.incrementAndGet();
            }
        }
    }

    /** {@code e} at {@code atNs}. */
    static ProxyEvent at(ProxyEvent e, long atNs) {
        return switch (e) {
            case ProxyEvent.ProxyStarted x -> new ProxyEvent.ProxyStarted(atNs, x.httpAddress(), x.pingPort(), x.mode(),
                    x.notifyPortShift());
            case ProxyEvent.InstanceRegistered x -> new ProxyEvent.InstanceRegistered(atNs, x.role(), x.httpAddress(),
                    x.zmqAddress(), x.dpSize(), x.tpSize(), x.transferMode(), x.change());
            case ProxyEvent.InstanceExpired x -> new ProxyEvent.InstanceExpired(atNs, x.role(), x.httpAddress(),
                    x.lastSeenNs());
            case ProxyEvent.RegistrationRejected x -> new ProxyEvent.RegistrationRejected(atNs, x.reason(), x.frame());
            case ProxyEvent.RequestRejected x -> new ProxyEvent.RequestRejected(atNs, x.api(), x.clientRequestId(),
                    x.status(), x.reason());
            case ProxyEvent.RequestRouted x -> new ProxyEvent.RequestRouted(atNs, x.requestId(), x.transferId(), x.api(),
                    x.stream(), x.clientRequestId(), x.mode(), x.prefill(), x.prefillDpRank(), x.decode(),
                    x.decodeDpRank());
            case ProxyEvent.LegSent x -> new ProxyEvent.LegSent(atNs, x.requestId(), x.transferId(), x.leg(),
                    x.instance(), x.kvTransferParams());
            case ProxyEvent.LegAnswered x -> new ProxyEvent.LegAnswered(atNs, x.requestId(), x.transferId(), x.leg(),
                    x.httpStatus(), x.elapsedNs(), x.finishReason(), x.kvTransferParams());
            case ProxyEvent.LegFailed x -> new ProxyEvent.LegFailed(atNs, x.requestId(), x.transferId(), x.leg(),
                    x.httpStatus(), x.elapsedNs(), x.reason());
            case ProxyEvent.LegCancelled x -> new ProxyEvent.LegCancelled(atNs, x.requestId(), x.transferId(), x.leg(),
                    x.elapsedNs(), x.reason());
            case ProxyEvent.RequestCompleted x -> new ProxyEvent.RequestCompleted(atNs, x.requestId(), x.transferId(),
                    x.httpStatus(), x.elapsedNs());
            case ProxyEvent.RecordsDropped x -> new ProxyEvent.RecordsDropped(atNs, x.total());
        };
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
