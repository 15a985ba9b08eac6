package io.kvledger.core.node.worker;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.KvGroupSpec;
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
import java.util.List;

/**
 * Shared fixtures of the worker-side tests: node configurations, request ids with embedded peer
 * addresses, kv_transfer_params, and a {@link Node} driver that feeds the reducer its events with
 * a virtual clock and collects the effects. The worker gets its mapping and metadata only through
 * the reducer's own events (admit, allocate, StepScheduled, LoadStarted), as it would in vLLM.
 */
final class WorkerFixtures {

    private WorkerFixtures() {}

    static final long S = NodeConfig.NS_PER_S;

    /** Prefill peer address embedded in proxy request ids. */
    static final ZmqAddress PREFILL = new ZmqAddress("10.0.0.1", 6301, 61005);
    /** Decode peer address embedded in proxy request ids. */
    static final ZmqAddress DECODE = new ZmqAddress("10.0.0.2", 7301, 62005);

    static final String LAYER_0 = "model.layers.0.self_attn.attn";
    static final String LAYER_1 = "model.layers.1.self_attn.attn";

    /** A proxy-style request id ({@code cmpl-___prefill_addr_…___decode_addr_…_<32hex>-0-<8hex>}). */
    static String proxyRid(String name) {
        String hex = String.format("%032x", (long) name.hashCode() & 0xffffffffL);
        return "cmpl-" + RequestIds.proxyRequestId(PREFILL, DECODE, hex) + "-0-1a2b3c4d";
    }

    // ------------------------------------------------------------------ configurations

    static NodeConfig.Builder producer(TransferMode mode) {
        return NodeConfig.builder(Role.PRODUCER, mode).hostIp("10.0.0.1").handshakePort(6301).notifyPort(61005);
    }

    static NodeConfig.Builder consumer(TransferMode mode) {
        return NodeConfig.builder(Role.CONSUMER, mode).hostIp("10.0.0.2").handshakePort(7301).notifyPort(62005);
    }

    static Behaviour newestWith(Switch s, boolean on) {
        return Behaviour.newest().with(s, on);
    }

    /** [full attention, mamba]: a hybrid model (READ only). */
    static List<KvGroupSpec> hybridGroups() {
        return List.of(KvGroupSpec.fullAttention(16), KvGroupSpec.mamba(16));
    }

    // ------------------------------------------------------------------ params

    /** What the proxy hands the prefill leg. */
    static KvParams prefillParams(String tid) {
        return KvParams.of("do_remote_decode", true, "do_remote_prefill", false, "transfer_id", tid,
                "remote_engine_id", null, "remote_block_ids", null);
    }

    /** The decode leg of WRITE mode (dispatched concurrently with the prefill leg). */
    static KvParams writeDecodeParams(String tid) {
        return KvParams.of("do_remote_decode", false, "do_remote_prefill", true, "remote_engine_id", null,
                "remote_block_ids", null, "transfer_id", tid);
    }

    /**
     * The decode leg of READ mode with the producer's explicit address (used when the request id
     * carries none).
     */
    static KvParams readDecodeParams(String tid, Object remoteBlockIds, String host, int handshake, int notify,
                                     int remoteTp, int remoteDpRank, int remoteDpSize) {
        return KvParams.of("do_remote_prefill", true, "do_remote_decode", false,
                "remote_block_ids", remoteBlockIds, "remote_engine_id", host + ":" + handshake,
                "remote_host", host, "remote_handshake_port", (long) handshake, "remote_notify_port", (long) notify,
                "remote_dp_rank", (long) remoteDpRank, "remote_dp_size", (long) remoteDpSize,
                "tp_size", (long) remoteTp, "transfer_id", tid);
    }

    static List<Object> groups(int[]... g) {
        return BlockGroups.of(g).toGroupedValue();
    }

    static int[] ids(int... v) {
        return v;
    }

    // ------------------------------------------------------------------ effect queries

    static <T extends Effect> List<T> only(List<Effect> effects, Class<T> type) {
        List<T> out = new ArrayList<>();
        for (Effect e : effects) {
            if (type.isInstance(e)) {
                out.add(type.cast(e));
            }
        }
        return out;
    }

    static List<Effect.Anomaly> anomalies(List<Effect> effects, AnomalyKind kind) {
        List<Effect.Anomaly> out = new ArrayList<>();
        for (Effect.Anomaly a : only(effects, Effect.Anomaly.class)) {
            if (a.kind() == kind) {
                out.add(a);
            }
        }
        return out;
    }

    static List<AnomalyKind> anomalyKinds(List<Effect> effects) {
        List<AnomalyKind> out = new ArrayList<>();
        for (Effect.Anomaly a : only(effects, Effect.Anomaly.class)) {
            out.add(a.kind());
        }
        return out;
    }

    static Effect.FinishedReported finishedReport(List<Effect> effects) {
        List<Effect.FinishedReported> r = only(effects, Effect.FinishedReported.class);
        assertThat(r).as("one FinishedReported in %s", effects).hasSize(1);
        return r.get(0);
    }

