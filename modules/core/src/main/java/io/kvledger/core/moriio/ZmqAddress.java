package io.kvledger.core.moriio;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * A MoRIIO {@code zmq_address}: {@code host:{IP},handshake:{PORT},notify:{PORT}} (protocol spec
 * section 2.3), as the proxy embeds it in request ids and as
 * {@code parse_moriio_zmq_address} returns it.
 *
 * <p>{@code handshakePort} is the advertising rank's <em>base</em> handshake port; {@code
 * notifyPort} is that rank's already-offset notify port (normally the base, since DP0/TP0
 * registers).
 *
 * @param host the advertised host, exactly as given (may be empty: Python does not check it)
 * @param handshakePort the base handshake port
 * @param notifyPort the advertising rank's notify port
 */
public record ZmqAddress(String host, int handshakePort, int notifyPort) {

    /** Non-null {@code host} required. */
    public ZmqAddress {
        Objects.requireNonNull(host, "host");
    }

    /**
     * {@code parse_moriio_zmq_address(s)}.
     *
     * <ul>
     *   <li>Splits on every {@code ','} (empty segments kept, as Python {@code str.split(",")}).
     *   <li>Partitions each segment on its <em>first</em> {@code ':'}, as
     *       {@code str.partition(":")}: {@code "host:::1"} gives key {@code host} and value
     *       {@code "::1"}; a segment without {@code ':'} gives the whole segment as key and
     *       {@code ""} as value.
     *   <li>Strips keys and values (Python {@code str.strip()} whitespace). A later duplicate key
     *       overwrites an earlier one.
     *   <li>Requires keys {@code host}, {@code handshake} and {@code notify}; the ports must parse
     *       as Python {@code int(str)}: optional sign, ASCII digits, single underscores between
     *       digits, surrounding whitespace.
     * </ul>
     *
     * <p>Divergences from Python, both failing here where Python would accept: non-ASCII decimal
     * digits, and port values outside the Java {@code int} range.
     *
     * @param s the address text, non-null
     * @return the address, or a failure whose message is the Python one:
     *     {@code "Malformed zmq_address '<s>': expected 'host:IP,handshake:PORT,notify:PORT' format"}
     */
    public static Checked<ZmqAddress> parse(String s) {
        Objects.requireNonNull(s, "s");
        Map<String, String> parts = new LinkedHashMap<>();
        for (String segment : s.split(",", -1)) {
            int colon = segment.indexOf(':');
            String key = colon < 0 ? segment : segment.substring(0, colon);
            String value = colon < 0 ? "" : segment.substring(colon + 1);
            parts.put(PyText.strip(key), PyText.strip(value));
        }
        String host = parts.get("host");
        Integer handshake = PyText.parseInt(parts.get("handshake"));
        Integer notify = PyText.parseInt(parts.get("notify"));
        if (host == null || handshake == null || notify == null) {
            return Checked.fail("Malformed zmq_address " + PyText.repr(s)
                    + ": expected 'host:IP,handshake:PORT,notify:PORT' format");
        }
        return Checked.ok(new ZmqAddress(host, handshake, notify));
    }

    /** The wire form {@code "host:{host},handshake:{handshakePort},notify:{notifyPort}"}. */
    public String format() {
        return "host:" + host + ",handshake:" + handshakePort + ",notify:" + notifyPort;
    }
}
