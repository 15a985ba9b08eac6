package io.kvledger.core.node.properties;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.GroupKind;
import io.kvledger.core.config.KvGroupSpec;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Well-formed complete lifecycles on a producer and a consumer node wired together: N requests,
 * each going through the toy proxy's READ or WRITE flow (protocol 4.2, 5.2 to 5.5) with every
 * frame, handshake and transfer completion delivered exactly once, in an interleaving chosen by
 * a list of choice numbers (shrinkable: when the list runs out the harness drains in a fixed
 * order).
 *
 * <p>The harness plays vLLM and the wire: an engine step of a node is StepScheduled, LoadStarted,
 * (WRITE producer: LayerSaved for each layer, SaveWaited), FinishedPolled and
 * ConnectorOutputReceived with what the poll reported; request hooks run between steps; effects
 * that go to the wire (StartHandshake, PostRead/PostWrite, SendRelease, SendRemoteBlocks,
 * SendWriteDone) become pending deliveries to the right node. The per-request stepping and the
 * interleaving are {@link RequestDriver}'s.
 */
final class LifecycleHarness {

    private LifecycleHarness() {}

    /** One request: its prompt length, whether P finishes it length-capped, and its prefill chunks (WRITE). */
    record ReqPlan(int promptTokens, boolean capped, int chunks) implements RequestDriver.Sized {}

    /**
     * A lifecycle scenario.
     *
     * @param groupsVariant 0: one full-attention group; 1: full + sliding window (HMA); 2: full +
     *                      mamba (hybrid, HMA); only newest READ uses variants 1 and 2
     * @param producerDpRank the producer's global DP rank (of 2) when {@code producerDp2}
     */
    record Plan(TransferMode mode, boolean seed, int groupsVariant, boolean producerDp2, int producerDpRank,
                List<ReqPlan> requests, List<Integer> choices) {

        List<KvGroupSpec> groups() {
            if (seed || mode == TransferMode.WRITE) {
                return List.of(KvGroupSpec.fullAttention(16));
            }
            return switch (groupsVariant) {
                case 1 -> List.of(KvGroupSpec.fullAttention(16), KvGroupSpec.slidingWindow(16, 32));
                case 2 -> List.of(KvGroupSpec.fullAttention(16), KvGroupSpec.mamba(16));
                default -> List.of(KvGroupSpec.fullAttention(16));
            };
        }

        NodeConfig config(Role role) {
            NodeConfig.Builder b = NodeConfig.builder(role, mode)
                    .behaviour(seed ? Behaviour.seed() : Behaviour.newest())
                    .groups(groups())
                    .hmaEnabled(groups().size() > 1);
            if (role == Role.PRODUCER) {
                b.hostIp(ReducerFixtures.PREFILL.host()).handshakePort(String.valueOf(ReducerFixtures.PREFILL.handshakePort()))
                        .notifyPort(String.valueOf(ReducerFixtures.PREFILL.notifyPort()));
                if (producerDp2) {
                    b.dp(producerDpRank, 2, 2);
                }
            } else {
                b.hostIp(ReducerFixtures.DECODE.host()).handshakePort(String.valueOf(ReducerFixtures.DECODE.handshakePort()))
                        .notifyPort(String.valueOf(ReducerFixtures.DECODE.notifyPort()));
            }
            return b.build();
        }

        /** The events of both nodes, interleaved in the order they were applied. */
        @Override
        public String toString() {
            Outcome o;
            try {
                o = run(this);
            } catch (RuntimeException e) {
                return "\nPlan{" + mode + " " + (seed ? "seed" : "newest") + " groups=" + groups() + " requests=" + requests
                        + " choices=" + choices + "; the reducer threw: " + e + "}";
            }
            StringBuilder b = new StringBuilder("\nPlan{").append(mode).append(' ').append(seed ? "seed" : "newest")
                    .append(" groups=").append(groups()).append(" producer dp=")
                    .append(producerDp2 ? producerDpRank + "/2" : "0/1").append(" requests=").append(requests)
                    .append(" choices=").append(choices).append('\n');
            for (String line : o.log()) {
                b.append("  ").append(line).append('\n');
            }
            if (o.stuck() != null) {
                b.append("  STUCK: ").append(o.stuck()).append('\n');
            }
            return b.append('}').toString();
        }
    }

    /** The two nodes after the run, the interleaved log, and why the harness gave up (or null). */
    record Outcome(ReducerFixtures.Run producer, ReducerFixtures.Run consumer, List<String> log, String stuck,
                   List<String> requestIds) {}

    /** Something the wire will hand to a node. */
    private record Delivery(boolean toProducer, String label, java.util.function.LongFunction<NodeEvent> event) {}

