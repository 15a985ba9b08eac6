package io.kvledger.ledger.otlp;

import com.google.protobuf.InvalidProtocolBufferException;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.common.v1.AnyValue;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.proto.trace.v1.Span;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.GZIPInputStream;

/**
 * An OTLP/HTTP trace receiver for tests: a JDK HTTP server on loopback that takes
 * {@code POST /v1/traces} with an {@code application/x-protobuf} body, decodes it with the
 * generated classes of opentelemetry-proto (the real wire format), keeps every request, and answers
 * an empty {@code ExportTraceServiceResponse}. It can be told to refuse ({@link #refuseWith}).
 */
public final class OtlpReceiver implements AutoCloseable {

    /** One span as received, with its resource's attributes. */
    public record Received(Span span, List<KeyValue> resource) {

        public String traceId() {
            return HexFormat.of().formatHex(span.getTraceId().toByteArray());
        }

        public String spanId() {
            return HexFormat.of().formatHex(span.getSpanId().toByteArray());
        }

        public String parentSpanId() {
            return HexFormat.of().formatHex(span.getParentSpanId().toByteArray());
        }

        public String name() {
            return span.getName();
        }

        /** A span attribute as a string (ints and bools printed), or null. */
        public String attr(String key) {
            return value(span.getAttributesList(), key);
        }

        /** A resource attribute, or null. */
        public String resourceAttr(String key) {
            return value(resource, key);
        }

        public static String value(List<KeyValue> kvs, String key) {
            for (KeyValue kv : kvs) {
                if (kv.getKey().equals(key)) {
                    AnyValue v = kv.getValue();
                    return switch (v.getValueCase()) {
                        case STRING_VALUE -> v.getStringValue();
                        case INT_VALUE -> Long.toString(v.getIntValue());
                        case BOOL_VALUE -> Boolean.toString(v.getBoolValue());
                        case DOUBLE_VALUE -> Double.toString(v.getDoubleValue());
                        default -> v.toString();
                    };
                }
            }
            return null;
        }
    }

    private final HttpServer server;
    private final List<ExportTraceServiceRequest> requests = new CopyOnWriteArrayList<>();
    private final List<String> contentTypes = new CopyOnWriteArrayList<>();
    private final AtomicInteger refuse = new AtomicInteger();

    private OtlpReceiver(HttpServer server) {
        this.server = server;
    }

    /** Starts a receiver on a free loopback port. */
    public static OtlpReceiver start() throws IOException {
        HttpServer s = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        OtlpReceiver r = new OtlpReceiver(s);
        s.createContext("/v1/traces", r::handle);
        s.start();
        return r;
    }

    /** {@code http://127.0.0.1:PORT}, what {@code --otlp} takes. */
    public String url() {
        return "http://" + server.getAddress().getAddress().getHostAddress() + ":" + server.getAddress().getPort();
    }

    /** Answers the next requests with this HTTP status (0: take them again). */
    public void refuseWith(int status) {
        refuse.set(status);
    }

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            if (!ex.getRequestMethod().equals("POST")) {
                ex.sendResponseHeaders(405, -1);
                return;
            }
            contentTypes.add(String.valueOf(ex.getRequestHeaders().getFirst("Content-Type")));
            byte[] body;
            try (InputStream in = "gzip".equalsIgnoreCase(ex.getRequestHeaders().getFirst("Content-Encoding"))
                    ? new GZIPInputStream(ex.getRequestBody()) : ex.getRequestBody()) {
                body = in.readAllBytes();
            }
            int status = refuse.get();
            if (status != 0) {
                ex.sendResponseHeaders(status, -1);
                return;
            }
            ExportTraceServiceRequest req;
            try {
                req = ExportTraceServiceRequest.parseFrom(body);
            } catch (InvalidProtocolBufferException e) {
                ex.sendResponseHeaders(400, -1);
                return;
            }
            requests.add(req);
            byte[] answer = ExportTraceServiceResponse.getDefaultInstance().toByteArray();
            ex.getResponseHeaders().add("Content-Type", "application/x-protobuf");
            ex.sendResponseHeaders(200, answer.length == 0 ? -1 : answer.length);
            if (answer.length > 0) {
                ex.getResponseBody().write(answer);
            }
        }
    }

    /** Every decoded export request, in arrival order. */
    public List<ExportTraceServiceRequest> requests() {
        return List.copyOf(requests);
    }

    /** The Content-Type of every request received. */
    public List<String> contentTypes() {
        return List.copyOf(contentTypes);
    }

    /** Every span received, in arrival order. */
    public List<Received> spans() {
        List<Received> out = new ArrayList<>();
        for (ExportTraceServiceRequest r : requests) {
            for (ResourceSpans rs : r.getResourceSpansList()) {
                for (ScopeSpans ss : rs.getScopeSpansList()) {
                    for (Span s : ss.getSpansList()) {
                        out.add(new Received(s, rs.getResource().getAttributesList()));
                    }
                }
            }
        }
        return out;
    }

    /** Forgets what was received. */
    public void clear() {
        requests.clear();
        contentTypes.clear();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
