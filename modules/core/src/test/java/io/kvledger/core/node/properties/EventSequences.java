package io.kvledger.core.node.properties;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.GroupKind;
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
import io.kvledger.core.model.ReqMeta;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Tuple;

/**
 * Random event sequences for one node: a random {@link NodeConfig} and a list of abstract
 * operations that are turned into {@link NodeEvent}s one at a time, while the reducer runs, so
 * that later events can name status ids and handshake keys the reducer emitted earlier (in
 * PostRead/PostWrite and StartHandshake effects). Shrinking works on the operations; the
 * materialization is a deterministic function of (config, operations).
 */
public final class EventSequences {

    private EventSequences() {}

    /** The ids the reducer has revealed so far, for operations that refer back to them. */
    static final class Seen {
        final List<Long> statusIds = new ArrayList<>();
        final List<String> handshakeKeys = new ArrayList<>();
        final List<String> transferIds = new ArrayList<>();
        final List<String> layerNames;
        final Set<Long> completedStatusIds = new LinkedHashSet<>();
        final Set<String> completedHandshakes = new LinkedHashSet<>();
        Effect.FinishedReported lastReport;
        /** Staged saves seen in metadata: request id, transfer id and local block count, for echoed remote_blocks. */
        final List<Object[]> saves = new ArrayList<>();
        long step;

        final NodeConfig config;

        Seen(NodeConfig config) {
            this.config = config;
            this.layerNames = config.layerNames();
        }

        void absorb(List<Effect> effects) {
            for (Effect e : effects) {
                switch (e) {
                    case Effect.PostRead r -> {
                        statusIds.add(r.statusId());
                        addTid(r.transferId());
                    }
                    case Effect.PostWrite w -> {
                        statusIds.add(w.statusId());
                        addTid(w.transferId());
                    }
                    case Effect.StartHandshake h -> handshakeKeys.add(h.key());
                    case Effect.FinishedReported f -> lastReport = f;
                    case Effect.MetadataBuilt mb -> {
                        for (ReqMeta m : mb.reqsToSave()) {
                            saves.add(new Object[] {m.requestId(), m.transferIdString(), m.localBlockIds().first().length});
                        }
                    }
                    case Effect.DeferralStarted d -> addTid(d.transferId());
                    case Effect.Unmapped u -> addTid(u.transferId());
                    case Effect.Anomaly a -> addTid(a.transferId());
                    default -> { }
                }
            }
        }

        private void addTid(String tid) {
            if (tid != null && !transferIds.contains(tid)) {
                transferIds.add(tid);
            }
        }

        static <T> T pick(List<T> l, int i) {
            return l.get(Math.floorMod(i, l.size()));
        }
    }

    /** Applies one event to the node being materialized and returns its effects. */
    interface Sink {
        List<Effect> apply(NodeEvent e);
    }

    /**
     * One abstract operation: a time advance and a recipe for one event ({@link #make}), or for a
     * few events that depend on each other's effects ({@link #emit}, for engine steps).
     */
    interface Op {
        long dtNs();

        NodeEvent make(long atNs, Seen seen);

        default void emit(long atNs, Seen seen, Sink sink) {
            sink.apply(make(atNs, seen));
        }
    }

    /**
     * A whole engine step, as vLLM runs it: build_connector_meta, start_load_kv, (save_kv_layer
     * for every layer and wait_for_save), get_finished, then update_connector_output with what
     * get_finished reported.
     */
    record EngineStep(long dtNs, List<NodeEvent.CachedRequest> cached, boolean saves) implements Op {
        public NodeEvent make(long at, Seen s) {
            return new NodeEvent.StepScheduled(at, s.step++, cached);
        }

        @Override
        public void emit(long at, Seen s, Sink sink) {
            sink.apply(make(at, s));
            sink.apply(new NodeEvent.LoadStarted(at));
            if (saves) {
                for (String layer : s.layerNames) {
                    sink.apply(new NodeEvent.LayerSaved(at, layer));
                }
                sink.apply(new NodeEvent.SaveWaited(at));
            }
            s.lastReport = null;
            sink.apply(new NodeEvent.FinishedPolled(at));
            Effect.FinishedReported f = s.lastReport;
            sink.apply(new NodeEvent.ConnectorOutputReceived(at, f == null ? List.of() : f.doneSending(),
                    f == null ? List.of() : f.doneRecving()));
        }
    }

    /**
     * The plausible start of a request on this node, as the toy proxy and vLLM would produce it
     * for the node's role and mode (protocol 4.2, 5.2 to 5.5): admission with the right leg's
     * params (the READ decode leg carries remote_block_ids shaped for this config), the matched
     * tokens query, and an allocation with one list per KV group. Later random operations (engine
     * steps, completions, frames, finishes) take it from there, or not.
     */
    record Flow(long dtNs, String rid, String tid, int tokens) implements Op {
        public NodeEvent make(long at, Seen s) {
            return new NodeEvent.Tick(at);
        }

