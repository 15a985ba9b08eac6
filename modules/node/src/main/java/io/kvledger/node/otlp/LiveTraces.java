package io.kvledger.node.otlp;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.ledger.diagnosis.HangDetectors;
import io.kvledger.ledger.diagnosis.Ledger;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.node.loop.NodeLoop;
import io.kvledger.node.NodeService;
import io.kvledger.ledger.otlp.ExportLoop;
import io.kvledger.ledger.otlp.LegSpans;
import io.kvledger.ledger.otlp.OtlpSender;
import io.kvledger.ledger.otlp.SpanBatches;
import io.kvledger.ledger.otlp.TraceRecorder;
import io.opentelemetry.sdk.resources.Resource;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * A live node's traces ({@code kvledger node --otlp URL}): each request's leg on this node is
 * exported when it reaches a terminal phase, and as soon as the hang detectors find something
 * about it; the spans are the ones {@code kvledger export} makes from the node's journal
 * ({@link LegSpans}, same ids), so a trace joins the legs of every node that exports.
 *
 * <p>Never blocks the node loop: {@link #onApplied} (on the loop thread) only offers the event and
 * its effects to a bounded queue; when it is full the item is dropped and counted
 * ({@link #dropped()}), and the legs it touched may lack an event. One exporter thread of its own
 * ({@link ExportLoop}) drains the queue into a {@link TraceRecorder} and a core {@link Ledger}, runs the detectors
 * every {@code checkEvery} (judged as of the node's clock, as {@code GET /v1/hangs} does, without
 * the detectors that need every node's journal), and sends spans in batches (at most
 * {@value OtlpSender#BATCH} spans, at least every {@code flushEvery}; {@link SpanBatches}) with the
 * SDK's OTLP/HTTP exporter. A batch the receiver does not take is counted ({@link #failedSpans()}) and logged,
 * and not sent again.
 *
 * <p>Each leg span is a child of its request's root span; when no kvledger proxy sends that root,
 * one leg of the request sends a synthetic one with it ({@link LegSpans#sendsRoot}: the prefill's
 * TP rank 0), over that leg's span and with its status, so that a trace has one root live too, not
 * only after {@code kvledger export} (which sends the same id, over every leg).
 *
 * <p>A request exported for a finding is exported again, with the same span ids, when it ends.
 * On {@link #close} the legs still open are exported (their open phase ending at the close,
 * marked {@code kvledger.open}). Requests the node recovered from its journal at start are not
 * followed (their admission happened before this exporter attached).
 */
public final class LiveTraces implements NodeLoop.Listener, AutoCloseable {

    private static final System.Logger LOG = System.getLogger("io.kvledger.node.otlp");

    /** Detectors left out on one node's journal (see docs/http-api.md, {@code GET /v1/hangs}). */
    static final Set<String> NEEDS_EVERY_JOURNAL = Set.of("notify-no-listener", "wrong-port-offset-form");

    /**
     * How the exporter runs.
     *
     * @param bounds        the hang detectors' bounds
     * @param checkEvery    how often the detectors run
     * @param flushEvery    the longest a finished span waits for its batch
     * @param queueCapacity items (applied events) waiting for the exporter thread at most
     * @param maxOpen       legs followed at once at most
     */
    public record Options(Bounds bounds, Duration checkEvery, Duration flushEvery, int queueCapacity, int maxOpen) {

        public static Options defaults() {
            return new Options(Bounds.defaults(), Duration.ofSeconds(1), Duration.ofSeconds(1), 1 << 16, 1 << 16);
        }

        public Options withBounds(Bounds b) {
            return new Options(b, checkEvery, flushEvery, queueCapacity, maxOpen);
        }
    }

    private record Item(long seq, NodeEvent event, List<Effect> effects) {}

    private final String node;
    private final SpanBatches batches;
    private final Options options;
    private final LongSupplier clock;
    private final Resource resource;
    private final ExportLoop<Item> loop;

    // exporter thread only
    private final Ledger ledger = new Ledger();
    private final TraceRecorder recorder;
    private final Map<String, Finding> findings = new HashMap<>();
    private final Set<String> reported = new HashSet<>();
    private long lastCheckNs;

    private final AtomicLong exportedLegs = new AtomicLong();
    private final AtomicLong findingLegs = new AtomicLong();

    private LiveTraces(String node, NodeConfig config, LongSupplier clock, OtlpSender sender, Options options) {
        this.node = node;
        this.batches = new SpanBatches(sender, clock, options.flushEvery());
        this.options = options;
        this.clock = clock;
        this.resource = LegSpans.resource(node, config);
        this.recorder = new TraceRecorder(this::ended, options.maxOpen());
        ledger.nodeStarted(node, config, List.of());
        recorder.node(node, config);
        this.loop = new ExportLoop<>("kvledger-otlp-" + node, options.queueCapacity(), batches,
                new ExportLoop.Body<>() {
                    @Override
                    public void apply(Item it) {
                        ledger.observe(node, it.event(), it.effects());
                        recorder.observe(node, it.seq(), it.event(), it.effects());
                    }

                    @Override
                    public void turn() {
                        long now = clock.getAsLong();
                        if (now - lastCheckNs >= options.checkEvery().toNanos()) {
                            lastCheckNs = now;
                            check(now);
                        }
                    }

                    @Override
                    public void finish() {
                        long now = clock.getAsLong();
                        check(now);
                        for (TraceRecorder.Leg leg : recorder.legs()) {
                            if (!leg.ended()) {
                                export(leg, now);
                            }
                        }
                    }
                },
                "otlp: the exporter falls behind; events are dropped from traces",
                m -> LOG.log(System.Logger.Level.WARNING, m));
    }

    /** Starts exporting the traces of {@code node} to {@code sender}; {@link #close} after the node. */
    public static LiveTraces attach(NodeService node, OtlpSender sender, Options options) {
        LiveTraces t = new LiveTraces(node.options().nodeId(), node.options().config(), node.clock()::getAsLong,
                sender, options);
        t.lastCheckNs = t.clock.getAsLong();
        t.loop.start();
        node.loop().addListener(t);
        return t;
    }

    /** On the loop thread: hands the event on, or drops it when the queue is full. */
    @Override
    public void onApplied(long seq, NodeEvent event, List<Effect> effects) {
        loop.offer(new Item(seq, event, effects));
    }

    /** Applied events the full queue refused (their legs may lack an event or a phase). */
    public long dropped() {
        return loop.dropped();
    }

    /** Spans the receiver took. */
    public long exportedSpans() {
        return batches.exported();
    }

    /** Spans in batches the receiver did not take. */
    public long failedSpans() {
        return batches.failed();
    }

    /** Legs exported (a leg exported for a finding and again at its end counts twice). */
    long exportedLegs() {
        return exportedLegs.get();
    }

    /** Legs exported because the detectors found something about them. */
    public long findingLegs() {
        return findingLegs.get();
    }

    /** Where the spans go. */
    public String endpoint() {
        return batches.endpoint();
    }

    private void ended(TraceRecorder.Leg leg) {
        export(leg, leg.lastAtNs());
        findings.remove(leg.requestId());
        reported.removeIf(k -> k.endsWith("\u0000" + leg.requestId()));
        recorder.drop(leg);
    }

    private void check(long now) {
        if (now > ledger.lastAtNs()) {
            ledger.observe(node, new NodeEvent.Tick(now), List.of());
        }
        for (Finding f : HangDetectors.run(ledger, options.bounds())) {
            if (NEEDS_EVERY_JOURNAL.contains(f.detector()) || f.requestId() == null) {
                continue;
            }
            TraceRecorder.Leg leg = recorder.leg(node, f.requestId());
            if (leg == null || !reported.add(f.detector() + "\u0000" + f.requestId())) {
                continue;
            }
            findings.putIfAbsent(f.requestId(), f);
            findingLegs.incrementAndGet();
            export(leg, now);
        }
    }

    private void export(TraceRecorder.Leg leg, long endNs) {
        List<io.opentelemetry.sdk.trace.data.SpanData> spans =
                new java.util.ArrayList<>(LegSpans.of(leg, resource, findings.get(leg.requestId()), endNs, 0));
        if (LegSpans.sendsRoot(leg)) {
            spans.add(LegSpans.syntheticRoot(leg, spans, resource));
        }
        batches.add(spans);
        exportedLegs.incrementAndGet();
    }

    /**
     * Exports what is left (call it after the node closed, so the last events are in): the events
     * still queued, the legs still open, and waits for the last batch (30 s at most).
     */
    @Override
    public void close() {
        loop.close();
    }
}