    static Outcome run(Plan plan) {
        return new Driver(plan).run();
    }

    private static final class Driver extends RequestDriver<ReqPlan, Delivery> {
        final Plan plan;
        final ReducerFixtures.Run p;
        final ReducerFixtures.Run d;
        final List<String> log = new ArrayList<>();
        long pStep;
        long dStep;

        Driver(Plan plan) {
            super(plan.requests(), plan.choices(), ReqPlan::capped);
            this.plan = plan;
            this.p = new ReducerFixtures.Run(plan.config(Role.PRODUCER));
            this.d = new ReducerFixtures.Run(plan.config(Role.CONSUMER));
        }

        Outcome run() {
            String stuck = interleave(4000);
            // A few more steps on each node, as a running engine keeps stepping.
            for (int i = 0; i < 3 && stuck == null; i++) {
                producerStep();
                consumerStep();
            }
            return new Outcome(p, d, log, stuck, requestIds());
        }

        @Override
        protected List<Runnable> steps() {
            return List.of(this::producerStep, this::consumerStep);
        }

        @Override
        protected TransferMode mode() {
            return plan.mode();
        }

        @Override
        protected String status() {
            StringBuilder b = new StringBuilder();
            for (Req<ReqPlan> r : reqs) {
                b.append("[req ").append(r.index).append(" P ").append(r.p).append('/').append(p.state.phaseOf(r.rid))
                        .append(" D ").append(r.d).append('/').append(d.state.phaseOf(r.rid)).append("] ");
            }
            b.append("wire=").append(wire.size());
            return b.toString();
        }

        // ---------------------------------------------------------- applying and routing

        List<Effect> apply(boolean producer, NodeEvent e) {
            now = Math.max(now, e.atNs());
            ReducerFixtures.Run node = producer ? p : d;
            List<Effect> out = node.apply(e);
            log.add((producer ? "P" : "D") + String.format(" #%03d ", node.events.size() - 1) + ReducerFixtures.render(e));
            route(producer, out);
            return out;
        }

        void route(boolean producer, List<Effect> out) {
            for (Effect e : out) {
                switch (e) {
                    case Effect.StartHandshake h -> wire.add(new Delivery(producer, (producer ? "P" : "D") + " handshake " + h.key(),
                            at -> new NodeEvent.HandshakeCompleted(at, h.key())));
                    case Effect.PostRead r -> wire.add(new Delivery(false, "D read " + r.statusId(),
                            at -> new NodeEvent.TransferCompleted(at, r.statusId(), true, 0, "ok")));
                    case Effect.PostWrite w -> wire.add(new Delivery(true, "P write " + w.statusId(),
                            at -> new NodeEvent.TransferCompleted(at, w.statusId(), true, 0, "ok")));
                    case Effect.SendRelease rel -> wire.add(new Delivery(true, "release " + rel.transferId(),
                            at -> new NodeEvent.ReleaseReceived(at, rel.transferId().pythonStr(), rel.consumerTpSize())));
                    case Effect.SendRemoteBlocks rb -> wire.add(new Delivery(true, "remote_blocks " + rb.transferId(),
                            at -> new NodeEvent.RemoteBlocksReceived(at, rb.reqId(), rb.transferId().pythonStr(),
                                    rb.blockNotifyList(), rb.decodeRank(), false)));
                    case Effect.SendWriteDone wd -> wire.add(new Delivery(false, "write_done " + wd.transferId(),
                            at -> new NodeEvent.WriteDoneReceived(at, wd.transferId())));
                    case Effect.FinishDecision fd when producer -> noteDecision(fd);
                    case Effect.MatchedTokens mt when !producer -> noteMatched(mt);
                    default -> { }
                }
            }
        }

        @Override
        protected void hook(Req<ReqPlan> r, boolean producer, java.util.function.LongFunction<NodeEvent> event) {
            apply(producer, event.apply(tick()));
        }

        @Override
        protected void deliver(Delivery w) {
            wire.remove(w);
            apply(w.toProducer(), w.event().apply(tick()));
        }

        // ---------------------------------------------------------- engine steps

        void producerStep() {
            List<NodeEvent.CachedRequest> cached = new ArrayList<>();
            List<Req<ReqPlan>> prefilledThisStep = prefillChunks(r -> true, cached);
            apply(true, new NodeEvent.StepScheduled(tick(), pStep++, cached));
            apply(true, new NodeEvent.LoadStarted(tick()));
            if (plan.mode() == TransferMode.WRITE) {
                for (String layer : p.config.layerNames()) {
                    apply(true, new NodeEvent.LayerSaved(tick(), layer));
                }
                apply(true, new NodeEvent.SaveWaited(tick()));
            }
            List<String> sending = List.of();
            List<String> recving = List.of();
            for (Effect e : apply(true, new NodeEvent.FinishedPolled(tick()))) {
                if (e instanceof Effect.FinishedReported f) {
                    sending = f.doneSending();
                    recving = f.doneRecving();
                }
            }
            apply(true, new NodeEvent.ConnectorOutputReceived(tick(), sending, recving));
            for (Req<ReqPlan> r : prefilledThisStep) {
                r.p = PStage.PREFILLED;
            }
        }

