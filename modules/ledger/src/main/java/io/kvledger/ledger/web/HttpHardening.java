package io.kvledger.ledger.web;

import io.kvledger.journal.json.Json;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.util.ReferenceCountUtil;
import java.net.BindException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;
import reactor.netty.NettyPipeline;
import reactor.netty.http.server.HttpServer;
import reactor.netty.http.server.HttpServerRequest;
import reactor.netty.http.server.HttpServerResponse;
import reactor.netty.http.server.HttpServerRoutes;

/**
 * What every kvledger HTTP server (the node's, the proxy's, {@code serve}'s) does about requests
 * that are not what they should be, below and beside its routes:
 * <ul>
 *   <li>a request's line and headers must arrive within the header timeout from the connection's
 *       start, or from the end of the answer before on a kept-alive connection: a client that
 *       trickles its headers (slowloris) or sends half a request is answered {@code 408} and
 *       closed, one that sent nothing is closed (an idle kept-alive connection);</li>
 *   <li>a request line over 8 KiB is {@code 414}, headers over 16 KiB {@code 431}, a request the
 *       decoder cannot read {@code 400}, each with a JSON body, and the connection closed;</li>
 *   <li>a request body must arrive whole within {@link #bodyTimeout} (else {@code 408}, closed)
 *       and within the route's size ({@link #body}); a body the decoder cannot read closes the
 *       connection;</li>
 *   <li>{@link #fallback}: a path served for other methods is {@code 405} with {@code Allow}, any
 *       other {@code 404}, both JSON.</li>
 * </ul>
 * Each refusal is a warning, at most one a minute per status ({@link RateLimitedLog}), naming the
 * peer and the reason, never the request's headers.
 * Error bodies are {@code {"error": {"message", "type", "param", "code"}}}, OpenAI's shape, as the
 * proxy's and the journal routes' ({@link JournalSetApi}) are (the node's own routes answer
 * {@code {"error": "..."}}; both carry the message under {@code error}).
 */
public final class HttpHardening {

    /** The header timeout the servers use unless told otherwise. */
    public static final Duration HEADER_TIMEOUT = Duration.ofSeconds(20);
    static final int MAX_INITIAL_LINE = 8192;
    static final int MAX_HEADER_SIZE = 16384;
    /** How long a refused connection is read and drained after its answer before it closes. */
    private static final long LINGER_MS = 2000;

    private HttpHardening() {}

    private static final java.util.concurrent.atomic.AtomicBoolean HOOKED = new java.util.concurrent.atomic.AtomicBoolean();

    /** {@code server} with the limits and the header timeout. */
    public static HttpServer harden(HttpServer server, Duration headerTimeout) {
        if (HOOKED.compareAndSet(false, true)) {
            // an error that arrives after its subscriber went (a peer's connection closed under a
            // cancelled exchange) is Reactor's "onErrorDropped", by default an ERROR with a stack
            // trace on the user's terminal: one warning line a minute instead
            reactor.core.publisher.Hooks.onErrorDropped(e -> WARNINGS.warn("dropped",
                    "reactor: an error after its exchange ended (dropped): " + e));
        }
        long timeoutNs = headerTimeout.toNanos();
        return server
                .httpRequestDecoder(s -> s.maxInitialLineLength(MAX_INITIAL_LINE).maxHeaderSize(MAX_HEADER_SIZE))
                .doOnChannelInit((observer, channel, remote) -> {
                    if (channel.pipeline().get(NettyPipeline.HttpCodec) == null) {
                        return; // not HTTP/1.1 over a plain connection: nothing of ours to watch
                    }
                    Guard guard = new Guard(timeoutNs);
                    channel.pipeline().addBefore(NettyPipeline.HttpCodec, "kvledger.bytesSeen", guard.bytes);
                    channel.pipeline().addAfter(NettyPipeline.HttpCodec, "kvledger.hardening", guard);
                });
    }

    /**
     * Adds the catch-all route: call last, once every route is mounted. A request no route took
     * is {@code 405} (with {@code Allow}) when its path is served for another method, else
     * {@code 404}.
     */
    public static HttpServerRoutes fallback(HttpServerRoutes routes) {
        List<Map.Entry<Predicate<HttpServerRequest>, HttpMethod>> served = new ArrayList<>();
        routes.removeIf(m -> {
            if (m.getPath() != null && m.getMethod() != null) {
                served.add(Map.entry(template(m.getPath()), m.getMethod()));
            }
            return false; // only looked at
        });
        return routes.route(req -> true, (req, res) -> {
            TreeSet<String> allow = new TreeSet<>();
            for (var e : served) {
                if (e.getKey().test(req)) {
                    allow.add(e.getValue().name());
                }
            }
            if (!allow.isEmpty()) {
                res.header(HttpHeaderNames.ALLOW, String.join(", ", allow));
                return error(res, 405, req.method().name() + " is not served at " + path(req) + " (only "
                        + String.join(", ", allow) + ")");
            }
            return error(res, 404, "no route " + req.method().name() + " " + path(req));
        });
    }

