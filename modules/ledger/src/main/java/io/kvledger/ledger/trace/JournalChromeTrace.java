package io.kvledger.ledger.trace;

import io.kvledger.core.effect.Effect;
import io.kvledger.journal.format.EntryType;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.replay.Hangs;
import io.kvledger.ledger.replay.Mentions;
import io.kvledger.ledger.replay.ProxyLedger;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.ledger.replay.Timeline;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.function.Supplier;

/**
 * Every request of a set of journals as one Chrome trace ({@code kvledger export --chrome-trace}):
 * the lines {@code inspect} would print for each of them (every input and decision that names a
 * request or transfer id), with the findings of {@code hangs}, laid out by {@link ChromeTrace}
 * (concurrent requests of a node take rows of its scheduler thread). Two passes: the detectors,
 * then the lines. The lines are held in memory: at most {@code maxLines} of them, else
 * {@link TooLarge}.
 */
public final class JournalChromeTrace {

    /** More lines than asked for: the trace would not be whole. */
    public static final class TooLarge extends RuntimeException {
        TooLarge(String message) {
            super(message);
        }
    }

    /** The trace, the replayed nodes, and what the readers skipped or doubted. */
    public record Result(ChromeTrace.Trace trace, List<Replayer.Node> nodes, int lines, int requests,
                         List<String> warnings) {}

    private JournalChromeTrace() {}

    /**
     * @param open opens a fresh replay of the journals (called twice)
     * @throws TooLarge when the journals hold more than {@code maxLines} lines that name a request
     */
    public static Result of(Supplier<Replayer> open, Bounds bounds, int maxLines) {
        LinkedHashSet<String> warnings = new LinkedHashSet<>();
        Hangs.Result hangs;
        try (Replayer r = open.get()) {
            hangs = Hangs.analyse(r.recorded(false), bounds);
            warnings.addAll(r.warnings());
        }
        LinkedHashSet<String> rids = new LinkedHashSet<>();
        LinkedHashSet<String> tids = new LinkedHashSet<>();
        List<Timeline.Line> lines = new ArrayList<>();
        List<Replayer.Node> nodes;
        Names names = new Names(rids, tids);
        try (Replayer r = open.get()) {
            nodes = r.nodes();
            r.recorded(false).run((node, in, fx, recorded) -> {
                names.hit = false;
                Mentions.of(in.event(), names);
                String cause = in.type().typeName();
                if (names.hit) {
                    add(lines, maxLines, new Timeline.Line(in.atNs(), node.name(), in.seq(), true, null, in.type(),
                            in.dissect(), null, in.type().toJson(in.event())));
                }
                for (Effect e : fx) {
                    names.hit = false;
                    Mentions.of(e, names);
                    if (names.hit) {
                        EntryType t = EntryType.of(e);
                        add(lines, maxLines, new Timeline.Line(in.atNs(), node.name(), in.seq(), false, cause, t,
                                t.dissect(e), e instanceof Effect.PhaseChanged p ? p : null, t.toJson(e)));
                    }
                }
            });
            warnings.clear();
            warnings.addAll(r.warnings());
            if (!r.proxyJournals().isEmpty()) {
                ProxyLedger proxies = ProxyLedger.read(r.proxyJournals());
                for (ProxyLedger.Line pl : proxies.lines(rids, tids)) {
                    add(lines, maxLines, new Timeline.Line(pl.atNs(), pl.proxy(), pl.seq(), true, null, pl.type(),
                            pl.text(), null, pl.type().toJson(pl.event())));
                }
                warnings.addAll(proxies.warnings());
                lines.sort(Comparator.comparingLong(Timeline.Line::atNs));
            }
        }
        Timeline.Found all = new Timeline.Found("(every request)", Timeline.Kind.REQUEST, nodes,
                Collections.unmodifiableSet(rids), Collections.unmodifiableSet(tids),
                Collections.unmodifiableList(lines), List.copyOf(warnings));
        ChromeTrace.Trace trace = ChromeTrace.of(all, hangs.findings());
        int requests = all.legs().values().stream().mapToInt(java.util.Set::size).sum();
        return new Result(trace, nodes, lines.size(), requests, List.copyOf(warnings));
    }

    private static void add(List<Timeline.Line> lines, int max, Timeline.Line l) {
        if (lines.size() >= max) {
            throw new TooLarge("the journals hold more than " + max + " lines that name a request; "
                    + "write one request's trace with kvledger inspect --chrome-trace");
        }
        lines.add(l);
    }

    /** Whether an entry names a request or transfer, collecting the ids. */
    private static final class Names implements Mentions.Sink {
        final LinkedHashSet<String> rids;
        final LinkedHashSet<String> tids;
        boolean hit;

        Names(LinkedHashSet<String> rids, LinkedHashSet<String> tids) {
            this.rids = rids;
            this.tids = tids;
        }

        @Override
        public void requestId(String rid) {
            rids.add(rid);
            hit = true;
        }

        @Override
        public void transferId(String tid) {
            tids.add(tid);
            hit = true;
        }

        @Override
        public void status(long statusId, String tid) {
            hit = true;
        }
    }
}