        void consumerStep() {
            apply(false, new NodeEvent.StepScheduled(tick(), dStep++, List.of()));
            apply(false, new NodeEvent.LoadStarted(tick()));
            List<String> recving = List.of();
            for (Effect e : apply(false, new NodeEvent.FinishedPolled(tick()))) {
                if (e instanceof Effect.FinishedReported f) {
                    recving = f.doneRecving();
                }
            }
            apply(false, new NodeEvent.ConnectorOutputReceived(tick(), List.of(), recving));
        }

        // ---------------------------------------------------------- request hooks

        boolean hybrid() {
            return plan.groups().size() > 1 && plan.groups().get(1).kind() == GroupKind.MAMBA;
        }

        /** The producer's group-0 blocks (ids distinct per request and node). */
        @Override
        protected int[] producerBlocks(Req<ReqPlan> r) {
            int tokens = hybrid() ? Math.max(r.plan.promptTokens() - 1, 1) : r.plan.promptTokens(); // #51052 truncation
            return blockIds(1000 * (r.index + 1), blocksFor(tokens));
        }

        @Override
        protected BlockGroups producerAllocation(Req<ReqPlan> r, int[] firstChunk) {
            return withOtherGroups(firstChunk, 1000 * (r.index + 1));
        }

        @Override
        protected NodeEvent producerFinish(Req<ReqPlan> r, long at) {
            FinishStatus st = r.plan.capped() ? FinishStatus.FINISHED_LENGTH_CAPPED : FinishStatus.FINISHED_STOPPED;
            return new NodeEvent.RequestFinished(at, r.rid, st, withOtherGroups(producerBlocks(r), 1000 * (r.index + 1)));
        }

        @Override
        protected boolean decodeReached(Req<ReqPlan> r, RequestPhase ready) {
            return d.state.phaseOf(r.rid) == ready;
        }

        BlockGroups withOtherGroups(int[] group0, int base) {
            List<KvGroupSpec> g = plan.groups();
            int[][] out = new int[g.size()][];
            out[0] = group0;
            for (int i = 1; i < g.size(); i++) {
                if (g.get(i).kind() == GroupKind.MAMBA) {
                    out[i] = new int[] {base + 900}; // one running-state slot
                } else {
                    out[i] = new int[group0.length];
                    for (int k = 0; k < group0.length; k++) {
                        out[i][k] = base + 500 + k;
                    }
                }
            }
            return BlockGroups.of(out);
        }

        @Override
        protected BlockGroups consumerBlocks(Req<ReqPlan> r) {
            int[] ids = blockIds(5000 + 1000 * (r.index + 1), blocksFor(r.plan.promptTokens()));
            return withOtherGroups(ids, 5000 + 1000 * (r.index + 1));
        }

        @Override
        protected KvParams prefillLeg(Req<ReqPlan> r) {
            if (!r.plan.capped() && plan.mode() == TransferMode.WRITE) {
                // a WRITE request that is not a disaggregated one still carries a transfer id (mapped: C.2)
                return KvParams.of("transfer_id", r.tid);
            }
            return KvParams.of("remote_dp_size", 1L, "remote_tp_size", 1L, "transfer_id", r.tid, "do_remote_decode", true,
                    "do_remote_prefill", false, "remote_engine_id", null, "remote_block_ids", null);
        }

        @Override
        protected KvParams decodeLeg(Req<ReqPlan> r) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("do_remote_decode", false);
            m.put("do_remote_prefill", true);
            if (plan.mode() == TransferMode.READ) {
                m.put("remote_engine_id", r.producerResponse.get("remote_engine_id"));
                m.put("remote_block_ids", r.producerResponse.get("remote_block_ids"));
                m.put("transfer_id", r.producerResponse.get("transfer_id"));
            } else {
                m.put("remote_engine_id", null);
                m.put("remote_block_ids", null);
                m.put("transfer_id", r.tid);
            }
            m.put("remote_dp_size", plan.producerDp2() ? 2L : 1L);
            m.put("remote_tp_size", 1L);
            if (plan.producerDp2()) {
                m.put("remote_dp_rank", (long) plan.producerDpRank());
            }
            return KvParams.of(m);
        }
    }
}
