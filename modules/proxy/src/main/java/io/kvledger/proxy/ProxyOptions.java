package io.kvledger.proxy;

import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.web.HttpHardening;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * How a proxy runs.
 *
 * @param host             the address the HTTP server and the registration socket bind
 * @param httpPort         the HTTP port (0 picks a free one)
 * @param pingPort         the registration ROUTER's port ({@code proxy_ping_port}; the toy proxy's
 *                         is 36367; 0 picks a free one)
 * @param mode             the transfer mode, or null to latch the first registrant's (as the toy
 *                         proxy does); registrations of the other mode are rejected
 * @param registrationTtl  how long an instance stays without a heartbeat before it expires
 * @param prefillTimeout   the longest wait for the prefill leg's answer
 * @param decodeTimeout    the longest wait for the decode leg's headers, and between two chunks
 *                         of its body
 * @param notifyPortShift  added to the notify port of the {@code zmq_address}es embedded in
 *                         composed request ids (0: as registered), so that peers send their
 *                         notifies through a {@code kvledger tap} listening at the shifted ports;
 *                         handshake ports are left as registered (the tap does not carry
 *                         handshakes)
 * @param journalDir       the proxy's journal directory, or null for none
 * @param proxyId          the proxy's name in its journal header
 * @param apiKey           sent as {@code Authorization: Bearer ...} on both legs, or null
 * @param serveJournals    journal directories (nodes', taps', a directory of them) the proxy's web
 *                         page shows next to its own journal, found again on each page request (so
 *                         journals of nodes started after the proxy appear); empty for none
 * @param otlp             an OTLP/HTTP endpoint ({@code http://HOST:4318}) the proxy sends a span
 *                         per request to, or null for none
 * @param headerTimeout    how long a client has to send a request's line and headers
 *                         ({@link HttpHardening}); null for the default
 */
public record ProxyOptions(String host, int httpPort, int pingPort, TransferMode mode, Duration registrationTtl,
                           Duration prefillTimeout, Duration decodeTimeout, int notifyPortShift, Path journalDir,
                           String proxyId, String apiKey, List<Path> serveJournals, String otlp,
                           Duration headerTimeout) {

    /** The toy proxy's registration port. */
    public static final int TOY_PING_PORT = 36367;
    /** The toy proxy's HTTP port. */
    public static final int TOY_HTTP_PORT = 10001;

    public ProxyOptions {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(registrationTtl, "registrationTtl");
        Objects.requireNonNull(prefillTimeout, "prefillTimeout");
        Objects.requireNonNull(decodeTimeout, "decodeTimeout");
        proxyId = proxyId == null || proxyId.isBlank() ? "proxy" : proxyId;
        serveJournals = serveJournals == null ? List.of() : List.copyOf(serveJournals);
        otlp = otlp == null || otlp.isBlank() ? null : otlp;
        headerTimeout = headerTimeout == null ? HttpHardening.HEADER_TIMEOUT : headerTimeout;
        if (httpPort < 0 || httpPort > 65535 || pingPort < 0 || pingPort > 65535) {
            throw new IllegalArgumentException("ports must be in 0..65535");
        }
        if (!positive(registrationTtl) || !positive(prefillTimeout) || !positive(decodeTimeout)
                || !positive(headerTimeout)) {
            throw new IllegalArgumentException("timeouts must be positive");
        }
        if (notifyPortShift < -65535 || notifyPortShift > 65535) {
            throw new IllegalArgumentException("--notify-port-shift must be within -65535..65535, got " + notifyPortShift);
        }
    }

    /** The options without a header timeout of their own (the default). */
    public ProxyOptions(String host, int httpPort, int pingPort, TransferMode mode, Duration registrationTtl,
                        Duration prefillTimeout, Duration decodeTimeout, int notifyPortShift, Path journalDir,
                        String proxyId, String apiKey, List<Path> serveJournals, String otlp) {
        this(host, httpPort, pingPort, mode, registrationTtl, prefillTimeout, decodeTimeout, notifyPortShift, journalDir,
                proxyId, apiKey, serveJournals, otlp, null);
    }

    ProxyOptions withHeaderTimeout(Duration d) {
        return new ProxyOptions(host, httpPort, pingPort, mode, registrationTtl, prefillTimeout, decodeTimeout,
                notifyPortShift, journalDir, proxyId, apiKey, serveJournals, otlp, d);
    }

    private static boolean positive(Duration d) {
        return !d.isNegative() && !d.isZero();
    }

    /** Loopback, free ports, WRITE latched from registrants, 10 s ttl, 30 s / 300 s timeouts, no journal. */
    public static ProxyOptions loopback() {
        return new ProxyOptions("127.0.0.1", 0, 0, null, Duration.ofSeconds(10), Duration.ofSeconds(30),
                Duration.ofSeconds(300), 0, null, "proxy", null, List.of(), null);
    }

    public ProxyOptions withMode(TransferMode m) {
        return new ProxyOptions(host, httpPort, pingPort, m, registrationTtl, prefillTimeout, decodeTimeout,
                notifyPortShift, journalDir, proxyId, apiKey, serveJournals, otlp, headerTimeout);
    }

    public ProxyOptions withPorts(int http, int ping) {
        return new ProxyOptions(host, http, ping, mode, registrationTtl, prefillTimeout, decodeTimeout,
                notifyPortShift, journalDir, proxyId, apiKey, serveJournals, otlp, headerTimeout);
    }

    public ProxyOptions withRegistrationTtl(Duration ttl) {
        return new ProxyOptions(host, httpPort, pingPort, mode, ttl, prefillTimeout, decodeTimeout,
                notifyPortShift, journalDir, proxyId, apiKey, serveJournals, otlp, headerTimeout);
    }

    public ProxyOptions withTimeouts(Duration prefill, Duration decode) {
        return new ProxyOptions(host, httpPort, pingPort, mode, registrationTtl, prefill, decode,
                notifyPortShift, journalDir, proxyId, apiKey, serveJournals, otlp, headerTimeout);
    }

    public ProxyOptions withNotifyPortShift(int shift) {
        return new ProxyOptions(host, httpPort, pingPort, mode, registrationTtl, prefillTimeout, decodeTimeout,
                shift, journalDir, proxyId, apiKey, serveJournals, otlp, headerTimeout);
    }

    public ProxyOptions withJournal(Path dir) {
        return new ProxyOptions(host, httpPort, pingPort, mode, registrationTtl, prefillTimeout, decodeTimeout,
                notifyPortShift, dir, proxyId, apiKey, serveJournals, otlp, headerTimeout);
    }

    ProxyOptions withApiKey(String key) {
        return new ProxyOptions(host, httpPort, pingPort, mode, registrationTtl, prefillTimeout, decodeTimeout,
                notifyPortShift, journalDir, proxyId, key, serveJournals, otlp, headerTimeout);
    }

    ProxyOptions withServeJournals(List<Path> dirs) {
        return new ProxyOptions(host, httpPort, pingPort, mode, registrationTtl, prefillTimeout, decodeTimeout,
                notifyPortShift, journalDir, proxyId, apiKey, dirs, otlp, headerTimeout);
    }

    ProxyOptions withOtlp(String endpoint) {
        return new ProxyOptions(host, httpPort, pingPort, mode, registrationTtl, prefillTimeout, decodeTimeout,
                notifyPortShift, journalDir, proxyId, apiKey, serveJournals, endpoint, headerTimeout);
    }
}
