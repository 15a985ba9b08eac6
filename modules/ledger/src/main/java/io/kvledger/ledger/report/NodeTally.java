package io.kvledger.ledger.report;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.RequestPhase;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Counts of one node's replay without keeping any request: inputs, effects, the number of
 * requests in each phase at the end (from the {@code PhaseChanged} decisions: +1 for the phase
 * entered, -1 for the phase left), and anomalies by kind.
 */
final class NodeTally {

    long inputs;
    long effects;
    long firstAtNs = Long.MAX_VALUE;
    long lastAtNs = Long.MIN_VALUE;
    long firstSeq = -1;
    long lastSeq = -1;
    final long[] phases = new long[RequestPhase.values().length];
    final long[] anomalies = new long[AnomalyKind.values().length];

    void input(long seq, long atNs) {
        inputs++;
        firstAtNs = Math.min(firstAtNs, atNs);
        lastAtNs = Math.max(lastAtNs, atNs);
        if (firstSeq < 0) {
            firstSeq = seq;
        }
        lastSeq = seq;
    }

    void effect(Effect e) {
        effects++;
        if (e instanceof Effect.PhaseChanged p) {
            if (p.from() != null) {
                phases[p.from().ordinal()]--;
            }
            phases[p.to().ordinal()]++;
        } else if (e instanceof Effect.Anomaly a) {
            anomalies[a.kind().ordinal()]++;
        }
    }

    void effects(List<Effect> list) {
        for (int i = 0; i < list.size(); i++) {
            effect(list.get(i));
        }
    }

    /** Phases with a non-zero count, in phase order. */
    Map<RequestPhase, Long> phaseCounts() {
        LinkedHashMap<RequestPhase, Long> m = new LinkedHashMap<>();
        for (RequestPhase p : RequestPhase.values()) {
            if (phases[p.ordinal()] != 0) {
                m.put(p, phases[p.ordinal()]);
            }
        }
        return m;
    }

    /** Anomaly kinds seen, worst severity first, then by code. */
    Map<AnomalyKind, Long> anomalyCounts() {
        List<AnomalyKind> kinds = new ArrayList<>();
        for (AnomalyKind k : AnomalyKind.values()) {
            if (anomalies[k.ordinal()] > 0) {
                kinds.add(k);
            }
        }
        kinds.sort(Comparator.comparing(AnomalyKind::severity).reversed().thenComparingInt(AnomalyKind::code));
        LinkedHashMap<AnomalyKind, Long> m = new LinkedHashMap<>();
        for (AnomalyKind k : kinds) {
            m.put(k, anomalies[k.ordinal()]);
        }
        return m;
    }

    long requestsAtEnd(boolean terminal) {
        long n = 0;
        for (RequestPhase p : RequestPhase.values()) {
            if (p.terminal() == terminal) {
                n += phases[p.ordinal()];
            }
        }
        return n;
    }

    /** "FREED_AFTER_ACK 280, REAPED 5, WAITING_FOR_REMOTE_KVS 3 *" (a star marks non-terminal phases). */
    String phasesLine() {
        Map<RequestPhase, Long> m = phaseCounts();
        if (m.isEmpty()) {
            return "none";
        }
        List<String> parts = new ArrayList<>();
        m.forEach((p, n) -> parts.add(p.name() + " " + n + (p.terminal() ? "" : " *")));
        return String.join(", ", parts);
    }

    String anomaliesLine() {
        Map<AnomalyKind, Long> m = anomalyCounts();
        if (m.isEmpty()) {
            return "none";
        }
        List<String> parts = new ArrayList<>();
        m.forEach((k, n) -> parts.add(k.name() + " " + n));
        return String.join(", ", parts);
    }

    Map<String, Object> phasesJson() {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        phaseCounts().forEach((p, n) -> m.put(p.name(), n));
        return m;
    }

    Map<String, Object> anomaliesJson() {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        anomalyCounts().forEach((k, n) -> m.put(k.name(), n));
        return m;
    }
}
