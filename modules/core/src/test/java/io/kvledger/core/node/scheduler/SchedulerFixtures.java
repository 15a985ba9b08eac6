package io.kvledger.core.node.scheduler;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Shared fixtures of the scheduler-side tests: configurations, request ids with embedded peer
 * addresses, Python-shaped values, and a {@link Node} driver that feeds the reducer one hook at a
 * time on a virtual clock and returns that hook's effects.
 */
final class SchedulerFixtures {

    private SchedulerFixtures() {}

    static final long S = NodeConfig.NS_PER_S;
    static final long DEFER_NS = 60 * S;

    /** The prefill peer embedded in proxy request ids. */
    static final ZmqAddress PREFILL = new ZmqAddress("10.0.0.1", 6301, 61005);
    /** The decode peer embedded in proxy request ids. */
    static final ZmqAddress DECODE = new ZmqAddress("10.0.0.2", 7301, 62005);

    /** {@code ___prefill_addr_…___decode_addr_…_<32 hex>}, as the toy proxy builds it. */
    static String proxyRid(String name) {
        String hex = String.format("%032x", (long) name.hashCode() & 0xffffffffL);
        return RequestIds.proxyRequestId(PREFILL, DECODE, hex);
    }

    /** A proxy request id as vLLM wraps it ({@code cmpl-<id>-0-<8 hex>}). */
    static String wrappedRid(String name) {
        return "cmpl-" + proxyRid(name) + "-0-1a2b3c4d";
    }

    // ------------------------------------------------------------------ configurations

    static NodeConfig.Builder producer(TransferMode mode) {
        return NodeConfig.builder(Role.PRODUCER, mode);
    }

    static NodeConfig.Builder consumer(TransferMode mode) {
        return NodeConfig.builder(Role.CONSUMER, mode);
    }

    static Behaviour seed() {
        return Behaviour.seed();
    }

    static Behaviour firstOwnerWins() {
        return Behaviour.newest().with(Switch.MAP_FIRST_OWNER_WINS, true);
    }

    // ------------------------------------------------------------------ values

    static KvParams params(Object... kv) {
        return KvParams.of(kv);
    }

    /** The Python list of ints {@code [ids…]} (elements as Long). */
    static List<Object> ids(int... ids) {
        return BlockGroups.flatValue(ids);
    }

    /** The Python list of lists {@code [[ids…], …]}. */
    static List<Object> grouped(int[]... groups) {
        return BlockGroups.of(groups).toGroupedValue();
    }

    static int[] a(int... v) {
        return v;
    }

    static BlockGroups one(int... ids) {
        return BlockGroups.single(ids);
    }

    static BlockGroups groups(int[]... g) {
        return BlockGroups.of(g);
    }

    static int[] range(int from, int toExclusive) {
        int[] r = new int[toExclusive - from];
        for (int i = 0; i < r.length; i++) {
            r[i] = from + i;
        }
        return r;
    }

    static List<Integer> boxed(int... v) {
        return Arrays.stream(v).boxed().toList();
    }

    // ------------------------------------------------------------------ effect filters

    static <T extends Effect> List<T> only(List<Effect> effects, Class<T> type) {
        List<T> out = new ArrayList<>();
        for (Effect e : effects) {
            if (type.isInstance(e)) {
                out.add(type.cast(e));
            }
        }
        return out;
    }

    /** The single effect of this type; fails the test when there is none or more than one. */
    static <T extends Effect> T single(List<Effect> effects, Class<T> type) {
        List<T> l = only(effects, type);
        if (l.size() != 1) {
            throw new AssertionError("expected exactly one " + type.getSimpleName() + " in " + effects);
        }
        return l.get(0);
    }

    static List<AnomalyKind> anomalies(List<Effect> effects) {
        return only(effects, Effect.Anomaly.class).stream().map(Effect.Anomaly::kind).toList();
    }

    static int indexOf(List<Effect> effects, Class<? extends Effect> type) {
        for (int i = 0; i < effects.size(); i++) {
            if (type.isInstance(effects.get(i))) {
                return i;
            }
        }
        return -1;
    }

    // ------------------------------------------------------------------ the driver

    /** One engine rank driven hook by hook; each call returns the effects of that one event. */
    static final class Node {
        final NodeState state;
        long now = 1_000L;
        long step;
        final List<Effect> all = new ArrayList<>();

        Node(NodeConfig config) {
            this.state = NodeState.initial(config);
        }

        Node(NodeConfig.Builder b) {
            this(b.build());
        }

        Node at(long ns) {
            now = ns;
            return this;
        }

        List<Effect> apply(NodeEvent e) {
            NodeReducer.Transition t = NodeReducer.apply(state, e);
            all.addAll(t.effects());
            return t.effects();
        }

        /** {@code add_request}: numPromptTokens tokens, all of them in prompt_token_ids. */
        List<Effect> admit(String rid, int promptTokens, KvParams params) {
            return apply(new NodeEvent.RequestAdmitted(now, rid, promptTokens, promptTokens, params));
        }

        /** {@code add_request} with a separate {@code len(prompt_token_ids)} (-1: None). */
        List<Effect> admit(String rid, int numPromptTokens, int promptTokenIds, KvParams params) {
            return apply(new NodeEvent.RequestAdmitted(now, rid, numPromptTokens, promptTokenIds, params));
        }

        List<Effect> match(String rid, int computed) {
            return apply(new NodeEvent.MatchedTokensQueried(now, rid, computed));
        }

        Effect.MatchedTokens matched(String rid, int computed) {
            return single(match(rid, computed), Effect.MatchedTokens.class);
        }

        List<Effect> alloc(String rid, BlockGroups blocks, int externalTokens) {
            return apply(new NodeEvent.BlocksAllocated(now, rid, blocks, externalTokens));
        }

        List<Effect> step(NodeEvent.CachedRequest... cached) {
            return apply(new NodeEvent.StepScheduled(now, ++step, List.of(cached)));
        }

        Effect.MetadataBuilt meta(NodeEvent.CachedRequest... cached) {
            return single(step(cached), Effect.MetadataBuilt.class);
        }

        List<Effect> finish(String rid, FinishStatus status, BlockGroups blocks) {
            return apply(new NodeEvent.RequestFinished(now, rid, status, blocks));
        }

        Effect.FinishDecision decision(String rid, FinishStatus status, BlockGroups blocks) {
            return single(finish(rid, status, blocks), Effect.FinishDecision.class);
        }

        List<Effect> output(List<String> finishedSending, List<String> finishedRecving) {
            return apply(new NodeEvent.ConnectorOutputReceived(now, finishedSending, finishedRecving));
        }

        List<Effect> acks(String... rids) {
            return output(List.of(rids), null);
        }
    }

    static NodeEvent.CachedRequest cached(String rid, BlockGroups newBlockIds) {
        return new NodeEvent.CachedRequest(rid, newBlockIds);
    }
}
