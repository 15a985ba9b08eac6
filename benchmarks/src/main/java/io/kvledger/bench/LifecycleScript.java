package io.kvledger.bench;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.function.LongFunction;

/**
 * Scripted, deterministic event streams of a realistic request mix for the four node kinds (WRITE
 * producer and consumer, READ producer and consumer), built without the simulator.
 *
 * <p>The streams are generated adaptively: each event is applied to a {@link NodeState} of its node
 * while the script is written, and the effects decide what comes next (the status ids of
 * {@code PostWrite}/{@code PostRead} become {@code TransferCompleted} events, {@code SendRemoteBlocks},
 * {@code SendWriteDone} and {@code SendRelease} become frames on the peer node one step later,
 * {@code StartHandshake} is answered at once, the READ producer's returned params become the decode
 * leg's params, {@code FinishedReported} feeds {@code update_connector_output}). The recorded events
 * are immutable, so the same arrays can be replayed on fresh states any number of times; the
 * reducer is deterministic, so a replay reproduces the effects seen while recording.
 *
 * <p>Shape of the mix, per mode (one producer and one consumer engine, single DP/TP rank, one
 * full-attention group of 16-token blocks, two layers):
 * <ul>
 *   <li>at most {@value #CONCURRENCY} requests in flight (from the first admission to the last
 *       terminal phase), 0 to 3 new ones per scheduler step;</li>
 *   <li>prompts of 64 to 4096 tokens; prompts over {@value #CHUNK_TOKENS} tokens are prefilled in
 *       chunks (WRITE: pending save, then the final chunk's save);</li>
 *   <li>the decode leg runs 4 to 12 decode steps after its KV arrived, then finishes STOPPED or
 *       LENGTH_CAPPED; the prefill leg always finishes LENGTH_CAPPED (max_tokens=1);</li>
 *   <li>WRITE: both legs are dispatched together, each admitted in the proxy's step or the next, so
 *       remote_blocks reaches the producer before or after its save; READ: the decode leg is
 *       admitted the step after the producer returned its params;</li>
 *   <li>transfer completions arrive in the step they were posted or in the next one (50/50).</li>
 * </ul>
 *
 * <p>Per step, the scheduler hooks of a node come first (admission, matched tokens, alloc,
 * build_connector_meta), then the worker hooks (start_load_kv; on producers save_kv_layer per layer
 * when the step has a forward, and wait_for_save; get_finished), then the scheduler's
 * update_from_output (request_finished, update_connector_output). Frames and completions from the
 * previous step are delivered at the start of the step. Consumers get no save_kv_layer or
 * wait_for_save events (their workers return at once there). A node with nothing live skips the
 * step.
 */
public final class LifecycleScript {

    /** Requests per mode in the benchmark's script. */
    public static final int DEFAULT_REQUESTS = 512;
    /** The benchmark's seed. */
    public static final long DEFAULT_SEED = 0x6b766c6564676572L;
    /** Requests in flight per mode at most. */
    public static final int CONCURRENCY = 8;

    static final long STEP_NS = 20_000_000L;
    static final long EVENT_SPACING_NS = 2_000L;
    static final int BLOCK_SIZE = 16;
    static final int CHUNK_TOKENS = 2048;
    static final int BLOCKS_PER_CHUNK = CHUNK_TOKENS / BLOCK_SIZE;
    static final int BLOCK_POOL = 40_000;
    static final List<String> LAYERS = List.of("model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn");

    /** The four node kinds, with their role, mode and advertised address. */
    public enum NodeKind {
        WRITE_PRODUCER(Role.PRODUCER, TransferMode.WRITE, "10.0.1.1"),
        WRITE_CONSUMER(Role.CONSUMER, TransferMode.WRITE, "10.0.1.2"),
        READ_PRODUCER(Role.PRODUCER, TransferMode.READ, "10.0.2.1"),
        READ_CONSUMER(Role.CONSUMER, TransferMode.READ, "10.0.2.2");

        public final Role role;
        public final TransferMode mode;
        public final String host;

        NodeKind(Role role, TransferMode mode, String host) {
            this.role = role;
            this.mode = mode;
            this.host = host;
        }

        /** The node's configuration: the builder defaults (newest behaviour) with this host. */
        public NodeConfig config() {
            return NodeConfig.builder(role, mode).hostIp(host).cacheBlockSize(BLOCK_SIZE).layerNames(LAYERS).build();
        }

