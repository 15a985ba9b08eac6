package io.kvledger.ledger.web;

import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalTailer;
import io.kvledger.journal.JsonLines;
import io.kvledger.journal.json.Json;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.netty.http.server.HttpServerResponse;
import reactor.util.concurrent.Queues;

/**
 * The server-sent events of {@code GET /v1/events}: every journal entry the node appends (each
 * applied input, then the entries derived from it), as the JSON line {@code kvledger dump --json}
 * prints for it.
 *
 * <p>One hub thread per node follows the journal with a {@link JournalTailer} while at least one
 * client listens, renders each entry once and offers it to every client's bounded buffer
 * ({@value #BUFFER} events). The loop is never involved: it appends to its journal and never
 * waits for a reader. A client that reads slower than the node appends loses events instead of
 * holding memory: when its buffer is full the event is dropped and counted, and the next event
 * that fits is preceded by a {@code dropped} event with the count. At most {@value #MAX_CLIENTS}
 * clients listen at once.
 *
 * <p>Each client first gets a {@code ready} event once the hub follows the journal: every entry
 * appended after it reaches the client (or is counted as dropped). Idle streams get a comment
 * line every {@value #HEARTBEAT_SECONDS} s so that proxies keep them open and a gone client is
 * noticed.
 */
public final class EventStream implements AutoCloseable {

    static final int MAX_CLIENTS = 16;
    static final int BUFFER = 1024;
    static final int HEARTBEAT_SECONDS = 15;

    private static final System.Logger LOG = System.getLogger("io.kvledger.ledger.web");

    private final Path dir;
    private final String node;
    private final CopyOnWriteArrayList<Client> clients = new CopyOnWriteArrayList<>();
    private final Object lock = new Object();
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong sent = new AtomicLong();
    private Thread thread;
    private volatile boolean closed;

    /** The stream of the journal in {@code dir}, whose node is {@code node}; it starts following on the first client. */
    public EventStream(Path dir, String node) {
        this.dir = dir;
        this.node = node;
    }

    /** One listening client: its bounded buffer and what it lost. */
    private static final class Client {
        final Sinks.Many<String> sink = Sinks.many().unicast().onBackpressureBuffer(Queues.<String>get(BUFFER).get());
        volatile boolean ready;
        volatile boolean gone;
        long droppedSinceLast;
        long droppedTotal;
    }

    /**
     * A new client's stream of SSE messages, or {@code null} when {@value #MAX_CLIENTS} clients
     * listen already (or the server is closing).
     */
    public Flux<String> subscribe() {
        Client c = new Client();
        synchronized (lock) {
            if (closed || clients.size() >= MAX_CLIENTS) {
                return null;
            }
            clients.add(c);
            if (thread == null) {
                thread = new Thread(this::run, "kvledger-events-" + node);
                thread.setDaemon(true);
                thread.start();
            }
            lock.notifyAll();
        }
        return c.sink.asFlux().doFinally(s -> {
            c.gone = true;
            clients.remove(c);
        });
    }

    /**
     * Answers one {@code GET /v1/events} with the entries of every stream in {@code streams},
     * merged as they come (a {@code ready} event from each), or {@code 503} when one of them has
     * {@value #MAX_CLIENTS} clients already.
     */
    public static Publisher<Void> serve(List<EventStream> streams, HttpServerResponse res) {
        return serve(streams, Flux.empty(), res);
    }

    /**
     * Like {@link #serve(List, HttpServerResponse)} over streams that grow ({@code serve --follow}
     * of a topic, whose nodes appear as they ship): {@code streams} is asked again every
     * {@code every} (off the Netty threads), and a stream it lists that the connection does not
     * follow yet joins it, with its {@code ready} event first (a stream with
     * {@value #MAX_CLIENTS} clients already is tried again at the next look). {@code streams}
     * answers {@code null} once the server is closing: the looks end, and the connection with its
     * streams.
     */
    public static Publisher<Void> serve(Supplier<List<EventStream>> streams, Duration every, HttpServerResponse res) {
        List<EventStream> first = streams.get();
        if (first == null) {
            return json(res, HttpResponseStatus.SERVICE_UNAVAILABLE, Map.of("error", "the server is closing"));
        }
        Set<EventStream> joined = ConcurrentHashMap.newKeySet();
        joined.addAll(first);
        Flux<String> later = Flux.interval(every, every, Schedulers.boundedElastic())
                .map(t -> Optional.ofNullable(streams.get()))
                .takeWhile(Optional::isPresent)
                .concatMapIterable(o -> o.get().stream().filter(joined::add).toList())
                .flatMap(s -> {
                    Flux<String> f = s.subscribe();
                    if (f == null) {
                        joined.remove(s);
                        return Flux.<String>empty();
                    }
                    return f;
                }, Integer.MAX_VALUE);
        return serve(first, later, res);
    }

