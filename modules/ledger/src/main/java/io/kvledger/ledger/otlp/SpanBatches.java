package io.kvledger.ledger.otlp;

import io.opentelemetry.sdk.trace.data.SpanData;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Finished spans waiting for their batch, for a live exporter's own thread ({@code LiveTraces},
 * the proxy's {@code ProxyTraces}): a batch goes out once it holds {@value OtlpSender#BATCH} spans
 * or its first span has waited {@code flushEvery}. A batch the receiver does not take is counted
 * and logged once, and not sent again. {@link #add} and the flushes run on one thread; the
 * counters may be read from any.
 */
public final class SpanBatches implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger("io.kvledger.ledger.otlp");

    private final OtlpSender sender;
    private final LongSupplier clock;
    private final long flushEveryNs;
    private final List<SpanData> pending = new ArrayList<>();
    private long pendingSinceNs;
    private final AtomicLong exported = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();

    /** Batches for {@code sender}, timed by {@code clock} (nanoseconds). */
    public SpanBatches(OtlpSender sender, LongSupplier clock, Duration flushEvery) {
        this.sender = sender;
        this.clock = clock;
        this.flushEveryNs = flushEvery.toNanos();
    }

    /** Queues finished spans for the next batch. */
    public void add(Collection<SpanData> spans) {
        if (pending.isEmpty()) {
            pendingSinceNs = clock.getAsLong();
        }
        pending.addAll(spans);
    }

    /** Sends the batch if it is full or has waited long enough. */
    void flushIfDue() {
        if (pending.size() >= OtlpSender.BATCH
                || (!pending.isEmpty() && clock.getAsLong() - pendingSinceNs >= flushEveryNs)) {
            flush();
        }
    }

    /** Sends what is queued now (blocking). */
    public void flush() {
        if (pending.isEmpty()) {
            return;
        }
        List<SpanData> batch = List.copyOf(pending);
        pending.clear();
        try {
            sender.send(batch);
            exported.addAndGet(batch.size());
        } catch (OtlpSender.ExportException e) {
            if (failed.getAndAdd(batch.size()) == 0) {
                LOG.log(System.Logger.Level.WARNING, "otlp: " + e.getMessage() + " (further failures are counted)");
            }
        }
    }

    /** Spans the receiver took. */
    public long exported() {
        return exported.get();
    }

    /** Spans in batches the receiver did not take. */
    public long failed() {
        return failed.get();
    }

    public String endpoint() {
        return sender.endpoint();
    }

    /** Closes the sender (flush first). */
    @Override
    public void close() {
        sender.close();
    }
}
