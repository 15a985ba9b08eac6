package io.kvledger.core.node.properties;

import static org.assertj.core.api.Assertions.fail;

import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.node.properties.LifecycleHarness.Outcome;
import io.kvledger.core.node.properties.LifecycleHarness.Plan;
import io.kvledger.core.node.properties.LifecycleHarness.ReqPlan;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.statistics.Statistics;

/**
 * Properties of well-formed complete lifecycles (a producer and a consumer node wired together by
 * {@link LifecycleHarness}): N requests through a correct READ or WRITE flow, every frame, ACK,
 * handshake and completion delivered once, in random interleavings.
 */
class LifecycleProperties {

    private static final int TRIES = 200;

    @Provide
    Arbitrary<Plan> plans() {
        Arbitrary<ReqPlan> req = Combinators.combine(
                Arbitraries.integers().between(1, 100),
                Arbitraries.integers().between(0, 4).map(i -> i != 0),
                Arbitraries.integers().between(1, 3)).as(ReqPlan::new);
        return Combinators.combine(
                Arbitraries.of(TransferMode.class),
                Arbitraries.of(false, true),
                Arbitraries.integers().between(0, 2),
                Arbitraries.of(false, true),
                Arbitraries.integers().between(0, 1),
                req.list().ofMinSize(1).ofMaxSize(5),
                Arbitraries.integers().between(0, 999).list().ofMaxSize(300))
                .as((mode, seed, groups, dp2, dpRank, reqs, choices) -> new Plan(mode, seed, groups, dp2, dpRank,
                        mode == TransferMode.READ ? oneChunk(reqs) : reqs, choices));
    }

    private static List<ReqPlan> oneChunk(List<ReqPlan> reqs) {
        List<ReqPlan> out = new ArrayList<>();
        for (ReqPlan r : reqs) {
            out.add(new ReqPlan(r.promptTokens(), r.capped(), 1));
        }
        return out;
    }

    /**
     * (e) At the end of a well-formed lifecycle both nodes' tables are empty and every request is
     * in a terminal phase, except tables the reducer reported through an anomaly (MAPPING_LEAK:
     * the transfer-id map entries of requests P finished without a deferral, seed-vs-newest C.2;
     * PENDING_SAVE_LEAK: the pending save and its params snapshot).
     */
    @Property(tries = TRIES)
    void well_formed_lifecycle_leaves_no_leftovers(@ForAll("plans") Plan plan) {
        Outcome o = LifecycleHarness.run(plan);
        if (o.stuck() != null) {
            fail("the lifecycle did not complete: " + o.stuck());
        }
        List<String> bad = new ArrayList<>();
        check("P", o.producer(), o.requestIds(), bad);
        check("D", o.consumer(), o.requestIds(), bad);
        Statistics.label("mode").collect(plan.mode(), plan.seed() ? "seed" : "newest");
        if (!bad.isEmpty()) {
            fail(String.join("\n", bad));
        }
    }

    /**
     * (e, anomalies) A well-formed lifecycle raises no anomaly that the Python connector would
     * raise on or that risks a hang, apart from the documented MAPPING_LEAK of requests P finishes
     * without a length cap (seed-vs-newest C.2, protocol 5.2 step 4).
     */
    @Property(tries = TRIES)
    void well_formed_lifecycle_raises_no_hazard_anomaly(@ForAll("plans") Plan plan) {
        Outcome o = LifecycleHarness.run(plan);
        List<String> bad = new ArrayList<>();
        for (ReducerFixtures.Run run : List.of(o.producer(), o.consumer())) {
            for (int i = 0; i < run.effects.size(); i++) {
                for (Effect e : run.effects.get(i)) {
                    if (e instanceof Effect.Anomaly a && a.kind() != AnomalyKind.MAPPING_LEAK
                            && (a.kind().severity() == AnomalyKind.Severity.WOULD_RAISE
                            || a.kind().severity() == AnomalyKind.Severity.HANG_RISK)) {
                        bad.add((run == o.producer() ? "P" : "D") + " #" + i + ": " + a);
                    }
                }
            }
        }
        if (!bad.isEmpty()) {
            fail("hazard anomalies in a well-formed lifecycle:\n  " + String.join("\n  ", bad));
        }
    }