        /** The zmq_address the proxy embeds for this node (base handshake and notify ports). */
        public ZmqAddress address() {
            return new ZmqAddress(host, 6301, 61005);
        }
    }

    /** One node's recorded stream. */
    public record NodeStream(NodeKind kind, NodeConfig config, NodeEvent[] events) {
        /** A fresh state for a replay of this stream. */
        public NodeState freshState() {
            return NodeState.initial(config);
        }
    }

    /** The four streams of one script, in {@link NodeKind} order. */
    public record Script(int requests, long seed, List<NodeStream> streams) {
        public int totalEvents() {
            int n = 0;
            for (NodeStream s : streams) {
                n += s.events().length;
            }
            return n;
        }

        public NodeStream stream(NodeKind kind) {
            return streams.get(kind.ordinal());
        }
    }

    private LifecycleScript() {}

    /** The benchmark's script: {@value #DEFAULT_REQUESTS} requests per mode. */
    public static Script standard() {
        return build(DEFAULT_REQUESTS, DEFAULT_SEED);
    }

    /** Builds the four streams for {@code requests} requests per mode from {@code seed}. */
    public static Script build(int requests, long seed) {
        Pair write = new Pair(TransferMode.WRITE, requests, new Random(seed ^ 0x5752495445L));
        write.run();
        Pair read = new Pair(TransferMode.READ, requests, new Random(seed ^ 0x52454144L));
        read.run();
        List<NodeStream> streams = List.of(write.producer.stream(), write.consumer.stream(),
                read.producer.stream(), read.consumer.stream());
        return new Script(requests, seed, streams);
    }

    // ------------------------------------------------------------------ recording

    /** One node while the script is written: its state, its recorded events, its clock and inboxes. */
    private static final class Recorder {
        final NodeKind kind;
        final NodeConfig config;
        final NodeState state;
        final ArrayList<NodeEvent> events = new ArrayList<>();
        /** Frames to deliver at the start of a step: (step, factory of the event from its time). */
        final ArrayList<Map.Entry<Integer, LongFunction<NodeEvent>>> inbox = new ArrayList<>();
        /** Status ids to complete later in this step, and at the start of the next one. */
        ArrayList<Long> completeThisStep = new ArrayList<>();
        ArrayList<Long> completeNextStep = new ArrayList<>();
        final ArrayList<String> handshakesToAnswer = new ArrayList<>();
        long clockNs;
        int nextBlock = 1;

        Recorder(NodeKind kind) {
            this.kind = kind;
            this.config = kind.config();
            this.state = NodeState.initial(config);
        }

        long at(long floorNs) {
            clockNs = Math.max(clockNs + EVENT_SPACING_NS, floorNs);
            return clockNs;
        }

        int[] allocate(int blocks) {
            int[] ids = new int[blocks];
            for (int i = 0; i < blocks; i++) {
                ids[i] = nextBlock;
                nextBlock = nextBlock == BLOCK_POOL ? 1 : nextBlock + 1;
            }
            return ids;
        }

        NodeStream stream() {
            return new NodeStream(kind, config, events.toArray(new NodeEvent[0]));
        }
    }

    /** A request of the mix: both legs' ids, blocks and progress. */
    private static final class Req {
        final String transferId;
        final String producerRid;
        final String consumerRid;
        final int promptTokens;
        final int chunks;
        final int decodeSteps;
        final FinishStatus consumerFinish;
        int[] producerBlocks;
        int[] consumerBlocks;
        int producerStep = -1;
        int consumerStep = -1;
        int chunksScheduled;
        boolean producerAdmitted;
        boolean producerFinishSent;
        boolean producerTerminal;
        boolean consumerAdmitted;
        boolean consumerHasKv;
        boolean consumerTerminal;
        int decodeLeft;
        KvParams producerResponse;

        Req(String transferId, String producerRid, String consumerRid, int promptTokens, int decodeSteps,
            FinishStatus consumerFinish) {
            this.transferId = transferId;
            this.producerRid = producerRid;
            this.consumerRid = consumerRid;
            this.promptTokens = promptTokens;
            this.chunks = (promptTokens + CHUNK_TOKENS - 1) / CHUNK_TOKENS;
            this.decodeSteps = decodeSteps;
            this.consumerFinish = consumerFinish;
        }

        int blocks() {
            return (promptTokens + BLOCK_SIZE - 1) / BLOCK_SIZE;
        }