        @Override
        public void emit(long at, Seen s, Sink sink) {
            NodeConfig c = s.config;
            int n = Math.max(1, (tokens + 15) / 16);
            int[][] groups = new int[c.groups().size()][];
            for (int g = 0; g < groups.length; g++) {
                boolean mamba = c.groups().get(g).kind() == GroupKind.MAMBA;
                groups[g] = new int[mamba ? 1 : n];
                for (int k = 0; k < groups[g].length; k++) {
                    groups[g][k] = 20 + 10 * g + k;
                }
            }
            KvParams params;
            if (c.role() == Role.PRODUCER) {
                params = KvParams.of("remote_dp_size", 1L, "remote_tp_size", 1L, "transfer_id", tid, "do_remote_decode", true,
                        "do_remote_prefill", false, "remote_engine_id", null, "remote_block_ids", null);
            } else if (c.mode() == TransferMode.READ) {
                Object remote;
                if (c.on(Switch.READ_RECV_GROUPED_CLIPPED)) {
                    List<Object> gl = new ArrayList<>();
                    for (int g = 0; g < groups.length; g++) {
                        if (c.groups().get(g).enableKvTransfer()) {
                            gl.add(BlockGroups.flatValue(groups[g]));
                        }
                    }
                    remote = gl;
                } else {
                    remote = BlockGroups.flatValue(groups[0]);
                }
                params = KvParams.of("do_remote_prefill", true, "do_remote_decode", false, "remote_block_ids", remote,
                        "remote_engine_id", "10.0.0.1:6301", "remote_host", "10.0.0.1", "remote_handshake_port", "6301",
                        "remote_notify_port", "61005", "remote_dp_size", 1L, "tp_size", 1L, "transfer_id", tid);
            } else {
                params = KvParams.of("do_remote_decode", false, "do_remote_prefill", true, "remote_engine_id", null,
                        "remote_block_ids", null, "transfer_id", tid, "remote_dp_size", 1L, "remote_tp_size", 1L);
            }
            sink.apply(new NodeEvent.RequestAdmitted(at, rid, tokens, tokens, params));
            int external = 0;
            for (Effect e : sink.apply(new NodeEvent.MatchedTokensQueried(at, rid, 0))) {
                if (e instanceof Effect.MatchedTokens m) {
                    external = Math.max(m.count(), 0);
                }
            }
            sink.apply(new NodeEvent.BlocksAllocated(at, rid, BlockGroups.of(groups), external));
        }
    }

    /** The wire catches up: every handshake started so far answers, every posted transfer completes. */
    record CompleteAll(long dtNs, boolean ok) implements Op {
        public NodeEvent make(long at, Seen s) {
            return new NodeEvent.Tick(at);
        }

        @Override
        public void emit(long at, Seen s, Sink sink) {
            for (String key : List.copyOf(s.handshakeKeys)) {
                if (s.completedHandshakes.add(key)) {
                    sink.apply(new NodeEvent.HandshakeCompleted(at, key));
                }
            }
            for (Long id : List.copyOf(s.statusIds)) {
                if (s.completedStatusIds.add(id)) {
                    sink.apply(new NodeEvent.TransferCompleted(at, id, ok, 0, ok ? "ok" : "failed"));
                }
            }
        }
    }

    /** A transfer id: a literal from the pool, or one the reducer has revealed. */
    record Tid(boolean fromSeen, int pick, String literal) {
        String resolve(Seen seen) {
            return fromSeen && !seen.transferIds.isEmpty() ? Seen.pick(seen.transferIds, pick) : literal;
        }
    }

    record Admit(long dtNs, String rid, int numPrompt, int promptIdsMode, Map<String, Object> params) implements Op {
        public NodeEvent make(long at, Seen s) {
            int ids = switch (promptIdsMode) {
                case 1 -> -1;
                case 2 -> numPrompt / 2;
                default -> numPrompt;
            };
            return new NodeEvent.RequestAdmitted(at, rid, numPrompt, ids, params == null ? null : KvParams.of(params));
        }
    }

    record Match(long dtNs, String rid, int computed) implements Op {
        public NodeEvent make(long at, Seen s) {
            return new NodeEvent.MatchedTokensQueried(at, rid, computed);
        }
    }

    record Alloc(long dtNs, String rid, BlockGroups blocks, int external) implements Op {
        public NodeEvent make(long at, Seen s) {
            return new NodeEvent.BlocksAllocated(at, rid, blocks, external);
        }
    }

