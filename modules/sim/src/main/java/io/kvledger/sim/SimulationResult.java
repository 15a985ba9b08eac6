package io.kvledger.sim;

import io.kvledger.core.model.AnomalyKind;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * The outcome of one run: per node its phase counts, state hash and log; every anomaly with the
 * node and request it concerns; and what the network, data plane and engines counted.
 *
 * @param options   the run's options (the seed is {@code options().seed()})
 * @param nodes     prefill nodes first, then decode nodes
 * @param anomalies every {@code Anomaly} effect in the order the nodes emitted them
 * @param stats     counters
 */
public record SimulationResult(SimOptions options, List<NodeReport> nodes, List<AnomalyRecord> anomalies,
                               SimStats stats) {

    public SimulationResult {
        nodes = List.copyOf(nodes);
        anomalies = List.copyOf(anomalies);
    }

    public long seed() {
        return options.seed();
    }

    /** The node called {@code name}, or {@code null}. */
    public NodeReport node(String name) {
        for (NodeReport n : nodes) {
            if (n.name().equals(name)) {
                return n;
            }
        }
        return null;
    }

    /** Each node's final state hash, in node order. */
    List<Long> stateHashes() {
        List<Long> out = new ArrayList<>(nodes.size());
        for (NodeReport n : nodes) {
            out.add(n.stateHash());
        }
        return out;
    }

    /** Requests (summed over nodes) whose reducer phase is terminal. */
    public int requestsCompleted() {
        int n = 0;
        for (NodeReport r : nodes) {
            n += r.terminal();
        }
        return n;
    }

    /** Requests (summed over nodes) whose reducer phase is not terminal at the end. */
    public int requestsHung() {
        int n = 0;
        for (NodeReport r : nodes) {
            n += r.hung();
        }
        return n;
    }

    /** Every hung request, node by node. */
    public List<HungRequest> hungRequests() {
        List<HungRequest> out = new ArrayList<>();
        for (NodeReport r : nodes) {
            out.addAll(r.hungRequests());
        }
        return out;
    }

    /** The anomalies of {@code kind}, in order. */
    public List<AnomalyRecord> anomalies(AnomalyKind kind) {
        List<AnomalyRecord> out = new ArrayList<>();
        for (AnomalyRecord a : anomalies) {
            if (a.kind() == kind) {
                out.add(a);
            }
        }
        return out;
    }

    /** Anomalies per kind, in kind order (kinds that did not occur are absent). */
    public Map<AnomalyKind, Integer> anomalyCounts() {
        EnumMap<AnomalyKind, Integer> m = new EnumMap<>(AnomalyKind.class);
        for (AnomalyRecord a : anomalies) {
            m.merge(a.kind(), 1, Integer::sum);
        }
        return Collections.unmodifiableMap(m);
    }

    /** Anomalies of a given severity. */
    public List<AnomalyRecord> anomalies(AnomalyKind.Severity severity) {
        List<AnomalyRecord> out = new ArrayList<>();
        for (AnomalyRecord a : anomalies) {
            if (a.kind().severity() == severity) {
                out.add(a);
            }
        }
        return out;
    }
}