        int[] chunkBlocks(int chunk) {
            int from = chunk * BLOCKS_PER_CHUNK;
            int to = Math.min(producerBlocks.length, from + BLOCKS_PER_CHUNK);
            return Arrays.copyOfRange(producerBlocks, from, to);
        }

        boolean done() {
            return producerTerminal && consumerTerminal;
        }
    }

    /** One producer/consumer pair of one mode, stepped together. */
    private static final class Pair {
        final TransferMode mode;
        final int total;
        final Random rnd;
        final Recorder producer;
        final Recorder consumer;
        final ArrayList<Req> reqs = new ArrayList<>();
        final HashMap<String, Req> byRid = new HashMap<>();
        final HashMap<String, Req> byTid = new HashMap<>();
        /** The last get_finished reply of a node (doneSending, doneRecving). */
        Effect.FinishedReported lastReport;
        int created;

        Pair(TransferMode mode, int total, Random rnd) {
            this.mode = mode;
            this.total = total;
            this.rnd = rnd;
            boolean write = mode == TransferMode.WRITE;
            this.producer = new Recorder(write ? NodeKind.WRITE_PRODUCER : NodeKind.READ_PRODUCER);
            this.consumer = new Recorder(write ? NodeKind.WRITE_CONSUMER : NodeKind.READ_CONSUMER);
        }

        void run() {
            int maxSteps = 200 * Math.max(total, 1) + 1000;
            for (int s = 1; ; s++) {
                if (s > maxSteps) {
                    throw new IllegalStateException(mode + " script did not converge after " + maxSteps + " steps: "
                            + producer.state.leftovers() + " / " + consumer.state.leftovers());
                }
                arrivals(s);
                if (mode == TransferMode.WRITE) {
                    writeConsumerStep(s);
                    writeProducerStep(s);
                } else {
                    readProducerStep(s);
                    readConsumerStep(s);
                }
                if (created == total && reqs.stream().allMatch(Req::done)
                        && producer.inbox.isEmpty() && consumer.inbox.isEmpty()) {
                    return;
                }
            }
        }

        // ---------------------------------------------------------------- the mix

        void arrivals(int s) {
            long inFlight = reqs.stream().filter(r -> !r.done()).count();
            int burst = rnd.nextInt(4);
            for (int i = 0; i < burst && inFlight < CONCURRENCY && created < total; i++, inFlight++) {
                Req r = newRequest();
                r.producerStep = s + rnd.nextInt(2);
                if (mode == TransferMode.WRITE) {
                    r.consumerStep = s + rnd.nextInt(2);
                }
                reqs.add(r);
                byRid.put(r.producerRid, r);
                byRid.put(r.consumerRid, r);
                byTid.put(r.transferId, r);
                created++;
            }
        }

        Req newRequest() {
            String uuidHex = hex16(rnd.nextLong()) + hex16(rnd.nextLong());
            String proxyId = RequestIds.proxyRequestId(producer.kind.address(), consumer.kind.address(), uuidHex);
            String tid = "tx-" + uuid4().toString();
            String pRid = proxyId + "-" + hex8(rnd.nextInt());
            String dRid = proxyId + "-" + hex8(rnd.nextInt());
            int bucket = rnd.nextInt(100);
            int tokens;
            if (bucket < 25) {
                tokens = 64 + rnd.nextInt(193);
            } else if (bucket < 75) {
                tokens = 257 + rnd.nextInt(768);
            } else if (bucket < 94) {
                tokens = 1025 + rnd.nextInt(1024);
            } else {
                tokens = 2049 + rnd.nextInt(2048);
            }
            int decodeSteps = 4 + rnd.nextInt(9);
            FinishStatus fin = rnd.nextInt(3) == 0 ? FinishStatus.FINISHED_LENGTH_CAPPED : FinishStatus.FINISHED_STOPPED;
            Req r = new Req(tid, pRid, dRid, tokens, decodeSteps, fin);
            r.producerBlocks = producer.allocate(r.blocks());
            r.consumerBlocks = consumer.allocate(r.blocks());
            return r;
        }

        UUID uuid4() {
            long msb = (rnd.nextLong() & ~0xF000L) | 0x4000L;
            long lsb = (rnd.nextLong() & 0x3FFFFFFFFFFFFFFFL) | 0x8000000000000000L;
            return new UUID(msb, lsb);
        }

        // ---------------------------------------------------------------- applying and routing

