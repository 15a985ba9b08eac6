package io.kvledger.ledger.replay;

import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.ledger.diagnosis.HangDetectors;
import io.kvledger.ledger.diagnosis.InFlight;
import io.kvledger.ledger.diagnosis.Ledger;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalEntry;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * The {@code hangs} diagnosis as data: replays journals through a core {@link Ledger} and runs
 * {@link HangDetectors} over it; the proxy journals among them add the {@link ProxyLedger}
 * detectors' findings. Printing is the caller's (the report package's {@code HangsReport}, the
 * service's HTTP API).
 */
public final class Hangs {

    /** The detectors in the order {@link HangDetectors} documents them; reports group in this order. */
    static final List<String> DETECTOR_ORDER = List.of("stuck-waiting", "handshake-incomplete", "transfer-status-poisoned", "stuck", "reaped-without-ack",
            "unknown-completion-id", "superseded-transfer-id", "ack-before-finish", "notify-unhandshaken-rank",
            "wrong-port-offset-form", "notify-no-listener", "empty-remote-blocks", "ack-before-mapping",
            "failed-read-no-release", "ack-deficit", "free-while-in-flight", "listener-death", "mapping-leak", "negative-matched-tokens",
            "eager-handshake-wrong-pod", "read-wrong-dp-rank", "transfer-id-uncorrelated", "renamed-at-finish",
            "missing-remote-block-ids", "anomaly", "proxy-decode-unanswered", "proxy-prefill-failed");

    /**
     * What a diagnosis run found.
     *
     * @param nodes     the replayed nodes, in journal order
     * @param inputs    inputs replayed over all nodes
     * @param firstAtNs time of the first event the ledger saw
     * @param lastAtNs  time of the last event the ledger saw
     * @param bounds    the bounds the detectors ran with
     * @param findings  what the detectors found, in their order
     * @param inFlight  every request in a non-terminal phase when the journals end, with why it is
     *                  (stuck) or is not (young, still progressing) a finding
     * @param proxies   the proxy journals read alongside (their display names)
     * @param open      the journals of live processes (a {@code kvledger node}, a vLLM bridge
     *                  recording) whose last input is not a shutdown: the process was killed, or is
     *                  still running, so their requests may have gone on after the journal ends
     * @param unclean   the journals (node names, proxy journal names) not read clean: damaged, cut
     *                  short, or against the order rules; what they lost may hold findings, so a
     *                  result with any is never clean
     */
    public record Result(List<Replayer.Node> nodes, long inputs, long firstAtNs, long lastAtNs, Bounds bounds,
                         List<Finding> findings, List<InFlight> inFlight, List<String> proxies, List<Open> open,
                         List<String> unclean) {

        /**
         * Whether nothing was found and every journal was read clean. The engine's own "Reaped N
         * deferred sends" warning for a deferral its ACK freed ({@code reaped-warning}) is named but
         * is no hang: alone, it leaves the result clean.
         */
        public boolean clean() {
            return findings.stream().allMatch(f -> f.detector().equals("reaped-warning")) && unclean.isEmpty();
        }

        /** In-flight requests with this status. */
        public long count(InFlight.Status status) {
            return inFlight.stream().filter(f -> f.status() == status).count();
        }
    }

    /**
     * A live process's journal that ends without a shutdown.
     *
     * @param node        the node's name
     * @param lastEventNs the time of its last input (0 when it has none)
     */
    public record Open(String node, long lastEventNs) {}

    /** Whether a journal was written by a live process, which journals a shutdown when it stops. */
    static boolean live(Replayer.Node node) {
        String origin = node.header().origin();
        return origin.startsWith("kvledger node") || origin.startsWith(BridgeReplies.ORIGIN);
    }

    /** The end of a tap journal's origin ({@code kvledger tap}): {@code [tcp://BIND:TAPPORT -> tcp://HOST:PORT]}. */
    static final java.util.regex.Pattern TAP_ORIGIN =
            java.util.regex.Pattern.compile("\\[tcp://\\[?([^\\]\\s]+?)]?:(\\d+) -> tcp://[^\\s]+]$");

    private Hangs() {}

    /** Replays every input of {@code r} into a ledger (runs {@code r}) and runs the detectors. */
    public static Result analyse(Replayer r, Bounds bounds) {
        Ledger ledger = new Ledger();
        long[] inputs = {0};
        // per node: its last input
        Map<String, NodeEvent> last = new LinkedHashMap<>();
        // a bridge worker stream's get_finished replies are the real connector's (class 25's evidence)
        r.recordedFor(n -> BridgeReplies.workerStream(n.header().origin()));
        r.run(new Replayer.Listener() {
            @Override
            public void started(Replayer.Node node, List<Effect> startup, List<JournalEntry.Derived> recorded) {
                ledger.nodeStarted(node.name(), node.config(), startup);
                if (node.header().origin().startsWith(io.kvledger.journal.JournalHeader.SIM_WORKER_ORIGIN)) {
                    ledger.schedulerReplica(node.name());
                }
                if (live(node)) {
                    ledger.liveNode(node.name());
                }
                java.util.regex.Matcher tap = TAP_ORIGIN.matcher(node.header().origin());
                if (tap.find()) {
                    String host = tap.group(1);
                    boolean any = host.equals("0.0.0.0") || host.equals("*") || host.equals("::");
                    ledger.tap(node.name(), any ? node.config().hostIp() : host, Integer.parseInt(tap.group(2)));
                }
            }

            @Override
            public void applied(Replayer.Node node, JournalEntry.Input in, List<Effect> fx,
                                List<JournalEntry.Derived> recorded) {
                inputs[0]++;
                ledger.observe(node.name(), in.event(), fx);
                if (!recorded.isEmpty() && BridgeReplies.workerStream(node.header().origin())) {
                    // what the real connector reported, which the reducer cannot recompute from the stream
                    ledger.recorded(node.name(), in.event(), recorded.stream().map(JournalEntry.Derived::effect).toList());
                }
                last.put(node.name(), in.event());
            }
        });
        List<Open> open = new ArrayList<>();
        for (Replayer.Node n : r.nodes()) {
            NodeEvent e = last.get(n.name());
            if (live(n) && !(e instanceof NodeEvent.ShutDown)) {
                open.add(new Open(n.name(), e == null ? 0 : e.atNs()));
            }
        }
        List<Finding> findings = new ArrayList<>(HangDetectors.run(ledger, bounds));
        List<String> unclean = new ArrayList<>(r.uncleanNodes());
        if (!r.proxyJournals().isEmpty()) {
            // the proxy's journals: requests it sent whose decode (or prefill) leg never answered
            ProxyLedger proxies = ProxyLedger.read(r.proxyJournals());
            findings.addAll(proxies.findings(bounds.stuckAfterNs()));
            r.addWarnings(proxies.warnings());
            if (!proxies.warnings().isEmpty()) {
                unclean.addAll(r.proxyJournals().stream().map(JournalInputs.NodeJournal::name).toList());
            }
        }
        return new Result(r.nodes(), inputs[0], ledger.firstAtNs(), ledger.lastAtNs(), bounds, List.copyOf(findings),
                HangDetectors.inFlight(ledger, bounds), r.proxyJournals().stream().map(JournalInputs.NodeJournal::name).toList(),
                List.copyOf(open), List.copyOf(unclean));
    }

    /** The findings grouped by detector, groups in {@link #DETECTOR_ORDER} (unknown names last, sorted). */
    public static Map<String, List<Finding>> byDetector(List<Finding> findings) {
        TreeSet<String> unknown = new TreeSet<>();
        for (Finding f : findings) {
            if (!DETECTOR_ORDER.contains(f.detector())) {
                unknown.add(f.detector());
            }
        }
        List<String> order = new ArrayList<>(DETECTOR_ORDER);
        order.addAll(unknown);
        Map<String, List<Finding>> groups = new LinkedHashMap<>();
        for (String d : order) {
            List<Finding> list = new ArrayList<>();
            for (Finding f : findings) {
                if (f.detector().equals(d)) {
                    list.add(f);
                }
            }
            if (!list.isEmpty()) {
                groups.put(d, list);
            }
        }
        return groups;
    }
}
