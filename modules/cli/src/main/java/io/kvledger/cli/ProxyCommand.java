package io.kvledger.cli;

import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.kafka.KafkaUri;
import io.kvledger.ledger.otlp.OtlpSender;
import io.kvledger.node.ship.ShipThread;
import io.kvledger.proxy.ProxyOptions;
import io.kvledger.proxy.ProxyService;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger proxy}: the MoRIIO-compatible proxy in front of vLLM prefill and decode
 * instances (io.kvledger.proxy), journaling both legs of every request.
 */
@Command(name = "proxy", mixinStandardHelpOptions = true, sortOptions = false,
        description = {
            "A drop-in replacement for vLLM's MoRIIO toy proxy: engines register on the ping port (ZMQ ROUTER, msgpack "
                    + "registrations every 3 s; an instance whose heartbeats stop expires), clients POST /v1/completions "
                    + "or /v1/chat/completions (streamed or not), and each request goes to a prefill and a decode "
                    + "instance with the toy proxy's request id (___prefill_addr_..___decode_addr_.._<32 hex>) and "
                    + "transfer id (tx-<uuid4>): READ serially, WRITE concurrently.",
            "It also checks what a careful router checks (client ids without peer markers, n = 1, one prompt, the "
                    + "prefill's handoff), bounds both legs in time, cancels both when the client goes away, and "
                    + "serves GET /health and GET /metrics.",
            "It serves the web timeline page at / (/ui/) over its journal (and the --serve-journals directories), "
                    + "updated live through GET /v1/events.",
            "With --journal it journals both legs of every request; give that directory to inspect and hangs next to "
                    + "the nodes' journals.",
            "OPENAI_API_KEY, when set, is sent to the engines as a bearer token, as the toy proxy does."})
