package io.kvledger.ledger.otlp;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The thread of a live exporter (the node's {@code LiveTraces}, the proxy's {@code ProxyTraces}):
 * the producer offers items to a bounded queue and never waits (a full queue drops the item and
 * counts it); the exporter's own thread takes them one by one into its {@link Body}, gives the
 * body a turn after each item and after each idle tenth of a second, and sends the
 * {@link SpanBatches} when they are due. On {@link #close} the thread drains the queue, lets the
 * body export what is still open, sends the last batch and the sender is closed.
 *
 * <p>A failure of the body is handed to {@code warn} (one line) and the loop goes on.
 *
 * @param <T> what the producer hands over
 */
public final class ExportLoop<T> implements AutoCloseable {

    /** What an exporter does with its items; all of it runs on the exporter's thread. */
    public interface Body<T> {

        /** Follows one item. */
        void apply(T item);

        /** After each item, and after each tenth of a second without one (periodic checks). */
        default void turn() {}

        /** Closing, once the queue is drained: exports what is still open into the batches. */
        void finish();
    }

    private static final System.Logger LOG = System.getLogger("io.kvledger.ledger.otlp");

    private final BlockingQueue<T> queue;
    private final SpanBatches batches;
    private final Body<T> body;
    private final Consumer<String> warn;
    private final String droppedWarning;
    private final Thread thread;
    private final AtomicLong dropped = new AtomicLong();
    private volatile boolean closing;

    /**
     * @param threadName     the exporter thread's name
     * @param capacity       items waiting for the thread at most
     * @param droppedWarning logged once, at the first item a full queue drops
     * @param warn           where a failure of the body is told (one line each)
     */
    public ExportLoop(String threadName, int capacity, SpanBatches batches, Body<T> body,
                      String droppedWarning, Consumer<String> warn) {
        this.queue = new ArrayBlockingQueue<>(capacity);
        this.batches = batches;
        this.body = body;
        this.warn = warn;
        this.droppedWarning = droppedWarning;
        this.thread = new Thread(this::run, threadName);
        this.thread.setDaemon(true);
    }

    /** Starts the exporter thread. */
    public void start() {
        thread.start();
    }

    /** On the producer's thread: hands {@code item} on, or drops and counts it when the queue is full. */
    public void offer(T item) {
        if (!queue.offer(item)) {
            countDropped();
        }
    }

    /** Counts an item the exporter could not follow (the queue was full, or the body had no room). */
    public void countDropped() {
        if (dropped.incrementAndGet() == 1) {
            LOG.log(System.Logger.Level.WARNING, droppedWarning);
        }
    }

    /** Items dropped (see {@link #countDropped}). */
    public long dropped() {
        return dropped.get();
    }

    /** Whether {@link #close} was called. */
    public boolean closing() {
        return closing;
    }

    private void run() {
        while (true) {
            T item;
            try {
                item = queue.poll(100, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                break;
            }
            try {
                if (item != null) {
                    body.apply(item);
                } else if (closing) {
                    break;
                }
                // A busy producer never leaves the queue empty for long: the turn comes after every item.
                body.turn();
                batches.flushIfDue();
            } catch (RuntimeException e) {
                warn.accept("otlp exporter (" + thread.getName() + "): " + e);
            }
        }
        try {
            T item;
            while ((item = queue.poll()) != null) {
                body.apply(item);
            }
            body.finish();
            batches.flush();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "otlp exporter (" + thread.getName() + "), closing: " + e, e);
        }
    }

    /**
     * Exports what is left: the items still queued, what the body holds open; waits for the last
     * batch (30 s at most), then closes the sender.
     */
    @Override
    public void close() {
        closing = true;
        try {
            thread.join(TimeUnit.SECONDS.toMillis(30));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        batches.close();
    }
}
