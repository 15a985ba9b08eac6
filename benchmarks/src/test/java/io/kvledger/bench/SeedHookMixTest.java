package io.kvledger.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The hook mix of SeedHookMixBenchmark does what it says: every request goes through its six hooks
 * without an anomaly, the WRITE producer's deferred free is surfaced by the ACK and the READ
 * consumer's receive reaches the worker's metadata, and the node ends with nothing left over, also
 * when the pool wraps around (the benchmark's long-lived node).
 */
class SeedHookMixTest {

    private static final int REQUESTS = 300;

    @Test
    void write_producer_defers_each_free_and_the_ack_frees_it() {
        List<Effect> effects = replayTwice(SeedHookMix.Mix.WRITE_PRODUCER);
        assertThat(count(effects, Effect.DeferralStarted.class)).isEqualTo(2 * REQUESTS);
        assertThat(effects).filteredOn(e -> e instanceof Effect.AckSurfaced a && a.reason() == Effect.SurfaceReason.ACKED)
                .hasSize(2 * REQUESTS);
        assertThat(effects).filteredOn(e -> e instanceof Effect.MetadataBuilt m && m.reqsToSave().size() == 1
                && m.reqsToSave().get(0).remoteHost().equals("10.0.1.2")).hasSize(2 * REQUESTS);
        assertThat(effects).filteredOn(e -> e instanceof Effect.PhaseChanged p && p.to() == RequestPhase.FREED_AFTER_ACK)
                .hasSize(2 * REQUESTS);
    }

    @Test
    void read_consumer_stages_each_receive_and_finishes() {
        List<Effect> effects = replayTwice(SeedHookMix.Mix.READ_CONSUMER);
        assertThat(effects).filteredOn(e -> e instanceof Effect.MetadataBuilt m && m.reqsToRecv().size() == 1
                && m.reqsToRecv().get(0).remoteHost().equals("10.0.1.1")
                && m.reqsToRecv().get(0).localBlockIds().first().length > 0).hasSize(2 * REQUESTS);
        assertThat(effects).filteredOn(e -> e instanceof Effect.PhaseChanged p && p.to() == RequestPhase.FINISHED)
                .hasSize(2 * REQUESTS);
    }

    /** The events twice over on one state (the benchmark's pool wraps around), checked clean. */
    private static List<Effect> replayTwice(SeedHookMix.Mix mix) {
        NodeEvent[] events = SeedHookMix.events(mix, REQUESTS, 0x5eedL);
        assertThat(events).hasSize(REQUESTS * SeedHookMix.EVENTS_PER_REQUEST);
        NodeState state = NodeState.initial(mix.config());
        assertThat(state.config().behaviour().profile()).isEqualTo("seed");
        List<Effect> all = new ArrayList<>();
        for (int pass = 0; pass < 2; pass++) {
            for (NodeEvent e : events) {
                all.addAll(NodeReducer.apply(state, e).effects());
            }
        }
        assertThat(all).noneMatch(e -> e instanceof Effect.Anomaly);
        assertThat(state.leftovers()).isEmpty();
        assertThat(state.liveRequests()).isZero();
        return all;
    }

    private static long count(List<Effect> effects, Class<?> type) {
        return effects.stream().filter(type::isInstance).count();
    }
}