    record Step(long dtNs, List<NodeEvent.CachedRequest> cached) implements Op {
        public NodeEvent make(long at, Seen s) {
            return new NodeEvent.StepScheduled(at, s.step++, cached);
        }
    }

    record Finish(long dtNs, String rid, FinishStatus status, BlockGroups blocks) implements Op {
        public NodeEvent make(long at, Seen s) {
            return new NodeEvent.RequestFinished(at, rid, status, blocks);
        }
    }

    record Output(long dtNs, List<String> sending, List<String> recving) implements Op {
        public NodeEvent make(long at, Seen s) {
            return new NodeEvent.ConnectorOutputReceived(at, sending, recving);
        }
    }

    /** Events without payload: 0 LoadStarted, 1 SaveWaited, 2 FinishedPolled, 3 Tick. */
    record Bare(long dtNs, int kind) implements Op {
        public NodeEvent make(long at, Seen s) {
            return switch (kind) {
                case 0 -> new NodeEvent.LoadStarted(at);
                case 1 -> new NodeEvent.SaveWaited(at);
                case 2 -> new NodeEvent.FinishedPolled(at);
                default -> new NodeEvent.Tick(at);
            };
        }
    }

    /** {@code save_kv_layer} for the config's layer {@code index}, or for a layer it never registered. */
    record Layer(long dtNs, int index) implements Op {
        public NodeEvent make(long at, Seen s) {
            List<String> names = s.layerNames;
            return new NodeEvent.LayerSaved(at, index < names.size() ? names.get(index) : "model.layers.9.mlp");
        }
    }

    record Handshake(long dtNs, boolean fromSeen, int pick, String key, boolean failed) implements Op {
        public NodeEvent make(long at, Seen s) {
            String k = fromSeen && !s.handshakeKeys.isEmpty() ? Seen.pick(s.handshakeKeys, pick) : key;
            return failed ? new NodeEvent.HandshakeFailed(at, k, "connection refused") : new NodeEvent.HandshakeCompleted(at, k);
        }
    }

    /** The TP-wide eager-handshake vote for an engine some handshake key named (or a fixed one). */
    record Vote(long dtNs, boolean fromSeen, int pick, String engine, int vote, List<Integer> failedTpRanks) implements Op {
        public NodeEvent make(long at, Seen s) {
            String e = engine;
            if (fromSeen && !s.handshakeKeys.isEmpty()) {
                String k = Seen.pick(s.handshakeKeys, pick);
                e = k.contains("_dp") ? k.substring(0, k.lastIndexOf("_dp")) : k;
            }
            return new NodeEvent.HandshakeVoted(at, e, vote, failedTpRanks);
        }
    }

    record Transfer(long dtNs, boolean fromSeen, int pick, long randomId, boolean ok, int code) implements Op {
        public NodeEvent make(long at, Seen s) {
            long id = fromSeen && !s.statusIds.isEmpty() ? Seen.pick(s.statusIds, pick) : randomId;
            return new NodeEvent.TransferCompleted(at, id, ok, code, ok ? "ok" : "failed (code " + code + ")");
        }
    }

    /**
     * A remote_blocks frame; with {@code echo} (and a staged save seen), the frame a decode would
     * send for that save: its request and transfer id and as many blocks as the save holds.
     */
    record RemoteBlocks(long dtNs, String rid, Tid tid, List<Integer> blocks, int decodeRank, boolean legacy, boolean echo)
            implements Op {
        public NodeEvent make(long at, Seen s) {
            if (echo && !s.saves.isEmpty()) {
                Object[] save = Seen.pick(s.saves, tid.pick());
                List<Integer> ids = new ArrayList<>();
                for (int i = 0; i < (int) save[2]; i++) {
                    ids.add(100 + i);
                }
                return new NodeEvent.RemoteBlocksReceived(at, (String) save[0], save[1] == null ? "" : (String) save[1], ids,
                        decodeRank, legacy);
            }
            return new NodeEvent.RemoteBlocksReceived(at, rid, tid.resolve(s), blocks, decodeRank, legacy);
        }
    }

    record WriteDone(long dtNs, Tid tid) implements Op {
        public NodeEvent make(long at, Seen s) {
            return new NodeEvent.WriteDoneReceived(at, tid.resolve(s));
        }
    }

    record Release(long dtNs, Tid tid, Integer consumerTpSize) implements Op {
        public NodeEvent make(long at, Seen s) {
            return new NodeEvent.ReleaseReceived(at, tid.resolve(s), consumerTpSize);
        }
    }

