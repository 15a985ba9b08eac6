package io.kvledger.wire;

import java.util.Objects;

/**
 * The registration a worker (world rank 0, when {@code proxy_ip} is set) sends to the proxy every
 * 3 s (protocol spec 3.1). Encoded as a map in the order {@code type, http_address, zmq_address,
 * dp_size, tp_size, transfer_mode}.
 *
 * @param type         {@code "P"} (producer), {@code "D"} (consumer), or {@code "HELLO"} (which
 *                     the proxy accepts and ignores; then every other field is null or 0)
 * @param httpAddress  {@code "{local_ip}:{http_port}"}
 * @param zmqAddress   {@code "host:{ip},handshake:{port},notify:{port}"}
 * @param dpSize       global DP size
 * @param tpSize       TP size
 * @param transferMode {@code "READ"} or {@code "WRITE"}
 */
public record Registration(String type, String httpAddress, String zmqAddress, int dpSize, int tpSize,
                           String transferMode) {

    public static final String PRODUCER = "P";
    public static final String CONSUMER = "D";
    public static final String HELLO = "HELLO";

    public Registration {
        Objects.requireNonNull(type, "type");
        if (!HELLO.equals(type)) {
            Objects.requireNonNull(httpAddress, "httpAddress");
            Objects.requireNonNull(zmqAddress, "zmqAddress");
            Objects.requireNonNull(transferMode, "transferMode");
        }
    }

    public static Registration hello() {
        return new Registration(HELLO, null, null, 0, 0, null);
    }

    /** The MoRIIO zmq_address string {@code host:{ip},handshake:{port},notify:{port}}. */
    public static String zmqAddress(String host, int handshakePort, int notifyPort) {
        return "host:" + host + ",handshake:" + handshakePort + ",notify:" + notifyPort;
    }
}