        List<Effect> apply(Recorder n, NodeEvent e) {
            n.events.add(e);
            List<Effect> effects = NodeReducer.apply(n.state, e).effects();
            route(n, effects);
            while (!n.handshakesToAnswer.isEmpty()) {
                String key = n.handshakesToAnswer.remove(0);
                NodeEvent hs = new NodeEvent.HandshakeCompleted(n.at(0), key);
                n.events.add(hs);
                route(n, NodeReducer.apply(n.state, hs).effects());
            }
            return effects;
        }

        void route(Recorder n, List<Effect> effects) {
            Recorder peer = n == producer ? consumer : producer;
            int deliverAt = currentStep + 1;
            for (Effect ef : effects) {
                switch (ef) {
                    case Effect.StartHandshake h -> n.handshakesToAnswer.add(h.key());
                    case Effect.PostWrite w -> (rnd.nextBoolean() ? n.completeThisStep : n.completeNextStep).add(w.statusId());
                    case Effect.PostRead rd -> (rnd.nextBoolean() ? n.completeThisStep : n.completeNextStep).add(rd.statusId());
                    case Effect.SendRemoteBlocks rb -> {
                        String tid = String.valueOf(rb.transferId());
                        List<Integer> blocks = List.copyOf(rb.blockNotifyList());
                        peer.inbox.add(Map.entry(deliverAt, t -> new NodeEvent.RemoteBlocksReceived(t, rb.reqId(), tid,
                                blocks, rb.decodeRank(), false)));
                    }
                    case Effect.SendWriteDone wd ->
                            peer.inbox.add(Map.entry(deliverAt, t -> new NodeEvent.WriteDoneReceived(t, wd.transferId())));
                    case Effect.SendRelease rel -> {
                        String tid = String.valueOf(rel.transferId());
                        int tp = rel.consumerTpSize();
                        peer.inbox.add(Map.entry(deliverAt, t -> new NodeEvent.ReleaseReceived(t, tid, tp)));
                        Req r = byTid.get(tid);
                        if (r != null && n == consumer && !r.consumerHasKv) {
                            r.consumerHasKv = true; // READ: reads done, decoding starts next step
                            r.decodeLeft = r.decodeSteps;
                        }
                    }
                    case Effect.FinishedReported fr -> lastReport = fr;
                    case Effect.FinishDecision fd -> {
                        Req r = byRid.get(fd.requestId());
                        if (r != null && n == producer && fd.params() != null) {
                            r.producerResponse = fd.params();
                        }
                    }
                    case Effect.PhaseChanged pc -> {
                        Req r = byRid.get(pc.requestId());
                        if (r != null && pc.to().terminal()) {
                            if (n == producer) {
                                r.producerTerminal = true;
                            } else {
                                r.consumerTerminal = true;
                            }
                        }
                    }
                    case Effect.SendWriteFailed _, Effect.MatchedTokens _, Effect.MetadataBuilt _,
                            Effect.FinishedSendingRewritten _, Effect.DeferralStarted _, Effect.AckParked _,
                            Effect.AckSurfaced _, Effect.StaleAckDropped _, Effect.Unmapped _, Effect.Anomaly _ -> { }
                }
            }
        }

        int currentStep;

        /** Frames due this step and the completions left over from the previous step. */
        void deliver(Recorder n, int s, long t0) {
            ArrayList<Long> late = n.completeNextStep;
            n.completeNextStep = new ArrayList<>();
            for (long id : late) {
                apply(n, new NodeEvent.TransferCompleted(n.at(t0), id, true, 0, "Succeeded"));
            }
            List<Map.Entry<Integer, LongFunction<NodeEvent>>> due = new ArrayList<>();
            n.inbox.removeIf(en -> {
                if (en.getKey() <= s) {
                    due.add(en);
                    return true;
                }
                return false;
            });
            for (Map.Entry<Integer, LongFunction<NodeEvent>> en : due) {
                apply(n, en.getValue().apply(n.at(t0)));
            }
        }

        void completeThisStep(Recorder n, long t0) {
            while (!n.completeThisStep.isEmpty()) {
                long id = n.completeThisStep.remove(0);
                apply(n, new NodeEvent.TransferCompleted(n.at(t0), id, true, 0, "Succeeded"));
            }
        }

        List<String> getFinished(Recorder n, long t0, boolean sending) {
            lastReport = null;
            apply(n, new NodeEvent.FinishedPolled(n.at(t0)));
            if (lastReport == null) {
                throw new IllegalStateException("get_finished without a FinishedReported on " + n.kind);
            }
            return List.copyOf(sending ? lastReport.doneSending() : lastReport.doneRecving());
        }