    record Raw(long dtNs, Tid tid, String text) implements Op {
        public NodeEvent make(long at, Seen s) {
            return new NodeEvent.RawCompletionReceived(at, text != null ? text : tid.resolve(s));
        }
    }

    record Rejected(long dtNs, byte[] frame, boolean kills) implements Op {
        public NodeEvent make(long at, Seen s) {
            return new NodeEvent.FrameRejected(at, "undecodable frame", frame.clone(), kills);
        }

        @Override
        public String toString() {
            return "Rejected[dtNs=" + dtNs + ", frame=" + Arrays.toString(frame) + ", kills=" + kills + "]";
        }
    }

    record SendFailed(long dtNs, Tid tid, String messageType) implements Op {
        public NodeEvent make(long at, Seen s) {
            return new NodeEvent.NotifySendFailed(at, "tcp://10.0.9.9:61005", messageType, tid.resolve(s), "no host",
                    new byte[0]);
        }
    }

    // ------------------------------------------------------------------ the scenario

    /** The longest event sequence a scenario materializes. */
    static final int MAX_EVENTS = 200;

    /** The outcome of turning a scenario's operations into events while running the reducer. */
    public record Materialized(ReducerFixtures.Run run, Throwable thrown) {}

    /**
     * A config and its operations. {@link #toString()} renders the config and the materialized
     * event sequence, one event per line, so a failing property reports the shrunk sequence in
     * readable form.
     */
    public record Scenario(NodeConfig config, List<Op> ops) {

        /**
         * Builds the events while applying them to a fresh state. A reducer exception stops the
         * materialization at the event that threw (it is the last event of the run) and is
         * returned, not rethrown, so that {@link #toString()} can still render the sequence.
         */
        public Materialized materialize() {
            ReducerFixtures.Run run = new ReducerFixtures.Run(config);
            Seen seen = new Seen(config);
            long at = 0;
            NodeEvent[] last = new NodeEvent[1];
            Sink sink = e -> {
                if (run.events.size() >= MAX_EVENTS) {
                    return List.of(); // the sequence is full: the rest of a multi-event operation is dropped
                }
                last[0] = e;
                List<Effect> out = run.apply(e);
                seen.absorb(out);
                return out;
            };
            for (Op op : ops) {
                if (run.events.size() >= MAX_EVENTS) {
                    break;
                }
                at += op.dtNs();
                try {
                    op.emit(at, seen, sink);
                } catch (RuntimeException | StackOverflowError ex) {
                    if (last[0] != null && (run.events.isEmpty() || run.events.get(run.events.size() - 1) != last[0])) {
                        run.events.add(last[0]);
                        run.effects.add(List.of());
                    }
                    return new Materialized(run, ex);
                }
            }
            return new Materialized(run, null);
        }

        /** The events of the scenario (up to and including one that throws). */
        List<NodeEvent> events() {
            return materialize().run().events;
        }

        @Override
        public String toString() {
            StringBuilder b = new StringBuilder("\nScenario{config: ").append(ReducerFixtures.describe(config)).append('\n');
            Materialized m;
            try {
                m = materialize();
            } catch (RuntimeException | AssertionError ex) {
                return b.append("  (events could not be materialized: ").append(ex).append(")\n  ops=").append(ops).append("}").toString();
            }
            b.append(m.run().trace(Set.of()));
            if (m.thrown() != null) {
                b.append("  reducer threw at the last event: ").append(m.thrown()).append('\n');
            }
            return b.append("}").toString();
        }
    }

    // ------------------------------------------------------------------ arbitraries

    /** A scenario as tests outside this package see it: its configuration and its events. */
    public record Case(NodeConfig config, List<NodeEvent> events) {
        @Override
        public String toString() {
            StringBuilder b = new StringBuilder("config: ").append(ReducerFixtures.describe(config)).append('\n');
            for (int i = 0; i < events.size(); i++) {
                b.append(String.format("  #%03d %s%n", i, ReducerFixtures.render(events.get(i))));
            }
            return b.toString();
        }
    }

    /** {@link #scenarios()}, materialized, with a switch set drawn at random half of the time. */
    public static Arbitrary<Case> cases() {
        return Combinators.combine(scenarios(), anySwitchSet(), Arbitraries.of(false, true)).as((sc, b, anySwitches) -> {
            Scenario s = anySwitches ? new Scenario(sc.config().withBehaviour(b), sc.ops()) : sc;
            return new Case(s.config(), s.events());
        });
    }

    /** Profiles with every switch drawn at random, on or off. */
    static Arbitrary<Behaviour> anySwitchSet() {
        return Arbitraries.of(Switch.class).set().map(on -> {
            Behaviour b = Behaviour.newest();
            for (Switch sw : Switch.values()) {
                b = b.with(sw, on.contains(sw));
            }
            return b;
        });
    }

