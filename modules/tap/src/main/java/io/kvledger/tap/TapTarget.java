package io.kvledger.tap;

import io.kvledger.core.config.Role;
import io.kvledger.wire.OutboundFrame;
import java.util.Locale;
import java.util.Objects;

/**
 * One notify ROUTER a tap stands in front of: the rank's role, where it really listens, and where
 * the tap listens for it ({@code port + shift}).
 *
 * @param role  whose notify port it is: a prefill rank (receives {@code remote_blocks} and
 *              {@code release}) or a decode rank (receives {@code write_done})
 * @param host  the rank's notify host, as the peers dial it
 * @param port  the rank's real notify port ({@code notify_port + dp_local + tp_rank})
 * @param shift the fixed offset the proxy adds to the ports it embeds in request ids
 */
public record TapTarget(Role role, String host, int port, int shift) {

    public TapTarget {
        Objects.requireNonNull(role, "role");
        Objects.requireNonNull(host, "host");
        if (host.isEmpty()) {
            throw new IllegalArgumentException("empty host");
        }
        checkPort("notify port", port);
        checkPort("tap port (" + port + (shift < 0 ? " - " + -shift : " + " + shift) + ")", port + shift);
        if (shift == 0) {
            throw new IllegalArgumentException("the shift must not be 0: the tap cannot listen on the port it forwards to");
        }
    }

    private static void checkPort(String what, int p) {
        if (p < 1 || p > 65535) {
            throw new IllegalArgumentException(what + " " + p + " is out of range 1..65535");
        }
    }

    /**
     * Parses {@code HOST:PORT} ({@code [::1]:PORT} for an IPv6 host).
     *
     * @throws IllegalArgumentException with a one-line reason
     */
    public static TapTarget parse(Role role, String spec, int shift) {
        int colon = spec.lastIndexOf(':');
        if (colon <= 0 || colon == spec.length() - 1) {
            throw new IllegalArgumentException("a target is HOST:PORT (the rank's notify port), got '" + spec + "'");
        }
        String host = spec.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port;
        try {
            port = Integer.parseInt(spec.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("a target is HOST:PORT, and '" + spec.substring(colon + 1) + "' in '" + spec
                    + "' is not a port number");
        }
        return new TapTarget(role, host, port, shift);
    }

    /** Where the tap listens for this rank. */
    int tapPort() {
        return port + shift;
    }

    /** The real notify ROUTER, {@code tcp://HOST:PORT}. */
    String endpoint() {
        return OutboundFrame.tcpEndpoint(host, port);
    }

    /** {@code P} or {@code D}. */
    String roleLetter() {
        return role == Role.PRODUCER ? "P" : "D";
    }

    /** {@code P 10.0.0.1:61005}: how reports name the rank. */
    public String label() {
        return roleLetter() + " " + (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
    }

    /** The journal directory name of this target: {@code P-10.0.0.1-61005} (file-name safe). */
    public String journalName() {
        return (roleLetter() + "-" + host + "-" + port).replaceAll("[^A-Za-z0-9._-]", "_").toLowerCase(Locale.ROOT)
                .replaceFirst("^p-", "P-").replaceFirst("^d-", "D-");
    }
}
