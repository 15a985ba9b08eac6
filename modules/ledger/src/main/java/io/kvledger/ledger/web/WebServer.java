package io.kvledger.ledger.web;

import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;
import reactor.netty.http.server.HttpServerRoutes;

/**
 * The HTTP server of {@code kvledger serve}: the web page ({@link WebPage}) over a set of journals
 * ({@link JournalSetApi}), plus {@code GET /healthz}. No token: bind it to loopback (the default)
 * or a trusted network.
 */
public final class WebServer implements AutoCloseable {

    private final DisposableServer server;

    private WebServer(DisposableServer server) {
        this.server = server;
    }

    /**
     * Binds the server.
     *
     * @throws IllegalStateException when the address cannot be bound
     */
    public static WebServer start(List<NodeJournal> journals, String host, int port) {
        JournalSetApi api = new JournalSetApi(journals);
        return bind(() -> api, host, port, r -> { });
    }

    /**
     * Binds the server over journals looked up again on each request ({@code journals} is called
     * off the Netty threads), with {@code extra} routes (the {@code /v1/events} stream that
     * {@code serve --follow} adds): {@code serve} over a topic followed, whose nodes appear as
     * they ship.
     *
     * @throws IllegalStateException when the address cannot be bound
     */
    public static WebServer start(Supplier<List<NodeJournal>> journals, String host, int port,
                                  Consumer<HttpServerRoutes> extra) {
        return bind(() -> new JournalSetApi(journals.get()), host, port, extra);
    }

    private static WebServer bind(Supplier<JournalSetApi> apis, String host, int port, Consumer<HttpServerRoutes> extra) {
        try {
            DisposableServer s = HttpHardening.harden(HttpServer.create(), HttpHardening.HEADER_TIMEOUT)
                    .host(host)
                    .port(port)
                    .route(r -> {
                        WebPage.mount(r);
                        JournalSetApi.mount(r, UnaryOperator.identity(), apis);
                        r.get("/healthz", (req, res) -> WebPage.json(res, 200, Map.of("status", "ok")));
                        extra.accept(r);
                        HttpHardening.fallback(r);
                    })
                    .bindNow(Duration.ofSeconds(10));
            return new WebServer(s);
        } catch (RuntimeException e) {
            throw new IllegalStateException("cannot bind the HTTP server at " + host + ":" + port + ": "
                    + HttpHardening.bindFailure(e), e);
        }
    }

    public int port() {
        return server.port();
    }

    public String host() {
        return server.host();
    }

    @Override
    public void close() {
        server.disposeNow(Duration.ofSeconds(5));
    }
}
