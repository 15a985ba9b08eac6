package io.kvledger.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.bench.LifecycleScript.NodeKind;
import io.kvledger.bench.LifecycleScript.NodeStream;
import io.kvledger.bench.LifecycleScript.Script;
import io.kvledger.core.config.Role;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The benchmark's script is a valid, complete, deterministic lifecycle of every request on every node. */
class LifecycleScriptTest {

    /** One stream replayed on a fresh state: the final state, every effect, and who emitted it. */
    record Replay(NodeStream stream, NodeState state, List<Effect> effects, List<NodeEvent> causes,
                  int maxLiveRequests) {}

    private static Script script;
    private static final Map<NodeKind, Replay> REPLAYS = new EnumMap<>(NodeKind.class);

    @BeforeAll
    static void replayStandardScript() {
        script = LifecycleScript.standard();
        for (NodeStream s : script.streams()) {
            REPLAYS.put(s.kind(), replay(s));
        }
    }

    static Replay replay(NodeStream s) {
        NodeState state = s.freshState();
        List<Effect> effects = new ArrayList<>();
        List<NodeEvent> causes = new ArrayList<>();
        int maxLive = 0;
        for (NodeEvent e : s.events()) {
            for (Effect ef : NodeReducer.apply(state, e).effects()) {
                effects.add(ef);
                causes.add(e);
            }
            maxLive = Math.max(maxLive, state.liveRequests());
        }
        return new Replay(s, state, effects, causes, maxLive);
    }

    @Test
    void every_request_ends_finished_or_freed_after_ack_on_both_nodes() {
        for (Replay r : REPLAYS.values()) {
            Map<String, RequestPhase> phases = r.state().phases();
            assertThat(phases).as(r.stream().kind() + " requests").hasSize(script.requests());
            RequestPhase expected = r.stream().kind().role == Role.PRODUCER ? RequestPhase.FREED_AFTER_ACK : RequestPhase.FINISHED;
            assertThat(phases.values()).as(r.stream().kind() + " final phases").allMatch(LifecycleScript::completedPhase)
                    .containsOnly(expected);
            assertThat(r.state().liveRequests()).as(r.stream().kind() + " live requests").isZero();
        }
    }

    @Test
    void no_anomaly_of_severity_hang_risk_or_would_raise_is_emitted() {
        for (Replay r : REPLAYS.values()) {
            List<Effect.Anomaly> bad = r.effects().stream()
                    .filter(e -> e instanceof Effect.Anomaly)
                    .map(e -> (Effect.Anomaly) e)
                    .filter(a -> a.kind().severity() == AnomalyKind.Severity.HANG_RISK
                            || a.kind().severity() == AnomalyKind.Severity.WOULD_RAISE)
                    .toList();
            assertThat(bad).as(r.stream().kind() + " anomalies").isEmpty();
        }
    }

    @Test
    void leftovers_are_empty_on_every_node() {
        for (Replay r : REPLAYS.values()) {
            assertThat(r.state().leftovers()).as(r.stream().kind() + " leftovers").isEmpty();
            assertThat(r.state().transferIdMap()).as(r.stream().kind() + " transfer-id map").isEmpty();
        }
    }

    @Test
    void configs_pass_the_startup_checks() {
        for (NodeStream s : script.streams()) {
            assertThat(NodeReducer.startupChecks(s.config())).as(s.kind() + " startup").isEmpty();
        }
    }

    @Test
    void status_ids_are_allocated_sequentially_from_one_and_every_completion_names_a_posted_id() {
        for (NodeKind kind : List.of(NodeKind.WRITE_PRODUCER, NodeKind.READ_CONSUMER)) {
            Replay r = REPLAYS.get(kind);
            long[] posted = r.effects().stream()
                    .mapToLong(e -> e instanceof Effect.PostWrite w ? w.statusId()
                            : e instanceof Effect.PostRead rd ? rd.statusId() : -1L)
                    .filter(id -> id >= 0)
                    .toArray();
            // two layers per request
            assertThat(posted).as(kind + " posted ids").hasSize(2 * script.requests());
            assertThat(posted).as(kind + " posted ids").containsExactly(LongStream.rangeClosed(1, posted.length).toArray());
            long[] completed = Arrays.stream(r.stream().events())
                    .filter(e -> e instanceof NodeEvent.TransferCompleted)
                    .mapToLong(e -> ((NodeEvent.TransferCompleted) e).statusId())
                    .sorted()
                    .toArray();
            assertThat(completed).as(kind + " completed ids").containsExactly(posted);
        }
        for (NodeKind kind : List.of(NodeKind.WRITE_CONSUMER, NodeKind.READ_PRODUCER)) {
            assertThat(REPLAYS.get(kind).effects()).noneMatch(e -> e instanceof Effect.PostWrite || e instanceof Effect.PostRead);
        }
    }

    @Test
    void every_producer_request_is_acked_and_every_consumer_request_gets_its_kv() {
        Replay wp = REPLAYS.get(NodeKind.WRITE_PRODUCER);
        assertThat(count(wp, Effect.SendWriteDone.class)).isEqualTo(script.requests());
        assertThat(wp.effects().stream().filter(e -> e instanceof Effect.AckSurfaced)
                .map(e -> ((Effect.AckSurfaced) e).reason()).distinct().toList())
                .containsExactly(Effect.SurfaceReason.ACKED);
        Replay rp = REPLAYS.get(NodeKind.READ_PRODUCER);
        assertThat(rp.effects().stream().filter(e -> e instanceof Effect.AckSurfaced)
                .map(e -> ((Effect.AckSurfaced) e).reason()).distinct().toList())
                .containsExactly(Effect.SurfaceReason.ACKED);
        assertThat(count(rp, Effect.DeferralStarted.class)).isEqualTo(script.requests());
        Replay wc = REPLAYS.get(NodeKind.WRITE_CONSUMER);
        assertThat(count(wc, Effect.SendRemoteBlocks.class)).isEqualTo(script.requests());
        assertThat(wc.effects().stream().filter(e -> e instanceof Effect.PhaseChanged p && p.to() == RequestPhase.KV_RECEIVED).count())
                .isEqualTo(script.requests());
        Replay rc = REPLAYS.get(NodeKind.READ_CONSUMER);
        assertThat(count(rc, Effect.SendRelease.class)).isEqualTo(script.requests());
    }

