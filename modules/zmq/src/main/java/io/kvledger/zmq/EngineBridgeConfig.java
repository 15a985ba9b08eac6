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
 *                        and no one else may write. Or {@code ipc:///PATH}: ZMTP over a Unix domain
 *                        socket at PATH, as libzmq's {@code ipc://} ({@link ZmtpBridgeTransport}), so a
 *                        pyzmq DEALER or REQ connects with the same endpoint; the socket file is kept
 *                        as for {@code unix://}. A relative PATH is resolved, as libzmq does, against
 *                        the working directory (the endpoint reported is absolute); Linux's abstract
 *                        namespace ({@code ipc://@NAME}) is refused, and so is {@code ipc://} with
 *                        {@code -Dkvledger.bridge.zmq=jeromq} (JeroMQ 0.6.0 emulates ipc over TCP)
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
        String problem = bindEndpoint.startsWith(UNIX) ? unixProblem(bindEndpoint)
                : bindEndpoint.startsWith(IPC) ? ipcProblem(bindEndpoint)
                : bindEndpoint.startsWith("tcp://") ? endpointProblem(bindEndpoint)
                : "the engine bridge binds tcp://127.0.0.1:PORT, ipc:///PATH or unix:///PATH, got " + bindEndpoint;
        if (problem != null) {
            throw new IllegalArgumentException(problem);
        }
        if (bindEndpoint.startsWith(IPC)) {
            // as libzmq: a relative path is the working directory's; reported absolute
            bindEndpoint = IPC + java.nio.file.Path.of(bindEndpoint.substring(IPC.length())).toAbsolutePath();
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
    static final String IPC = "ipc://";
    /** sun_path holds 108 bytes with its terminating NUL. */
    static final int SOCKET_PATH_MAX_BYTES = 107;

    /** Whether the bridge listens on a Unix domain socket with length-prefixed frames ({@code unix://}). */
    boolean isUnix() {
        return bindEndpoint.startsWith(UNIX);
    }

    /** Whether the bridge speaks ZMTP over a Unix domain socket ({@code ipc://}). */
    boolean isIpc() {
        return bindEndpoint.startsWith(IPC);
    }

    /** The socket file of a {@code unix://} or {@code ipc://} endpoint (absolute). */
    java.nio.file.Path socketPath() {
        return java.nio.file.Path.of(bindEndpoint.substring(isIpc() ? IPC.length() : UNIX.length()));
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
        return pathLengthProblem(path, endpoint);
    }

    private static String pathLengthProblem(String path, String endpoint) {
        if (path.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > SOCKET_PATH_MAX_BYTES) {
            return "a Unix socket path holds at most " + SOCKET_PATH_MAX_BYTES + " bytes, got " + path.length() + " in "
                    + endpoint;
        }
        return null;
    }

    /**
     * Why an {@code ipc://} endpoint cannot be bound (its form only; the directory is checked at
     * bind), a relative path taken against the working directory.
     */
    static String ipcProblem(String endpoint) {
        String path = endpoint.substring(IPC.length());
        if (path.startsWith("@")) {
            return "ipc://@NAME (Linux's abstract socket namespace) is not supported: Java binds Unix sockets only at a "
                    + "file, whose mode keeps the engine bridge to this user; use ipc:///ABSOLUTE/PATH (got " + endpoint + ")";
        }
        if (path.isEmpty() || path.equals("*")) {
            return "the engine bridge's ipc:// endpoint needs a socket file's path (ipc:///run/user/1000/node.ipc), got "
                    + endpoint;
        }
        if (path.endsWith("/") || path.contains("\0")) {
            return "the engine bridge's ipc:// endpoint must name a socket file, got " + endpoint;
        }
        return pathLengthProblem(java.nio.file.Path.of(path).toAbsolutePath().toString(), endpoint);
    }

    /** Why {@code endpoint} cannot be bound as loopback TCP (by JeroMQ too), or {@code null} when it can. */
    static String endpointProblem(String endpoint) {
        if (endpoint.startsWith(IPC)) {
            // the engine bridge takes ipc:// (ipcProblem); JeroMQ's sockets (the shadow socket's) cannot
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
