package io.kvledger.service.proxy;

import io.kvledger.journal.proxy.ProxyEvent;
import io.kvledger.service.ServiceClock;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * A running {@code kvledger proxy}: the registration socket, the HTTP server and the journal.
 * {@link #start} binds both ports first and opens the journal only then (a failed start leaves no
 * journal behind); {@link #close} stops taking requests, then registrations, then writes the
 * journal's last entries.
 */
public final class ProxyService implements AutoCloseable {

    private final ProxyOptions options;
    private final Instances instances;
    private final ProxyJournal journal;
    private final RegistrationRouter router;
    private final ProxyServer server;
    private final ProxyWeb web;

    private ProxyService(ProxyOptions options, LongSupplier clock, String origin) {
        this.options = options;
        this.instances = new Instances(options.mode(), options.registrationTtl().toNanos());
        this.journal = ProxyJournal.pending();
        Consumer<ProxyEvent> sink = options.journalDir() == null ? e -> { } : journal;
        this.router = RegistrationRouter.start(options.host(), options.pingPort(), instances, sink, clock);
        this.web = new ProxyWeb(options.journalDir(), options.serveJournals());
        ProxyServer s;
        try {
            ProxyMetrics metrics = new ProxyMetrics(options.proxyId(), instances, new ProxyMetrics.RegistrationRouterCounts() {
                @Override public double received() { return router.received(); }
                @Override public double rejected() { return router.rejected(); }
            });
            s = new ProxyServer(options, instances, sink, clock, metrics, web::mount);
        } catch (RuntimeException e) {
            router.close();
            throw e;
        }
        this.server = s;
        if (options.journalDir() != null) {
            try {
                journal.start(options.journalDir(), options.proxyId(), options.mode(), origin);
            } catch (RuntimeException e) {
                server.close();
                router.close();
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
    public static ProxyService start(ProxyOptions options, LongSupplier clock, String origin) {
        return new ProxyService(options, clock, origin);
    }

    public ProxyOptions options() {
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
                journal.close();
            }
        }
    }
}