        boolean producerLive() {
            for (Req r : reqs) {
                if (r.producerAdmitted && !r.producerTerminal) {
                    return true;
                }
            }
            return false;
        }

        boolean consumerLive() {
            for (Req r : reqs) {
                if (r.consumerAdmitted && !r.consumerTerminal) {
                    return true;
                }
            }
            return false;
        }

        // ---------------------------------------------------------------- producer (both modes)

        void producerStep(int s) {
            currentStep = s;
            Recorder p = producer;
            long t0 = s * STEP_NS;
            deliver(p, s, t0);
            List<Req> admitting = new ArrayList<>();
            List<Req> chunking = new ArrayList<>();
            for (Req r : reqs) {
                if (r.producerStep == s && !r.producerAdmitted) {
                    admitting.add(r);
                } else if (r.producerAdmitted && r.chunksScheduled < r.chunks) {
                    chunking.add(r);
                }
            }
            if (admitting.isEmpty() && !producerLive()) {
                completeThisStep(p, t0);
                return;
            }
            for (Req r : admitting) {
                KvParams params = KvParams.of("remote_dp_size", 1, "remote_tp_size", 1, "transfer_id", r.transferId,
                        "do_remote_decode", true, "do_remote_prefill", false, "remote_engine_id", null,
                        "remote_block_ids", null);
                apply(p, new NodeEvent.RequestAdmitted(p.at(t0), r.producerRid, r.promptTokens, r.promptTokens, params));
                apply(p, new NodeEvent.MatchedTokensQueried(p.at(t0), r.producerRid, 0));
                apply(p, new NodeEvent.BlocksAllocated(p.at(t0), r.producerRid, BlockGroups.single(r.chunkBlocks(0)), 0));
                r.producerAdmitted = true;
                r.chunksScheduled = 1;
            }
            List<NodeEvent.CachedRequest> cached = new ArrayList<>();
            for (Req r : chunking) {
                cached.add(new NodeEvent.CachedRequest(r.producerRid, BlockGroups.single(r.chunkBlocks(r.chunksScheduled))));
                r.chunksScheduled++;
            }
            apply(p, new NodeEvent.StepScheduled(p.at(t0), s, List.copyOf(cached)));
            apply(p, new NodeEvent.LoadStarted(p.at(t0)));
            if (!admitting.isEmpty() || !chunking.isEmpty()) {
                for (String layer : LAYERS) {
                    apply(p, new NodeEvent.LayerSaved(p.at(t0), layer));
                }
            }
            apply(p, new NodeEvent.SaveWaited(p.at(t0)));
            completeThisStep(p, t0);
            List<String> doneSending = getFinished(p, t0, true);
            List<Req> prefilled = new ArrayList<>(admitting);
            prefilled.addAll(chunking);
            for (Req r : prefilled) {
                if (r.chunksScheduled == r.chunks && !r.producerFinishSent) {
                    apply(p, new NodeEvent.RequestFinished(p.at(t0), r.producerRid, FinishStatus.FINISHED_LENGTH_CAPPED,
                            BlockGroups.single(r.producerBlocks)));
                    r.producerFinishSent = true;
                    if (mode == TransferMode.READ) {
                        if (r.producerResponse == null) {
                            throw new IllegalStateException("READ producer returned no params for " + r.producerRid);
                        }
                        r.consumerStep = s + 1; // the proxy forwards the decode leg after the prefill response
                    }
                }
            }
            apply(p, new NodeEvent.ConnectorOutputReceived(p.at(t0), doneSending.isEmpty() ? null : doneSending, null));
        }

        void writeProducerStep(int s) {
            producerStep(s);
        }

        void readProducerStep(int s) {
            producerStep(s);
        }

        // ---------------------------------------------------------------- consumers