final class ProxyCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--host", defaultValue = "127.0.0.1", paramLabel = "IP",
            description = "Address the HTTP server and the ping port bind (default ${DEFAULT-VALUE}; the toy proxy binds 0.0.0.0).")
    String host;

    @Option(names = "--port", defaultValue = "" + ProxyOptions.TOY_HTTP_PORT, paramLabel = "PORT",
            description = "HTTP port (default ${DEFAULT-VALUE}, the toy proxy's; 0 picks one).")
    int port;

    @Option(names = "--ping-port", defaultValue = "" + ProxyOptions.TOY_PING_PORT, paramLabel = "PORT",
            description = "Registration port, the engines' proxy_ping_port (default ${DEFAULT-VALUE}, the toy proxy's; 0 picks one).")
    int pingPort;

    @Option(names = "--mode", paramLabel = "read|write",
            description = "Transfer mode; registrations of the other mode are rejected (default: the first registrant's, as the toy proxy).")
    String mode;

    @Option(names = "--journal", paramLabel = "DIR", description = "The proxy's journal (created, or continued).")
    Path journal;

    @Option(names = "--proxy-id", defaultValue = "proxy", paramLabel = "ID", description = "Its name in the journal (default ${DEFAULT-VALUE}).")
    String proxyId;

    @Option(names = "--registration-ttl-s", converter = DurationOption.class, defaultValue = "10", paramLabel = "S",
            description = "An instance with no heartbeat for this long expires (default ${DEFAULT-VALUE}; engines beat every 3 s).")
    double ttlS;

    @Option(names = "--prefill-timeout-s", converter = DurationOption.class, defaultValue = "30", paramLabel = "S",
            description = "Longest wait for the prefill leg's answer (default ${DEFAULT-VALUE}); then 504.")
    double prefillTimeoutS;

    @Option(names = "--decode-timeout-s", converter = DurationOption.class, defaultValue = "300", paramLabel = "S",
            description = "Longest wait for the decode leg's headers, and between two chunks of its stream (default ${DEFAULT-VALUE}); then 504.")
    double decodeTimeoutS;

    @Option(names = "--notify-port-shift", defaultValue = "0", paramLabel = "N",
            description = "Add N to the notify ports of the zmq_addresses embedded in request ids (not the handshake "
                    + "ports), so that the engines' notifies go through a kvledger tap listening at the shifted ports (default 0).")
    int notifyPortShift;

    @Option(names = "--serve-journals", arity = "1..*", paramLabel = "DIR",
            description = "Journal directories (the nodes', a tap's, or a directory holding one per node) the proxy's web "
                    + "page (/ui/) shows next to the proxy's own journal, so that it shows the whole deployment; looked at "
                    + "again on each page request, so journals of nodes started later appear.")
    List<Path> serveJournals = new ArrayList<>();

    @Option(names = "--otlp", paramLabel = "URL",
            description = "Send a span per request (the client's leg, with the prefill and decode legs as children) over "
                    + "OTLP/HTTP to URL (http://HOST:4318), in the trace the nodes' spans of the request are in.")
    String otlp;

    @Option(names = "--ship", paramLabel = "kafka://HOST:PORT/TOPIC",
            description = "With --journal: ship the proxy's journal to this Kafka topic as 'kvledger ship' does, on a thread "
                    + "of its own that reads the journal apart from its writer; at stop, what the journal holds is shipped "
                    + "(up to 10 s). Never holds the proxy up.")
    String ship;

    @Option(names = "--duration-s", converter = DurationOption.class, defaultValue = "0", paramLabel = "S", description = "Stop after this many seconds (0: run until stopped).")
    double durationS;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        ProxyOptions options;
        try {
            options = new ProxyOptions(host, port, pingPort, mode == null ? null : ModeOption.parse(spec, mode),
                    seconds("--registration-ttl-s", ttlS), seconds("--prefill-timeout-s", prefillTimeoutS),
                    seconds("--decode-timeout-s", decodeTimeoutS), notifyPortShift,
                    journal == null ? null : journal.toAbsolutePath().normalize(), proxyId,
                    blankToNull(System.getenv("OPENAI_API_KEY")), absolute(serveJournals), otlp);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        if (otlp != null) {
            try {
                OtlpSender.endpoint(otlp);
            } catch (OtlpSender.ExportException e) {
                throw new ParameterException(spec.commandLine(), e.getMessage());
            }
        }
        for (Path d : serveJournals) {
            if (!Files.isDirectory(d)) {
                err.println("kvledger proxy: warning: --serve-journals " + d + " is not a directory yet; the page shows "
                        + "it once it holds journals");
            }
        }
        if (durationS < 0 || Double.isNaN(durationS)) {
            throw new ParameterException(spec.commandLine(), "--duration-s must be 0 or more, got " + durationS);
        }
        KafkaUri shipTo = null;
        if (ship != null) {
            if (journal == null) {
                throw new ParameterException(spec.commandLine(), "--ship ships the proxy's journal: give --journal DIR too");
            }
            try {
                shipTo = KafkaUri.parse(ship);
            } catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), "--ship: " + e.getMessage());
            }
        }
        ProxyService proxy;
        try {
            proxy = ProxyService.start(options, "kvledger proxy");
        } catch (RuntimeException e) {
            err.println("kvledger proxy: " + e.getMessage());
            err.flush();
            return 2;
        }
        ShipThread shipping;
        try {
            shipping = shipTo == null ? null : ShipThread.open(shipTo, options.journalDir(), err);
        } catch (RuntimeException e) {
            proxy.close();
            err.println("kvledger proxy: --ship: " + e.getMessage());
            err.flush();
            return 2;
        }
        if (shipping != null) {
            // /metrics reads the shipper's counters from before its first entry
            proxy.shipping(shipping.shipper());
            shipping.begin();
        }
        Foreground fg = Foreground.install("kvledger-proxy-shutdown");
        try {
            err.println("proxy " + options.proxyId() + ": http " + host + ":" + proxy.httpPort() + ", registrations on tcp://"
                    + host + ":" + proxy.pingPort() + ", mode " + (options.mode() == null ? "of the first registrant"
                    : options.mode().name()) + (notifyPortShift == 0 ? "" : ", notify/handshake ports in request ids shifted by "
                    + notifyPortShift) + "; " + (journal == null ? "no journal" : "journal " + journal)
                    + (shipTo == null ? "" : ", shipped to " + shipTo) + (durationS > 0 ? "" : "; stop with Ctrl-C"));
            err.flush();
            fg.await(durationS);
        } finally {
            proxy.close();
            if (shipping != null) {
                // after the proxy: its last entries are in the journal
                shipping.close();
            }
            long journaled = proxy.journaled();
            out.println("proxy " + options.proxyId() + ": stopped; " + proxy.registrationsReceived()
                    + " registration message(s), " + proxy.registrationsRejected() + " rejected"
                    + (journal == null ? "" : "; " + journaled + " record(s) in journal " + journal)
                    + (shipping == null ? "" : "; " + shipping.shipper().acknowledged() + " entr"
                    + (shipping.shipper().acknowledged() == 1 ? "y" : "ies") + " shipped to " + shipTo
                    + (shipping.exit() > 0 ? " (the shipper failed: see above)" : ""))
                    + (otlp == null ? "" : "; " + proxy.otlpSpansExported() + " span(s) sent to " + otlp
                    + (proxy.otlpSpansFailed() == 0 ? "" : ", " + proxy.otlpSpansFailed() + " refused")));
            out.flush();
            fg.close();
        }
        return 0;
    }

    private Duration seconds(String option, double s) {
        if (!(s > 0) || Double.isInfinite(s)) {
            throw new ParameterException(spec.commandLine(), option + " must be a positive number of seconds, got " + s);
        }
        return Duration.ofNanos((long) (s * 1e9));
    }

    private static List<Path> absolute(List<Path> dirs) {
        List<Path> out = new ArrayList<>();
        for (Path d : dirs) {
            out.add(d.toAbsolutePath().normalize());
        }
        return out;
    }

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s;
    }

}