    public static Arbitrary<Scenario> scenarios() {
        return Combinators.combine(configs(), ops().list().ofMinSize(1).ofMaxSize(200)).as(Scenario::new);
    }

    static Arbitrary<NodeConfig> configs() {
        Arbitrary<Role> role = Arbitraries.of(Role.class);
        Arbitrary<TransferMode> mode = Arbitraries.of(TransferMode.class);
        Arbitrary<int[]> dp = Arbitraries.of(new int[] {0, 1, 1}, new int[] {1, 2, 2}, new int[] {0, 2, 2},
                new int[] {3, 4, 2}, new int[] {1, 2, 0}, new int[] {2, 4, 4});
        Arbitrary<int[]> tp = Arbitraries.of(new int[] {0, 1}, new int[] {1, 2}, new int[] {0, 2}, new int[] {3, 4});
        Arbitrary<Boolean> seedPreset = Arbitraries.of(false, true);
        Arbitrary<List<Switch>> flips = Arbitraries.of(Switch.class).list().ofMaxSize(3);
        Arbitrary<Integer> groups = Arbitraries.integers().between(0, ReducerFixtures.GROUP_VARIANTS - 1);
        Arbitrary<int[]> misc = Combinators.combine(
                Arbitraries.integers().between(0, 1), // hma
                Arbitraries.integers().between(0, 2), // layers
                Arbitraries.integers().between(0, 2), // lookahead
                Arbitraries.integers().between(0, 2), // speculative method: none, dspark, eagle
                Arbitraries.integers().between(0, 2), // speculative tokens
                Arbitraries.integers().between(0, 3), // ports: default, "6400", int 0, "0"
                Arbitraries.integers().between(0, 1)) // the journal carries the TP-wide handshake vote
                .as((a, b, c, d, e, f, g) -> new int[] {a, b, c, d, e, f, g});
        return Combinators.combine(role, mode, dp, tp, seedPreset, flips, groups, misc)
                .as((r, m, d, t, seed, fl, g, x) -> {
                    Behaviour b = seed ? Behaviour.seed() : Behaviour.newest();
                    for (Switch s : fl) {
                        b = b.with(s, !b.on(s));
                    }
                    Object port = switch (x[5]) {
                        case 1 -> "6400";
                        case 2 -> 0;
                        case 3 -> "0";
                        default -> null;
                    };
                    return NodeConfig.builder(r, m)
                            .dp(d[0], d[1], d[2])
                            .tp(t[0], t[1])
                            .groups(ReducerFixtures.groups(g))
                            .hmaEnabled(x[0] == 1)
                            .layerNames(ReducerFixtures.layers(x[1]))
                            .lookaheadTokens(x[2])
                            .speculative(x[3] == 0 ? null : x[3] == 1 ? "dspark" : "eagle", x[4])
                            .handshakePort(port)
                            .behaviour(b)
                            .awaitsTpVote(x[6] == 1)
                            .build();
                });
    }

    /** Time advances: mostly small, sometimes none, occasionally past the 60 s and 120 s deadlines. */
    static Arbitrary<Long> dt() {
        return Arbitraries.frequencyOf(
                Tuple.of(3, Arbitraries.just(0L)),
                Tuple.of(12, Arbitraries.longs().between(1, 2 * NodeConfig.NS_PER_S)),
                Tuple.of(1, Arbitraries.just(61 * NodeConfig.NS_PER_S)),
                Tuple.of(1, Arbitraries.just(121 * NodeConfig.NS_PER_S)));
    }

    /** Request ids from the pool, two of them (a plain and a proxy id) more often, so hooks meet. */
    static Arbitrary<String> rid() {
        List<String> ids = ReducerFixtures.REQUEST_IDS;
        return Arbitraries.frequencyOf(
                Tuple.of(4, Arbitraries.just(ids.get(0))),
                Tuple.of(4, Arbitraries.just(ids.get(3))),
                Tuple.of(4, Arbitraries.of(ids)));
    }

    static Arbitrary<Tid> tid() {
        return Combinators.combine(Arbitraries.of(false, true), Arbitraries.integers().between(0, 7),
                Arbitraries.of(ReducerFixtures.TRANSFER_IDS)).as(Tid::new);
    }

    /** A value from a fixed list that may hold nulls (shrinks towards the first). */
    @SafeVarargs
    static <T> Arbitrary<T> oneOfValues(T... values) {
        return Arbitraries.integers().between(0, values.length - 1).map(i -> values[i]);
    }

    /** {@link #oneOfValues} for Python values of any type. */
    static Arbitrary<Object> values(Object... values) {
        return Arbitraries.integers().between(0, values.length - 1).map(i -> values[i]);
    }

