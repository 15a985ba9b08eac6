package io.kvledger.core.node.properties;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.KvGroupSpec;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Switch;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.core.node.Invariants;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Shared fixtures of the reducer properties: peer addresses and request ids with embedded
 * addresses, group configurations, a readable rendering of events and a canonical rendering of
 * effects, and the invariant checks that both the random-sequence and the lifecycle properties
 * apply to a recorded run. Public where the ledger's cluster and detector properties
 * ({@code io.kvledger.ledger.properties}, through this module's test jar) use them.
 */
public final class ReducerFixtures {

    private ReducerFixtures() {}

    // ------------------------------------------------------------------ addresses and ids

    /** The prefill instance the proxy embeds in request ids (base ports). */
    public static final ZmqAddress PREFILL = new ZmqAddress("10.0.0.1", 6301, 61005);
    /** The decode instance the proxy embeds in request ids. */
    public static final ZmqAddress DECODE = new ZmqAddress("10.0.0.2", 7301, 71005);

    static final String HEX_A = "0123456789abcdef0123456789abcdef";
    static final String HEX_B = "fedcba9876543210fedcba9876543210";

    /** A toy-proxy request id: {@code ___prefill_addr_P___decode_addr_D_<hex32>}. */
    public static String proxyId(String hex32) {
        return RequestIds.proxyRequestId(PREFILL, DECODE, hex32);
    }

    /** A 32-hex uuid derived from {@code i} (lowercase, as uuid4().hex). */
    public static String hex32(int i) {
        String h = String.format("%08x", i);
        return (h + h + h + h).substring(0, 32);
    }

    /**
     * The small pool of request ids random sequences draw from, so that collisions happen: plain
     * ids, an id with vLLM's input-processor {@code -<8 hex>} suffix of another, proxy ids with
     * well-formed embedded addresses (with and without a suffix), a malformed one, one whose uuid
     * is upper-case (the decode pattern does not match) and one never admitted.
     */
    static final List<String> REQUEST_IDS = List.of(
            "r0",
            "r1",
            "r1-0a1b2c3d",
            proxyId(HEX_A),
            proxyId(HEX_A) + "-1a2b3c4d",
            "___prefill_addr_host:10.0.0.1,handshake:abc___decode_addr_host:10.0.0.2_" + HEX_B,
            "___prefill_addr_" + PREFILL.format() + "___decode_addr_" + DECODE.format() + "_" + HEX_B.toUpperCase(),
            "ghost");

    /** The pool of transfer ids (the empty one included). */
    static final List<String> TRANSFER_IDS = List.of("t0", "t1", "t2", "", "sidecar-r0", "sidecar-" + proxyId(HEX_A));

    // ------------------------------------------------------------------ configurations

    /** The group configurations random configs choose from (index = variant). */
    static List<KvGroupSpec> groups(int variant) {
        return switch (variant) {
            case 1 -> List.of(KvGroupSpec.fullAttention(16), KvGroupSpec.slidingWindow(16, 32));
            case 2 -> List.of(KvGroupSpec.fullAttention(16), KvGroupSpec.mamba(16));
            case 3 -> List.of(KvGroupSpec.fullAttention(32));
            case 4 -> List.of(KvGroupSpec.fullAttention(16), KvGroupSpec.slidingWindow(16, 64).withTransfer(false));
            case 5 -> List.of(KvGroupSpec.slidingWindow(16, 32), KvGroupSpec.fullAttention(16));
            default -> List.of(KvGroupSpec.fullAttention(16));
        };
    }

    static final int GROUP_VARIANTS = 6;

    static List<String> layers(int variant) {
        return switch (variant) {
            case 1 -> List.of("model.layers.0.self_attn.attn");
            case 2 -> List.of("model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn",
                    "model.layers.2.self_attn.attn");
            default -> List.of("model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn");
        };
    }

    /** A short description of a config: what differs from the defaults a reader needs to rerun. */
    static String describe(NodeConfig c) {
        Behaviour base = c.behaviour().profile().startsWith("seed") ? Behaviour.seed() : Behaviour.newest();
        List<String> diff = new ArrayList<>();
        for (Switch s : Switch.values()) {
            if (c.on(s) != base.on(s)) {
                diff.add((c.on(s) ? "+" : "-") + s.key());
            }
        }
        return c.role() + " " + c.mode() + " dp=" + c.dpRank() + "/" + c.dpSize() + "(local " + c.dpSizeLocal() + ")"
                + " tp=" + c.tpRank() + "/" + c.tpSize() + " behaviour=" + base.profile() + diff
                + " groups=" + c.groups() + " hma=" + c.hmaEnabled() + " layers=" + c.layerNames().size()
                + " lookahead=" + c.lookaheadTokens() + " spec=" + c.speculativeMethod() + "/" + c.speculativeTokens()
                + " ports=" + c.handshakePort() + "/" + c.notifyPort();
    }

    // ------------------------------------------------------------------ rendering

    /** A readable one-line rendering of an event (times in seconds). */
    public static String render(NodeEvent e) {
        String t = String.format("t=%d.%09ds ", e.atNs() / NodeConfig.NS_PER_S, e.atNs() % NodeConfig.NS_PER_S);
        String body = switch (e) {
            case NodeEvent.FrameRejected f -> "FrameRejected[reason=" + f.reason() + ", frame="
                    + (f.frame() == null ? "null" : Arrays.toString(f.frame())) + ", kills=" + f.wouldKillPythonListener() + "]";
            default -> e.toString().replaceFirst("atNs=\\d+, ?", "");
        };
        return t + body;
    }

    /** A canonical rendering of an effect: equal effects render equal (arrays by content). */
    public static String canonical(Effect e) {
        return switch (e) {
            case Effect.PostRead r -> "PostRead[statusId=" + r.statusId() + ", requestId=" + r.requestId() + ", transferId="
                    + r.transferId() + ", layer=" + r.layerName() + ", session=" + r.sessionKey() + ", local="
                    + Arrays.toString(r.localBlockIds()) + ", remote=" + Arrays.toString(r.remoteBlockIds()) + "]";
            case Effect.PostWrite w -> "PostWrite[statusId=" + w.statusId() + ", transferId=" + w.transferId() + ", layer="
                    + w.layerName() + ", session=" + w.sessionKey() + ", local=" + Arrays.toString(w.localBlockIds())
                    + ", remote=" + Arrays.toString(w.remoteBlockIds()) + "]";
            default -> e.toString();
        };
    }

    static String canonical(List<Effect> effects) {
        StringBuilder b = new StringBuilder();
        for (Effect e : effects) {
            b.append(canonical(e)).append('\n');
        }
        return b.toString();
    }

    // ------------------------------------------------------------------ a recorded run

    /** Events applied to one node and the effects each produced, in order. */
    public static final class Run {
        public final NodeConfig config;
        public final NodeState state;
        public final List<NodeEvent> events = new ArrayList<>();
        public final List<List<Effect>> effects = new ArrayList<>();

        public Run(NodeConfig config) {
            this.config = config;
            this.state = NodeState.initial(config);
        }

        /**
         * Applies the event (exceptions propagate) and records it; then checks the state's
         * invariants, failing with an {@link AssertionError} (which no scenario takes for the
         * reducer's own exception) that names the event when one is broken.
         */
        public List<Effect> apply(NodeEvent e) {
            NodeReducer.Transition t = NodeReducer.apply(state, e);
            events.add(e);
            effects.add(t.effects());
            List<Invariants.Violation> broken = state.checkInvariants();
            if (!broken.isEmpty()) {
                throw new AssertionError("invariants broken after event #" + (events.size() - 1) + " " + render(e)
                        + ": " + broken + "\nconfig: " + describe(config));
            }
            return t.effects();
        }

        long lastAtNs() {
            return events.isEmpty() ? 0 : events.get(events.size() - 1).atNs();
        }

        /** The numbered events, with the effects of the events named in {@code withEffects}. */
        String trace(Set<Integer> withEffects) {
            StringBuilder b = new StringBuilder();
            for (int i = 0; i < events.size(); i++) {
                b.append(String.format("  #%03d %s%n", i, render(events.get(i))));
                if (withEffects.contains(i)) {
                    for (Effect e : effects.get(i)) {
                        b.append("         -> ").append(canonical(e)).append('\n');
                    }
                }
            }
            return b.toString();
        }
    }

    // ------------------------------------------------------------------ invariant checks

    /**
     * (c) No request id is surfaced in finished_sending twice unless it was admitted again in
     * between. A request admitted as {@code R} and finished as {@code R-<8 hex>} (vLLM's input
     * processor's suffix) lives on under the finishing id; a finish that renames a live request
     * (its {@code REQUEST_RENAMED_AT_FINISH} anomaly) therefore starts a new lifecycle of that id,
     * as an admission does: found by a random run that admitted {@code R} again while its first
     * lifecycle's deferral was still pending, and finished both as {@code R-1a2b3c4d}: the two
     * reaps each surface it once, as upstream would. Returns the violations (empty when the run
     * satisfies the property).
     */
    public static List<String> doubleSurfacing(Run run) {
        List<String> bad = new ArrayList<>();
        Set<String> surfaced = new LinkedHashSet<>();
        for (int i = 0; i < run.events.size(); i++) {
            if (run.events.get(i) instanceof NodeEvent.RequestAdmitted a) {
                surfaced.remove(a.requestId());
            }
            // A connector without update_connector_output (vLLM 239b5ff30, switch no-update-connector-output)
            // passes finished_sending through as the worker reported it, as upstream does: a request it
            // names again is not hidden but named, with the assertion vLLM's scheduler would fail on.
            Set<String> namedUnknown = new LinkedHashSet<>();
            for (Effect e : run.effects.get(i)) {
                if (e instanceof Effect.Anomaly a && a.kind() == AnomalyKind.FINISHED_SENDING_UNKNOWN_REQUEST) {
                    namedUnknown.add(a.requestId());
                }
            }
            for (Effect e : run.effects.get(i)) {
                if (e instanceof Effect.Anomaly a && a.kind() == AnomalyKind.REQUEST_RENAMED_AT_FINISH) {
                    surfaced.remove(a.requestId());
                }
                if (e instanceof Effect.FinishedSendingRewritten f) {
                    Set<String> inThisStep = new LinkedHashSet<>();
                    for (String rid : f.safe()) {
                        if (!inThisStep.add(rid)) {
                            bad.add("#" + i + ": " + rid + " twice in one finished_sending");
                        }
                        if (!surfaced.add(rid) && !namedUnknown.contains(rid)) {
                            bad.add("#" + i + ": " + rid + " surfaced again without being re-admitted");
                        }
                    }
                }
            }
        }
        return bad;
    }

    /**
     * (d) Every DeferralStarted is followed, later in the run, by an AckSurfaced of the same
     * request. Returns the violations.
     */
    public static List<String> unresolvedDeferrals(Run run) {
        List<String> bad = new ArrayList<>();
        List<Effect> flat = new ArrayList<>();
        List<Integer> eventOf = new ArrayList<>();
        for (int i = 0; i < run.effects.size(); i++) {
            for (Effect e : run.effects.get(i)) {
                flat.add(e);
                eventOf.add(i);
            }
        }
        for (int k = 0; k < flat.size(); k++) {
            if (flat.get(k) instanceof Effect.DeferralStarted d) {
                boolean found = false;
                for (int j = k + 1; j < flat.size() && !found; j++) {
                    found = flat.get(j) instanceof Effect.AckSurfaced a && a.requestId().equals(d.requestId());
                }
                if (!found) {
                    bad.add("#" + eventOf.get(k) + ": " + d + " never followed by AckSurfaced");
                }
            }
        }
        return bad;
    }

    /** The latest deadline of any DeferralStarted in the run, or 0. */
    static long lastDeadline(Run run) {
        long max = 0;
        for (List<Effect> l : run.effects) {
            for (Effect e : l) {
                if (e instanceof Effect.DeferralStarted d) {
                    max = Math.max(max, d.deadlineNs());
                }
            }
        }
        return max;
    }

    /** Terminal phases. */
    public static final Set<RequestPhase> TERMINAL = EnumSet.of(RequestPhase.FINISHED, RequestPhase.FREED_AFTER_ACK,
            RequestPhase.REAPED, RequestPhase.ABORTED_BEFORE_ALLOC);

    /**
     * The position of a phase on the documented lifecycles (moriio-protocol.md 5.2 to 5.5 and the
     * RequestPhase javadoc), merged into one order so that a request whose params send it down the
     * other role's path (decode-leg params on a producer: Python stages the receive there too) is
     * still judged by where it goes next. Phases with equal positions are alternatives of each
     * other; PREFILLING and PENDING_SAVE may alternate (staged at alloc, found uncovered at the
     * meta build, covered by the final chunk: protocol 5.3 step 2).
     */
    static int rank(RequestPhase p) {
        return switch (p) {
            case ADMITTED -> 0;
            case PREFILLING, PENDING_SAVE -> 1;
            case RECV_STAGED, WAITING_FOR_REMOTE_KVS -> 2;
            case READS_IN_FLIGHT, KV_RECEIVED -> 3;
            case RUNNING, LOAD_FAILED -> 4;
            case DEFERRED_FREE -> 5;
            case FINISHED, FREED_AFTER_ACK, REAPED, ABORTED_BEFORE_ALLOC -> 6;
        };
    }

    /**
     * (f) The phases of every request move forward along the lifecycle:
     * <ul>
     *   <li>admission starts a new lifecycle at any time (from nothing, or from the terminal
     *       phase of an earlier request with the same id);</li>
     *   <li>every other change starts from the phase last recorded for that request (the
     *       decision records are consistent with each other);</li>
     *   <li>nothing leaves a terminal phase (a terminal request is freed; only a new admission
     *       brings the id back);</li>
     *   <li>a change moves to a later position of {@link #rank}, or between the alternatives
     *       PREFILLING and PENDING_SAVE; the one exception is the allocation hook run again on a
     *       request that has not finished (vLLM re-runs update_state_after_alloc after a
     *       preemption and tells the connector nothing else: seed-vs-newest #12, C.11), which may
     *       re-enter any earlier phase before DEFERRED_FREE; a backward move is also accepted when
     *       the same event records an anomaly naming the request (the reducer follows Python and
     *       says so).</li>
     * </ul>
     * Returns the violations with their event numbers.
     */
    public static List<String> phaseRegressions(Run run) {
        List<String> bad = new ArrayList<>();
        Map<String, RequestPhase> current = new LinkedHashMap<>();
        for (int i = 0; i < run.events.size(); i++) {
            NodeEvent event = run.events.get(i);
            String cause = event.getClass().getSimpleName();
            Set<String> flagged = new LinkedHashSet<>();
            for (Effect e : run.effects.get(i)) {
                if (e instanceof Effect.Anomaly a && a.requestId() != null) {
                    flagged.add(a.requestId());
                    if (a.kind() == io.kvledger.core.model.AnomalyKind.REQUEST_RENAMED_AT_FINISH) {
                        // the request finished under a suffixed id: its lifecycle continues under it
                        String old = a.detail().substring("admitted as ".length());
                        current.put(a.requestId(), current.remove(old));
                    }
                }
            }
            for (Effect e : run.effects.get(i)) {
                if (!(e instanceof Effect.PhaseChanged pc)) {
                    continue;
                }
                String rid = pc.requestId();
                if (event instanceof NodeEvent.RequestAdmitted && pc.to() == RequestPhase.ADMITTED) {
                    // (re-)admission starts a new lifecycle, from whatever the id last went through
                    if (pc.from() != current.get(rid)) {
                        bad.add("#" + i + ": " + rid + " admitted from " + pc.from() + " but its recorded phase was "
                                + current.get(rid));
                    }
                    current.put(rid, pc.to());
                    continue;
                }
                if (pc.from() == null) {
                    bad.add("#" + i + ": " + rid + " entered " + pc.to() + " from nothing outside admission (" + cause + ")");
                    current.put(rid, pc.to());
                    continue;
                }
                RequestPhase cur = current.get(rid);
                String change = pc.from() + " -> " + pc.to() + " on " + cause + " (" + pc.reason() + ")";
                if (cur != pc.from()) {
                    bad.add("#" + i + ": " + rid + " changed " + change + " but its recorded phase was " + cur);
                }
                if (cur != null && TERMINAL.contains(cur)) {
                    bad.add("#" + i + ": " + rid + " left terminal phase " + cur + ": " + change);
                } else {
                    int a = rank(pc.from());
                    int b = rank(pc.to());
                    boolean alternative = a == b && a == rank(RequestPhase.PREFILLING);
                    boolean reallocated = event instanceof NodeEvent.BlocksAllocated
                            && a < rank(RequestPhase.DEFERRED_FREE) && b < rank(RequestPhase.DEFERRED_FREE);
                    if ((b < a || (b == a && !alternative)) && !reallocated && !flagged.contains(rid)) {
                        bad.add("#" + i + ": " + rid + " moved backwards: " + change);
                    }
                }
                current.put(rid, pc.to());
            }
        }
        return bad;
    }

    /** The event numbers a list of violation strings ("#12: ...") refers to. */
    static Set<Integer> eventNumbers(List<String> violations) {
        Set<Integer> s = new LinkedHashSet<>();
        for (String v : violations) {
            int colon = v.indexOf(':');
            if (v.startsWith("#") && colon > 1) {
                try {
                    s.add(Integer.parseInt(v.substring(1, colon)));
                } catch (NumberFormatException ignored) {
                    // not an event reference
                }
            }
        }
        return s;
    }

}
