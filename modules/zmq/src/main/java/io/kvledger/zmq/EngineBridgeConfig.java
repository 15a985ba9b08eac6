package io.kvledger.zmq;

import io.kvledger.wire.WireLimits;
import java.time.Duration;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * Where and how an {@link EngineBridgeServer} binds.
 *
 * @param bindEndpoint    {@code tcp://127.0.0.1:PORT} (or another loopback host: {@code localhost},
 *                        {@code [::1]}); port 0 or {@code *} binds an ephemeral port, reported by
 *                        {@link EngineBridgeServer#endpoint()}. Hook calls carry no credentials, so
 *                        only loopback hosts are accepted. Or {@code unix:///ABSOLUTE/PATH}: a Unix
 *                        domain socket ({@link UnixBridgeTransport}) in a directory the user owns
 *                        and no one else may write. {@code ipc://} is refused: JeroMQ 0.6.0
 *                        emulates it over a loopback TCP port derived from the path, which a pyzmq
 *                        (libzmq) engine, connecting to a Unix socket file, can never reach
 * @param replyTimeout    how long a call handed to the handler may stay unanswered; then the
 *                        caller gets {@code ok: False, error: "timed out ..."} and a later answer
 *                        is dropped (counted in {@link EngineBridgeServer#lateAnswers()})
 * @param maxInFlight     calls handed to the handler and not yet answered; beyond it a call is
 *                        answered at once with {@code ok: False, error: "busy ..."}
 * @param limits          the request decoder's limits (frame size, nesting)
 * @param maxMessageBytes ZMQ's own cap ({@code ZMQ_MAXMSGSIZE}): a caller sending a larger message
 *                        is disconnected by ZMQ before it is read into memory. At least
 *                        {@link WireLimits#maxFrameBytes()}, so frames between the two get a
 *                        {@code FRAME_TOO_LARGE} error reply
 * @param clock           monotonic nanoseconds: stamps each call ({@link BridgeCall#receivedAtNs()})
 *                        and measures the reply timeout
 */
public record EngineBridgeConfig(String bindEndpoint, Duration replyTimeout, int maxInFlight, WireLimits limits,
                                 long maxMessageBytes, LongSupplier clock) {

    static final Duration DEFAULT_REPLY_TIMEOUT = Duration.ofSeconds(10);
    static final int DEFAULT_MAX_IN_FLIGHT = 4096;

    public EngineBridgeConfig {
        Objects.requireNonNull(bindEndpoint, "bindEndpoint");
        Objects.requireNonNull(replyTimeout, "replyTimeout");
        Objects.requireNonNull(limits, "limits");
        Objects.requireNonNull(clock, "clock");
        if (replyTimeout.isNegative() || replyTimeout.isZero()) {
            throw new IllegalArgumentException("replyTimeout must be positive: " + replyTimeout);
        }
        if (maxInFlight < 1) {
            throw new IllegalArgumentException("maxInFlight must be positive: " + maxInFlight);
        }
        if (maxMessageBytes < limits.maxFrameBytes()) {
            throw new IllegalArgumentException("maxMessageBytes " + maxMessageBytes + " is below the decoder limit "
                    + limits.maxFrameBytes());
        }
        String problem = bindEndpoint.startsWith(UNIX) ? unixProblem(bindEndpoint) : endpointProblem(bindEndpoint);
        if (problem != null) {
            throw new IllegalArgumentException(problem);
        }
    }

    /** {@code endpoint} with the defaults: 10 s reply timeout, 4096 calls in flight, default limits. */
    public static EngineBridgeConfig forEndpoint(String endpoint) {
        return new EngineBridgeConfig(endpoint, DEFAULT_REPLY_TIMEOUT, DEFAULT_MAX_IN_FLIGHT, WireLimits.DEFAULT,
                2L * WireLimits.DEFAULT.maxFrameBytes(), System::nanoTime);
    }

    EngineBridgeConfig withReplyTimeout(Duration t) {
        return new EngineBridgeConfig(bindEndpoint, t, maxInFlight, limits, maxMessageBytes, clock);
    }

    EngineBridgeConfig withMaxInFlight(int n) {
        return new EngineBridgeConfig(bindEndpoint, replyTimeout, n, limits, maxMessageBytes, clock);
    }

    EngineBridgeConfig withLimits(WireLimits l) {
        return new EngineBridgeConfig(bindEndpoint, replyTimeout, maxInFlight, l, Math.max(maxMessageBytes, l.maxFrameBytes()), clock);
    }

    public EngineBridgeConfig withClock(LongSupplier c) {
        return new EngineBridgeConfig(bindEndpoint, replyTimeout, maxInFlight, limits, maxMessageBytes, c);
    }

    static final String UNIX = "unix://";

    /** Whether the bridge listens on a Unix domain socket. */
    boolean isUnix() {
        return bindEndpoint.startsWith(UNIX);
    }

    /** The socket file of a {@code unix://} endpoint. */
    java.nio.file.Path unixPath() {
        return java.nio.file.Path.of(bindEndpoint.substring(UNIX.length()));
    }

    /** Why a {@code unix://} endpoint cannot be bound (its form only; the directory is checked at bind). */
    static String unixProblem(String endpoint) {
        String path = endpoint.substring(UNIX.length());
        if (!path.startsWith("/")) {
            return "the engine bridge's unix:// endpoint needs an absolute path (unix:///run/user/1000/node.sock), got "
                    + endpoint;
        }
        if (path.endsWith("/") || path.contains("/../") || path.endsWith("/..") || path.contains("\0")) {
            return "the engine bridge's unix:// endpoint must name a socket file, got " + endpoint;
        }
        // sun_path holds 108 bytes with its terminating NUL
        if (path.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > 107) {
            return "a Unix socket path holds at most 107 bytes, got " + path.length() + " in " + endpoint;
        }
        return null;
    }

    /** Why {@code endpoint} cannot carry hook calls over ZMQ, or {@code null} when it can. */
    static String endpointProblem(String endpoint) {
        if (endpoint.startsWith("ipc://")) {
            return "ipc:// is not supported: JeroMQ 0.6.0 emulates ipc over a loopback TCP port that a pyzmq engine "
                    + "cannot reach; bind tcp://127.0.0.1:PORT instead (got " + endpoint + ")";
        }
        if (!endpoint.startsWith("tcp://")) {
            return "the engine bridge binds tcp://127.0.0.1:PORT, got " + endpoint;
        }
        String rest = endpoint.substring("tcp://".length());
        int colon = rest.lastIndexOf(':');
        if (colon <= 0 || colon == rest.length() - 1) {
            return "the engine bridge endpoint needs a host and a port (tcp://127.0.0.1:PORT), got " + endpoint;
        }
        String host = rest.substring(0, colon);
        String port = rest.substring(colon + 1);
        if (!(host.equals("127.0.0.1") || host.equals("localhost") || host.equals("[::1]"))) {
            return "the engine bridge takes unauthenticated hook calls and binds only loopback "
                    + "(127.0.0.1, localhost, [::1]), got host " + host;
        }
        if (!port.equals("*")) {
            try {
                int p = Integer.parseInt(port);
                if (p < 0 || p > 65535) {
                    return "port out of range in " + endpoint;
                }
            } catch (NumberFormatException e) {
                return "port is not a number in " + endpoint;
            }
        }
        return null;
    }

    /** The endpoint as ZMQ binds it: port 0 becomes {@code *} (an ephemeral port). */
    String zmqBindEndpoint() {
        return bindEndpoint.endsWith(":0") ? bindEndpoint.substring(0, bindEndpoint.length() - 1) + "*" : bindEndpoint;
    }
}
