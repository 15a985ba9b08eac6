package io.kvledger.node.shadow;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.journal.format.EntryType;
import io.kvledger.journal.format.Payloads;
import io.kvledger.ledger.replay.BridgeReplies;
import io.kvledger.node.loop.NodeLoop;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Compares, on the loop thread, the reducer's answer to each observed hook call with the answer
 * the real connector gave ({@link BridgeReplies}: every hook reply, the connector metadata field
 * by field, as {@code replay --verify} compares a vLLM-bridge recording), and decides what is journaled
 * for it: the real connector's answers as recorded, the reducer's other effects (decisions, and
 * the commands a live node would have executed; a shadow node executes none), and, when the two
 * disagree, an {@code Anomaly} of kind {@link AnomalyKind#SHADOW_DIVERGENCE} naming the hook and
 * both answers. (Request timelines recompute effects from the inputs, so they do not show the
 * divergence; {@code /v1/divergences}, the metrics, {@code dump --type anomaly} and
 * {@code replay --verify} do.) The journal thus reads like an imported recording ({@code replay --verify}
 * reports the same divergences again), with the reducer's decisions and the divergences in it.
 *
 * <p>Divergences are counted by hook and the newest {@value #KEPT} are kept for the HTTP API.
 * Also holds what {@link ShadowIntake} knows of the streams. Thread-safe for readers.
 */
public final class ShadowMonitor implements NodeLoop.Observer {

    /** Divergences kept for {@code /v1/divergences}. */
    public static final int KEPT = 10_000;

    /** The vLLM connector method behind each input type a recorder writes (the metrics' hook label). */
    static final Map<String, String> HOOKS;

    static {
        LinkedHashMap<String, String> m = new LinkedHashMap<>();
        m.put("request_admitted", "on_new_request");
        m.put("matched_tokens_queried", "get_num_new_matched_tokens");
        m.put("blocks_allocated", "update_state_after_alloc");
        m.put("step_scheduled", "build_connector_meta");
        m.put("connector_output_received", "update_connector_output");
        m.put("request_finished", "request_finished");
        m.put("load_started", "start_load_kv");
        m.put("layer_saved", "save_kv_layer");
        m.put("save_waited", "wait_for_save");
        m.put("finished_polled", "get_finished");
        HOOKS = java.util.Collections.unmodifiableMap(m);
    }

    /**
     * One hook call the reducer answered otherwise than the real connector.
     *
     * @param seq         the journal seq of the observed input
     * @param atNs        its time (node time)
     * @param hook        the connector method ({@link #HOOKS}), or the input type when none
     * @param input       the input type
     * @param requestId   the request the answer is about, or {@code null}
     * @param effectIndex which reply of the call differs (0-based, among the compared replies)
     * @param connector   the real connector's answer, dissected ({@code null}: it gave none)
     * @param kvledger    the reducer's answer, dissected ({@code null}: it gave none)
     */
    public record Divergence(long seq, long atNs, String hook, String input, String requestId, int effectIndex,
                             String connector, String kvledger) {}

    private final ConcurrentHashMap<String, LongAdder> byHook = new ConcurrentHashMap<>();
    private final ArrayDeque<Divergence> kept = new ArrayDeque<>();
    private final AtomicLong total = new AtomicLong();
    private final AtomicLong observed = new AtomicLong();
    private final AtomicLong compared = new AtomicLong();
    final ConcurrentHashMap<String, ShadowIntake.StreamInfo> streams = new ConcurrentHashMap<>();

    public ShadowMonitor() {
        for (String h : HOOKS.values()) {
            byHook.put(h, new LongAdder());
        }
    }

    @Override
    public List<Effect> derived(long seq, NodeEvent event, List<Effect> reducer, List<Effect> recorded) {
        List<Effect> expected = BridgeReplies.replies(recorded);
        List<Effect> actual = BridgeReplies.comparable(reducer, expected);
        List<Effect> out = new ArrayList<>(recorded.size() + reducer.size() + 1);
        out.addAll(recorded);
        for (Effect e : reducer) {
            if (!BridgeReplies.recorded(e)) {
                out.add(e);
            }
        }
        int i = BridgeReplies.firstReplyDifference(actual, expected);
        Divergence d = null;
        if (i >= 0) {
            Effect a = i < actual.size() ? actual.get(i) : null;
            Effect x = i < expected.size() ? expected.get(i) : null;
            String input = EntryType.of(event).typeName();
            String hook = HOOKS.getOrDefault(input, input);
            String rid = requestId(x != null ? x : a);
            String conn = x == null ? null : Payloads.dissect(x);
            String mine = a == null ? null : Payloads.dissect(a);
            String diff = BridgeReplies.difference(a, x);
            if (diff != null) {
                conn = conn + " (" + diff + ")";
            }
            d = new Divergence(seq, event.atNs(), hook, input, rid, i, conn, mine);
            out.add(new Effect.Anomaly(AnomalyKind.SHADOW_DIVERGENCE, rid, null, hook + ", reply " + (i + 1)
                    + ": the connector answered " + (conn == null ? "nothing (" + expected.size() + " replies)" : conn)
                    + "; kvledger answers " + (mine == null ? "nothing (" + actual.size() + " replies)" : mine)));
        }
        // one step under the lock toJson reads with: a reader sees an input counted only with
        // its divergence, if any, and counts that agree with the list
        synchronized (kept) {
            if (d != null) {
                byHook.computeIfAbsent(d.hook(), k -> new LongAdder()).increment();
                total.incrementAndGet();
                kept.addLast(d);
                if (kept.size() > KEPT) {
                    kept.removeFirst();
                }
            }
            compared.addAndGet(expected.size());
            observed.incrementAndGet();
        }
        return out;
    }

    private static String requestId(Effect e) {
        if (e instanceof Effect.MatchedTokens m) {
            return m.requestId();
        }
        return e instanceof Effect.FinishDecision f ? f.requestId() : null;
    }

    /** Divergences found since start. */
    public long divergences() {
        return total.get();
    }

    /** Divergences of one hook (a connector method name) since start. */
    public long divergences(String hook) {
        LongAdder a = byHook.get(hook);
        return a == null ? 0 : a.sum();
    }

    /** Hooks with a counter (every recorded hook, and any other input that diverged). */
    public List<String> hooks() {
        return List.copyOf(byHook.keySet());
    }

    /** Observed inputs applied and compared. */
    public long observed() {
        return observed.get();
    }

    /** Recorded replies compared. */
    public long compared() {
        return compared.get();
    }

    /** Lines lost: gaps in the streams, unreadable lines, lines a full inbox refused. */
    public long linesLost() {
        return streams.values().stream().mapToLong(s -> s.lost.get()).sum();
    }

    /** Lines received from scheduler streams. */
    public long linesReceived() {
        return streams.values().stream().mapToLong(s -> s.lines.get()).sum();
    }

    /** The newest {@code limit} divergences kept, oldest first. */
    public List<Divergence> recent(int limit) {
        synchronized (kept) {
            List<Divergence> all = new ArrayList<>(kept);
            return all.subList(Math.max(0, all.size() - limit), all.size());
        }
    }

    /** The JSON object of {@code GET /v1/divergences}. */
    public Map<String, Object> toJson(String node, int limit) {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        synchronized (kept) {
            putSnapshot(m, node, limit);
        }
        return m;
    }

    private void putSnapshot(LinkedHashMap<String, Object> m, String node, int limit) {
        m.put("node", node);
        m.put("count", divergences());
        LinkedHashMap<String, Object> hooks = new LinkedHashMap<>();
        byHook.entrySet().stream().filter(e -> e.getValue().sum() > 0).sorted(Map.Entry.comparingByKey())
                .forEach(e -> hooks.put(e.getKey(), e.getValue().sum()));
        m.put("by_hook", hooks);
        m.put("observed_inputs", observed());
        m.put("replies_compared", compared());
        List<Object> ss = new ArrayList<>();
        streams.values().stream().sorted(java.util.Comparator.comparingLong(s -> s.firstSeenNs)).forEach(s -> ss.add(s.toJson()));
        m.put("streams", ss);
        List<Divergence> r = recent(limit);
        m.put("returned", (long) r.size());
        m.put("truncated", r.size() < Math.min(divergences(), KEPT));
        List<Object> list = new ArrayList<>();
        for (Divergence d : r) {
            LinkedHashMap<String, Object> dm = new LinkedHashMap<>();
            dm.put("seq", d.seq());
            dm.put("at_ns", d.atNs());
            dm.put("hook", d.hook());
            dm.put("input", d.input());
            dm.put("request_id", d.requestId());
            dm.put("reply_index", (long) d.effectIndex());
            dm.put("connector", d.connector());
            dm.put("kvledger", d.kvledger());
            list.add(dm);
        }
        m.put("divergences", list);
    }
}
