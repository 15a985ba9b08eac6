package io.kvledger.ledger.metrics;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * {@code GET /metrics} (and {@code HEAD}) in Prometheus text for a process that has no HTTP API of
 * its own ({@code kvledger ship --metrics}, {@code kvledger tap --metrics}): the JDK's HTTP server on
 * one daemon thread, each scrape asking {@code scrape} for the text; any other method is answered
 * 405 with {@code Allow: GET, HEAD}.
 */
public final class MetricsEndpoint implements AutoCloseable {

    private final HttpServer server;
    private final ExecutorService executor;

    private MetricsEndpoint(HttpServer server, String threadName, Supplier<String> scrape) {
        this.server = server;
        this.executor = Executors.newSingleThreadExecutor(r -> {
            Thread th = new Thread(r, threadName);
            th.setDaemon(true);
            return th;
        });
        server.createContext("/metrics", ex -> {
            try (ex) {
                String method = ex.getRequestMethod();
                if (!method.equals("GET") && !method.equals("HEAD")) {
                    ex.getResponseHeaders().set("Allow", "GET, HEAD");
                    ex.sendResponseHeaders(405, -1);
                    return;
                }
                byte[] body = scrape.get().getBytes(StandardCharsets.UTF_8);
                ex.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
                boolean head = method.equals("HEAD");
                ex.sendResponseHeaders(200, head ? -1 : body.length);
                if (!head) {
                    try (OutputStream o = ex.getResponseBody()) {
                        o.write(body);
                    }
                }
            }
        });
        server.setExecutor(executor);
    }

    /**
     * Serves {@code scrape}'s text on {@code host:port} (0: any free port); {@code what} names the
     * metrics in the error ("the tap's metrics") and the thread ({@code kvledger-WHAT-metrics}) is
     * named by {@code threadTag}.
     *
     * @throws UncheckedIOException when the port cannot be bound
     */
    public static MetricsEndpoint serve(String what, String threadTag, String host, int port, Supplier<String> scrape) {
        HttpServer server;
        try {
            server = HttpServer.create(new InetSocketAddress(host, port), 16);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot serve " + what + " on " + host + ":" + port + ": " + e.getMessage(), e);
        }
        MetricsEndpoint endpoint = new MetricsEndpoint(server, "kvledger-" + threadTag + "-metrics", scrape);
        server.start();
        return endpoint;
    }

    /** The port {@code /metrics} is served on. */
    public int port() {
        return server.getAddress().getPort();
    }

    /** Stops serving at once. */
    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