    private static Publisher<Void> serve(List<EventStream> streams, Flux<String> later, HttpServerResponse res) {
        List<Flux<String>> fluxes = new ArrayList<>();
        for (EventStream s : streams) {
            Flux<String> f = s.subscribe();
            if (f == null) {
                // Give back the places taken: a subscription that ends at once leaves its stream.
                fluxes.forEach(x -> x.subscribe().dispose());
                return json(res, HttpResponseStatus.SERVICE_UNAVAILABLE, Map.of("error",
                        "at most " + MAX_CLIENTS + " event streams at once"));
            }
            fluxes.add(f);
        }
        return res.status(HttpResponseStatus.OK)
                .header("Content-Type", "text/event-stream; charset=utf-8")
                .header("Cache-Control", "no-cache")
                .send(Flux.merge(Flux.merge(fluxes), later)
                        .map(m -> Unpooled.wrappedBuffer(m.getBytes(StandardCharsets.UTF_8))), b -> true);
    }

    /** Clients listening now. */
    int clients() {
        return clients.size();
    }

    /** Clients that got their {@code ready} event (the hub follows the journal for them). */
    int readyClients() {
        int n = 0;
        for (Client c : clients) {
            if (c.ready) {
                n++;
            }
        }
        return n;
    }

    /** Events dropped for slow clients since start. */
    long dropped() {
        return dropped.get();
    }

    /** Events delivered to client buffers since start. */
    long sent() {
        return sent.get();
    }

    private void run() {
        JournalTailer tailer = null;
        long lastBeat = System.nanoTime();
        try {
            while (!closed) {
                if (clients.isEmpty()) {
                    if (tailer != null) {
                        tailer.close();
                        tailer = null;
                    }
                    synchronized (lock) {
                        while (clients.isEmpty() && !closed) {
                            lock.wait(1000);
                        }
                    }
                    continue;
                }
                if (tailer == null) {
                    tailer = JournalTailer.open(dir, false);
                }
                for (Client c : clients) {
                    if (!c.ready) {
                        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
                        m.put("node", node);
                        m.put("buffer", (long) BUFFER);
                        c.ready = true;
                        offer(c, "event: ready\ndata: " + Json.write(m) + "\n\n", false);
                    }
                }
                JournalEntry e = tailer.poll(Duration.ofMillis(100));
                if (e != null) {
                    String msg = message(e);
                    for (Client c : clients) {
                        if (c.ready) {
                            offer(c, msg, true);
                        }
                    }
                }
                if (System.nanoTime() - lastBeat > TimeUnit.SECONDS.toNanos(HEARTBEAT_SECONDS)) {
                    lastBeat = System.nanoTime();
                    for (Client c : clients) {
                        offer(c, ": keepalive\n\n", false);
                    }
                }
            }
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException ex) {
            LOG.log(System.Logger.Level.WARNING, "event stream of " + node + " stopped: " + ex, ex);
        } finally {
            if (tailer != null) {
                tailer.close();
            }
            for (Client c : clients) {
                c.sink.tryEmitComplete();
            }
        }
    }

    /** An entry as one SSE message: its seq as the id, its {@code dump --json} line as the data. */
    static String message(JournalEntry e) {
        return "id: " + e.seq() + "\nevent: entry\ndata: " + JsonLines.toJson(e) + "\n\n";
    }

    /** Offers a message to a client's buffer; an entry that does not fit is dropped and counted. */
    private void offer(Client c, String msg, boolean counted) {
        if (c.gone) {
            return;
        }
        if (c.droppedSinceLast > 0 && counted) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("dropped", c.droppedSinceLast);
            m.put("dropped_total", c.droppedTotal);
            if (c.sink.tryEmitNext("event: dropped\ndata: " + Json.write(m) + "\n\n").isSuccess()) {
                c.droppedSinceLast = 0;
            } else {
                drop(c);
                return;
            }
        }
        Sinks.EmitResult r = c.sink.tryEmitNext(msg);
        if (r.isSuccess()) {
            if (counted) {
                sent.incrementAndGet();
            }
        } else if (r == Sinks.EmitResult.FAIL_CANCELLED || r == Sinks.EmitResult.FAIL_TERMINATED) {
            c.gone = true;
            clients.remove(c);
        } else if (counted) {
            drop(c);
        }
    }

    private void drop(Client c) {
        c.droppedSinceLast++;
        c.droppedTotal++;
        dropped.incrementAndGet();
    }

    /** Ends every client's stream and stops following the journal. */
    @Override
    public void close() {
        Thread t;
        synchronized (lock) {
            closed = true;
            lock.notifyAll();
            t = thread;
        }
        if (t != null) {
            try {
                t.join(2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static Publisher<Void> json(HttpServerResponse res, HttpResponseStatus status, Object body) {
        return res.status(status).header("Content-Type", "application/json")
                .sendString(Mono.just(Json.write(body) + "\n"), StandardCharsets.UTF_8);
    }
}
