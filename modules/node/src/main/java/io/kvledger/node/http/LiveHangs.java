package io.kvledger.node.http;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.ledger.diagnosis.HangDetectors;
import io.kvledger.ledger.diagnosis.Ledger;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.ledger.web.TimelineJson;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * The hang detectors over a live node ({@code GET /v1/hangs}): the node's journal, read up to the
 * last entry written, goes through a core {@link Ledger} as {@code kvledger hangs} feeds it (the
 * startup checks, then each input with the effects the loop derived for it, as journaled), and
 * {@link HangDetectors} judge it <em>as of now</em>: an idle node does not journal anything while
 * a request waits, so the ledger is told the current node time (an empty {@code Tick} that is
 * not journaled) before the detectors run. A request waiting longer than {@code stuckAfter} is
 * therefore reported even if nothing happened since.
 *
 * <p>The detectors in {@link #NEEDS_EVERY_JOURNAL} are left out: they need the journals of the
 * peers too.
 *
 * <p>The output is the object {@code kvledger hangs --json} prints for one journal (plus
 * {@code now_ns} and {@code skipped_detectors}). Blocking
 * (journal I/O): call it off the Netty threads.
 */
final class LiveHangs {

    /**
     * Detectors that judge where a notify went by the listen addresses of every journaled node:
     * over one node's journal, every peer on a host this node shares (loopback, ranks of one
     * machine) would look like "no journaled node listens". Run {@code kvledger hangs} over the
     * journals of the whole deployment for them.
     */
    static final java.util.Set<String> NEEDS_EVERY_JOURNAL = java.util.Set.of("notify-no-listener",
            "wrong-port-offset-form");

    private LiveHangs() {}

    static Map<String, Object> run(Path dir, String node, NodeConfig config, Bounds bounds, LongSupplier clock) {
        Ledger ledger = new Ledger();
        long inputs = 0;
        String journalName;
        try (JournalReader r = JournalReader.open(dir)) {
            journalName = r.dir().getFileName() == null ? node : r.dir().getFileName().toString();
            List<Effect> startup = new ArrayList<>();
            NodeEvent pending = null;
            List<Effect> fx = new ArrayList<>();
            boolean started = false;
            for (JournalEntry e : r) {
                if (e instanceof JournalEntry.Input in) {
                    if (!started) {
                        ledger.nodeStarted(node, config, startup);
                        started = true;
                    }
                    if (pending != null) {
                        ledger.observe(node, pending, fx);
                        inputs++;
                    }
                    pending = in.event();
                    fx = new ArrayList<>();
                } else if (e instanceof JournalEntry.Derived d) {
                    if (!started && d.causeSeq() == 0) {
                        startup.add(d.effect());
                    } else if (pending != null) {
                        fx.add(d.effect());
                    }
                }
            }
            if (!started) {
                ledger.nodeStarted(node, config, startup);
            }
            if (pending != null) {
                ledger.observe(node, pending, fx);
                inputs++;
            }
        }
        long first = ledger.firstAtNs();
        long last = ledger.lastAtNs();
        long nowNs = Math.max(clock.getAsLong(), inputs == 0 ? Long.MIN_VALUE : last);
        if (inputs > 0 && nowNs > last) {
            ledger.observe(node, new NodeEvent.Tick(nowNs), List.of());
        }
        List<Finding> findings = new ArrayList<>();
        for (Finding f : HangDetectors.run(ledger, bounds)) {
            if (!NEEDS_EVERY_JOURNAL.contains(f.detector())) {
                findings.add(f);
            }
        }
        return json(node, journalName, inputs, first, last, nowNs, bounds, findings);
    }

    private static Map<String, Object> json(String node, String journalName, long inputs, long first, long last,
                                            long nowNs, Bounds bounds, List<Finding> findings) {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("command", "hangs");
        m.put("journals", 1L);
        LinkedHashMap<String, Object> nm = new LinkedHashMap<>();
        nm.put("node", node);
        nm.put("journal", journalName);
        m.put("nodes", List.of(nm));
        m.put("inputs", inputs);
        m.put("first_at_ns", inputs == 0 ? null : first);
        m.put("last_at_ns", inputs == 0 ? null : last);
        m.put("now_ns", nowNs);
        m.put("stuck_after_ns", bounds.stuckAfterNs());
        m.put("count", (long) findings.size());
        m.put("skipped_detectors", new ArrayList<Object>(new java.util.TreeSet<>(NEEDS_EVERY_JOURNAL)));
        LinkedHashMap<String, Object> by = new LinkedHashMap<>();
        for (Finding f : findings) {
            by.merge(f.detector(), 1L, (a, b) -> (Long) a + (Long) b);
        }
        m.put("by_detector", by);
        List<Object> list = new ArrayList<>();
        for (Finding f : findings) {
            list.add(TimelineJson.finding(f));
        }
        m.put("findings", list);
        return m;
    }
}
