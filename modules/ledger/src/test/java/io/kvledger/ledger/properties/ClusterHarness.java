package io.kvledger.ledger.properties;

import io.kvledger.core.node.properties.ReducerFixtures;
import io.kvledger.core.node.properties.RequestDriver;
import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.diagnosis.Ledger;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.moriio.PortMath;
import io.kvledger.core.node.NodeReducer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A whole P/D deployment of engine ranks wired together: a prefill instance of {@code pDp} DP
 * ranks of {@code pTp} TP workers and a decode instance of {@code dDp} x {@code dTp}, one node
 * reducer per (DP rank, TP rank), as kvledger runs one node per engine rank. The harness plays
 * vLLM and the wire:
 *
 * <ul>
 *   <li>Scheduler hooks (admission, matched tokens, alloc, step, finish, connector output) go to
 *       every TP worker of the request's DP rank alike: one scheduler per DP rank, mirrored. Only
 *       TP rank 0's scheduler-side sends (remote_blocks, the abort-before-alloc release) go on the
 *       wire, since upstream has one scheduler; every worker's sends do.
 *   <li>An engine step of a DP rank is StepScheduled, LoadStarted, (WRITE producer: LayerSaved per
 *       layer, SaveWaited), FinishedPolled on every TP worker, then one ConnectorOutputReceived
 *       with what vLLM's KV output aggregator makes of the workers' reports: a request is finished
 *       sending (or receiving) once every TP worker of the rank reported it.
 *   <li>Frames go to the rank listening on their host and port (base + folded DP rank + TP rank);
 *       handshakes are answered by the rank whose handshake port was dialled; posted transfers
 *       complete. A frame or handshake addressed to no rank is recorded as undeliverable.
 * </ul>
 *
 * <p>Every frame, handshake and completion is delivered exactly once, in an interleaving chosen by
 * a list of choice numbers (shrinkable; when it runs out the harness drains in a fixed order).
 * The random plans keep to the shapes upstream supports: a decode TP size that is a multiple of
 * the prefill's in READ (the ACK fan-in of #46290/#46332), equal TP sizes in WRITE (the decode
 * scheduler sends one remote_blocks per local TP rank), and no instance with both DP > 1 and TP > 1
 * (listeners and dialers compute ports differently there, class 23). {@link Shape#tp} builds any
 * other TP ratio under any preset, and a plan may lose one frame ({@link Plan#lose()}); with
 * unequal TP sizes the engines keep stepping past defer_timeout at the end, so that what only the
 * reap or a write's expiry ends is seen ({@code HeterogeneousTpTest}). The per-request stepping
 * and the interleaving are the core's {@link RequestDriver}, which the core's two-node lifecycle
 * harness drives as well.
 */
final class ClusterHarness {

    private ClusterHarness() {}

    /** The deployment. */
    /**
     * @param tpVote whether the decode ranks journal the TP-wide eager-handshake vote (#46116,
     *               {@code awaits_tp_vote}): the harness then plays the all_reduce, answering every
     *               TP worker of a decode DP rank with vote 1 once each of them finished its eager
     *               handshakes with the engine
     */
    record Shape(TransferMode mode, boolean seed, int pDp, int pTp, int dDp, int dTp, boolean tpVote, String profile) {

        Shape(TransferMode mode, boolean seed, int pDp, int pTp, int dDp, int dTp, boolean tpVote) {
            this(mode, seed, pDp, pTp, dDp, dTp, tpVote, seed ? "seed" : "newest");
        }

        Shape(TransferMode mode, boolean seed, int pDp, int pTp, int dDp, int dTp) {
            this(mode, seed, pDp, pTp, dDp, dTp, false);
        }

        /** A shape of the named profile ({@link Behaviour#PRESETS}), DP 1 on both sides. */
        static Shape tp(TransferMode mode, String profile, int pTp, int dTp) {
            return new Shape(mode, profile.equals("seed"), 1, pTp, 1, dTp, false, profile);
        }

        Behaviour behaviour() {
            return Behaviour.preset(profile);
        }

        @Override
        public String toString() {
            return mode + " " + profile + " P dp" + pDp + "xtp" + pTp + " D dp" + dDp + "xtp" + dTp
                    + (tpVote ? " tp-vote" : "");
        }
    }

    /**
     * One request: prompt length, prefill chunks (WRITE), the DP ranks the proxy routes it to, and
     * whether its decode leg is aborted before its blocks are allocated, and whether the prefill
     * finishes it under another id than it was admitted with (vLLM's input processor appends
     * {@code -<8 hex>}; class 13: its ACK names the admitted id, so the deferral is reaped).
     */
    record ReqPlan(int promptTokens, int chunks, int pDpRank, int dDpRank, boolean abortDecode, boolean renamedAtFinish)
            implements RequestDriver.Sized {

        ReqPlan(int promptTokens, int chunks, int pDpRank, int dDpRank, boolean abortDecode) {
            this(promptTokens, chunks, pDpRank, dDpRank, abortDecode, false);
        }
    }

    /**
     * @param lose the one frame the wire loses, as its delivery label ("D0t0 remote_blocks tx-0 ->
     *             P0t0"), or null: it is sent (journaled by its sender) and never arrives
     */
    record Plan(Shape shape, List<ReqPlan> requests, List<Integer> choices, String lose) {

        Plan(Shape shape, List<ReqPlan> requests, List<Integer> choices) {
            this(shape, requests, choices, null);
        }

        @Override
        public String toString() {
            Outcome o = run(this);
            StringBuilder b = new StringBuilder("\nPlan{").append(shape).append(" requests=").append(requests)
                    .append(" choices=").append(choices).append('\n');
            int from = Math.max(0, o.log().size() - 400);
            for (String line : o.log().subList(from, o.log().size())) {
                b.append("  ").append(line).append('\n');
            }
            if (o.stuck() != null) {
                b.append("  STUCK: ").append(o.stuck()).append('\n');
            }
            return b.append('}').toString();
        }
    }

    /** One engine rank: its name, DP and TP rank, and its run. */
    record Rank(String name, boolean producer, int dp, int tp, ReducerFixtures.Run run) {}

    /** What the aggregated connector output of a DP rank said at one step. */
    record Aggregated(String group, List<String> finishedSending, List<String> finishedRecving) {}

    /** One event as applied, in global order. */
    record Applied(String node, NodeEvent event, List<Effect> effects) {}

    record Outcome(List<Rank> ranks, List<Applied> applied, List<Aggregated> outputs, List<String> undeliverable,
                   List<String> requestIds, List<String> transferIds, List<String> log, String stuck) {

        /** A ledger fed with every rank's configuration and, in order, every applied event. */
        Ledger ledger() {
            Ledger l = new Ledger();
            for (Rank r : ranks) {
                l.nodeStarted(r.name(), r.run().config, NodeReducer.startupChecks(r.run().config));
            }
            for (Applied a : applied) {
                l.observe(a.node(), a.event(), a.effects());
            }
            return l;
        }
    }

    static Outcome run(Plan plan) {
        return new Driver(plan).run();
    }

    private record Delivery(Rank to, String label, java.util.function.LongFunction<NodeEvent> event) {}

    private static final class Driver extends RequestDriver<ReqPlan, Delivery> {
        final Plan plan;
        final Shape shape;
        final List<Rank> ranks = new ArrayList<>();
        /** Per DP group ("P0", "D1"), its TP ranks in TP order. */
        final LinkedHashMap<String, List<Rank>> groups = new LinkedHashMap<>();
        final LinkedHashMap<String, Rank> notifyListeners = new LinkedHashMap<>();
        final LinkedHashMap<String, Rank> handshakeListeners = new LinkedHashMap<>();
        final LinkedHashMap<String, long[]> stepOf = new LinkedHashMap<>();
        final List<Applied> applied = new ArrayList<>();
        final List<Aggregated> outputs = new ArrayList<>();
        final List<String> undeliverable = new ArrayList<>();
        final List<String> log = new ArrayList<>();
        boolean lost;

        Driver(Plan plan) {
            super(plan.requests(), plan.choices(), rp -> true);
            this.plan = plan;
            this.shape = plan.shape();
            addInstance(true, shape.pDp(), shape.pTp());
            addInstance(false, shape.dDp(), shape.dTp());
        }

        void addInstance(boolean producer, int dp, int tp) {
            var addr = producer ? ReducerFixtures.PREFILL : ReducerFixtures.DECODE;
            for (int r = 0; r < dp; r++) {
                String group = (producer ? "P" : "D") + r;
                List<Rank> members = new ArrayList<>();
                for (int t = 0; t < tp; t++) {
                    NodeConfig c = NodeConfig.builder(producer ? Role.PRODUCER : Role.CONSUMER, shape.mode())
                            .behaviour(shape.behaviour())
                            .hostIp(addr.host()).handshakePort(String.valueOf(addr.handshakePort()))
                            .notifyPort(String.valueOf(addr.notifyPort()))
                            .dp(r, dp, dp).tp(t, tp).awaitsTpVote(!producer && shape.tpVote()).build();
                    Rank rank = new Rank(group + "t" + t, producer, r, t, new ReducerFixtures.Run(c));
                    ranks.add(rank);
                    members.add(rank);
                    int offset = PortMath.portOffset(PortMath.foldLocalRank(r, dp), t);
                    notifyListeners.put(addr.host() + ":" + (addr.notifyPort() + offset), rank);
                    handshakeListeners.put(addr.host() + ":" + (addr.handshakePort() + offset), rank);
                }
                groups.put(group, members);
                stepOf.put(group, new long[1]);
            }
        }

        List<Rank> pGroup(Req<ReqPlan> r) {
            return groups.get("P" + r.plan.pDpRank());
        }

        List<Rank> dGroup(Req<ReqPlan> r) {
            return groups.get("D" + r.plan.dDpRank());
        }

        Outcome run() {
            String stuck = interleave(6000);
            List<String> groupNames = new ArrayList<>(groups.keySet());
            // A running engine keeps stepping: step every DP rank and deliver what that sends until a
            // round sends nothing (a staged abort release goes out at the next step), then a few more.
            for (int round = 0, quiet = 0; stuck == null && quiet < 3; round++) {
                if (round > 50) {
                    stuck = "still sending after 50 rounds of steps: " + status();
                    break;
                }
                for (String g : groupNames) {
                    step(g);
                }
                boolean sent = !wire.isEmpty();
                while (!wire.isEmpty()) {
                    deliver(wire.get(0));
                }
                quiet = sent ? 0 : quiet + 1;
            }
            if ((stuck == null || shape.pTp() != shape.dTp())
                    && (plan.requests().stream().anyMatch(ReqPlan::renamedAtFinish) || shape.pTp() != shape.dTp())) {
                // a renamed request's ACK never matches its deferral, and with unequal TP sizes a prefill
                // rank may never be read or notified: let defer_timeout pass so the reap (or the
                // deferred write's expiry) frees it; a stuck heterogeneous run's engines keep stepping too
                now += ranks.get(0).run().config.deferTimeoutNs() + NodeConfig.NS_PER_S;
                for (int i = 0; i < 2; i++) {
                    for (String g : groupNames) {
                        step(g);
                    }
                    while (!wire.isEmpty()) {
                        deliver(wire.get(0));
                    }
                }
            }
            List<String> tids = new ArrayList<>();
            for (Req<ReqPlan> r : reqs) {
                tids.add(r.tid);
            }
            return new Outcome(ranks, applied, outputs, undeliverable, requestIds(), tids, log, stuck);
        }

        @Override
        protected List<Runnable> steps() {
            List<Runnable> steps = new ArrayList<>();
            for (String g : groups.keySet()) {
                steps.add(() -> step(g));
            }
            return steps;
        }

        @Override
        protected TransferMode mode() {
            return shape.mode();
        }

        @Override
        protected void hook(Req<ReqPlan> r, boolean producer, java.util.function.LongFunction<NodeEvent> event) {
            applyAll(producer ? pGroup(r) : dGroup(r), event);
        }

        @Override
        protected String status() {
            StringBuilder b = new StringBuilder();
            for (Req<ReqPlan> r : reqs) {
                b.append("[req ").append(r.index).append(" P ").append(r.p).append(" D ").append(r.d);
                for (Rank k : ranks) {
                    RequestPhase ph = k.run().state.phaseOf(r.rid);
                    if (ph != null) {
                        b.append(' ').append(k.name()).append('=').append(ph);
                    }
                }
                b.append("] ");
            }
            return b.append("wire=").append(wire.size()).toString();
        }

        // ---------------------------------------------------------- applying and routing

        List<Effect> apply(Rank k, NodeEvent e) {
            if (e instanceof NodeEvent.HandshakeCompleted hc && shape.tpVote() && !k.producer()) {
                int i = hc.key().lastIndexOf("_dp");
                java.util.LinkedHashSet<String> open = openHandshakes.get(k.name() + "|" + hc.key().substring(0, i));
                if (open != null) {
                    open.remove(hc.key());
                }
            }
            List<Effect> out = k.run().apply(e);
            applied.add(new Applied(k.name(), e, out));
            log.add(k.name() + String.format(" #%03d ", k.run().events.size() - 1) + ReducerFixtures.render(e));
            for (Effect f : out) {
                if (!(f instanceof Effect.FinishedReported fr && fr.doneSending().isEmpty() && fr.doneRecving().isEmpty())
                        && !(f instanceof Effect.MetadataBuilt)) {
                    log.add("      -> " + ReducerFixtures.canonical(f));
                }
            }
            route(k, out);
            return out;
        }

        /** Applies a scheduler hook to every TP worker of a DP rank; returns TP rank 0's effects. */
        List<Effect> applyAll(List<Rank> group, java.util.function.LongFunction<NodeEvent> event) {
            NodeEvent e = event.apply(tick());
            List<Effect> first = null;
            for (Rank k : group) {
                List<Effect> out = apply(k, e);
                if (first == null) {
                    first = out;
                }
            }
            return first;
        }

        void route(Rank from, List<Effect> out) {
            for (Effect e : out) {
                switch (e) {
                    case Effect.StartHandshake h -> {
                        if (shape.tpVote() && !from.producer()) {
                            openHandshakes.computeIfAbsent(from.name() + "|" + h.remoteEngineId(),
                                    k -> new java.util.LinkedHashSet<>()).add(h.key());
                        }
                        Rank peer = handshakeListeners.get(h.host() + ":" + h.port());
                        if (peer == null || peer.producer() == from.producer()) {
                            undeliverable.add(from.name() + " handshake " + h.key() + " to " + h.host() + ":" + h.port());
                        } else {
                            wire.add(new Delivery(from, from.name() + " handshake " + h.key(),
                                    at -> new NodeEvent.HandshakeCompleted(at, h.key())));
                        }
                    }
                    case Effect.PostRead r -> wire.add(new Delivery(from, from.name() + " read " + r.statusId(),
                            at -> new NodeEvent.TransferCompleted(at, r.statusId(), true, 0, "ok")));
                    case Effect.PostWrite w -> wire.add(new Delivery(from, from.name() + " write " + w.statusId(),
                            at -> new NodeEvent.TransferCompleted(at, w.statusId(), true, 0, "ok")));
                    case Effect.SendRelease rel -> {
                        if (rel.sender() == Effect.Sender.SCHEDULER && from.tp() != 0) {
                            continue; // one scheduler per DP rank: TP rank 0 speaks for it
                        }
                        frame(from, rel.host(), rel.port(), "release " + rel.transferId(),
                                at -> new NodeEvent.ReleaseReceived(at, rel.transferId().pythonStr(), rel.consumerTpSize()));
                    }
                    case Effect.SendRemoteBlocks rb -> {
                        if (from.tp() != 0) {
                            continue;
                        }
                        frame(from, rb.host(), rb.port(), "remote_blocks " + rb.transferId(),
                                at -> new NodeEvent.RemoteBlocksReceived(at, rb.reqId(), rb.transferId().pythonStr(),
                                        rb.blockNotifyList(), rb.decodeRank(), false));
                    }
                    case Effect.SendWriteDone wd -> frame(from, wd.host(), wd.port(), "write_done " + wd.transferId(),
                            at -> new NodeEvent.WriteDoneReceived(at, wd.transferId()));
                    case Effect.FinishDecision fd when from.producer() && from.tp() == 0 -> noteDecision(fd);
                    case Effect.MatchedTokens mt when !from.producer() && from.tp() == 0 -> noteMatched(mt);
                    default -> { }
                }
            }
        }

        void frame(Rank from, String host, int port, String label, java.util.function.LongFunction<NodeEvent> event) {
            Rank to = notifyListeners.get(host + ":" + port);
            if (to == null) {
                undeliverable.add(from.name() + " " + label + " to " + host + ":" + port);
                return;
            }
            String delivery = from.name() + " " + label + " -> " + to.name();
            if (!lost && delivery.equals(plan.lose())) {
                lost = true;
                log.add("      lost on the wire: " + delivery);
                return;
            }
            wire.add(new Delivery(to, delivery, event));
        }

        @Override
        protected void deliver(Delivery w) {
            wire.remove(w);
            apply(w.to(), w.event().apply(tick()));
            if (shape.tpVote() && !w.to().producer()) {
                vote(w.to());
            }
        }

        /** Per decode rank and engine, the eager handshakes it started and has not seen answered. */
        final LinkedHashMap<String, java.util.LinkedHashSet<String>> openHandshakes = new LinkedHashMap<>();
        /** Per decode DP group, the engines the TP-wide vote passed for. */
        final LinkedHashMap<String, java.util.LinkedHashSet<String>> voted = new LinkedHashMap<>();

        /**
         * The CPU all_reduce(MIN) of the eager handshake: once every TP worker of the rank's DP
         * group started and finished its handshakes with an engine, every worker gets vote 1.
         */
        void vote(Rank any) {
            String group = "D" + any.dp();
            List<Rank> members = groups.get(group);
            java.util.LinkedHashSet<String> engines = new java.util.LinkedHashSet<>();
            for (Rank k : members) {
                for (String key : openHandshakes.keySet()) {
                    if (key.startsWith(k.name() + "|")) {
                        engines.add(key.substring(key.indexOf('|') + 1));
                    }
                }
            }
            for (String engine : engines) {
                if (voted.computeIfAbsent(group, g -> new java.util.LinkedHashSet<>()).contains(engine)) {
                    continue;
                }
                boolean all = true;
                for (Rank k : members) {
                    java.util.LinkedHashSet<String> open = openHandshakes.get(k.name() + "|" + engine);
                    all &= open != null && open.isEmpty();
                }
                if (all) {
                    voted.get(group).add(engine);
                    applyAll(members, at -> new NodeEvent.HandshakeVoted(at, engine, 1, null));
                }
            }
        }

        // ---------------------------------------------------------- engine steps

        void step(String group) {
            List<Rank> members = groups.get(group);
            boolean producer = members.get(0).producer();
            List<NodeEvent.CachedRequest> cached = new ArrayList<>();
            List<Req<ReqPlan>> prefilledThisStep = producer ? prefillChunks(r -> pGroup(r) == members, cached) : List.of();
            long n = stepOf.get(group)[0]++;
            applyAll(members, at -> new NodeEvent.StepScheduled(at, n, cached));
            for (Rank k : members) {
                apply(k, new NodeEvent.LoadStarted(tick()));
                if (producer && shape.mode() == TransferMode.WRITE) {
                    for (String layer : k.run().config.layerNames()) {
                        apply(k, new NodeEvent.LayerSaved(tick(), layer));
                    }
                    apply(k, new NodeEvent.SaveWaited(tick()));
                }
            }
            // vLLM's KV output aggregator: finished once every TP worker of the rank reported it
            LinkedHashMap<String, Integer> sendCount = new LinkedHashMap<>();
            LinkedHashMap<String, Integer> recvCount = new LinkedHashMap<>();
            for (Rank k : members) {
                for (Effect e : apply(k, new NodeEvent.FinishedPolled(tick()))) {
                    if (e instanceof Effect.FinishedReported f) {
                        count(pendingSend(group), f.doneSending());
                        count(pendingRecv(group), f.doneRecving());
                    }
                }
            }
            List<String> sending = drain(pendingSend(group), members.size());
            List<String> recving = drain(pendingRecv(group), members.size());
            outputs.add(new Aggregated(group, sending, recving));
            applyAll(members, at -> new NodeEvent.ConnectorOutputReceived(at, sending, recving));
            for (Req<ReqPlan> r : prefilledThisStep) {
                r.p = PStage.PREFILLED;
            }
        }

        final Map<String, LinkedHashMap<String, Integer>> sendPending = new LinkedHashMap<>();
        final Map<String, LinkedHashMap<String, Integer>> recvPending = new LinkedHashMap<>();

        LinkedHashMap<String, Integer> pendingSend(String group) {
            return sendPending.computeIfAbsent(group, g -> new LinkedHashMap<>());
        }

        LinkedHashMap<String, Integer> pendingRecv(String group) {
            return recvPending.computeIfAbsent(group, g -> new LinkedHashMap<>());
        }

        static void count(LinkedHashMap<String, Integer> m, List<String> ids) {
            if (ids != null) {
                for (String id : ids) {
                    m.merge(id, 1, Integer::sum);
                }
            }
        }

        static List<String> drain(LinkedHashMap<String, Integer> m, int workers) {
            List<String> out = new ArrayList<>();
            m.entrySet().removeIf(en -> {
                if (en.getValue() >= workers) {
                    out.add(en.getKey());
                    return true;
                }
                return false;
            });
            return out;
        }

        // ---------------------------------------------------------- request hooks

        @Override
        protected int[] producerBlocks(Req<ReqPlan> r) {
            return blockIds(1000 * (r.index + 1), blocksFor(r.plan.promptTokens()));
        }

        @Override
        protected BlockGroups producerAllocation(Req<ReqPlan> r, int[] firstChunk) {
            return BlockGroups.of(firstChunk);
        }

        @Override
        protected NodeEvent producerFinish(Req<ReqPlan> r, long at) {
            String finishedAs = r.plan.renamedAtFinish() ? r.rid + "-" + String.format("%08x", 0x5eed0000 + r.index) : r.rid;
            return new NodeEvent.RequestFinished(at, finishedAs, FinishStatus.FINISHED_LENGTH_CAPPED,
                    BlockGroups.of(producerBlocks(r)), r.plan.renamedAtFinish() ? r.rid : null);
        }

        @Override
        protected BlockGroups consumerBlocks(Req<ReqPlan> r) {
            return BlockGroups.of(blockIds(5000 + 1000 * (r.index + 1), blocksFor(r.plan.promptTokens())));
        }

        @Override
        protected boolean abortsDecode(Req<ReqPlan> r) {
            return r.plan.abortDecode();
        }

        @Override
        protected boolean decodeReached(Req<ReqPlan> r, RequestPhase ready) {
            boolean all = true;
            for (Rank k : dGroup(r)) {
                all &= k.run().state.phaseOf(r.rid) == ready;
            }
            return all;
        }

        @Override
        protected KvParams prefillLeg(Req<ReqPlan> r) {
            // the decode instance's DP layout: the producer's WRITE handshakes every decode DP rank and
            // sends write_done to the folded rank of the decode_rank its remote_blocks named
            return KvParams.of("transfer_id", r.tid, "do_remote_decode", true, "do_remote_prefill", false,
                    "remote_engine_id", null, "remote_block_ids", null, "remote_dp_size", (long) shape.dDp(),
                    "remote_dp_size_local", (long) shape.dDp(), "remote_tp_size", (long) shape.dTp());
        }

        /** READ: the prefill's response as the toy proxy forwards it; WRITE: the concurrent decode leg. */
        @Override
        protected KvParams decodeLeg(Req<ReqPlan> r) {
            if (shape.mode() == TransferMode.READ) {
                return r.producerResponse;
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("do_remote_decode", false);
            m.put("do_remote_prefill", true);
            m.put("remote_engine_id", null);
            m.put("remote_block_ids", null);
            m.put("transfer_id", r.tid);
            m.put("remote_dp_rank", (long) r.plan.pDpRank());
            m.put("remote_dp_size", (long) shape.pDp());
            m.put("tp_size", (long) shape.pTp());
            return KvParams.of(m);
        }
    }
}
