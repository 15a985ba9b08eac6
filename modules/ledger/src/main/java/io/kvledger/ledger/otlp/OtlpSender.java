package io.kvledger.ledger.otlp;

import io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporter;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.common.export.HttpResponse;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Sends spans to an OTLP/HTTP receiver ({@code POST /v1/traces}, protobuf) with the OpenTelemetry
 * SDK's {@link OtlpHttpSpanExporter} (JDK HTTP sender), one batch at a time, and says whether the
 * receiver took each batch. Blocking: call it off the node loop and off network threads.
 */
public final class OtlpSender implements AutoCloseable {

    /** Spans per request body. */
    static final int BATCH = 512;

    /** Refused receiver, unreachable receiver or bad URL. */
    public static final class ExportException extends RuntimeException {
        ExportException(String message) {
            super(message);
        }
    }

    /** The SDK's exporters log each failed batch here (java.util.logging); kept so the level sticks. */
    private static final Logger SDK_LOG = Logger.getLogger("io.opentelemetry.exporter");

    private final String endpoint;
    private final Duration timeout;
    private final OtlpHttpSpanExporter exporter;

    private OtlpSender(String endpoint, Duration timeout, Map<String, String> headers, boolean retry) {
        this.endpoint = endpoint;
        this.timeout = timeout;
        var b = OtlpHttpSpanExporter.builder().setEndpoint(endpoint).setTimeout(timeout)
                .setConnectTimeout(Duration.ofMillis(Math.min(timeout.toMillis(), 5000)));
        if (!retry) {
            b.setRetryPolicy(null);
        }
        headers.forEach(b::addHeader);
        this.exporter = b.build();
    }

    /**
     * A sender to {@code url}: {@code http://HOST:4318} (the OTLP/HTTP port) gets {@code /v1/traces}
     * appended; a URL with another path is used as it is.
     *
     * @param retry whether a batch is retried (the SDK's default policy: up to 5 attempts with backoff
     *              on 429, 502, 503, 504 and connection failures)
     * @param quiet whether the SDK's own failure log lines are silenced (the caller reports failures)
     * @throws ExportException when {@code url} is not an http or https URL with a host
     */
    public static OtlpSender to(String url, Duration timeout, Map<String, String> headers, boolean retry,
                                boolean quiet) {
        String endpoint = endpoint(url);
        if (quiet) {
            SDK_LOG.setLevel(Level.OFF);
        }
        return new OtlpSender(endpoint, timeout, headers, retry);
    }

    /** The traces endpoint of {@code url} (see {@link #to}). */
    public static String endpoint(String url) {
        URI u;
        try {
            u = new URI(url == null ? "" : url.strip());
        } catch (URISyntaxException e) {
            throw new ExportException("--otlp takes an http(s)://HOST:PORT URL, got \"" + url + "\": " + e.getReason());
        }
        String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(java.util.Locale.ROOT);
        if (!scheme.equals("http") && !scheme.equals("https") || u.getHost() == null) {
            throw new ExportException("--otlp takes an http(s)://HOST:PORT URL (for example http://127.0.0.1:4318), got \""
                    + url + "\"");
        }
        String path = u.getRawPath() == null ? "" : u.getRawPath();
        String base = scheme + "://" + u.getRawAuthority();
        if (path.isEmpty() || path.equals("/")) {
            return base + "/v1/traces";
        }
        return base + path + (u.getRawQuery() == null ? "" : "?" + u.getRawQuery());
    }

    public String endpoint() {
        return endpoint;
    }

    /**
     * Sends {@code spans} in batches of {@value #BATCH} and waits for each.
     *
     * @throws ExportException when the receiver refused a batch, or did not answer within the timeout
     */
    public void send(Collection<SpanData> spans) {
        List<SpanData> all = List.copyOf(spans);
        for (int i = 0; i < all.size(); i += BATCH) {
            List<SpanData> batch = all.subList(i, Math.min(all.size(), i + BATCH));
            CompletableResultCode r = exporter.export(batch);
            r.join(timeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
            if (!r.isDone()) {
                throw new ExportException("the OTLP receiver at " + endpoint + " did not answer within "
                        + timeout.toMillis() + " ms");
            }
            if (!r.isSuccess()) {
                Throwable t = r.getFailureThrowable();
                throw new ExportException("the OTLP receiver at " + endpoint + " did not take " + batch.size()
                        + " spans" + (t == null ? "" : ": " + oneLine(t)));
            }
        }
    }

    private static String oneLine(Throwable t) {
        // the SDK's HttpExportException (an internal class) carries the receiver's answer
        if (response(t) instanceof HttpResponse r) {
            String m = r.getStatusMessage();
            boolean noText = m == null || m.isBlank() || m.strip().equals(Integer.toString(r.getStatusCode()));
            return "HTTP " + r.getStatusCode() + (noText ? "" : " " + m.strip());
        }
        Throwable c = t.getCause() != null ? t.getCause() : t;
        if (c instanceof java.net.ConnectException) {
            return "cannot connect (" + (c.getMessage() == null || c.getMessage().isBlank() ? "connection refused"
                    : c.getMessage()) + ")";
        }
        String m = c.getMessage();
        String s = c.getClass().getSimpleName() + (m == null || m.isBlank() ? "" : ": " + m);
        return s.replace('\n', ' ');
    }

    private static Object response(Throwable t) {
        try {
            return t.getClass().getMethod("getResponse").invoke(t);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    @Override
    public void close() {
        exporter.shutdown().join(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }
}