        void writeConsumerStep(int s) {
            currentStep = s;
            Recorder d = consumer;
            long t0 = s * STEP_NS;
            deliver(d, s, t0);
            List<Req> admitting = new ArrayList<>();
            List<Req> decoding = new ArrayList<>();
            for (Req r : reqs) {
                if (r.consumerStep == s && !r.consumerAdmitted) {
                    admitting.add(r);
                } else if (r.consumerAdmitted && r.consumerHasKv && !r.consumerTerminal) {
                    decoding.add(r);
                }
            }
            if (admitting.isEmpty() && !consumerLive()) {
                return;
            }
            for (Req r : admitting) {
                KvParams params = KvParams.of("do_remote_decode", false, "do_remote_prefill", true,
                        "remote_engine_id", null, "remote_block_ids", null, "transfer_id", r.transferId,
                        "remote_dp_size", 1, "remote_tp_size", 1);
                apply(d, new NodeEvent.RequestAdmitted(d.at(t0), r.consumerRid, r.promptTokens, r.promptTokens, params));
                apply(d, new NodeEvent.MatchedTokensQueried(d.at(t0), r.consumerRid, 0));
                apply(d, new NodeEvent.BlocksAllocated(d.at(t0), r.consumerRid, BlockGroups.single(r.consumerBlocks),
                        r.promptTokens));
                r.consumerAdmitted = true;
            }
            apply(d, new NodeEvent.StepScheduled(d.at(t0), s, cachedOf(decoding)));
            apply(d, new NodeEvent.LoadStarted(d.at(t0)));
            List<String> doneRecving = getFinished(d, t0, false);
            finishDecodes(d, t0, decoding);
            apply(d, new NodeEvent.ConnectorOutputReceived(d.at(t0), null, doneRecving));
            for (String rid : doneRecving) {
                Req r = byRid.get(rid);
                if (r != null && !r.consumerHasKv) {
                    r.consumerHasKv = true;
                    r.decodeLeft = r.decodeSteps;
                }
            }
        }

        void readConsumerStep(int s) {
            currentStep = s;
            Recorder d = consumer;
            long t0 = s * STEP_NS;
            deliver(d, s, t0);
            List<Req> admitting = new ArrayList<>();
            List<Req> decoding = new ArrayList<>();
            for (Req r : reqs) {
                if (r.consumerStep == s && !r.consumerAdmitted) {
                    admitting.add(r);
                } else if (r.consumerAdmitted && r.consumerHasKv && !r.consumerTerminal) {
                    decoding.add(r);
                }
            }
            if (admitting.isEmpty() && !consumerLive()) {
                completeThisStep(d, t0);
                return;
            }
            for (Req r : admitting) {
                KvParams resp = r.producerResponse;
                KvParams params = KvParams.of("do_remote_decode", false, "do_remote_prefill", true,
                        "remote_engine_id", resp.get("remote_engine_id"), "remote_block_ids", resp.get("remote_block_ids"),
                        "transfer_id", resp.get("transfer_id"), "remote_dp_size", 1, "remote_tp_size", 1);
                apply(d, new NodeEvent.RequestAdmitted(d.at(t0), r.consumerRid, r.promptTokens, r.promptTokens, params));
                apply(d, new NodeEvent.MatchedTokensQueried(d.at(t0), r.consumerRid, 0));
                apply(d, new NodeEvent.BlocksAllocated(d.at(t0), r.consumerRid, BlockGroups.single(r.consumerBlocks),
                        r.promptTokens - 1));
                r.consumerAdmitted = true;
            }
            apply(d, new NodeEvent.StepScheduled(d.at(t0), s, cachedOf(decoding)));
            apply(d, new NodeEvent.LoadStarted(d.at(t0)));
            completeThisStep(d, t0);
            getFinished(d, t0, false);
            finishDecodes(d, t0, decoding);
            apply(d, new NodeEvent.ConnectorOutputReceived(d.at(t0), null, List.of()));
        }

        List<NodeEvent.CachedRequest> cachedOf(List<Req> decoding) {
            List<NodeEvent.CachedRequest> cached = new ArrayList<>(decoding.size());
            for (Req r : decoding) {
                cached.add(new NodeEvent.CachedRequest(r.consumerRid, null));
            }
            return List.copyOf(cached);
        }

        void finishDecodes(Recorder d, long t0, List<Req> decoding) {
            for (Req r : decoding) {
                if (--r.decodeLeft == 0) {
                    apply(d, new NodeEvent.RequestFinished(d.at(t0), r.consumerRid, r.consumerFinish,
                            BlockGroups.single(r.consumerBlocks)));
                }
            }
        }
    }

    private static String hex16(long v) {
        String h = Long.toHexString(v);
        return "0".repeat(16 - h.length()) + h;
    }

    private static String hex8(int v) {
        String h = Integer.toHexString(v);
        return "0".repeat(8 - h.length()) + h;
    }

    /** The phases a request may end in for the script to count as complete. */
    public static boolean completedPhase(RequestPhase p) {
        return p == RequestPhase.FINISHED || p == RequestPhase.FREED_AFTER_ACK;
    }
}