    /**
     * A route's path template ({@code /v1/requests/{id}}: a {@code {name}} is one path segment)
     * as a test of a request's path, query left out.
     */
    static Predicate<HttpServerRequest> template(String path) {
        StringBuilder re = new StringBuilder();
        for (String part : path.split("(?=\\{)|(?<=\\})")) {
            re.append(part.startsWith("{") && part.endsWith("}") ? "[^/]+" : java.util.regex.Pattern.quote(part));
        }
        java.util.regex.Pattern p = java.util.regex.Pattern.compile(re.toString());
        return req -> {
            String uri = req.uri();
            int q = uri.indexOf('?');
            return p.matcher(q < 0 ? uri : uri.substring(0, q)).matches();
        };
    }

    private static String path(HttpServerRequest req) {
        String p = req.path();
        return "/" + (p.length() > 200 ? p.substring(0, 200) + "..." : p);
    }

    /**
     * How long a request's body may take to arrive whole: three header timeouts (a minute by
     * default), so that a body that stops coming (half a {@code Content-Length}, then nothing)
     * or trickles holds no connection.
     */
    public static Duration bodyTimeout(Duration headerTimeout) {
        return headerTimeout.multipliedBy(3);
    }

    /** Why a body was not read: the status to answer and the message. */
    public static final class BodyRefused extends RuntimeException {
        private final int status;

        BodyRefused(int status, String message) {
            super(message, null, false, false);
            this.status = status;
        }

        public int status() {
            return status;
        }
    }

    /**
     * A request's body, whole: at most {@code maxBytes} (counted as it arrives, whatever
     * {@code Content-Length} said) within {@code timeout}; else a {@link BodyRefused} of 413 or
     * 408 (a 408 closes the connection: the rest of the body may never come).
     */
    public static Mono<byte[]> body(HttpServerRequest req, HttpServerResponse res, int maxBytes, Duration timeout) {
        String len = req.requestHeaders().get(HttpHeaderNames.CONTENT_LENGTH);
        if (len != null) {
            long n;
            try {
                n = Long.parseLong(len.trim());
            } catch (NumberFormatException e) {
                return Mono.error(new BodyRefused(400, "Content-Length is not a number"));
            }
            if (n > maxBytes) {
                return Mono.error(new BodyRefused(413, "the body is over " + maxBytes + " bytes"));
            }
        }
        return req.receive().asByteArray()
                .scan(new byte[0], (acc, b) -> {
                    if (acc.length + b.length > maxBytes) {
                        throw new BodyRefused(413, "the body is over " + maxBytes + " bytes");
                    }
                    byte[] out = java.util.Arrays.copyOf(acc, acc.length + b.length);
                    System.arraycopy(b, 0, out, acc.length, b.length);
                    return out;
                })
                .last(new byte[0])
                .timeout(timeout, Mono.defer(() -> {
                    res.header(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                    return Mono.error(new BodyRefused(408, "the request's body did not arrive within "
                            + timeout.toMillis() + " ms"));
                }));
    }

    /** A JSON error answer: {@code {"error": {"message", "type", "param", "code"}}}. */
    public static Publisher<Void> error(HttpServerResponse res, int status, String message) {
        return res.status(status).header(HttpHeaderNames.CONTENT_TYPE, "application/json")
                .sendString(Mono.just(errorBody(status, message))).then();
    }

    /** The JSON of an error, {@code {"error": {"message", "type", "param", "code"}}}, on one line. */
    public static String errorJson(int status, String message) {
        return errorBody(status, message).strip();
    }

    static String errorBody(int status, String message) {
        return Json.write(Map.of("error", errorObject(status, message))) + "\n";
    }

    /** What goes under {@code "error"}: {@code {"message", "type", "param", "code"}}, OpenAI's shape. */
    public static Map<String, Object> errorObject(int status, String message) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("message", message);
        e.put("type", status >= 500 ? "server_error" : "invalid_request_error");
        e.put("param", null);
        e.put("code", (long) status);
        return e;
    }

