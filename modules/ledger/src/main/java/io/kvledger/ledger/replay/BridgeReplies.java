package io.kvledger.ledger.replay;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.PyValue;
import io.kvledger.core.model.ReqMeta;
import io.kvledger.core.model.TransferId;
import io.kvledger.journal.format.Payloads;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;

/**
 * What a vLLM-bridge recording can be checked against: the real connector's answers to its hooks.
 * A recording (modules/vllm-bridge, header {@code origin} starting with {@link #ORIGIN}) holds
 * every hook reply as derived entries, the connector metadata ({@code metadata_built}, what
 * {@code build_connector_meta} returned) included, and no decision records or I/O commands.
 * {@code kvledger replay --verify} and the shadow node ({@code kvledger node --engine shadow})
 * compare the reducer's replies with those through {@link #comparable} and
 * {@link #firstReplyDifference}, so that both report the same divergences. The rewritten
 * {@code finished_sending} is compared as the set it is in MoRIIO (the recorder writes it sorted,
 * kvledger in the order it surfaced the requests).
 *
 * <p>The connector metadata is compared field by field ({@link #metadataDifference}): the
 * {@code ReqMeta} entries of {@code reqs_to_recv} and {@code reqs_to_save} by request id (MoRIIO
 * keys them so; their order is not compared), {@code reqs_to_send} as a set, the step and the size
 * of the transfer-id map. A field the connector's {@code ReqMeta} does not have is recorded as -1
 * (ints), null ({@code transfer_id}) or an empty list ({@code multi_pod_hosts}) and is not
 * compared; so is {@code reqs_to_send} recorded as null and {@code mapping_size} recorded as -1
 * (a metadata object without them). A step whose recording holds no {@code metadata_built} (a
 * recorder of before it was recorded, or a connector whose metadata is not MoRIIO-shaped) compares
 * the other replies only.
 */
public final class BridgeReplies {

    /** The start of the header origin of a journal recorded by the vLLM bridge. */
    public static final String ORIGIN = "vllm-bridge ";

    private BridgeReplies() {}

    /** Whether a bridge recording holds this kind of effect: the hook replies. */
    public static boolean recorded(Effect e) {
        return e instanceof Effect.HookReply;
    }

    /**
     * Whether a journal origin is the vLLM bridge's recording of a worker process (one TP rank's
     * {@code start_load_kv}, {@code save_kv_layer}, {@code wait_for_save}, {@code get_finished}).
     * Its replies cannot be recomputed from its stream alone: see {@link #WORKER_NOT_COMPARED}.
     */
    public static boolean workerStream(String origin) {
        return origin != null && origin.startsWith(ORIGIN) && origin.contains(" recorder worker ");
    }

    /**
     * Why {@code replay --verify} compares nothing in a bridge worker stream: the finished sets
     * {@code get_finished} reports come from inputs the stream does not hold.
     */
    public static final String WORKER_NOT_COMPARED = "a vllm-bridge worker stream is not compared: get_finished's "
            + "finished sets come from what happens inside the real connector (RDMA transfer completions, write_done "
            + "and release notifies on its own sockets, handshakes) and from the scheduler's metadata, none of which "
            + "the worker's stream records; replaying it alone would report every finished transfer as a divergence";

    /** The effects of {@code effects} a bridge recording holds, in order. */
    public static List<Effect> replies(List<? extends Effect> effects) {
        return effects.stream().filter(BridgeReplies::recorded).map(e -> (Effect) e).toList();
    }

    /**
     * The reducer's replies to compare with the recorded ones ({@code recorded} filtered by
     * {@link #replies} or not): its hook replies, without {@code metadata_built} when the recording
     * holds none for this input.
     */
    public static List<Effect> comparable(List<? extends Effect> reducer, List<? extends Effect> recorded) {
        boolean withMeta = recorded.stream().anyMatch(e -> e instanceof Effect.MetadataBuilt);
        return reducer.stream().filter(e -> recorded(e) && (withMeta || !(e instanceof Effect.MetadataBuilt)))
                .map(e -> (Effect) e).toList();
    }

    /** Whether two effects are the same answer (equal, or equal once encoded). */
    static boolean same(Effect a, Effect b) {
        return a != null && b != null && (a.equals(b) || Payloads.same(a, b));
    }

    /**
     * Whether kvledger's reply {@code actual} is the recorded connector reply {@code expected}:
     * {@link #same}, and for the connector metadata no {@link #metadataDifference}.
     */
    static boolean sameReply(Effect actual, Effect expected) {
        if (actual instanceof Effect.MetadataBuilt a && expected instanceof Effect.MetadataBuilt e) {
            return same(a, e) || metadataDifference(a, e) == null;
        }
        if (actual instanceof Effect.FinishedSendingRewritten a && expected instanceof Effect.FinishedSendingRewritten e) {
            // MoRIIO's SAFE is a Python set (the recorder writes it sorted); its order means nothing
            return new TreeSet<>(a.safe()).equals(new TreeSet<>(e.safe()));
        }
        return same(actual, expected);
    }