    static Arbitrary<int[]> ids() {
        return Arbitraries.integers().between(0, 15).list().ofMaxSize(6)
                .map(l -> l.stream().mapToInt(Integer::intValue).toArray());
    }

    static Arbitrary<BlockGroups> blocks() {
        Arbitrary<int[]> few = Arbitraries.integers().between(1, 4).map(n -> {
            int[] a = new int[n];
            for (int i = 0; i < n; i++) {
                a[i] = 10 + i;
            }
            return a;
        });
        return Arbitraries.frequencyOf(
                Tuple.of(1, Arbitraries.just(BlockGroups.NONE)),
                Tuple.of(4, few.map(a -> BlockGroups.of(a))),
                Tuple.of(6, ids().map(a -> BlockGroups.of(a))),
                Tuple.of(4, Combinators.combine(ids(), ids()).as((a, b) -> BlockGroups.of(a, b))),
                Tuple.of(1, Combinators.combine(ids(), ids(), ids()).as((a, b, c) -> BlockGroups.of(a, b, c))));
    }

    // Python values params carry (Long for ints, nested lists of Longs).
    private static final List<Object> FLAT = List.of(1L, 2L, 3L);
    private static final List<Object> GROUPED = List.of(List.of(1L, 2L, 3L));

    static Arbitrary<Object> valueFor(String key) {
        return switch (key) {
            case "do_remote_decode", "do_remote_prefill", "remote_dp_rank_override", "is_request_leader", "_p_side_truncated" ->
                    values(Boolean.TRUE, Boolean.FALSE, null, 1L, 0L, "yes", "");
            case "transfer_id" -> values("t0", "t1", "t2", "", null, 7L, "sidecar-r0");
            case "remote_block_ids" -> values(GROUPED, FLAT, List.of(List.of(1L, 2L), List.of(3L)), List.of(),
                    List.of(List.of()), null, "oops", List.of(1.5, 2.5), List.of(1L, List.of(2L)),
                    List.of(List.of(1L, "x")), List.of(List.of(4L, 5L, 6L, 7L, 8L, 9L)), List.of(4L, 5L, 6L, 7L, 8L, 9L),
                    List.of(List.of(1L, 2L), List.of(3L), List.of(4L)), List.of(List.of(1.5)));
            case "remote_engine_id" -> values("10.0.0.1:6301", null, "", 5L);
            case "remote_host" -> values("10.0.0.1", "", null, 7L, "10.0.0.3");
            case "remote_handshake_port" -> values("6301", 6301L, "abc", null, 0L, -1L);
            case "remote_notify_port" -> values("61005", 61005L, "x", null, 0L, "0", 1.5);
            case "remote_dp_rank" -> values(0L, 1L, "1", "z", null, -1L, 3L, 1.5, Boolean.TRUE);
            case "remote_dp_size" -> values(1L, 2L, "2", null, 0L, "q", 4L, -2L);
            case "remote_dp_size_local" -> values(0L, 1L, 2L, null, "q", -1L);
            case "remote_hosts" -> values(List.of("h0", "h1"), List.of(), "h", null, List.of(1L));
            default -> values(1L, 2L, 4L, "x", 0L, null, 3L, 8L, -1L); // tp_size, remote_tp_size
        };
    }

    static final List<String> KEYS = List.of("do_remote_decode", "do_remote_prefill", "transfer_id", "remote_block_ids",
            "remote_engine_id", "remote_host", "remote_handshake_port", "remote_notify_port", "remote_dp_rank",
            "remote_dp_rank_override", "remote_dp_size", "remote_dp_size_local", "remote_hosts", "is_request_leader",
            "tp_size", "remote_tp_size", "_p_side_truncated");

    /** A key with a value, or with {@code delete} to remove it. */
    record Edit(String key, Object value, boolean delete) {}

    static Arbitrary<Edit> edit() {
        return Arbitraries.of(KEYS).flatMap(k -> Combinators.combine(valueFor(k), Arbitraries.integers().between(0, 4))
                .as((v, d) -> new Edit(k, v, d == 0)));
    }