    /**
     * The line a failed bind says, with "address already in use" when the port is taken (the
     * JDK's and JeroMQ's wording differ: "Address already in use", "Errno 48", JeroMQ's own
     * number for EADDRINUSE).
     */
    public static String bindFailure(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof BindException
                    || (t instanceof org.zeromq.ZMQException z && z.getErrorCode() == zmq.ZError.EADDRINUSE)
                    || (t.getMessage() != null && t.getMessage().contains("Address already in use"))) {
                return "address already in use";
            }
        }
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root.getMessage() != null ? root.getMessage() : root.toString();
    }

    /** One connection's watch: the header deadline and the decoder's failures. */
    private static final RateLimitedLog WARNINGS = RateLimitedLog.warnings();

    private static final class Guard extends ChannelDuplexHandler {

        private final long timeoutNs;
        /** Sits before the codec: sees the bytes of a request still being decoded. */
        final ChannelInboundHandlerAdapter bytes = new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                if (refusing) {
                    ReferenceCountUtil.release(msg); // answered and closing: the rest is dropped
                    return;
                }
                if (msg instanceof ByteBuf b && b.isReadable()) {
                    bytesSinceArmed = true;
                }
                ctx.fireChannelRead(msg);
            }
        };
        private ScheduledFuture<?> deadline;
        private boolean bytesSinceArmed;
        private boolean refusing;

        Guard(long timeoutNs) {
            this.timeoutNs = timeoutNs;
        }

        @Override
        public void handlerAdded(ChannelHandlerContext ctx) {
            arm(ctx);
        }

        @Override
        public void handlerRemoved(ChannelHandlerContext ctx) {
            disarm();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) throws Exception {
            disarm();
            super.channelInactive(ctx);
        }

        private void arm(ChannelHandlerContext ctx) {
            disarm();
            bytesSinceArmed = false;
            deadline = ctx.executor().schedule(() -> expired(ctx), timeoutNs, TimeUnit.NANOSECONDS);
        }

        private void disarm() {
            if (deadline != null) {
                deadline.cancel(false);
                deadline = null;
            }
        }

        private void expired(ChannelHandlerContext ctx) {
            deadline = null;
            if (!ctx.channel().isActive()) {
                return;
            }
            if (bytesSinceArmed) {
                refuse(ctx, HttpResponseStatus.REQUEST_TIMEOUT, "the request's line and headers did not arrive within "
                        + (timeoutNs / 1_000_000) + " ms");
            } else {
                ctx.close(); // an idle connection: nothing to answer
            }
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (refusing) {
                ReferenceCountUtil.release(msg);
                return;
            }
            if (!(msg instanceof HttpRequest) && msg instanceof io.netty.handler.codec.http.HttpContent c
                    && c.decoderResult().isFailure()) {
                // a body the decoder cannot read (a bad chunk size ...): the request's handler has
                // it already, so no answer of ours: the connection goes
                refusing = true;
                ReferenceCountUtil.release(msg);
                WARNINGS.warn("http body", "http: closed the connection of " + ctx.channel().remoteAddress()
                        + ": its request's body cannot be read as HTTP/1.1");
                ctx.close();
                return;
            }
            if (msg instanceof HttpRequest req) {
                disarm();
                if (req.decoderResult().isFailure()) {
                    Throwable cause = req.decoderResult().cause();
                    ReferenceCountUtil.release(msg);
                    if (cause instanceof TooLongHttpHeaderException) {
                        refuse(ctx, HttpResponseStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                                "the request's headers are over " + MAX_HEADER_SIZE + " bytes");
                    } else if (cause instanceof TooLongHttpLineException) {
                        refuse(ctx, HttpResponseStatus.REQUEST_URI_TOO_LONG,
                                "the request line is over " + MAX_INITIAL_LINE + " bytes");
                    } else {
                        refuse(ctx, HttpResponseStatus.BAD_REQUEST, "the request cannot be read as HTTP/1.1"
                                + (cause instanceof TooLongFrameException ? " (too long)" : ""));
                    }
                    return;
                }
            }
            ctx.fireChannelRead(msg);
        }

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
            if (msg instanceof LastHttpContent) {
                // the answer is out: the next request on this connection has its own deadline
                promise.addListener(f -> {
                    if (ctx.channel().isActive() && !refusing) {
                        arm(ctx);
                    }
                });
            }
            ctx.write(msg, promise);
        }

        private void refuse(ChannelHandlerContext ctx, HttpResponseStatus status, String message) {
            refusing = true;
            disarm();
            WARNINGS.warn("http " + status.code(), "http: answered " + status.code() + " to "
                    + ctx.channel().remoteAddress() + " on " + ctx.channel().localAddress() + ": " + message);
            byte[] body = errorBody(status.code(), message).getBytes(StandardCharsets.UTF_8);
            FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, Unpooled.wrappedBuffer(body));
            r.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json");
            r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            // a lingering close: the answer goes out, then the sending side shuts and what the
            // client still sends is read and dropped for a moment, so that closing with its bytes
            // unread (a TCP reset) cannot destroy the answer before the client reads it
            ctx.writeAndFlush(r).addListener(f -> {
                if (ctx.channel() instanceof io.netty.channel.socket.SocketChannel sc && sc.isActive()) {
                    sc.shutdownOutput();
                    ctx.executor().schedule(() -> ctx.close(), LINGER_MS, TimeUnit.MILLISECONDS);
                } else {
                    ctx.close();
                }
            });
        }
    }
}
