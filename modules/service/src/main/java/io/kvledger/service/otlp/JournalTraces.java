package io.kvledger.service.otlp;

import io.kvledger.core.diagnosis.Bounds;
import io.kvledger.core.diagnosis.Finding;
import io.kvledger.core.diagnosis.HangDetectors;
import io.kvledger.core.diagnosis.Ledger;
import io.kvledger.core.effect.Effect;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.replay.Replayer;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.function.LongUnaryOperator;

/**
 * The traces of every request in a set of node journals ({@code kvledger export}): one replay
 * (merged by event time, as {@code inspect} and {@code hangs} replay them) feeds both a
 * {@link TraceRecorder} (the legs: what {@code inspect} shows per request and node) and the core
 * {@link Ledger} the hang detectors judge (what {@code hangs} reports). Each finding becomes the
 * ERROR status of its request's leg; requests still in flight when the journals end have their
 * open phase span end there, marked {@code kvledger.open}.
 */
public final class JournalTraces {

    /**
     * What the export holds.
     *
     * @param nodes          the replayed nodes
     * @param spans          every span, leg by leg (leg span first)
     * @param traces         distinct trace ids
     * @param legs           legs (request, node)
     * @param inFlight       legs not in a terminal phase when the journals end
     * @param withFinding    legs with a finding
     * @param findings       every finding of the detectors
     * @param unattached     findings that name no admitted request of the node (not exported)
     * @param lastAtNs       time of the last input replayed
     * @param firstAtNs      time of the first input replayed
     * @param shiftNs        what was added to every exported time
     */
    public record Result(List<Replayer.Node> nodes, List<SpanData> spans, int traces, int legs, int inFlight,
                         int withFinding, List<Finding> findings, int unattached, long firstAtNs, long lastAtNs,
                         long shiftNs) {}

    private JournalTraces() {}

    /**
     * Replays {@code r} (runs it) and builds the spans.
     *
     * @param shiftNs added to every exported time (0 keeps the journals' times)
     */
    public static Result of(Replayer r, Bounds bounds, long shiftNs) {
        return of(r, bounds, first -> shiftNs);
    }

    /**
     * Replays {@code r} (runs it) and builds the spans, every time shifted by what {@code shift}
     * answers for the time of the first input (to move a simulated run to a wall-clock instant).
     */
    public static Result of(Replayer r, Bounds bounds, LongUnaryOperator shift) {
        Ledger ledger = new Ledger();
        TraceRecorder rec = new TraceRecorder(leg -> { }, Integer.MAX_VALUE);
        Map<String, Resource> resources = new HashMap<>();
        r.run(new Replayer.Listener() {
            @Override
            public void started(Replayer.Node node, List<Effect> startup, List<JournalEntry.Derived> recorded) {
                ledger.nodeStarted(node.name(), node.config(), startup);
                rec.node(node.name(), node.config());
                resources.put(node.name(), LegSpans.resource(node.name(), node.config()));
            }

            @Override
            public void applied(Replayer.Node node, JournalEntry.Input in, List<Effect> fx,
                                List<JournalEntry.Derived> recorded) {
                ledger.observe(node.name(), in.event(), fx);
                rec.observe(node.name(), in.seq(), in.event(), fx);
            }
        });
        List<Finding> findings = HangDetectors.run(ledger, bounds);
        Map<String, Finding> byLeg = new HashMap<>();
        int unattached = 0;
        for (Finding f : findings) {
            if (f.requestId() == null || rec.leg(f.node(), f.requestId()) == null) {
                unattached++;
                continue;
            }
            // the first finding of a leg is its status (the detectors list the most specific first)
            byLeg.putIfAbsent(f.node() + "\u0000" + f.requestId(), f);
        }
        long end = ledger.lastAtNs();
        long shiftNs = rec.legs().isEmpty() ? 0 : shift.applyAsLong(ledger.firstAtNs());
        List<SpanData> spans = new ArrayList<>();
        LinkedHashSet<String> traces = new LinkedHashSet<>();
        int legs = 0;
        int inFlight = 0;
        int withFinding = 0;
        for (TraceRecorder.Leg leg : rec.legs()) {
            Finding f = byLeg.get(leg.node() + "\u0000" + leg.requestId());
            List<SpanData> s = LegSpans.of(leg, resources.get(leg.node()), f, end, shiftNs);
            spans.addAll(s);
            traces.add(s.get(0).getTraceId());
            legs++;
            inFlight += leg.ended() ? 0 : 1;
            withFinding += f == null ? 0 : 1;
        }
        return new Result(r.nodes(), List.copyOf(spans), traces.size(), legs, inFlight, withFinding,
                List.copyOf(findings), unattached, ledger.firstAtNs(), end, shiftNs);
    }
}
