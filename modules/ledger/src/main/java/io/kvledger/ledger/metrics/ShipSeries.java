package io.kvledger.ledger.metrics;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.function.Function;

/**
 * The series of a journal shipper to Kafka, one set of names and meanings wherever one runs:
 * {@code kvledger ship --metrics}, and the {@code /metrics} of a node or a proxy that ships its
 * own journal ({@code --ship}), there at 0 from the first scrape until (or without) a shipper:
 * <ul>
 *   <li>{@code kvledger_ship_backlog_entries}: entries handed to the Kafka producer and not
 *       acknowledged yet (held in memory; it grows while the broker is away);</li>
 *   <li>{@code kvledger_ship_acknowledged_total}: entries Kafka acknowledged since start;</li>
 *   <li>{@code kvledger_ship_backlog_bytes}: the bytes of the backlog's entries;</li>
 *   <li>{@code kvledger_ship_sent_total}: entries handed to the producer since start;</li>
 *   <li>{@code kvledger_ship_skipped_total}: entries left out because the topic held them already
 *       (where a restart resumed);</li>
 *   <li>{@code kvledger_ship_buffer_full}: 1 while a send has waited {@value #FULL_AFTER_S} s or
 *       more for room in the producer's buffer (the broker takes nothing: the journals keep what
 *       follows), else 0;</li>
 *   <li>{@code kvledger_ship_journals_stopped_total}: journals refused or whose shipping stopped
 *       (said on standard error).</li>
 * </ul>
 */
public final class ShipSeries {

    /** Seconds a send waits for room before {@code kvledger_ship_buffer_full} says 1. */
    public static final int FULL_AFTER_S = 1;

    /** What the series read, at each scrape. */
    public interface Counters {
        /** Entries handed to the producer and not acknowledged yet. */
        long backlog();

        /** Entries Kafka acknowledged since start. */
        long acknowledged();

        /** Bytes of the backlog's entries (their own bytes, not the producer's overhead). */
        long backlogBytes();

        /** Entries handed to the producer since start. */
        long sent();

        /** Entries left out at start because the topic held them already. */
        long skipped();

        /** Whether a send has waited {@value #FULL_AFTER_S} s or more for room in the producer's buffer. */
        boolean bufferFull();

        /** Journals refused or whose shipping stopped. */
        long journalsStopped();
    }

    /** No shipper: every series at 0. */
    public static final Counters NONE = new Counters() {
        @Override
        public long backlog() {
            return 0;
        }

        @Override
        public long acknowledged() {
            return 0;
        }

        @Override
        public long backlogBytes() {
            return 0;
        }

        @Override
        public long sent() {
            return 0;
        }

        @Override
        public long skipped() {
            return 0;
        }

        @Override
        public boolean bufferFull() {
            return false;
        }

        @Override
        public long journalsStopped() {
            return 0;
        }
    };

    private ShipSeries() {
    }

    /**
     * Registers the series in {@code registry} with {@code tags}, reading {@code counters} of
     * {@code owner} at each scrape ({@code owner} is held weakly, as Micrometer holds what its
     * meters read: the caller keeps it).
     */
    public static <T> void register(MeterRegistry registry, Tags tags, T owner, Function<T, Counters> counters) {
        Gauge.builder("kvledger_ship_backlog_entries", owner, o -> counters.apply(o).backlog()).tags(tags)
                .description("Journal entries handed to the Kafka producer and not acknowledged yet (held in memory)")
                .register(registry);
        FunctionCounter.builder("kvledger_ship_acknowledged", owner, o -> counters.apply(o).acknowledged()).tags(tags)
                .description("Journal entries Kafka acknowledged since start").register(registry);
        Gauge.builder("kvledger_ship_backlog_bytes", owner, o -> counters.apply(o).backlogBytes()).tags(tags)
                .description("Bytes of the journal entries handed to the Kafka producer and not acknowledged yet")
                .register(registry);
        FunctionCounter.builder("kvledger_ship_sent", owner, o -> counters.apply(o).sent()).tags(tags)
                .description("Journal entries handed to the Kafka producer since start").register(registry);
        FunctionCounter.builder("kvledger_ship_skipped", owner, o -> counters.apply(o).skipped()).tags(tags)
                .description("Journal entries left out because the topic held them already").register(registry);
        Gauge.builder("kvledger_ship_buffer_full", owner, o -> counters.apply(o).bufferFull() ? 1 : 0).tags(tags)
                .description("1 while a send has waited " + FULL_AFTER_S + " s or more for room in the producer's "
                        + "buffer (the broker takes nothing; the journals keep the rest), else 0")
                .register(registry);
        FunctionCounter.builder("kvledger_ship_journals_stopped", owner, o -> counters.apply(o).journalsStopped()).tags(tags)
                .description("Journals refused or whose shipping stopped (said on standard error)").register(registry);
    }
}
