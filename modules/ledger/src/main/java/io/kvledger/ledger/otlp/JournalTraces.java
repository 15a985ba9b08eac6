package io.kvledger.ledger.otlp;

import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.core.effect.Effect;
import io.kvledger.journal.JournalEntry;
import io.kvledger.ledger.replay.Hangs;
import io.kvledger.ledger.replay.Replayer;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.LongUnaryOperator;
import java.util.function.Supplier;

/**
 * The traces of every request in a set of node journals ({@code kvledger export}), in two passes
 * over the journals (merged by event time, as {@code inspect} and {@code hangs} replay them): the
 * first runs the hang detectors ({@link Hangs}: what {@code kvledger hangs} reports), the second
 * feeds a {@link TraceRecorder} (the legs: per request and node, what {@code inspect} shows) and
 * hands each leg's spans on as soon as the leg ends, with its finding as the ERROR status. Memory
 * holds the legs still open, not the journals' requests; what is open when the journals end is
 * handed on last, its open phase ending there (marked {@code kvledger.open}).
 *
 * <p>A leg ends at its terminal phase, as on a live node ({@code LiveTraces}): entries that name a
 * request after it ended on that node are not in its trace.
 */
public final class JournalTraces {

    /**
     * What the export held.
     *
     * @param nodes       the replayed nodes
     * @param spans       spans handed on
     * @param traces      distinct trace ids
     * @param legs        legs (request, node)
     * @param inFlight    legs not in a terminal phase when the journals end
     * @param withFinding legs with a finding
     * @param findings    every finding of the detectors
     * @param unattached  findings that name no admitted request of the node (not exported)
     * @param firstAtNs   time of the first input replayed
     * @param lastAtNs    time of the last input replayed
     * @param shiftNs     what was added to every exported time
     * @param warnings    what the journal readers skipped or doubted
     */
    public record Result(List<Replayer.Node> nodes, long spans, int traces, int legs, int inFlight, int withFinding,
                         List<Finding> findings, int unattached, long firstAtNs, long lastAtNs, long shiftNs,
                         List<String> warnings) {}

    private JournalTraces() {}

    /**
     * Exports the journals' traces to {@code sink}, in batches of at most {@value OtlpSender#BATCH}
     * spans (a leg's spans are never split).
     *
     * @param open  opens a fresh replay of the journals (called twice)
     * @param shift what to add to every exported time, given the time of the first input (to move a
     *              simulated run to a wall-clock instant)
     * @param sink  takes each batch; an exception from it ends the export
     */
    public static Result export(Supplier<Replayer> open, Bounds bounds, LongUnaryOperator shift,
                                Consumer<List<SpanData>> sink) {
        Hangs.Result hangs;
        LinkedHashSet<String> warnings = new LinkedHashSet<>();
        try (Replayer r = open.get()) {
            hangs = Hangs.analyse(r.recorded(false), bounds);
            warnings.addAll(r.warnings());
        }
        Map<String, Finding> byLeg = new HashMap<>();
        for (Finding f : hangs.findings()) {
            if (f.requestId() != null) {
                // the first finding of a leg is its status (the detectors list the most specific first)
                byLeg.putIfAbsent(f.node() + "\u0000" + f.requestId(), f);
            }
        }
        long first = hangs.firstAtNs();
        long end = hangs.lastAtNs();
        long shiftNs = hangs.inputs() == 0 ? 0 : shift.applyAsLong(first);
        Map<String, Resource> resources = new HashMap<>();
        Batcher out = new Batcher(sink, byLeg, resources, end, shiftNs);
        TraceRecorder rec = new TraceRecorder(leg -> out.leg(leg), Integer.MAX_VALUE);
        try (Replayer r = open.get()) {
            r.recorded(false).run(new Replayer.Listener() {
                @Override
                public void started(Replayer.Node node, List<Effect> startup, List<JournalEntry.Derived> recorded) {
                    rec.node(node.name(), node.config());
                    resources.put(node.name(), LegSpans.resource(node.name(), node.config()));
                }

                @Override
                public void applied(Replayer.Node node, JournalEntry.Input in, List<Effect> fx,
                                    List<JournalEntry.Derived> recorded) {
                    rec.observe(node.name(), in.seq(), in.event(), fx);
                    out.drop(rec);
                }
            });
            warnings.addAll(r.warnings());
        }
        for (TraceRecorder.Leg leg : rec.legs()) {
            out.leg(leg);
        }
        out.flush();
        int unattached = 0;
        for (Finding f : hangs.findings()) {
            if (f.requestId() == null || !out.seen.contains(f.node() + "\u0000" + f.requestId())) {
                unattached++;
            }
        }
        return new Result(hangs.nodes(), out.spans, out.traces.size(), out.legs, out.inFlight, out.withFinding,
                hangs.findings(), unattached, first, end, shiftNs, List.copyOf(warnings));
    }

    /** Turns legs into spans and hands them on in batches. */
    private static final class Batcher {
        final Consumer<List<SpanData>> sink;
        final Map<String, Finding> byLeg;
        final Map<String, Resource> resources;
        final long end;
        final long shiftNs;
        final List<SpanData> batch = new ArrayList<>();
        final List<TraceRecorder.Leg> ended = new ArrayList<>();
        final Set<String> traces = new HashSet<>();
        final Set<String> seen = new HashSet<>();
        long spans;
        int legs;
        int inFlight;
        int withFinding;

        Batcher(Consumer<List<SpanData>> sink, Map<String, Finding> byLeg, Map<String, Resource> resources, long end,
                long shiftNs) {
            this.sink = sink;
            this.byLeg = byLeg;
            this.resources = resources;
            this.end = end;
            this.shiftNs = shiftNs;
        }

        void leg(TraceRecorder.Leg leg) {
            String key = leg.node() + "\u0000" + leg.requestId();
            Finding f = byLeg.get(key);
            List<SpanData> s = LegSpans.of(leg, resources.get(leg.node()), f, end, shiftNs);
            if (batch.size() + s.size() > OtlpSender.BATCH) {
                flush();
            }
            batch.addAll(s);
            traces.add(s.get(0).getTraceId());
            seen.add(key);
            legs++;
            inFlight += leg.ended() ? 0 : 1;
            withFinding += f == null ? 0 : 1;
            if (leg.ended()) {
                ended.add(leg);
            }
        }

        /** Forgets the legs handed on (after the recorder's observe: not while it iterates). */
        void drop(TraceRecorder rec) {
            for (TraceRecorder.Leg l : ended) {
                rec.drop(l);
            }
            ended.clear();
        }

        void flush() {
            if (!batch.isEmpty()) {
                List<SpanData> b = List.copyOf(batch);
                batch.clear();
                sink.accept(b);
                spans += b.size();
            }
        }
    }
}