    // ------------------------------------------------------------------ the driver

    /**
     * One engine rank: its state, a virtual clock, and every effect seen so far. Each event method
     * returns the effects of that event only.
     */
    static final class Node {
        final NodeState state;
        final List<Effect> all = new ArrayList<>();
        long nowNs = 1_000 * S;
        long step;

        Node(NodeConfig config) {
            this.state = NodeState.initial(config);
        }

        static Node of(NodeConfig.Builder b) {
            return new Node(b.build());
        }

        NodeConfig config() {
            return state.config();
        }

        /** Moves the clock forward. */
        Node advance(long ns) {
            nowNs += ns;
            return this;
        }

        List<Effect> on(NodeEvent e) {
            NodeReducer.Transition t = NodeReducer.apply(state, e);
            assertThat(t.state()).isSameAs(state);
            all.addAll(t.effects());
            return t.effects();
        }

        // scheduler side
        List<Effect> admit(String rid, int promptTokens, KvParams params) {
            return on(new NodeEvent.RequestAdmitted(nowNs, rid, promptTokens, promptTokens, params));
        }

        List<Effect> match(String rid, int computed) {
            return on(new NodeEvent.MatchedTokensQueried(nowNs, rid, computed));
        }

        List<Effect> alloc(String rid, BlockGroups blocks, int external) {
            return on(new NodeEvent.BlocksAllocated(nowNs, rid, blocks, external));
        }

        List<Effect> schedule() {
            return on(new NodeEvent.StepScheduled(nowNs, ++step, List.of()));
        }

        List<Effect> finish(String rid, FinishStatus status, BlockGroups blocks) {
            return on(new NodeEvent.RequestFinished(nowNs, rid, status, blocks));
        }

        List<Effect> output(List<String> finishedSending, List<String> finishedRecving) {
            return on(new NodeEvent.ConnectorOutputReceived(nowNs, finishedSending, finishedRecving));
        }

        // worker side
        List<Effect> load() {
            return on(new NodeEvent.LoadStarted(nowNs));
        }

        /** build_connector_meta followed by start_load_kv: one engine step's handover. */
        List<Effect> stepAndLoad() {
            List<Effect> out = new ArrayList<>(schedule());
            out.addAll(load());
            return out;
        }

        List<Effect> saveLayer(String layer) {
            return on(new NodeEvent.LayerSaved(nowNs, layer));
        }

        List<Effect> waitForSave() {
            return on(new NodeEvent.SaveWaited(nowNs));
        }

        List<Effect> poll() {
            return on(new NodeEvent.FinishedPolled(nowNs));
        }

        Effect.FinishedReported pollReport() {
            return finishedReport(poll());
        }

        List<Effect> handshakeDone(String key) {
            return on(new NodeEvent.HandshakeCompleted(nowNs, key));
        }

        List<Effect> completed(long statusId, boolean ok) {
            return on(new NodeEvent.TransferCompleted(nowNs, statusId, ok, ok ? 0 : -1, ok ? "" : "failed"));
        }

        List<Effect> tick() {
            return on(new NodeEvent.Tick(nowNs));
        }

        // notify listener
        List<Effect> release(String tid, Integer consumerTp) {
            return on(new NodeEvent.ReleaseReceived(nowNs, tid, consumerTp));
        }

        List<Effect> raw(String id) {
            return on(new NodeEvent.RawCompletionReceived(nowNs, id));
        }

        List<Effect> remoteBlocks(String reqId, String tid, List<Integer> blocks, int decodeRank) {
            return on(new NodeEvent.RemoteBlocksReceived(nowNs, reqId, tid, blocks, decodeRank, false));
        }

        List<Effect> writeDone(String tid) {
            return on(new NodeEvent.WriteDoneReceived(nowNs, tid));
        }

        List<Effect> rejected(String reason, boolean kills) {
            return on(new NodeEvent.FrameRejected(nowNs, reason, new byte[] {(byte) 0xff}, kills));
        }

        /** One forward pass: save_kv_layer for each layer, then wait_for_save; all their effects. */
        List<Effect> forward(String... layers) {
            List<Effect> fx = new ArrayList<>();
            for (String layer : layers) {
                fx.addAll(saveLayer(layer));
            }
            fx.addAll(waitForSave());
            return fx;
        }

        // notify publisher
        List<Effect> sendFailed(String messageType, String tid, String reason) {
            return on(new NodeEvent.NotifySendFailed(nowNs, "tcp://10.0.0.2:62005", messageType, tid, reason, new byte[0]));
        }

        // ------------------------------------------------------------ composite setups

        /** A producer request admitted and allocated (mapped on the scheduler side; the worker does not know it yet). */
        Node producerRequest(String rid, String tid, int... blocks) {
            admit(rid, 16 * Math.max(blocks.length, 1), prefillParams(tid));
            match(rid, 0);
            alloc(rid, BlockGroups.single(blocks), 0);
            return this;
        }

        /** Every anomaly of a kind seen so far. */
        List<Effect.Anomaly> seen(AnomalyKind kind) {
            return anomalies(all, kind);
        }
    }
}