    /**
     * (c), (d) and (f) on well-formed lifecycles: nothing surfaced twice, every deferral surfaced
     * by its ACK (never reaped: no time passes), and phases strictly forward on both nodes.
     */
    @Property(tries = TRIES)
    void well_formed_lifecycle_surfaces_each_deferral_once_and_moves_phases_forward(@ForAll("plans") Plan plan) {
        Outcome o = LifecycleHarness.run(plan);
        List<String> bad = new ArrayList<>();
        for (ReducerFixtures.Run run : List.of(o.producer(), o.consumer())) {
            String node = run == o.producer() ? "P " : "D ";
            for (String v : ReducerFixtures.doubleSurfacing(run)) {
                bad.add(node + v);
            }
            for (String v : ReducerFixtures.unresolvedDeferrals(run)) {
                bad.add(node + v);
            }
            for (String v : ReducerFixtures.phaseRegressions(run)) {
                bad.add(node + v);
            }
            for (List<Effect> l : run.effects) {
                for (Effect e : l) {
                    if (e instanceof Effect.AckSurfaced a) {
                        Statistics.label("surfaced").collect(plan.mode(), a.reason());
                        if (a.reason() == Effect.SurfaceReason.REAPED) {
                            bad.add(node + "reaped although every ACK was delivered: " + a);
                        }
                    }
                }
            }
        }
        if (!bad.isEmpty()) {
            fail(String.join("\n", bad));
        }
    }

    private static void check(String node, ReducerFixtures.Run run, List<String> ids, List<String> bad) {
        Map<String, String> leakedTid2Rid = new LinkedHashMap<>();
        Set<String> pendingSaveLeaks = new LinkedHashSet<>();
        for (List<Effect> l : run.effects) {
            for (Effect e : l) {
                if (e instanceof Effect.Anomaly a && a.kind() == AnomalyKind.MAPPING_LEAK) {
                    leakedTid2Rid.put(a.transferId(), a.requestId());
                } else if (e instanceof Effect.Anomaly a && a.kind() == AnomalyKind.PENDING_SAVE_LEAK) {
                    pendingSaveLeaks.add(a.requestId());
                }
            }
        }
        Map<String, Integer> left = new LinkedHashMap<>(run.state.leftovers());
        Map<String, String> tid2rid = run.state.transferIdMap();
        Map<String, String> rid2tid = run.state.requestIdMap();
        boolean mapExplained = true;
        for (Map.Entry<String, String> en : tid2rid.entrySet()) {
            mapExplained &= en.getValue().equals(leakedTid2Rid.get(en.getKey()));
        }
        for (Map.Entry<String, String> en : rid2tid.entrySet()) {
            mapExplained &= en.getKey().equals(leakedTid2Rid.get(en.getValue()));
        }
        if (mapExplained) {
            left.remove("transfer_id_to_request_id");
            left.remove("request_id_to_transfer_id");
        }
        if (pendingSaveLeaks.containsAll(run.state.pendingSaves().keySet())
                && pendingSaveLeaks.containsAll(run.state.paramSnapshots().keySet())) {
            left.remove("reqs_need_pending_save");
            left.remove("req_kv_params");
        }
        if (!left.isEmpty()) {
            bad.add(node + " leftovers " + left + (mapExplained ? "" : " tid->rid=" + tid2rid + " leaked=" + leakedTid2Rid));
        }
        for (Map.Entry<String, RequestPhase> en : run.state.phases().entrySet()) {
            if (!ReducerFixtures.TERMINAL.contains(en.getValue())) {
                bad.add(node + " request " + en.getKey() + " ends in non-terminal phase " + en.getValue());
            }
        }
        for (String id : ids) {
            if (node.equals("P") && run.state.phaseOf(id) == null) {
                bad.add(node + " request " + id + " has no phase");
            }
        }
    }
}
