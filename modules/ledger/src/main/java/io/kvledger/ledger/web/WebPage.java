package io.kvledger.ledger.web;

import io.kvledger.journal.json.Json;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.function.BiFunction;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;
import reactor.netty.http.server.HttpServerRequest;
import reactor.netty.http.server.HttpServerResponse;
import reactor.netty.http.server.HttpServerRoutes;

/**
 * The web timeline page: its assets, read once from the jar, and the routes that serve them.
 *
 * <p>Any Reactor-Netty server shows the page by calling {@link #mount(HttpServerRoutes)} in its
 * route table and serving the JSON routes the page reads ({@code /v1/requests},
 * {@code /v1/requests/{id}}, {@code /v1/hangs}, and optionally the {@code /v1/events} stream):
 * <pre>{@code
 * HttpServer.create().route(r -> {
 *     WebPage.mount(r);                         // GET /, /ui/, /ui/{asset}
 *     new JournalSetApi(journals).mount(r, h -> guard(h));   // or your own /v1 routes
 * })
 * }</pre>
 * The page's assets hold no data, so they are served without a token; the page sends the token
 * the user gives it ({@code /ui/#token=...}) as a bearer header on its JSON requests.
 *
 * <p>{@link #standalone(Map)} writes the page as one self-contained HTML file with a request's
 * data inside ({@code kvledger inspect --html}).
 */
public final class WebPage {

    /** A route handler, as Reactor-Netty's route table takes it. */
    public interface Handler extends BiFunction<HttpServerRequest, HttpServerResponse, Publisher<Void>> {}

    private static final String BASE = "/io/kvledger/ledger/web/";

    /** The page's files: name, content type. */
    private static final Map<String, String> ASSETS = Map.of(
            "index.html", "text/html; charset=utf-8",
            "app.js", "text/javascript; charset=utf-8",
            "app.css", "text/css; charset=utf-8");

    private static final Map<String, byte[]> CONTENT = load();

    private WebPage() {}

    private static Map<String, byte[]> load() {
        java.util.HashMap<String, byte[]> m = new java.util.HashMap<>();
        for (String name : ASSETS.keySet()) {
            try (InputStream in = WebPage.class.getResourceAsStream(BASE + name)) {
                if (in == null) {
                    throw new IllegalStateException("the web page's " + name + " is missing from the jar");
                }
                m.put(name, in.readAllBytes());
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return Map.copyOf(m);
    }

    /** One asset's text. */
    static String asset(String name) {
        return new String(CONTENT.get(name), StandardCharsets.UTF_8);
    }

    /** Mounts {@code GET /} (a redirect to {@code /ui/}), {@code GET /ui/} and {@code GET /ui/{asset}}. */
    public static HttpServerRoutes mount(HttpServerRoutes routes) {
        return routes.get("/", (req, res) -> res.status(HttpResponseStatus.FOUND).header("Location", "/ui/").send())
                .get("/ui", (req, res) -> res.status(HttpResponseStatus.FOUND).header("Location", "/ui/").send())
                .get("/ui/", (req, res) -> serve(res, "index.html"))
                .get("/ui/{asset}", (req, res) -> serve(res, req.param("asset")));
    }

    private static Publisher<Void> serve(HttpServerResponse res, String name) {
        byte[] body = name == null ? null : CONTENT.get(name);
        if (body == null) {
            return json(res, 404, Map.of("error", "no such file: /ui/" + name));
        }
        return res.status(HttpResponseStatus.OK)
                .header("Content-Type", ASSETS.get(name))
                .header("Cache-Control", "no-cache")
                .header("X-Content-Type-Options", "nosniff")
                .sendByteArray(Mono.just(body));
    }

    /** A JSON answer. */
    static Publisher<Void> json(HttpServerResponse res, int status, Object body) {
        return res.status(HttpResponseStatus.valueOf(status)).header("Content-Type", "application/json")
                .sendString(Mono.just(Json.write(body) + "\n"), StandardCharsets.UTF_8);
    }

    /**
     * The page as one self-contained HTML file showing one request: the script and style inlined,
     * {@code data} (a timeline object with its {@code findings}, as {@code GET /v1/requests/{id}}
     * of {@code serve} answers) embedded as JSON. It opens from disk with no server and no network.
     */
    public static String standalone(Map<String, Object> data) {
        String html = asset("index.html");
        // "</script" or "<!--" inside a script element would end or confuse it; "<" only occurs
        // inside JSON strings, where "\u003c" stands for it.
        String json = Json.write(data).replace("<", "\\u003c");
        String style = "<style>\n" + asset("app.css") + "\n</style>";
        String script = "<script type=\"application/json\" id=\"kvledger-data\">" + json + "</script>\n<script>\n"
                + asset("app.js").replace("</script", "<\\/script") + "\n</script>";
        html = replaceOnce(html, "<link rel=\"stylesheet\" href=\"app.css\">", style);
        html = replaceOnce(html, "<script src=\"app.js\"></script>", script);
        return html;
    }

    private static String replaceOnce(String s, String what, String with) {
        int i = s.indexOf(what);
        if (i < 0) {
            throw new IllegalStateException("index.html lacks " + what);
        }
        return s.substring(0, i) + with + s.substring(i + what.length());
    }
}
