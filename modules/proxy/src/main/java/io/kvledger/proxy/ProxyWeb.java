package io.kvledger.proxy;

import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.ledger.web.EventStream;
import io.kvledger.ledger.web.JournalSetApi;
import io.kvledger.ledger.web.WebPage;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.UnaryOperator;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.netty.http.server.HttpServerResponse;
import reactor.netty.http.server.HttpServerRoutes;

/**
 * The web timeline page on the proxy's HTTP server: the page ({@link WebPage}) at {@code /} and
 * {@code /ui/}, its JSON ({@link JournalSetApi}: {@code /v1/requests}, {@code /v1/requests/{id}},
 * {@code /v1/hangs}) over the proxy's own journal and the journal directories given with
 * {@code --serve-journals}, and {@code /v1/events}: the server-sent events of every one of those
 * journals as entries are appended ({@link EventStream}, one per journal, merged).
 *
 * <p>The directories are looked at again on each request: a node started after the proxy shows
 * up once its journal exists, and a directory that holds no journal yet is left out. The
 * proxy's own journal is always first, so its name is the one a request's proxy lines carry.
 */
final class ProxyWeb implements AutoCloseable {

    private final Path own;
    private final List<Path> served;
    private final Map<Path, EventStream> streams = new ConcurrentHashMap<>();
    private volatile boolean closed;

    /**
     * @param own    the proxy's journal directory, or null when it keeps none
     * @param served further journal directories (as {@code kvledger serve} takes them)
     */
    ProxyWeb(Path own, List<Path> served) {
        this.own = own;
        this.served = List.copyOf(served);
    }

    /** The journals there are now: the proxy's (once it holds entries), then each served directory's. */
    List<NodeJournal> journals() {
        List<Path> args = new ArrayList<>();
        if (own != null && JournalInputs.holdsQueueFiles(own)) {
            args.add(own);
        }
        List<NodeJournal> out = new ArrayList<>(args.isEmpty() ? List.of() : JournalInputs.resolve(args));
        for (Path d : served) {
            List<NodeJournal> found;
            try {
                found = JournalInputs.resolve(List.of(d));
            } catch (JournalInputs.InputException e) {
                continue; // not there yet
            }
            for (NodeJournal j : found) {
                Path key = j.dir().toAbsolutePath().normalize();
                if (out.stream().noneMatch(x -> x.dir().toAbsolutePath().normalize().equals(key))) {
                    out.add(j);
                }
            }
        }
        return out;
    }

    private JournalSetApi api() {
        List<NodeJournal> js = journals();
        if (js.isEmpty()) {
            throw new IllegalStateException(nothing());
        }
        return new JournalSetApi(js);
    }

    private String nothing() {
        return own == null && served.isEmpty()
                ? "the proxy keeps no journal: start it with --journal DIR (and --serve-journals DIR... for the nodes')"
                : "no journal holds an entry yet";
    }

    /** Mounts the page, its JSON and {@code /v1/events}. */
    void mount(HttpServerRoutes routes) {
        WebPage.mount(routes);
        JournalSetApi.mount(routes, UnaryOperator.identity(), this::api);
        routes.get("/v1/events", (req, res) -> events(res));
    }

    private Publisher<Void> events(HttpServerResponse res) {
        return Mono.fromCallable(this::journals)
                .subscribeOn(Schedulers.boundedElastic())
                .flatMap(js -> {
                    if (js.isEmpty() || closed) {
                        return Mono.from(io.kvledger.ledger.web.HttpHardening.error(res, 503,
                                closed ? "the proxy is stopping" : nothing()));
                    }
                    List<EventStream> list = new ArrayList<>();
                    for (NodeJournal j : js) {
                        list.add(streams.computeIfAbsent(j.dir().toAbsolutePath().normalize(),
                                k -> new EventStream(j.dir(), j.name())));
                    }
                    return Mono.from(EventStream.serve(list, res));
                });
    }

    /** Ends every event stream (an open stream would hold the server's graceful shutdown). */
    @Override
    public void close() {
        closed = true;
        streams.values().forEach(EventStream::close);
    }
}