    /** kv_transfer_params: a plausible template (or none, or empty) with up to four random edits. */
    static Arbitrary<Map<String, Object>> params() {
        Arbitrary<Integer> template = Arbitraries.frequencyOf(
                Tuple.of(3, Arbitraries.just(0)), Tuple.of(3, Arbitraries.just(1)), Tuple.of(2, Arbitraries.just(2)),
                Tuple.of(1, Arbitraries.just(3)), Tuple.of(1, Arbitraries.just(4)), Tuple.of(1, Arbitraries.just(5)),
                Tuple.of(1, Arbitraries.just(6)));
        Arbitrary<Object> remoteBlocks = Arbitraries.frequencyOf(
                Tuple.of(3, Arbitraries.just(GROUPED)), Tuple.of(3, Arbitraries.just(FLAT)),
                Tuple.of(3, valueFor("remote_block_ids")));
        Arbitrary<List<Edit>> edits = Arbitraries.frequencyOf(
                Tuple.of(2, Arbitraries.just(List.<Edit>of())), Tuple.of(3, edit().list().ofMaxSize(3)));
        return Combinators.combine(template, Arbitraries.of(ReducerFixtures.TRANSFER_IDS), remoteBlocks,
                edits).as((t, tid, rb, edits1) -> {
                    if (t == 6) {
                        return null;
                    }
                    LinkedHashMap<String, Object> m = template(t, tid, rb);
                    for (Edit e : edits1) {
                        if (e.delete()) {
                            m.remove(e.key());
                        } else {
                            m.put(e.key(), e.value());
                        }
                    }
                    return m;
                });
    }

    private static LinkedHashMap<String, Object> template(int t, String tid, Object remoteBlocks) {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        switch (t) {
            case 0 -> { // toy proxy, prefill leg
                m.put("remote_dp_size", 1L);
                m.put("remote_tp_size", 1L);
                m.put("transfer_id", tid);
                m.put("do_remote_decode", true);
                m.put("do_remote_prefill", false);
                m.put("remote_engine_id", null);
                m.put("remote_block_ids", null);
            }
            case 1 -> { // decode leg, READ: P's response
                m.put("do_remote_prefill", true);
                m.put("do_remote_decode", false);
                m.put("remote_block_ids", remoteBlocks);
                m.put("remote_engine_id", "10.0.0.1:6301");
                m.put("remote_host", "10.0.0.1");
                m.put("remote_handshake_port", "6301");
                m.put("remote_notify_port", "61005");
                m.put("remote_dp_rank", 0L);
                m.put("remote_dp_rank_override", true);
                m.put("remote_dp_size", 1L);
                m.put("remote_dp_size_local", 1L);
                m.put("tp_size", 1L);
                m.put("transfer_id", tid);
            }
            case 2 -> { // decode leg, WRITE
                m.put("do_remote_decode", false);
                m.put("do_remote_prefill", true);
                m.put("remote_engine_id", null);
                m.put("remote_block_ids", null);
                m.put("transfer_id", tid);
                m.put("remote_dp_size", 2L);
                m.put("remote_tp_size", 1L);
            }
            case 3 -> { // llm-d sidecar: no transfer id
                m.put("do_remote_prefill", true);
                m.put("remote_host", "10.0.0.1");
                m.put("remote_handshake_port", 6301L);
                m.put("remote_notify_port", 61005L);
                m.put("remote_dp_rank", 1L);
                m.put("remote_dp_size", 2L);
                m.put("remote_dp_size_local", 1L);
                m.put("remote_hosts", List.of("h0", "h1"));
                m.put("is_request_leader", true);
            }
            case 4 -> { } // empty params
            default -> { // a few random keys
                m.put("transfer_id", tid);
                m.put("do_remote_decode", true);
            }
        }
        return m;
    }

    static Arbitrary<List<String>> ridList() {
        return rid().list().ofMaxSize(3).injectNull(0.17);
    }

