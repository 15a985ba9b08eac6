package io.kvledger.proxy;

import io.kvledger.journal.proxy.ProxyEvent;
import io.kvledger.journal.ServiceClock;
import io.kvledger.ledger.metrics.ShipSeries;
import io.kvledger.ledger.otlp.OtlpSender;
import java.time.Duration;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * A running {@code kvledger proxy}: the registration socket, the HTTP server and the journal.
 * {@link #start} binds both ports first and opens the journal only then (a failed start leaves no
 * journal behind); {@link #close} stops taking requests, then registrations, then writes the
 * journal's last entries, then sends the last spans ({@code --otlp}).
 */
public final class ProxyService implements AutoCloseable {

    private final ProxyOptions options;
    private final Instances instances;
    private final ProxyJournal journal;
    private final RegistrationRouter router;
    private final ProxyServer server;
    private final ProxyWeb web;
    private final ProxyTraces traces;
    private final ProxyMetrics metrics;

    private ProxyService(ProxyOptions options, LongSupplier clock, String origin) {
        this.options = options;
        this.instances = new Instances(options.mode(), options.registrationTtl().toNanos());
        this.journal = ProxyJournal.pending(clock);
        this.traces = options.otlp() == null ? null : ProxyTraces.start(options.proxyId(),
                OtlpSender.to(options.otlp(), Duration.ofSeconds(10), Map.of(), true, true), clock);
        Consumer<ProxyEvent> journaled = options.journalDir() == null ? e -> { } : journal;
        Consumer<ProxyEvent> sink = traces == null ? journaled : journaled.andThen(traces);
        RegistrationRouter rr;
        try {
            rr = RegistrationRouter.start(options.host(), options.pingPort(), instances, sink, clock);
        } catch (RuntimeException e) {
            closeTraces();
            throw e;
        }
        this.router = rr;
        this.web = new ProxyWeb(options.journalDir(), options.serveJournals());
        ProxyServer s;
        ProxyMetrics metrics;
        try {
            metrics = new ProxyMetrics(options.proxyId(), instances, new ProxyMetrics.RegistrationRouterCounts() {
                @Override public double received() { return router.received(); }
                @Override public double rejected() { return router.rejected(); }
            });
            s = new ProxyServer(options, instances, sink, clock, metrics, web::mount);
        } catch (RuntimeException e) {
            router.close();
            closeTraces();
            throw e;
        }
        this.server = s;
        this.metrics = metrics;
        if (options.journalDir() != null) {
            try {
                journal.start(options.journalDir(), options.proxyId(), options.mode(), origin);
            } catch (RuntimeException e) {
                server.close();
                router.close();
                closeTraces();
                throw e;
            }
            sink.accept(new ProxyEvent.ProxyStarted(clock.getAsLong(), options.host() + ":" + server.port(),
                    router.port(), options.mode() == null ? null : options.mode().name(), options.notifyPortShift()));
        }
    }

    /**
     * Starts a proxy.
     *
     * @param origin what the journal header's origin says (the command line)
     * @throws IllegalStateException when a port cannot be bound
     * @throws io.kvledger.journal.JournalException when the journal cannot be opened
     */
    public static ProxyService start(ProxyOptions options, String origin) {
        return start(options, ServiceClock.system(), origin);
    }

    /** Starts a proxy with its own clock (epoch nanoseconds, as the nodes' journals). */
    static ProxyService start(ProxyOptions options, LongSupplier clock, String origin) {
        return new ProxyService(options, clock, origin);
    }

    ProxyOptions options() {
        return options;
    }

    /** The HTTP port bound. */
    public int httpPort() {
        return server.port();
    }

    /** The registration port bound. */
    public int pingPort() {
        return router.port();
    }

    /** The registered instances (for tests in this package). */
    Instances instances() {
        return instances;
    }

    /** Registered prefill instances. */
    public int producers() {
        return instances.of("P").size();
    }

    /** Registered decode instances. */
    public int consumers() {
        return instances.of("D").size();
    }

    /** Registration messages read so far (heartbeats and rejected frames included). */
    public long registrationsReceived() {
        return router.received();
    }

    /** Registration messages rejected so far. */
    public long registrationsRejected() {
        return router.rejected();
    }

    /** Spans the OTLP receiver took so far (0 without {@code --otlp}). */
    public long otlpSpansExported() {
        return traces == null ? 0 : traces.exportedSpans();
    }

    /** Spans in batches the OTLP receiver did not take. */
    public long otlpSpansFailed() {
        return traces == null ? 0 : traces.failedSpans();
    }

    private void closeTraces() {
        if (traces != null) {
            traces.close();
        }
    }

    /**
     * Exports a journal shipper's counters on {@code /metrics} (the {@code kvledger_ship_*} series
     * of {@link ShipSeries}, at 0 until then).
     */
    public void shipping(ShipSeries.Counters counters) {
        metrics.shipping(counters);
    }

    /** Proxy events written to the journal so far. */
    public long journaled() {
        return journal.written();
    }

    @Override
    public void close() {
        try {
            web.close();
            server.close();
        } finally {
            try {
                router.close();
            } finally {
                try {
                    journal.close();
                } finally {
                    closeTraces();
                }
            }
        }
    }
}
