package io.kvledger.wire;

import java.util.Objects;

/**
 * One frame to send on a notify DEALER: where to (host and port exactly as the effect computed
 * them), what it is, and its bytes (fresh, never reused).
 *
 * @param messageType {@code remote_blocks}, {@code release}, {@code write_done} or {@code write_failed}
 * @param transferId  the transfer id as text, for events and logs ({@code String.valueOf} of the
 *                    Python value)
 */
public record OutboundFrame(String host, int port, String messageType, String transferId, byte[] frame) {

    public OutboundFrame {
        Objects.requireNonNull(messageType, "messageType");
        Objects.requireNonNull(frame, "frame");
    }

    /**
     * The ZMQ endpoint, as vLLM's {@code make_zmq_path("tcp", host, port)}: {@code tcp://host:port},
     * with brackets around an IPv6 host.
     */
    public String endpoint() {
        return tcpEndpoint(host, port);
    }

    public static String tcpEndpoint(String host, int port) {
        String h = host == null ? "None" : host;
        return h.indexOf(':') >= 0 && !h.startsWith("[") ? "tcp://[" + h + "]:" + port : "tcp://" + h + ":" + port;
    }
}