    /**
     * The index of the first position where {@code actual} and {@code expected} differ (one list
     * ending early counts), or -1 when they hold the same effects.
     */
    public static int firstDifference(List<? extends Effect> actual, List<? extends Effect> expected) {
        int n = Math.max(actual.size(), expected.size());
        for (int i = 0; i < n; i++) {
            Effect a = i < actual.size() ? actual.get(i) : null;
            Effect e = i < expected.size() ? expected.get(i) : null;
            if (!same(a, e)) {
                return i;
            }
        }
        return -1;
    }

    /**
     * As {@link #firstDifference}, for kvledger's replies ({@link #comparable}) against a bridge
     * recording's ({@link #replies}), with {@link #sameReply}.
     */
    public static int firstReplyDifference(List<? extends Effect> actual, List<? extends Effect> expected) {
        int n = Math.max(actual.size(), expected.size());
        for (int i = 0; i < n; i++) {
            Effect a = i < actual.size() ? actual.get(i) : null;
            Effect e = i < expected.size() ? expected.get(i) : null;
            if (a == null || e == null || !sameReply(a, e)) {
                return i;
            }
        }
        return -1;
    }

    /**
     * What differs between kvledger's reply and the connector's, in one line, when both are
     * connector metadata ({@code null} otherwise, or when nothing compared differs).
     */
    public static String difference(Effect actual, Effect expected) {
        if (actual instanceof Effect.MetadataBuilt a && expected instanceof Effect.MetadataBuilt e) {
            return metadataDifference(a, e);
        }
        return null;
    }

    /**
     * The first field where kvledger's metadata {@code k} differs from the connector's {@code c}
     * ("reqs_to_save[RID].local_block_ids: the connector [[1, 4, 106]], kvledger [[1, 4, 6]]"), or
     * {@code null} when every field both sides have agrees.
     */
    static String metadataDifference(Effect.MetadataBuilt k, Effect.MetadataBuilt c) {
        if (k.step() != c.step()) {
            return field("step", c.step(), k.step());
        }
        String d = reqMetas("reqs_to_recv", k.reqsToRecv(), c.reqsToRecv());
        if (d == null) {
            d = reqMetas("reqs_to_save", k.reqsToSave(), c.reqsToSave());
        }
        if (d != null) {
            return d;
        }
        if (c.reqsToSend() != null) {
            TreeSet<String> ks = new TreeSet<>(k.reqsToSend() == null ? List.of() : k.reqsToSend());
            TreeSet<String> cs = new TreeSet<>(c.reqsToSend());
            if (!ks.equals(cs)) {
                return field("reqs_to_send", cs, ks);
            }
        }
        if (c.mappingSize() >= 0 && c.mappingSize() != k.mappingSize()) {
            return field("mapping_size (transfer_id_to_request_id entries)", c.mappingSize(), k.mappingSize());
        }
        return null;
    }

    private static String reqMetas(String list, List<ReqMeta> kList, List<ReqMeta> cList) {
        Map<String, ReqMeta> ks = byId(kList);
        Map<String, ReqMeta> cs = byId(cList);
        if (!ks.keySet().equals(cs.keySet())) {
            List<String> onlyK = new ArrayList<>(ks.keySet());
            onlyK.removeAll(cs.keySet());
            List<String> onlyC = new ArrayList<>(cs.keySet());
            onlyC.removeAll(ks.keySet());
            return list + ": the connector " + (onlyC.isEmpty() ? "" : "also has " + onlyC + (onlyK.isEmpty() ? "" : " and "))
                    + (onlyK.isEmpty() ? "" : "lacks " + onlyK) + " (the connector " + cs.keySet() + ", kvledger "
                    + ks.keySet() + ")";
        }
        for (Map.Entry<String, ReqMeta> en : cs.entrySet()) {
            String d = reqMeta(list + "[" + en.getKey() + "]", ks.get(en.getKey()), en.getValue());
            if (d != null) {
                return d;
            }
        }
        return null;
    }

    private static Map<String, ReqMeta> byId(List<ReqMeta> list) {
        Map<String, ReqMeta> m = new LinkedHashMap<>();
        if (list != null) {
            for (ReqMeta r : list) {
                m.put(r.requestId(), r);
            }
        }
        return m;
    }