    @Test
    void the_mix_interleaves_about_eight_requests_with_about_ten_events_per_request() {
        for (Replay r : REPLAYS.values()) {
            double perRequest = (double) r.stream().events().length / script.requests();
            assertThat(perRequest).as(r.stream().kind() + " events per request").isBetween(8.0, 20.0);
        }
        int consumerLive = Math.max(REPLAYS.get(NodeKind.WRITE_CONSUMER).maxLiveRequests(),
                REPLAYS.get(NodeKind.READ_CONSUMER).maxLiveRequests());
        assertThat(consumerLive).as("requests in flight on a consumer").isBetween(6, LifecycleScript.CONCURRENCY);
        // Scheduler steps batch several requests: some steps admit more than one.
        Replay wp = REPLAYS.get(NodeKind.WRITE_PRODUCER);
        int maxAdmittedPerStep = 0;
        int admitted = 0;
        for (NodeEvent e : wp.stream().events()) {
            if (e instanceof NodeEvent.RequestAdmitted) {
                admitted++;
            } else if (e instanceof NodeEvent.StepScheduled) {
                maxAdmittedPerStep = Math.max(maxAdmittedPerStep, admitted);
                admitted = 0;
            }
        }
        assertThat(maxAdmittedPerStep).isGreaterThan(1);
    }

    @Test
    void the_write_mix_has_chunked_prefills_and_remote_blocks_before_and_after_the_save() {
        Replay wp = REPLAYS.get(NodeKind.WRITE_PRODUCER);
        long chunkSteps = Arrays.stream(wp.stream().events())
                .filter(e -> e instanceof NodeEvent.StepScheduled s
                        && s.cachedRequests().stream().anyMatch(c -> c.newBlockIds() != null))
                .count();
        assertThat(chunkSteps).as("steps continuing a chunked prefill").isPositive();
        assertThat(wp.effects()).anyMatch(e -> e instanceof Effect.PhaseChanged p && p.to() == RequestPhase.PENDING_SAVE);
        Set<Class<?>> writeTriggers = new LinkedHashSet<>();
        for (int i = 0; i < wp.effects().size(); i++) {
            if (wp.effects().get(i) instanceof Effect.PostWrite) {
                writeTriggers.add(wp.causes().get(i).getClass());
            }
        }
        // remote_blocks already there at save time (LayerSaved/SaveWaited) and arriving after it (RemoteBlocksReceived)
        assertThat(writeTriggers).contains(NodeEvent.RemoteBlocksReceived.class, NodeEvent.LayerSaved.class);
    }

    @Test
    void request_ids_embed_both_addresses_and_transfer_ids_are_uuid4() {
        NodeStream wp = script.stream(NodeKind.WRITE_PRODUCER);
        NodeStream wc = script.stream(NodeKind.WRITE_CONSUMER);
        List<NodeEvent.RequestAdmitted> admissions = Arrays.stream(wp.events())
                .filter(e -> e instanceof NodeEvent.RequestAdmitted)
                .map(e -> (NodeEvent.RequestAdmitted) e)
                .toList();
        for (NodeEvent.RequestAdmitted a : admissions) {
            String decode = RequestIds.peerZmqFromRequestId(a.requestId(), true).orElseThrow();
            assertThat(ZmqAddress.parse(decode).value()).isEqualTo(NodeKind.WRITE_CONSUMER.address());
            String prefill = RequestIds.peerZmqFromRequestId(a.requestId(), false).orElseThrow();
            assertThat(ZmqAddress.parse(prefill).value()).isEqualTo(NodeKind.WRITE_PRODUCER.address());
            assertThat(a.params().string("transfer_id"))
                    .matches("tx-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
        }
        Set<String> producerTids = admissions.stream().map(a -> a.params().string("transfer_id")).collect(Collectors.toSet());
        Set<String> consumerTids = Arrays.stream(wc.events())
                .filter(e -> e instanceof NodeEvent.RequestAdmitted)
                .map(e -> ((NodeEvent.RequestAdmitted) e).params().string("transfer_id"))
                .collect(Collectors.toSet());
        assertThat(producerTids).hasSize(script.requests()).isEqualTo(consumerTids);
    }

    @Test
    void the_script_is_deterministic() {
        Script again = LifecycleScript.standard();
        for (NodeKind kind : NodeKind.values()) {
            assertThat(again.stream(kind).events()).as(kind + " events").containsExactly(script.stream(kind).events());
            assertThat(replay(again.stream(kind)).state().stateHash()).isEqualTo(REPLAYS.get(kind).state().stateHash());
        }
        assertThat(LifecycleScript.build(64, 7).totalEvents()).isNotEqualTo(script.totalEvents());
    }

    @Test
    void event_count_matches_the_benchmark_constant() {
        assertThat(script.totalEvents()).isEqualTo(ReducerThroughputBenchmark.EVENTS);
        new ReducerThroughputBenchmark().loadScript();
    }

    private static long count(Replay r, Class<? extends Effect> type) {
        return r.effects().stream().filter(type::isInstance).count();
    }
}
