package io.kvledger.ledger.report;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.node.Invariants;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.format.EntryType;
import io.kvledger.journal.format.Payloads;
import io.kvledger.journal.json.Json;
import io.kvledger.ledger.replay.BridgeReplies;
import io.kvledger.ledger.replay.ConfigOverrides;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.ledger.text.Seconds;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * What {@code kvledger replay} prints: re-runs each node's reducer over the inputs of its journal
 * (merged by event time across nodes) and tells, per node, what the replay saw: inputs and
 * effects, the requests in each phase at the end, anomalies by kind. With {@code effects} every
 * recomputed effect is printed as it comes; with {@code verify} the recomputed effects are
 * compared with the derived entries the journal recorded (the first divergence of each node is
 * reported) and the replayed state is checked against the reducer's invariants after every input.
 *
 * <p>{@link #run} replays; {@link #summary} prints the summary after the caller has told what the
 * readers skipped or doubted.
 */
public final class ReplayReport {

    /**
     * How to replay and print.
     *
     * @param until          stop each journal after its entry of this seq, or {@code null}
     * @param effects        print one line per recomputed effect while replaying
     * @param verify         compare with the recorded derived entries and check the invariants
     * @param json           JSON instead of text
     * @param fullIds        print proxy request ids whole
     * @param invariantCheck what {@code verify} checks each replayed state with
     */
    public record Options(Long until, boolean effects, boolean verify, boolean json, boolean fullIds,
                          Function<NodeState, List<Invariants.Violation>> invariantCheck) {}

    /** The check {@code verify} uses unless told otherwise. */
    public static final Function<NodeState, List<Invariants.Violation>> INVARIANTS =
            NodeState::checkInvariantsSinceLastCheck;

    /** One node's comparison of recorded and recomputed effects. */
    private static final class Verify {
        final boolean repliesOnly;
        /** A vllm-bridge worker stream: nothing is compared ({@link BridgeReplies#WORKER_NOT_COMPARED}). */
        final boolean workerStream;
        long recorded;
        long divergentInputs;
        String first;
        Map<String, Object> firstJson;
        /** Per input type: inputs compared and inputs whose replies diverge ({@code --json}'s by_input). */
        final Map<String, long[]> byInput = new java.util.TreeMap<>();
        /** Every divergence of the node, up to {@link #MAX_LISTED} ({@code --json}'s divergences). */
        final List<Map<String, Object>> divergences = new ArrayList<>();

        /** How many divergences of one node {@code --json} lists. */
        static final int MAX_LISTED = 1000;

        /** Inputs whose changes broke the reducer's invariants (each violation is found once, where it arose). */
        long brokenInputs;
        /** The first of them: its seq, cause and violations (text and JSON). */
        String firstBroken;
        Map<String, Object> firstBrokenJson;

        /**
         * After input {@code seq} the state broke the reducer's invariants: a verify failure of
         * the node whatever the journal recorded (a broken state is a defect of the reducer).
         */
        void broken(long seq, String cause, List<Invariants.Violation> violations, boolean fullIds) {
            brokenInputs++;
            if (firstBroken == null) {
                List<Object> names = new ArrayList<>();
                StringBuilder text = new StringBuilder();
                for (Invariants.Violation v : violations) {
                    names.add(v.check().name() + ": " + v.detail());
                    text.append("\n      ").append(ReportText.ids(v.check().name() + ": " + v.detail(), fullIds));
                }
                firstBroken = "seq " + seq + " (" + cause + ")" + text;
                Map<String, Object> d = new LinkedHashMap<>();
                d.put("seq", seq);
                d.put("cause", cause);
                d.put("violations", names);
                firstBrokenJson = d;
            }
        }

        Verify(boolean repliesOnly, boolean workerStream) {
            this.repliesOnly = repliesOnly;
            this.workerStream = workerStream;
        }

        void check(long seq, String cause, List<Effect> actual, List<JournalEntry.Derived> recorded, boolean fullIds) {
            if (workerStream) {
                return;
            }
            List<Effect> expected = recorded.stream().map(JournalEntry.Derived::effect).toList();
            int i;
            if (repliesOnly) {
                expected = BridgeReplies.replies(expected);
                actual = BridgeReplies.comparable(actual, expected);
                i = BridgeReplies.firstReplyDifference(actual, expected);
            } else {
                i = BridgeReplies.firstDifference(actual, expected);
            }
            this.recorded += expected.size();
            int n = Math.max(actual.size(), expected.size());
            long[] tally = byInput.computeIfAbsent(cause, k -> new long[2]);
            tally[0]++;
            if (i >= 0) {
                Effect a = i < actual.size() ? actual.get(i) : null;
                Effect e = i < expected.size() ? expected.get(i) : null;
                divergentInputs++;
                tally[1]++;
                String exp = e == null ? "(nothing: the journal recorded " + expected.size() + " effect(s))"
                        : Payloads.dissect(e);
                String act = a == null ? "(nothing: the replay produced " + actual.size() + " effect(s))"
                        : Payloads.dissect(a);
                String diff = BridgeReplies.difference(a, e);
                Map<String, Object> d = new LinkedHashMap<>();
                d.put("seq", seq);
                d.put("cause", cause);
                d.put("effect_index", (long) i);
                d.put("expected", e == null ? null : exp);
                d.put("actual", a == null ? null : act);
                d.put("differs", diff);
                if (divergences.size() < MAX_LISTED) {
                    divergences.add(d);
                }
                if (first == null) {
                    first = "seq " + seq + " (" + cause + "), effect " + (i + 1) + " of " + n + "\n"
                            + "      journal: " + ReportText.ids(exp, fullIds) + "\n"
                            + "      replay:  " + ReportText.ids(act, fullIds)
                            + (diff == null ? "" : "\n      differs: " + ReportText.ids(diff, fullIds));
                    firstJson = d;
                }
            }
        }
    }

    private final Options options;
    private final Replayer r;
    private final NodeTally[] tallies;
    private final Verify[] verifies;

    private ReplayReport(Replayer r, Options options) {
        this.r = r;
        this.options = options;
        int n = r.nodes().size();
        tallies = new NodeTally[n];
        verifies = new Verify[n];
        for (int i = 0; i < n; i++) {
            tallies[i] = new NodeTally();
            String origin = r.nodes().get(i).header().origin();
            verifies[i] = new Verify(origin.startsWith(BridgeReplies.ORIGIN), BridgeReplies.workerStream(origin));
        }
    }

    /**
     * Replays the opened journals of {@code r}, printing each recomputed effect to {@code out} as
     * it comes when {@link Options#effects}.
     */
    public static ReplayReport run(Replayer r, Options options, PrintWriter out) {
        if (options.until() != null) {
            r.until(options.until());
        }
        boolean verify = options.verify();
        r.recorded(verify).invariants(verify ? options.invariantCheck() : null);
        ReplayReport report = new ReplayReport(r, options);
        NodeTally[] tallies = report.tallies;
        Verify[] verifies = report.verifies;
        long[] base = {Long.MIN_VALUE};
        r.run(new Replayer.Listener() {
            @Override
            public void started(Replayer.Node node, List<Effect> startup, List<JournalEntry.Derived> recorded) {
                tallies[node.index()].effects(startup);
                if (options.verify()) {
                    verifies[node.index()].check(0, "start-up checks", startup, recorded, options.fullIds());
                }
            }

            @Override
            public void applied(Replayer.Node node, JournalEntry.Input in, List<Effect> fx,
                                List<JournalEntry.Derived> recorded) {
                if (base[0] == Long.MIN_VALUE) {
                    base[0] = in.atNs();
                }
                NodeTally t = tallies[node.index()];
                t.input(in.seq(), in.atNs());
                t.effects(fx);
                if (options.verify()) {
                    verifies[node.index()].check(in.seq(), in.type().typeName(), fx, recorded, options.fullIds());
                }
                if (options.effects() && !fx.isEmpty()) {
                    report.printEffects(out, node, in, fx, in.atNs() - base[0]);
                }
            }

            @Override
            public void invariantsBroken(Replayer.Node node, JournalEntry.Input in, List<Invariants.Violation> v) {
                verifies[node.index()].broken(in.seq(), in.type().typeName(), v, options.fullIds());
            }
        });
        return report;
    }

    /** Prints the summary; returns whether any node diverged (with verify). */
    public boolean summary(PrintWriter out) {
        return summary(out, r, tallies, verifies);
    }

    private void printEffects(PrintWriter out, Replayer.Node node, JournalEntry.Input in, List<Effect> fx, long relNs) {
        String cause = in.type().typeName();
        for (Effect e : fx) {
            EntryType type = EntryType.of(e);
            if (options.json()) {
                LinkedHashMap<String, Object> m = new LinkedHashMap<>();
                m.put("node", node.name());
                m.put("seq", in.seq());
                m.put("at_ns", in.atNs());
                m.put("t", ReportText.secondsDouble(relNs));
                m.put("cause", cause);
                m.put("type", type.typeName());
                m.put("fields", type.toJson(e));
                m.put("text", type.dissect(e));
                out.println(Json.write(m));
            } else {
                out.println(ReportText.rel(relNs) + "  " + node.name() + "  #" + in.seq() + "  " + cause + " => "
                        + ReportText.ids(type.dissect(e), options.fullIds()));
            }
        }
    }

    /** Prints the summary; returns whether any node diverged (with --verify). */
    private boolean summary(PrintWriter out, Replayer r, NodeTally[] tallies, Verify[] verifies) {
        List<Replayer.Node> nodes = r.nodes();
        List<Replayer.NodeCounts> counts = r.counts();
        long inputs = 0;
        long fx = 0;
        int diverging = 0;
        for (int i = 0; i < nodes.size(); i++) {
            inputs += tallies[i].inputs;
            fx += tallies[i].effects;
            // A journal without any recorded effect (imported inputs) has nothing to diverge from.
            if ((verifies[i].divergentInputs > 0 && counts.get(i).derived() > 0) || verifies[i].brokenInputs > 0) {
                diverging++;
            }
        }
        if (options.json()) {
            List<Object> list = new ArrayList<>();
            for (int i = 0; i < nodes.size(); i++) {
                list.add(nodeJson(nodes.get(i), tallies[i], verifies[i], counts.get(i)));
            }
            LinkedHashMap<String, Object> m = new LinkedHashMap<>();
            m.put("command", "replay");
            m.put("journals", (long) nodes.size());
            m.put("inputs", inputs);
            m.put("effects", fx);
            m.put("until", options.until());
            m.put("verified", options.verify());
            if (options.verify()) {
                m.put("diverging_nodes", (long) diverging);
            }
            m.put("nodes", list);
            out.println(Json.write(m));
            return diverging > 0;
        }
        out.println("replay: " + nodes.size() + " journal(s) (" + ReportText.names(nodes) + "), " + inputs
                + " inputs applied, " + fx + " effects recomputed" + (options.until() == null ? "" : ", each journal up to seq " + options.until()));
        for (int i = 0; i < nodes.size(); i++) {
            Replayer.Node node = nodes.get(i);
            NodeTally t = tallies[i];
            out.println("node " + node.name() + " (journal " + node.journal().name() + "): " + ReportText.node(node.config()));
            out.println("  in effect: " + ConfigOverrides.describe(node.recordedConfig(), node.config())
                    + (node.config().equals(node.recordedConfig()) ? " (as journaled)" : ""));
            out.println("  inputs " + t.inputs + (t.inputs == 0 ? "" : " (seq " + t.firstSeq + ".." + t.lastSeq + ")")
                    + ", effects " + t.effects + (t.inputs == 0 ? "" : ", span " + Seconds.duration(t.lastAtNs - t.firstAtNs)));
            out.println("  phases at the end: " + t.phasesLine());
            out.println("  anomalies: " + t.anomaliesLine());
        }
        if (options.verify()) {
            out.println("verify: " + (diverging == 0 ? "no divergence" : diverging + " of " + nodes.size() + " node(s) diverge"));
            for (int i = 0; i < nodes.size(); i++) {
                Verify v = verifies[i];
                String name = nodes.get(i).name();
                if (v.workerStream) {
                    out.println("  " + name + ": not compared: " + BridgeReplies.WORKER_NOT_COMPARED
                            + "; replay --verify its rank's scheduler stream");
                } else if (counts.get(i).derived() == 0) {
                    out.println("  " + name + ": nothing to compare: the journal holds no recorded effects (inputs only)");
                } else if (v.divergentInputs == 0) {
                    out.println("  " + name + ": the same " + v.recorded + (v.repliesOnly ? " hook replies" : " effects")
                            + " for " + tallies[i].inputs + " inputs"
                            + (v.repliesOnly ? " (a vllm-bridge recording: only the connector's replies are compared)" : ""));
                } else {
                    out.println("  " + name + ": " + v.divergentInputs + " of " + tallies[i].inputs
                            + " inputs diverge" + (v.repliesOnly ? " (hook replies of a vllm-bridge recording)" : "")
                            + "; the first at " + v.first);
                }
                if (v.brokenInputs > 0) {
                    out.println("  " + name + ": " + v.brokenInputs + " of " + tallies[i].inputs
                            + " inputs break the reducer's invariants; the first at " + v.firstBroken);
                }
            }
        }
        return diverging > 0;
    }

    private Map<String, Object> nodeJson(Replayer.Node node, NodeTally t, Verify v, Replayer.NodeCounts c) {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("node", node.name());
        m.put("journal", node.journal().name());
        m.put("node_id", node.header().nodeId());
        m.put("describe", ReportText.node(node.config()));
        m.put("profile", node.config().behaviour().profile());
        m.put("recorded_profile", node.recordedConfig().behaviour().profile());
        m.put("in_effect", ConfigOverrides.describe(node.recordedConfig(), node.config()));
        m.put("defer_timeout_ns", node.config().deferTimeoutNs());
        m.put("transfer_timeout_ns", node.config().transferTimeoutNs());
        m.put("recv_abort_timeout_ns", node.config().recvAbortTimeoutNs());
        m.put("inputs", t.inputs);
        m.put("effects", t.effects);
        m.put("first_seq", t.firstSeq);
        m.put("last_seq", t.lastSeq);
        m.put("first_at_ns", t.inputs == 0 ? null : t.firstAtNs);
        m.put("last_at_ns", t.inputs == 0 ? null : t.lastAtNs);
        m.put("recorded_effects", c.derived() < 0 ? null : c.derived());
        m.put("unknown_entries", c.unknown());
        m.put("phases", t.phasesJson());
        m.put("anomalies", t.anomaliesJson());
        if (options.verify()) {
            LinkedHashMap<String, Object> vm = new LinkedHashMap<>();
            vm.put("comparable", c.derived() > 0 && !v.workerStream);
            vm.put("not_compared", v.workerStream ? BridgeReplies.WORKER_NOT_COMPARED : null);
            vm.put("replies_only", v.repliesOnly);
            vm.put("divergent_inputs", v.divergentInputs);
            vm.put("first", v.firstJson);
            LinkedHashMap<String, Object> by = new LinkedHashMap<>();
            v.byInput.forEach((cause, counts) -> {
                LinkedHashMap<String, Object> tm = new LinkedHashMap<>();
                tm.put("compared", counts[0]);
                tm.put("diverging", counts[1]);
                by.put(cause, tm);
            });
            vm.put("by_input", by);
            vm.put("divergences", new ArrayList<Object>(v.divergences));
            if (v.brokenInputs > 0) {
                // only when broken, so that the output of a sound replay is as before
                vm.put("invariants_broken", v.brokenInputs);
                vm.put("first_invariants_broken", v.firstBrokenJson);
            }
            m.put("verify", vm);
        }
        return m;
    }
}