    static Arbitrary<Op> ops() {
        Arbitrary<Long> dt = dt();
        Arbitrary<Integer> tokens = Arbitraries.integers().between(0, 80);
        Arbitrary<Op> admit = Combinators.combine(dt, rid(), tokens, Arbitraries.integers().between(0, 2), params())
                .as(Admit::new);
        Arbitrary<Op> match = Combinators.combine(dt, rid(), tokens).as(Match::new);
        Arbitrary<Op> alloc = Combinators.combine(dt, rid(), blocks(), tokens).as(Alloc::new);
        Arbitrary<NodeEvent.CachedRequest> cached = Combinators.combine(rid(), blocks().injectNull(0.2))
                .as(NodeEvent.CachedRequest::new);
        Arbitrary<Op> step = Combinators.combine(dt, cached.list().ofMaxSize(3)).as(Step::new);
        Arbitrary<Op> engineStep = Combinators.combine(dt, cached.list().ofMaxSize(2), Arbitraries.of(true, false))
                .as(EngineStep::new);
        Arbitrary<Op> flow = Combinators.combine(dt, Arbitraries.of(ReducerFixtures.proxyId(ReducerFixtures.HEX_A),
                        ReducerFixtures.REQUEST_IDS.get(4), "r0"), Arbitraries.of("t0", "t1", "t2"),
                Arbitraries.integers().between(1, 64)).as(Flow::new);
        Arbitrary<Op> completeAll = Combinators.combine(dt, Arbitraries.integers().between(0, 5).map(i -> i != 0))
                .as(CompleteAll::new);
        Arbitrary<Op> finish = Combinators.combine(dt, rid(), Arbitraries.frequencyOf(
                        Tuple.of(4, Arbitraries.just(FinishStatus.FINISHED_LENGTH_CAPPED)),
                        Tuple.of(3, Arbitraries.of(FinishStatus.class))), blocks())
                .as(Finish::new);
        Arbitrary<Op> output = Combinators.combine(dt, ridList(), ridList()).as(Output::new);
        Arbitrary<Op> bare = Combinators.combine(dt, Arbitraries.integers().between(0, 3)).as(Bare::new);
        Arbitrary<Op> layer = Combinators.combine(dt, Arbitraries.integers().between(0, 3)).as(Layer::new);
        Arbitrary<Op> handshake = Combinators.combine(dt, Arbitraries.of(true, true, false), Arbitraries.integers().between(0, 7),
                Arbitraries.of("10.0.0.1:6301_dp0", "10.0.0.2:7301_dp0", "10.0.0.2:7301_dp1", "nobody:1_dp0"),
                Arbitraries.integers().between(0, 5).map(i -> i == 0)).as(Handshake::new);
        Arbitrary<Op> vote = Combinators.combine(dt, Arbitraries.of(true, true, false), Arbitraries.integers().between(0, 7),
                Arbitraries.of("10.0.0.1:6301", "10.0.0.2:7301", "nobody:1"), Arbitraries.of(1, 1, 0, 2),
                EventSequences.<List<Integer>>oneOfValues(null, List.of(), List.of(1), List.of(0, 1))).as(Vote::new);
        Arbitrary<Op> transfer = Combinators.combine(dt, Arbitraries.of(true, true, true, false), Arbitraries.integers().between(0, 15),
                Arbitraries.of(0L, -1L, 1L, 999L), Arbitraries.integers().between(0, 4).map(i -> i != 0),
                Arbitraries.of(0, -5, 7)).as(Transfer::new);
        Arbitrary<Op> remoteBlocks = Combinators.combine(dt, rid(), tid(),
                Arbitraries.integers().between(0, 15).list().ofMaxSize(5), Arbitraries.integers().between(0, 3),
                Arbitraries.of(false, true), Arbitraries.of(true, false)).as(RemoteBlocks::new);
        Arbitrary<Op> writeDone = Combinators.combine(dt, tid()).as(WriteDone::new);
        Arbitrary<Op> release = Combinators.combine(dt, tid(), EventSequences.<Integer>oneOfValues(1, null, 0, -1, 8, 2, 4, 3)).as(Release::new);
        Arbitrary<String> anyText = Arbitraries.strings().ofMaxLength(12).injectNull(0.75);
        Arbitrary<Op> raw = Combinators.combine(dt, tid(), anyText).as(Raw::new);
        Arbitrary<Op> rejected = Combinators.combine(dt, Arbitraries.bytes().array(byte[].class).ofMaxSize(4),
                Arbitraries.of(false, true)).as(Rejected::new);
        Arbitrary<Op> sendFailed = Combinators.combine(dt, tid(),
                Arbitraries.of("remote_blocks", "release", "write_done", "write_failed")).as(SendFailed::new);
        return Arbitraries.frequencyOf(
                Tuple.of(12, admit),
                Tuple.of(6, match),
                Tuple.of(12, alloc),
                Tuple.of(6, step),
                Tuple.of(8, engineStep),
                Tuple.of(4, completeAll),
                Tuple.of(5, flow),
                Tuple.of(12, finish),
                Tuple.of(12, output),
                Tuple.of(12, bare),
                Tuple.of(4, layer),
                Tuple.of(5, handshake),
                Tuple.of(2, vote),
                Tuple.of(6, transfer),
                Tuple.of(5, remoteBlocks),
                Tuple.of(4, writeDone),
                Tuple.of(5, release),
                Tuple.of(3, raw),
                Tuple.of(1, rejected),
                Tuple.of(1, sendFailed));
    }

    /** Anomaly kinds seen in a run (for statistics and messages). */
    static Set<AnomalyKind> anomalies(ReducerFixtures.Run run) {
        Set<AnomalyKind> s = new LinkedHashSet<>();
        for (List<Effect> l : run.effects) {
            for (Effect e : l) {
                if (e instanceof Effect.Anomaly a) {
                    s.add(a.kind());
                }
            }
        }
        return s;
    }
}