    /** kvledger's entry {@code k} against the connector's {@code c}; fields the connector lacks are skipped. */
    private static String reqMeta(String at, ReqMeta k, ReqMeta c) {
        if (!sameBlocks(k.localBlockIds(), c.localBlockIds())) {
            return field(at + ".local_block_ids", blocks(c.localBlockIds()), blocks(k.localBlockIds()));
        }
        if (!sameBlocks(k.remoteBlockIds(), c.remoteBlockIds())) {
            return field(at + ".remote_block_ids", blocks(c.remoteBlockIds()), blocks(k.remoteBlockIds()));
        }
        if (!Objects.equals(k.remoteEngineId(), c.remoteEngineId())) {
            return field(at + ".remote_engine_id", c.remoteEngineId(), k.remoteEngineId());
        }
        if (c.remoteHost() != null && !c.remoteHost().equals(k.remoteHost())) {
            return field(at + ".remote_host", c.remoteHost(), k.remoteHost());
        }
        String[] names = {"remote_handshake_port", "remote_notify_port", "remote_dp_rank", "remote_dp_size",
            "remote_dp_size_local", "remote_tp_size"};
        int[] cv = {c.remoteHandshakePort(), c.remoteNotifyPort(), c.remoteDpRank(), c.remoteDpSize(),
            c.remoteDpSizeLocal(), c.remoteTpSize()};
        int[] kv = {k.remoteHandshakePort(), k.remoteNotifyPort(), k.remoteDpRank(), k.remoteDpSize(),
            k.remoteDpSizeLocal(), k.remoteTpSize()};
        for (int i = 0; i < names.length; i++) {
            if (cv[i] >= 0 && cv[i] != kv[i]) {
                return field(at + "." + names[i], cv[i], kv[i]);
            }
        }
        if (!c.transferId().isNone() && !sameTransferId(c.transferId(), k.transferId())) {
            return field(at + ".transfer_id", c.transferId(), k.transferId());
        }
        if (!c.multiPodHosts().isEmpty() && !c.multiPodHosts().equals(k.multiPodHosts())) {
            return field(at + ".multi_pod_hosts", c.multiPodHosts(), k.multiPodHosts());
        }
        if (c.writeMode() != k.writeMode()) {
            return field(at + ".write_mode", c.writeMode(), k.writeMode());
        }
        return null;
    }

    private static String field(String name, Object connector, Object kvledger) {
        return name + ": the connector " + connector + ", kvledger " + kvledger;
    }

    /**
     * Two numbers (int, big int, float; not bool) are the same when their {@code long} values are
     * ({@link Number#longValue}: a float cut toward zero, a big int's low 64 bits), as this check
     * always compared them; other ids by {@link TransferId#equals} (bytes by content).
     */
    private static boolean sameTransferId(TransferId a, TransferId b) {
        return isNumber(a) && isNumber(b) ? longValue(a) == longValue(b) : a.equals(b);
    }

    private static boolean isNumber(TransferId id) {
        return id instanceof TransferId.Int || id instanceof TransferId.Other o
                && (o.value() instanceof PyValue.Int || o.value() instanceof PyValue.BigInt || o.value() instanceof PyValue.Float);
    }

    /** {@link Number#longValue} of a number id ({@link #isNumber}); 0 for any other. */
    private static long longValue(TransferId id) {
        return switch (id) {
            case TransferId.Int i -> i.value();
            case TransferId.Other o -> switch (o.value()) {
                case PyValue.Int i -> i.value();
                case PyValue.BigInt bi -> bi.value().longValue();
                case PyValue.Float f -> (long) f.value();
                case PyValue.Nil n -> 0;
                case PyValue.Bool bo -> 0;
                case PyValue.Str st -> 0;
                case PyValue.Bytes by -> 0;
                case PyValue.List l -> 0;
                case PyValue.Map m -> 0;
            };
            case TransferId.Str s -> 0;
            case TransferId.Bytes b -> 0;
            case TransferId.None n -> 0;
            case TransferId.Unpackable u -> 0;
        };
    }

    /** Block groups with no group and with one empty group are the same (MoRIIO's {@code []}). */
    private static boolean sameBlocks(BlockGroups a, BlockGroups b) {
        if (a == null || b == null) {
            return a == b;
        }
        return blocks(a).equals(blocks(b));
    }

    private static List<List<Integer>> blocks(BlockGroups g) {
        if (g == null) {
            return null;
        }
        List<List<Integer>> out = new ArrayList<>();
        for (int i = 0; i < g.size(); i++) {
            out.add(Arrays.stream(g.group(i)).boxed().toList());
        }
        if (out.size() == 1 && out.get(0).isEmpty()) {
            out.clear();
        }
        return out;
    }
}
