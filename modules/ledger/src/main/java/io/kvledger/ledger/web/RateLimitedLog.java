package io.kvledger.ledger.web;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * Warnings that a peer can cause as often as it likes (a malformed request, a failing exporter),
 * written at most once per interval and kind: the first at once, then one line per interval
 * saying how many more there were. Nothing a client sends is repeated but the one-line message
 * the caller composes. Thread-safe.
 */
public final class RateLimitedLog {

    /** The interval the servers use. */
    static final Duration INTERVAL = Duration.ofMinutes(1);

    private static final System.Logger LOG = System.getLogger("io.kvledger.ledger.web");

    private final LongSupplier nanoTime;
    private final long intervalNs;
    private final Consumer<String> sink;
    private final Map<String, long[]> kinds = new ConcurrentHashMap<>();

    /**
     * @param nanoTime a monotonic clock in nanoseconds
     * @param sink     where the lines go
     */
    RateLimitedLog(LongSupplier nanoTime, Duration interval, Consumer<String> sink) {
        this.nanoTime = nanoTime;
        this.intervalNs = interval.toNanos();
        this.sink = sink;
    }

    /** Warnings of the service's logger, once a minute per kind. */
    public static RateLimitedLog warnings() {
        return new RateLimitedLog(System::nanoTime, INTERVAL, m -> LOG.log(System.Logger.Level.WARNING, m));
    }

    /**
     * One occurrence of {@code kind}: written when none of its kind was in the last interval,
     * else counted and told with the next line of its kind.
     */
    public void warn(String kind, String message) {
        long now = nanoTime.getAsLong();
        String line = null;
        long[] state = kinds.computeIfAbsent(kind, k -> new long[] {now - intervalNs, 0});
        synchronized (state) {
            if (now - state[0] >= intervalNs) {
                long more = state[1];
                line = more == 0 ? message
                        : message + " (and " + more + " more like it since the last such line)";
                state[0] = now;
                state[1] = 0;
            } else {
                state[1]++;
            }
        }
        if (line != null) {
            sink.accept(line);
        }
    }
}
