package io.kvledger.wire.bridge;

import io.kvledger.core.config.UpstreamVersions;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.PyValue;
import io.kvledger.core.model.ReqMeta;
import io.kvledger.wire.DecodeResult;
import io.kvledger.wire.PyMsgpack;
import io.kvledger.wire.PyPacker;
import io.kvledger.wire.PyValues;
import io.kvledger.wire.RejectReason;
import io.kvledger.wire.Rejection;
import io.kvledger.wire.WireEncodingException;
import io.kvledger.wire.WireLimits;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The engine bridge protocol codec (version {@value #VERSION}; {@code docs/bridge-protocol.md}
 * documents it for the Python side).
 *
 * <p>Request frame: a msgpack map {@code {"v": 1, "id": int, "hook": str, "args": {...}}};
 * reply frame: {@code {"v": 1, "id": <the request's>, "ok": True, "result": {...}}} or
 * {@code {"v": 1, "id": <the request's or None>, "ok": False, "error": str}}.
 *
 * <p>{@link #decode} never throws and is bounded by its {@link WireLimits} (frame size, nesting):
 * a frame that is not a valid request comes back as {@link BridgeDecoded.Rejected} with the id
 * when it could be read and a detail naming the offending field ({@code "args.block_ids[1][3]
 * must be int, got str"}). Unknown keys, in the envelope and in {@code args}, are ignored so that
 * newer engines can send more than this version reads.
 *
 * <p>{@link #encodeReply} maps the effects of the one reducer transition a hook call caused to
 * that call's reply, taking only the hook-reply effects; I/O commands and decision records are
 * not the engine's business and are never sent.
 *
 * <p>Stateless: the methods are static and safe from any thread.
 */
public final class BridgeCodec {

    /** The protocol version this codec speaks. */
    static final int VERSION = 1;

    /** The wire name of a batch of calls ({@link BridgeDecoded.Batch}); listed by {@code hello}. */
    static final String BATCH = "batch";

    /**
     * Listed by {@code hello} when a batch's calls may come in the compact form: an array
     * {@code [id, hook, field...]}, the hook's arguments by position ({@link #COMPACT_FIELDS}).
     */
    static final String COMPACT = "compact";

    /**
     * Listed by {@code hello} when a compact {@code build_connector_meta}'s new request may be
     * {@code [request_id, num_computed_tokens]}: its {@code block_ids} those of the last compact
     * {@code update_state_after_alloc} and its {@code kv_transfer_params} those of the last compact
     * {@code add_request} of that request before it in the same batch ({@link Seen}).
     */
    static final String DERIVED = "derived";

    /**
     * Listed by {@code hello} when a compact {@code build_connector_meta}'s {@code cached_req_ids}
     * may be the number of the step before it on the same connection, standing for that step's ids
     * ({@link BridgeSession}; refused when that is not the step remembered), and its
     * {@code cached_new_block_ids} {@code {"at": [index...], "blocks": [groups...]}}: the long
     * form's list with those entries, None elsewhere. The call read is the long form's.
     */
    static final String STEADY = "steady";

    /**
     * Listed by {@code hello} when a batch may ask ({@code args.agreed: True}) for the agreed form of
     * its reply: {@code replies} then leaves out each call's empty answer and each answer equal to
     * the {@code acted} its call carried ({@link #agrees}); what is listed is as in any batch reply,
     * in order ({@link #encodeBatchReply(long, List, boolean, boolean)}).
     */
    static final String AGREED = "agreed";

    /**
     * Listed by {@code hello} when a batch asking for the agreed form may also ask ({@code
     * args.brief: True}) that an ok answer to {@code build_connector_meta} be left out too: the
     * metadata the node built for the worker, which a drive client that hands vLLM's worker the
     * inner connector's metadata only keeps for inspection (for a step of 256 requests to save,
     * ~150 KB to unpack on vLLM's scheduler thread). The node builds and journals it as before.
     */
    static final String BRIEF = "brief";

    /**
     * The argument names of each hook that has a compact form, in position order (the long form's
     * key order). Past the array's end, or None where {@link #COMPACT_OPTIONAL} names it, a field
     * is one the long form leaves out. {@code acted} is {@code [num_tokens, load_async]}, each of
     * {@code scheduled_new_reqs} {@code [request_id, block_ids, num_computed_tokens,
     * kv_transfer_params]} ({@link #NEW_REQUEST_FIELDS}).
     */
    private static final Map<BridgeHook, String[]> COMPACT_FIELDS = Map.of(
            BridgeHook.ADD_REQUEST, new String[] {"request_id", "num_prompt_tokens", "prompt_token_ids_len",
                "kv_transfer_params"},
            BridgeHook.GET_NUM_NEW_MATCHED_TOKENS, new String[] {"request_id", "num_computed_tokens", "acted"},
            BridgeHook.UPDATE_STATE_AFTER_ALLOC, new String[] {"request_id", "block_ids", "num_external_tokens"},
            BridgeHook.BUILD_CONNECTOR_META, new String[] {"step", "cached_req_ids", "cached_new_block_ids",
                "scheduled_new_reqs", "preempted_req_ids"});
    private static final java.util.Set<String> COMPACT_OPTIONAL = java.util.Set.of("acted", "scheduled_new_reqs",
            "preempted_req_ids");
    private static final String[] NEW_REQUEST_FIELDS = {"request_id", "block_ids", "num_computed_tokens",
        "kv_transfer_params"};
    private static final String[] ACTED_FIELDS = {"num_tokens", "load_async"};

    /** The args of a call that sent none. */
    private static final PyValue.Map NO_ARGS = new PyValue.Map(Map.of());

    private BridgeCodec() {}

    // ================================================================== requests

    /** Decodes one request frame with {@link WireLimits#DEFAULT}. */
    static BridgeDecoded decode(byte[] frame) {
        return decode(frame, WireLimits.DEFAULT);
    }

    /** Decodes one request frame; never throws. A compact step's ids as a number are refused (no session). */
    public static BridgeDecoded decode(byte[] frame, WireLimits limits) {
        return decode(frame, limits, null);
    }

    /**
     * Decodes one request frame of the connection whose {@code session} it is ({@link #STEADY});
     * never throws.
     */
    public static BridgeDecoded decode(byte[] frame, WireLimits limits, BridgeSession session) {
        DecodeResult<PyValue> value = PyMsgpack.decodeValue(frame, limits);
        if (value instanceof DecodeResult.Rejected<PyValue> r) {
            return new BridgeDecoded.Rejected(null, null, r.rejection());
        }
        PyValue top = value.valueOrNull();
        Long id = null;
        BridgeHook hook = null;
        try {
            if (!(top instanceof PyValue.Map envelope)) {
                throw new Bad(RejectReason.NOT_A_MAP, "a request is a map {\"v\", \"id\", \"hook\", \"args\"}, got " + typeName(top));
            }
            PyValue idValue = envelope.get("id");
            if (idValue == null) {
                throw new Bad(RejectReason.MISSING_FIELD, "missing \"id\" (the caller's correlation id, an int)");
            }
            id = int64(idValue, "id");
            if (envelope.get("v") == null) {
                throw new Bad(RejectReason.MISSING_FIELD, "missing \"v\" (the protocol version, " + VERSION + ")");
            }
            long v = int64(envelope.get("v"), "v");
            if (v != VERSION) {
                throw new Bad(RejectReason.INVALID_VALUE, "protocol version " + v + " is not supported; this node speaks " + VERSION);
            }
            if (envelope.get("hook") == null) {
                throw new Bad(RejectReason.MISSING_FIELD, "missing \"hook\"");
            }
            String hookName = str(envelope.get("hook"), "hook");
            if (BATCH.equals(hookName)) {
                return batch(id, envelope.get("args"), session);
            }
            hook = BridgeHook.ofWireName(hookName);
            if (hook == null) {
                throw new Bad(RejectReason.UNKNOWN_TYPE, "unknown hook \"" + clip(hookName) + "\" (known: " + knownHooks() + ")");
            }
            return new BridgeDecoded.Request(new BridgeRequest(id, call(hook, argsOf(envelope.get("args"), "args"))));
        } catch (Bad b) {
            return new BridgeDecoded.Rejected(id, hook, new Rejection(b.reason, b.getMessage(), false));
        } catch (RuntimeException e) {
            // a bug of this codec, not of the frame: still an answer, never an escape
            return new BridgeDecoded.Rejected(id, hook, new Rejection(RejectReason.INVALID_VALUE,
                    "request could not be read: " + e, false));
        }
    }

    /** The calls of a batch, each decoded on its own: one malformed call does not spoil the others. */
    private static BridgeDecoded batch(long id, PyValue argsValue, BridgeSession session) {
        if (!(argsValue instanceof PyValue.Map args)) {
            throw new Bad(RejectReason.WRONG_FIELD_TYPE, "args must be a dict, got " + typeName(argsValue));
        }
        if (args.get("calls") == null) {
            throw new Bad(RejectReason.MISSING_FIELD, "missing args.calls (a list of {\"id\", \"hook\", \"args\"})");
        }
        if (!(args.get("calls") instanceof PyValue.List calls)) {
            throw wrong("args.calls", "list", args.get("calls"));
        }
        PyValue agreedValue = args.get("agreed");
        boolean agreed = agreedValue instanceof PyValue.Bool b && b.value();
        boolean brief = agreed && args.get(BRIEF) instanceof PyValue.Bool b && b.value();
        List<BridgeDecoded> out = new ArrayList<>(calls.items().size());
        boolean compact = false;
        Seen seen = new Seen();
        for (int i = 0; i < calls.items().size(); i++) {
            compact |= calls.items().get(i) instanceof PyValue.List;
            out.add(member(calls.items().get(i), "args.calls[" + i + "]", seen, session));
        }
        return new BridgeDecoded.Batch(id, out, compact, agreed, brief);
    }

    /**
     * What a batch's compact calls so far sent of each request ({@link #DERIVED}): the block ids of
     * its last {@code update_state_after_alloc} and the params of its last {@code add_request}, as
     * the values sent (read later as the long form's, so a derived new request is the same call).
     */
    private static final class Seen {
        final Map<PyValue, PyValue> allocated = new java.util.HashMap<>();
        final Map<PyValue, PyValue> admitted = new java.util.HashMap<>();
    }

    private static BridgeDecoded member(PyValue entry, String where, Seen seen, BridgeSession session) {
        Long id = null;
        BridgeHook hook = null;
        try {
            if (entry instanceof PyValue.List compact) {
                return compactMember(compact.items(), where, seen, session);
            }
            if (!(entry instanceof PyValue.Map m)) {
                throw new Bad(RejectReason.NOT_A_MAP, where + " must be a dict {\"id\", \"hook\", \"args\"} or a compact "
                        + "call [id, hook, ...], got " + typeName(entry));
            }
            if (m.get("id") == null) {
                throw new Bad(RejectReason.MISSING_FIELD, "missing " + where + ".id");
            }
            id = int64(m.get("id"), where + ".id");
            if (m.get("v") != null && int64(m.get("v"), where + ".v") != VERSION) {
                throw new Bad(RejectReason.INVALID_VALUE, where + ": protocol version " + int64(m.get("v"), where + ".v")
                        + " is not supported; this node speaks " + VERSION);
            }
            if (m.get("hook") == null) {
                throw new Bad(RejectReason.MISSING_FIELD, "missing " + where + ".hook");
            }
            String hookName = str(m.get("hook"), where + ".hook");
            hook = BridgeHook.ofWireName(hookName);
            if (hook == null) {
                throw new Bad(BATCH.equals(hookName) ? RejectReason.INVALID_VALUE : RejectReason.UNKNOWN_TYPE,
                        BATCH.equals(hookName) ? where + ": a batch cannot hold a batch"
                                : "unknown hook \"" + clip(hookName) + "\" (known: " + knownHooks() + ")");
            }
            return new BridgeDecoded.Request(new BridgeRequest(id, call(hook, argsOf(m.get("args"), where + ".args"))));
        } catch (Bad b) {
            return new BridgeDecoded.Rejected(id, hook, new Rejection(b.reason, b.getMessage(), false));
        } catch (RuntimeException e) {
            return new BridgeDecoded.Rejected(id, hook, new Rejection(RejectReason.INVALID_VALUE,
                    "request could not be read: " + e, false));
        }
    }

    /**
     * A batch's call in the compact form, {@code [id, hook, field...]}: its fields become the long
     * form's {@code args} (the same keys in the same order) and are read as the long form's are,
     * so both forms give the same call and the same rejections, naming the long form's fields.
     */
    private static BridgeDecoded compactMember(List<PyValue> items, String where, Seen seen, BridgeSession session) {
        Long id = null;
        BridgeHook hook = null;
        try {
            if (items.size() < 2) {
                throw new Bad(RejectReason.MISSING_FIELD, where + ": a compact call is [id, hook, ...], got "
                        + items.size() + " items");
            }
            id = int64(items.get(0), where + "[0] (id)");
            String hookName = str(items.get(1), where + "[1] (hook)");
            hook = BridgeHook.ofWireName(hookName);
            String[] names = hook == null ? null : COMPACT_FIELDS.get(hook);
            if (names == null) {
                BridgeHook known = hook;
                hook = null;
                throw new Bad(known == null ? RejectReason.UNKNOWN_TYPE : RejectReason.INVALID_VALUE,
                        known == null ? "unknown hook \"" + clip(hookName) + "\" (known: " + knownHooks() + ")"
                                : where + ": " + hookName + " has no compact form (send it as a dict)");
            }
            if (items.size() - 2 > names.length) {
                throw new Bad(RejectReason.INVALID_VALUE, where + ": a compact " + hookName + " has at most "
                        + names.length + " fields, got " + (items.size() - 2));
            }
            if (hook == BridgeHook.BUILD_CONNECTOR_META) {
                items = steady(items, where, session);
            }
            if (hook == BridgeHook.UPDATE_STATE_AFTER_ALLOC && items.size() > 3) {
                seen.allocated.put(items.get(2), items.get(3));
            } else if (hook == BridgeHook.ADD_REQUEST && items.size() > 2) {
                seen.admitted.put(items.get(2), items.size() > 5 ? items.get(5) : PyValue.NONE);
            }
            LinkedHashMap<PyValue, PyValue> args = new LinkedHashMap<>();
            for (int i = 0; i < items.size() - 2; i++) {
                PyValue v = items.get(i + 2);
                String name = names[i];
                if (none(v) && COMPACT_OPTIONAL.contains(name)) {
                    continue;
                }
                if (name.equals("acted")) {
                    v = positional(v, ACTED_FIELDS, where + "[" + (i + 2) + "] (args.acted)");
                } else if (name.equals("scheduled_new_reqs") && v instanceof PyValue.List reqs) {
                    List<PyValue> out = new ArrayList<>(reqs.items().size());
                    for (int j = 0; j < reqs.items().size(); j++) {
                        String w = where + "[" + (i + 2) + "][" + j + "] (args.scheduled_new_reqs[" + j + "])";
                        out.add(positional(derived(reqs.items().get(j), seen, w), NEW_REQUEST_FIELDS, w));
                    }
                    v = new PyValue.List(out);
                }
                args.put(new PyValue.Str(name), v);
            }
            HookCall c = call(hook, new PyValue.Map(args));
            if (session != null && c instanceof HookCall.BuildConnectorMeta m) {
                session.remember(m.step(), items.size() > 3 ? items.get(3) : null);
            }
            return new BridgeDecoded.Request(new BridgeRequest(id, c));
        } catch (Bad b) {
            forgetStep(session, hook);
            return new BridgeDecoded.Rejected(id, hook, new Rejection(b.reason, b.getMessage(), false));
        } catch (RuntimeException e) {
            forgetStep(session, hook);
            return new BridgeDecoded.Rejected(id, hook, new Rejection(RejectReason.INVALID_VALUE,
                    "request could not be read: " + e, false));
        }
    }

    /** A compact {@code build_connector_meta} not read: the connection's next step must come in full. */
    private static void forgetStep(BridgeSession session, BridgeHook hook) {
        if (session != null && hook == BridgeHook.BUILD_CONNECTOR_META) {
            session.forget();
        }
    }

    /**
     * A compact {@code build_connector_meta}'s items with its {@link #STEADY} fields in the long form:
     * {@code cached_req_ids} given as a step's number are that step's ids (the one the session
     * remembers; refused otherwise, naming why), {@code cached_new_block_ids} given as
     * {@code {"at", "blocks"}} the list of one entry per cached id, None where no index names it.
     */
    private static List<PyValue> steady(List<PyValue> items, String where, BridgeSession session) {
        PyValue ids = items.size() > 3 ? items.get(3) : null;
        PyValue blocks = items.size() > 4 ? items.get(4) : null;
        boolean number = ids instanceof PyValue.Int;
        if (!number && !(blocks instanceof PyValue.Map)) {
            return items;
        }
        List<PyValue> out = new ArrayList<>(items);
        if (number) {
            long n = ((PyValue.Int) ids).value();
            ids = session == null ? null : session.idsOf(n);
            if (ids == null) {
                Long last = session == null ? null : session.step();
                throw new Bad(RejectReason.INVALID_VALUE, where + "[3] (args.cached_req_ids) = " + n + " stands for the ids of step "
                        + n + ", but " + (last == null ? "no step is remembered on this connection (a new connection, or its "
                        + "last step could not be read)" : "the last step read on this connection is " + last)
                        + "; send the ids in full");
            }
            out.set(3, ids);
        }
        if (blocks instanceof PyValue.Map m) {
            String w = where + "[4] (args.cached_new_block_ids)";
            int size = ids instanceof PyValue.List l ? l.items().size() : 0;
            List<PyValue> at = none(m.get("at")) ? List.of() : list(m.get("at"), w + ".at");
            List<PyValue> groups = none(m.get("blocks")) ? List.of() : list(m.get("blocks"), w + ".blocks");
            if (at.size() != groups.size()) {
                throw new Bad(RejectReason.INVALID_VALUE, w + " has " + at.size() + " indexes (at) but " + groups.size()
                        + " block ids (blocks); they are parallel lists");
            }
            if (m.entries().size() > (m.get("at") == null ? 0 : 1) + (m.get("blocks") == null ? 0 : 1)) {
                throw new Bad(RejectReason.INVALID_VALUE, w + " has keys other than \"at\" and \"blocks\"");
            }
            PyValue[] full = new PyValue[size];
            java.util.Arrays.fill(full, PyValue.NONE);
            for (int i = 0; i < at.size(); i++) {
                long k = int64(at.get(i), w + ".at[" + i + "]");
                if (k < 0 || k >= size) {
                    throw new Bad(RejectReason.INVALID_VALUE, w + ".at[" + i + "] = " + k + " is not one of the " + size
                            + " cached requests");
                }
                if (full[(int) k] != PyValue.NONE) {
                    throw new Bad(RejectReason.INVALID_VALUE, w + ".at[" + i + "] = " + k + " names a cached request twice");
                }
                full[(int) k] = groups.get(i);
            }
            out.set(4, new PyValue.List(java.util.Arrays.asList(full)));
        }
        return out;
    }

    /**
     * A compact new request as its four fields: a derived one, {@code [request_id,
     * num_computed_tokens]} (an int second), with the block ids and params the batch sent of that
     * request before ({@link #DERIVED}); any other value as it is.
     */
    private static PyValue derived(PyValue v, Seen seen, String what) {
        if (!(v instanceof PyValue.List l) || l.items().size() != 2 || !(l.items().get(1) instanceof PyValue.Int)) {
            return v;
        }
        PyValue rid = l.items().get(0);
        PyValue blocks = seen.allocated.get(rid);
        PyValue params = seen.admitted.get(rid);
        if (blocks == null || params == null) {
            throw new Bad(RejectReason.INVALID_VALUE, what + ": a derived new request [request_id, num_computed_tokens] "
                    + "names " + (rid instanceof PyValue.Str s ? "\"" + clip(s.value()) + "\"" : typeName(rid)) + ", which has no compact "
                    + (blocks == null ? "update_state_after_alloc" : "add_request") + " before it in this batch");
        }
        return new PyValue.List(List.of(rid, blocks, l.items().get(1), params));
    }

    /** A compact nested value {@code [v...]} as the long form's dict of {@code names}. */
    private static PyValue.Map positional(PyValue v, String[] names, String what) {
        if (!(v instanceof PyValue.List l)) {
            throw wrong(what, "list", v);
        }
        if (l.items().size() > names.length) {
            throw new Bad(RejectReason.INVALID_VALUE, what + " has at most " + names.length + " items, got "
                    + l.items().size());
        }
        LinkedHashMap<PyValue, PyValue> m = new LinkedHashMap<>();
        for (int i = 0; i < l.items().size(); i++) {
            m.put(new PyValue.Str(names[i]), l.items().get(i));
        }
        return new PyValue.Map(m);
    }

    /** A call's {@code args}: a dict, or none (left out or None) for a hook without arguments. */
    private static PyValue.Map argsOf(PyValue argsValue, String name) {
        if (none(argsValue)) {
            return NO_ARGS;
        }
        if (argsValue instanceof PyValue.Map args) {
            return args;
        }
        throw new Bad(RejectReason.WRONG_FIELD_TYPE, name + " must be a dict, got " + typeName(argsValue));
    }

    private static HookCall call(BridgeHook hook, PyValue.Map a) {
        return switch (hook) {
            case ADD_REQUEST -> new HookCall.AddRequest(
                    str(req(a, "request_id"), "args.request_id"),
                    int32(req(a, "num_prompt_tokens"), "args.num_prompt_tokens"),
                    optionalInt(req(a, "prompt_token_ids_len"), "args.prompt_token_ids_len"),
                    params(a.get("kv_transfer_params"), "args.kv_transfer_params"));
            case GET_NUM_NEW_MATCHED_TOKENS -> new HookCall.GetNumNewMatchedTokens(
                    str(req(a, "request_id"), "args.request_id"),
                    int32(req(a, "num_computed_tokens"), "args.num_computed_tokens"),
                    matchedActed(a.get("acted")));
            case UPDATE_STATE_AFTER_ALLOC -> new HookCall.UpdateStateAfterAlloc(
                    str(req(a, "request_id"), "args.request_id"),
                    blocks(req(a, "block_ids"), "args.block_ids"),
                    int32(req(a, "num_external_tokens"), "args.num_external_tokens"));
            case BUILD_CONNECTOR_META -> new HookCall.BuildConnectorMeta(
                    int64(req(a, "step"), "args.step"), cached(a), newRequests(a.get("scheduled_new_reqs")),
                    optionalStrings(a.get("preempted_req_ids"), "args.preempted_req_ids"));
            case REQUEST_FINISHED -> new HookCall.RequestFinished(
                    str(req(a, "request_id"), "args.request_id"),
                    status(req(a, "status"), "args.status"),
                    blocks(req(a, "block_ids"), "args.block_ids"),
                    finishActed(a.get("acted")));
            case UPDATE_CONNECTOR_OUTPUT -> new HookCall.UpdateConnectorOutput(
                    optionalStrings(a.get("finished_sending"), "args.finished_sending"),
                    optionalStrings(a.get("finished_recving"), "args.finished_recving"),
                    freedActed(a.get("acted")));
            case START_LOAD_KV -> new HookCall.StartLoadKv();
            case SAVE_KV_LAYER -> new HookCall.SaveKvLayer(str(req(a, "layer_name"), "args.layer_name"));
            case WAIT_FOR_SAVE -> new HookCall.WaitForSave();
            case GET_FINISHED -> new HookCall.GetFinished();
            case HANDSHAKE_VOTED -> new HookCall.HandshakeVoted(
                    str(req(a, "remote_engine_id"), "args.remote_engine_id"),
                    int32(req(a, "vote"), "args.vote"),
                    optionalInts(a.get("failed_tp_ranks"), "args.failed_tp_ranks"));
            case HELLO -> new HookCall.Hello(
                    optionalStr(a.get("kv_role"), "args.kv_role"),
                    optionalStr(a.get("mode"), "args.mode"),
                    none(a.get("dp_rank")) ? null : int32(a.get("dp_rank"), "args.dp_rank"),
                    none(a.get("tp_rank")) ? null : int32(a.get("tp_rank"), "args.tp_rank"),
                    optionalStr(a.get("connector_role"), "args.connector_role"),
                    optionalStr(a.get("vllm_version"), "args.vllm_version"),
                    optionalStr(a.get("vllm_commit"), "args.vllm_commit"),
                    optionalStr(a.get("inner_connector"), "args.inner_connector"));
            case PING -> new HookCall.Ping();
        };
    }

    private static List<Integer> optionalInts(PyValue v, String what) {
        if (none(v)) {
            return null;
        }
        List<PyValue> l = list(v, what);
        List<Integer> out = new ArrayList<>(l.size());
        for (int i = 0; i < l.size(); i++) {
            out.add(int32(l.get(i), what + "[" + i + "]"));
        }
        return out;
    }

    private static List<NodeEvent.CachedRequest> cached(PyValue.Map a) {
        boolean hasIds = !none(a.get("cached_req_ids"));
        boolean hasBlocks = !none(a.get("cached_new_block_ids"));
        if (!hasIds && !hasBlocks) {
            return List.of();
        }
        if (hasIds != hasBlocks) {
            throw new Bad(RejectReason.MISSING_FIELD, "args." + (hasIds ? "cached_new_block_ids" : "cached_req_ids")
                    + " is missing: cached_req_ids and cached_new_block_ids come together");
        }
        List<PyValue> ids = list(a.get("cached_req_ids"), "args.cached_req_ids");
        List<PyValue> blocks = list(a.get("cached_new_block_ids"), "args.cached_new_block_ids");
        if (ids.size() != blocks.size()) {
            throw new Bad(RejectReason.INVALID_VALUE, "args.cached_req_ids has " + ids.size()
                    + " items but args.cached_new_block_ids has " + blocks.size() + "; they are parallel lists");
        }
        List<NodeEvent.CachedRequest> out = new ArrayList<>(ids.size());
        for (int i = 0; i < ids.size(); i++) {
            String rid = str(ids.get(i), "args.cached_req_ids[" + i + "]");
            PyValue b = blocks.get(i);
            out.add(new NodeEvent.CachedRequest(rid, none(b) ? null : blocks(b, "args.cached_new_block_ids[" + i + "]")));
        }
        return out;
    }

    /**
     * {@code scheduled_new_reqs}: a list of {@code {"request_id": str, "block_ids": groups,
     * "num_computed_tokens": int >= 0, "kv_transfer_params": dict | None}} (the last may be left
     * out), or {@code null} when not sent (absent or None).
     */
    private static List<NodeEvent.NewRequest> newRequests(PyValue v) {
        if (none(v)) {
            return null;
        }
        String what = "args.scheduled_new_reqs";
        List<PyValue> l = list(v, what);
        List<NodeEvent.NewRequest> out = new ArrayList<>(l.size());
        for (int i = 0; i < l.size(); i++) {
            String w = what + "[" + i + "]";
            if (!(l.get(i) instanceof PyValue.Map m)) {
                throw wrong(w, "dict", l.get(i));
            }
            String rid = str(reqIn(m, "request_id", w), w + ".request_id");
            BlockGroups blocks = blocks(reqIn(m, "block_ids", w), w + ".block_ids");
            int computed = int32(reqIn(m, "num_computed_tokens", w), w + ".num_computed_tokens");
            if (computed < 0) {
                throw new Bad(RejectReason.INVALID_VALUE, w + ".num_computed_tokens = " + computed + " is negative");
            }
            out.add(new NodeEvent.NewRequest(rid, blocks, computed, params(m.get("kv_transfer_params"),
                    w + ".kv_transfer_params")));
        }
        return out;
    }

    /**
     * {@code args.acted} of {@code get_num_new_matched_tokens}: {@code {"num_tokens": int | None,
     * "load_async": bool}}, the answer vLLM acted on without waiting; {@code null} when not sent.
     */
    private static NodeEvent.MatchedAnswer matchedActed(PyValue v) {
        if (none(v)) {
            return null;
        }
        if (!(v instanceof PyValue.Map m)) {
            throw wrong("args.acted", "dict or None", v);
        }
        PyValue n = reqIn(m, "num_tokens", "args.acted");
        return new NodeEvent.MatchedAnswer(none(n) ? null : int32(n, "args.acted.num_tokens"),
                bool(reqIn(m, "load_async", "args.acted"), "args.acted.load_async"));
    }

    /**
     * {@code args.acted} of {@code request_finished}: {@code {"delay_free": bool,
     * "kv_transfer_params": dict | None}}, the answer vLLM acted on without waiting; {@code null}
     * when not sent.
     */
    private static NodeEvent.FinishAnswer finishActed(PyValue v) {
        if (none(v)) {
            return null;
        }
        if (!(v instanceof PyValue.Map m)) {
            throw wrong("args.acted", "dict or None", v);
        }
        return new NodeEvent.FinishAnswer(bool(reqIn(m, "delay_free", "args.acted"), "args.acted.delay_free"),
                params(m.get("kv_transfer_params"), "args.acted.kv_transfer_params"));
    }

    /**
     * {@code args.acted} of {@code update_connector_output}: {@code {"finished_sending": [str] |
     * None}}, the producer's {@code finished_sending} vLLM kept without waiting for the node's
     * rewrite; {@code null} when not sent.
     */
    private static NodeEvent.FreedAnswer freedActed(PyValue v) {
        if (none(v)) {
            return null;
        }
        if (!(v instanceof PyValue.Map m)) {
            throw wrong("args.acted", "dict or None", v);
        }
        return new NodeEvent.FreedAnswer(optionalStrings(reqIn(m, "finished_sending", "args.acted"),
                "args.acted.finished_sending"));
    }

    private static boolean bool(PyValue v, String what) {
        if (v instanceof PyValue.Bool b) {
            return b.value();
        }
        throw wrong(what, "bool", v);
    }

    /** A required key of a nested map (present, possibly None). */
    private static PyValue reqIn(PyValue.Map m, String key, String where) {
        PyValue v = m.get(key);
        if (v == null) {
            throw new Bad(RejectReason.MISSING_FIELD, "missing " + where + "." + key);
        }
        return v;
    }

    // ================================================================== replies

    /**
     * The reply to hook call {@code id} from the effects of the reducer transition it caused:
     * <ul>
     *   <li>{@code get_num_new_matched_tokens}: {@code MatchedTokens} as
     *       {@code {"num_tokens": int, "load_async": bool}};</li>
     *   <li>{@code build_connector_meta}: {@code MetadataBuilt} as {@code {"step", "reqs_to_recv":
     *       {rid: ReqMeta dict}, "reqs_to_save": {rid: ReqMeta dict}, "reqs_to_send": [rid],
     *       "mapping_size"}};</li>
     *   <li>{@code request_finished}: {@code FinishDecision} as
     *       {@code {"delay_free": bool, "kv_transfer_params": dict | None}};</li>
     *   <li>{@code update_connector_output}: {@code FinishedSendingRewritten} as
     *       {@code {"finished_sending": [rid] | None}} (None when empty, as the connector's
     *       {@code SAFE or None}); {@code {}} when the node did not rewrite it (a consumer), which
     *       means leave it as it is;</li>
     *   <li>{@code get_finished}: {@code FinishedReported} as {@code {"finished_sending": [rid] |
     *       None, "finished_recving": [rid] | None, "load_error_blocks": [int]}} (None when
     *       empty);</li>
     *   <li>every other hook: {@code {}}.</li>
     * </ul>
     * A hook whose reply effect is missing gets an error reply naming it. Never throws: a value
     * that cannot be packed (a transfer id of a type Python's msgpack has no form for) becomes an
     * error reply as well.
     *
     * @param effects the transition's effects; read before this method returns, so the caller may
     *                reuse the list afterwards
     */
    static byte[] encodeReply(long id, BridgeHook hook, List<? extends Effect> effects) {
        return encodeReply(id, hook, effects, Map.of());
    }

    /**
     * As {@link #encodeReply(long, BridgeHook, List)}, with {@code extra} entries added to the
     * result (the node's own additions, e.g. {@code failed_handshakes} in a {@code start_load_kv}
     * reply of a rank that awaits the TP vote).
     */
    public static byte[] encodeReply(long id, BridgeHook hook, List<? extends Effect> effects, Map<String, PyValue> extra) {
        Objects.requireNonNull(hook, "hook");
        try {
            PyPacker p = envelopeOk(id);
            result(p, hook, effects, extra);
            return p.toByteArray();
        } catch (Bad b) {
            return encodeError(id, b.getMessage());
        } catch (WireEncodingException | IllegalArgumentException e) {
            return encodeError(id, "cannot encode the " + hook.wireName() + " reply: " + e.getMessage());
        }
    }

    private static final String[] NO_KEYS = {};
    private static final String[] MATCHED_KEYS = {"num_tokens", "load_async"};
    private static final String[] META_KEYS = {"step", "reqs_to_recv", "reqs_to_save", "reqs_to_send", "mapping_size"};
    private static final String[] FINISH_KEYS = {"delay_free", "kv_transfer_params"};
    private static final String[] SENDING_KEYS = {"finished_sending"};
    private static final String[] FINISHED_KEYS = {"finished_sending", "finished_recving", "load_error_blocks"};

    /**
     * Writes the result dict straight from the effect's fields: the hook's own keys in their
     * order, then {@code extra}'s other keys (an {@code extra} key the hook also writes keeps the
     * hook's place and takes {@code extra}'s value, as a dict's {@code update} does).
     */
    private static void result(PyPacker p, BridgeHook hook, List<? extends Effect> effects, Map<String, PyValue> extra) {
        switch (hook) {
            case GET_NUM_NEW_MATCHED_TOKENS -> {
                Effect.MatchedTokens m = first(effects, Effect.MatchedTokens.class, hook);
                head(p, MATCHED_KEYS, extra);
                if (own(p, "num_tokens", extra)) {
                    p.integer(m.count());
                }
                if (own(p, "load_async", extra)) {
                    p.bool(m.loadAsync());
                }
                rest(p, MATCHED_KEYS, extra);
            }
            case BUILD_CONNECTOR_META -> {
                Effect.MetadataBuilt m = first(effects, Effect.MetadataBuilt.class, hook);
                head(p, META_KEYS, extra);
                if (own(p, "step", extra)) {
                    p.integer(m.step());
                }
                if (own(p, "reqs_to_recv", extra)) {
                    metas(p, m.reqsToRecv());
                }
                if (own(p, "reqs_to_save", extra)) {
                    metas(p, m.reqsToSave());
                }
                if (own(p, "reqs_to_send", extra)) {
                    p.strsOrNil(m.reqsToSend() == null ? List.of() : m.reqsToSend());
                }
                if (own(p, "mapping_size", extra)) {
                    p.integer(m.mappingSize());
                }
                rest(p, META_KEYS, extra);
            }
            case REQUEST_FINISHED -> {
                Effect.FinishDecision d = first(effects, Effect.FinishDecision.class, hook);
                head(p, FINISH_KEYS, extra);
                if (own(p, "delay_free", extra)) {
                    p.bool(d.delayFree());
                }
                if (own(p, "kv_transfer_params", extra)) {
                    p.params(d.params());
                }
                rest(p, FINISH_KEYS, extra);
            }
            case UPDATE_CONNECTOR_OUTPUT -> {
                Effect.FinishedSendingRewritten w = find(effects, Effect.FinishedSendingRewritten.class);
                String[] keys = w == null ? NO_KEYS : SENDING_KEYS;
                head(p, keys, extra);
                if (w != null && own(p, "finished_sending", extra)) {
                    idsOrNone(p, w.safe());
                }
                rest(p, keys, extra);
            }
            case GET_FINISHED -> {
                Effect.FinishedReported f = first(effects, Effect.FinishedReported.class, hook);
                head(p, FINISHED_KEYS, extra);
                if (own(p, "finished_sending", extra)) {
                    idsOrNone(p, f.doneSending());
                }
                if (own(p, "finished_recving", extra)) {
                    idsOrNone(p, f.doneRecving());
                }
                if (own(p, "load_error_blocks", extra)) {
                    List<Integer> errors = f.loadErrorBlocks();
                    p.arrayHeader(errors == null ? 0 : errors.size());
                    if (errors != null) {
                        for (Integer b : errors) {
                            p.integer(b);
                        }
                    }
                }
                rest(p, FINISHED_KEYS, extra);
            }
            case ADD_REQUEST, UPDATE_STATE_AFTER_ALLOC, START_LOAD_KV, SAVE_KV_LAYER, WAIT_FOR_SAVE, HANDSHAKE_VOTED, PING -> {
                // void hooks: the reply only says the node took the call (and carries the node's extra entries)
                head(p, NO_KEYS, extra);
                rest(p, NO_KEYS, extra);
            }
            case HELLO -> throw new Bad(RejectReason.INVALID_VALUE, "hello is answered with encodeHello, not from effects");
        }
    }

    /** The result's map header: the hook's keys and the {@code extra} keys that are not among them. */
    private static void head(PyPacker p, String[] keys, Map<String, PyValue> extra) {
        int n = keys.length;
        if (!extra.isEmpty()) {
            for (String k : extra.keySet()) {
                if (!among(k, keys)) {
                    n++;
                }
            }
        }
        p.mapHeader(n);
    }

    /** Writes the key; true when the caller writes its value, false when {@code extra}'s replaced it. */
    private static boolean own(PyPacker p, String key, Map<String, PyValue> extra) {
        p.str(key);
        if (!extra.isEmpty() && extra.containsKey(key)) {
            p.value(extra.get(key));
            return false;
        }
        return true;
    }

    /** The {@code extra} entries whose keys the hook does not write, in {@code extra}'s order. */
    private static void rest(PyPacker p, String[] keys, Map<String, PyValue> extra) {
        if (extra.isEmpty()) {
            return;
        }
        for (Map.Entry<String, PyValue> e : extra.entrySet()) {
            if (!among(e.getKey(), keys)) {
                p.strOrNil(e.getKey());
                p.value(e.getValue());
            }
        }
    }

    private static boolean among(String k, String[] keys) {
        for (String key : keys) {
            if (key.equals(k)) {
                return true;
            }
        }
        return false;
    }

    /** The reply to {@code hello}: the node's identity and protocol version. */
    public static byte[] encodeHello(long id, BridgeNodeInfo node) {
        PyPacker p = envelopeOk(id);
        p.mapHeader(node.profile() != null ? 10 : 9);
        p.str("protocol").integer(VERSION);
        p.str("kv_role").strOrNil(node.kvRole());
        p.str("mode").strOrNil(node.modeName());
        p.str("dp_rank").integer(node.dpRank());
        p.str("dp_size").integer(node.dpSize());
        p.str("tp_rank").integer(node.tpRank());
        p.str("tp_size").integer(node.tpSize());
        p.str("engine_id").strOrNil(node.engineId());
        if (node.profile() != null) {
            p.str("profile").str(node.profile());
        }
        p.str("hooks").arrayHeader(BridgeHook.values().length + 6);
        for (BridgeHook h : BridgeHook.values()) {
            p.str(h.wireName());
        }
        p.str(BATCH);
        p.str(COMPACT);
        p.str(DERIVED);
        p.str(STEADY);
        p.str(AGREED);
        p.str(BRIEF);
        return p.toByteArray();
    }

    /**
     * The reply to a batch: {@code {"v": 1, "id": id, "ok": True, "result": {"replies": [...]}}},
     * each entry the reply frame of one call of the batch, in the batch's order, embedded as it is.
     */
    public static byte[] encodeBatchReply(long id, List<byte[]> replies) {
        return encodeBatchReply(id, replies, false);
    }

    /**
     * As {@link #encodeBatchReply(long, List)}; {@code compact} (a batch that held a compact call,
     * {@link BridgeDecoded.Batch#compact}): a reply {@code {"v": 1, "id": n, "ok": True, "result":
     * {}}} is written as its id alone, the int {@code n}.
     */
    public static byte[] encodeBatchReply(long id, List<byte[]> replies, boolean compact) {
        return encodeBatchReply(id, replies, compact, null);
    }

    /**
     * As {@link #encodeBatchReply(long, List, boolean)}; {@code kept} not null (a batch that asked
     * for the agreed form, {@link BridgeDecoded.Batch#agreed}; one flag per reply): an empty reply (a
     * call whose answer {@link #agrees} with the {@code acted} it carried; no reply frame is empty)
     * is left out, and so is an ok reply with an empty result unless its flag is set (a call that
     * carried {@code acted} and whose answer differs: the client would take it for agreeing); the
     * others are listed in order as they are.
     */
    public static byte[] encodeBatchReply(long id, List<byte[]> replies, boolean compact, boolean[] kept) {
        if (kept != null) {
            List<byte[]> listed = new ArrayList<>();
            for (int i = 0; i < replies.size(); i++) {
                byte[] r = replies.get(i);
                if (r.length > 0 && (kept[i] || okEmptyIdLength(r) == 0)) {
                    listed.add(r);
                }
            }
            replies = listed;
        }
        // the envelope with an empty result, whose map is its last byte: replaced by {"replies": [...]}
        byte[] head = envelopeOk(id).mapHeader(0).toByteArray();
        if (head[head.length - 1] != (byte) 0x80) {
            throw new IllegalStateException("the reply envelope does not end with its result");
        }
        int n = replies.size();
        int size = head.length - 1 + 1 + 8 + 5;
        for (byte[] r : replies) {
            size += r.length;
        }
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(size);
        out.write(head, 0, head.length - 1);
        out.write(0x81);  // a map of one entry
        out.write(0xa7);  // "replies", a str of 7 bytes
        out.writeBytes("replies".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        if (n < 16) {
            out.write(0x90 | n);
        } else if (n <= 0xffff) {
            out.write(0xdc);
            out.write(n >>> 8);
            out.write(n);
        } else {
            out.write(0xdd);
            out.write(n >>> 24);
            out.write(n >>> 16);
            out.write(n >>> 8);
            out.write(n);
        }
        for (byte[] r : replies) {
            int idLength = compact ? okEmptyIdLength(r) : 0;
            if (idLength > 0) {
                out.write(r, OK_ID_AT, idLength);
            } else {
                out.writeBytes(r);
            }
        }
        return out.toByteArray();
    }

    /** Whether the reducer's {@code effects} hold {@code build_connector_meta}'s answer (its metadata: {@link #BRIEF}). */
    public static boolean metadataBuilt(List<? extends Effect> effects) {
        for (Effect e : effects) {
            if (e instanceof Effect.MetadataBuilt) {
                return true;
            }
        }
        return false;
    }

    /**
     * Whether the answer the reducer's {@code effects} give to {@code call} is the one the call says
     * vLLM acted on ({@code acted}), equal as the drive client compares them, or stricter (then the
     * answer goes in full and the client compares it): {@code get_num_new_matched_tokens} the same
     * count (not None) and {@code load_async}; {@code request_finished} the same {@code delay_free}
     * and params equal key for key with the same value types ({@code KvParams.equals}), none
     * holding a NaN float (Python's {@code ==} tells two NaNs apart); {@code update_connector_output}
     * the same requests as a set, the node's rewrite or, with none, the set as it came. False for a
     * call without {@code acted}, any other hook, or effects without the hook's reply.
     */
    public static boolean agrees(HookCall.Engine call, List<? extends Effect> effects) {
        switch (call) {
            case HookCall.GetNumNewMatchedTokens q -> {
                NodeEvent.MatchedAnswer acted = q.acted();
                Effect.MatchedTokens m = find(effects, Effect.MatchedTokens.class);
                return acted != null && m != null && acted.numTokens() != null && acted.numTokens() == m.count()
                        && acted.loadAsync() == m.loadAsync();
            }
            case HookCall.RequestFinished f -> {
                NodeEvent.FinishAnswer acted = f.acted();
                Effect.FinishDecision d = find(effects, Effect.FinishDecision.class);
                return acted != null && d != null && d.delayFree() == acted.delayFree()
                        && Objects.equals(d.params(), acted.params()) && !nan(acted.params());
            }
            case HookCall.UpdateConnectorOutput o -> {
                NodeEvent.FreedAnswer acted = o.acted();
                if (acted == null) {
                    return false;
                }
                Effect.FinishedSendingRewritten w = find(effects, Effect.FinishedSendingRewritten.class);
                List<String> mine = w != null ? w.safe() : o.finishedSending();
                return new java.util.HashSet<>(mine == null ? List.of() : mine).equals(
                        new java.util.HashSet<>(acted.finishedSending() == null ? List.of() : acted.finishedSending()));
            }
            case HookCall.AddRequest a -> {
                return false;
            }
            case HookCall.UpdateStateAfterAlloc a -> {
                return false;
            }
            case HookCall.BuildConnectorMeta m -> {
                return false;
            }
            case HookCall.StartLoadKv s -> {
                return false;
            }
            case HookCall.SaveKvLayer s -> {
                return false;
            }
            case HookCall.WaitForSave w -> {
                return false;
            }
            case HookCall.GetFinished g -> {
                return false;
            }
            case HookCall.HandshakeVoted h -> {
                return false;
            }
        }
    }

    /** Whether {@code call} carries the answer vLLM acted on ({@code args.acted}). */
    public static boolean carriesActed(HookCall.Engine call) {
        return call instanceof HookCall.GetNumNewMatchedTokens q ? q.acted() != null
                : call instanceof HookCall.RequestFinished f ? f.acted() != null
                : call instanceof HookCall.UpdateConnectorOutput o && o.acted() != null;
    }

    /** Whether a params value holds a NaN float anywhere. */
    private static boolean nan(Object v) {
        return switch (v) {
            case null -> false;
            case Double d -> d.isNaN();
            case Float f -> f.isNaN();
            case KvParams p -> nan(p.asMap());
            case Map<?, ?> m -> m.values().stream().anyMatch(BridgeCodec::nan);
            case java.util.Collection<?> c -> c.stream().anyMatch(BridgeCodec::nan);
            case Object[] a -> java.util.Arrays.stream(a).anyMatch(BridgeCodec::nan);
            case PyValue.Float f -> Double.isNaN(f.value());
            case PyValue.List l -> nan(l.items());
            case PyValue.Map m -> nan(m.entries());
            default -> false;
        };
    }

    /** {@code {"v": 1, "id": } as {@link #envelopeOk} packs it; the id's int follows. */
    private static final byte[] OK_HEAD = {(byte) 0x84, (byte) 0xa1, 'v', 1, (byte) 0xa2, 'i', 'd'};
    private static final int OK_ID_AT = OK_HEAD.length;
    /** {@code , "ok": True, "result": {}}: the end of an empty answer. */
    private static final byte[] OK_EMPTY_TAIL = {(byte) 0xa2, 'o', 'k', (byte) 0xc3, (byte) 0xa6, 'r', 'e', 's', 'u',
        'l', 't', (byte) 0x80};

    /** The length of the packed id when {@code r} is an ok reply with an empty result, else 0. */
    private static int okEmptyIdLength(byte[] r) {
        if (r.length < OK_ID_AT + 1 + OK_EMPTY_TAIL.length || r[r.length - 1] != (byte) 0x80
                || !java.util.Arrays.equals(r, 0, OK_ID_AT, OK_HEAD, 0, OK_ID_AT)) {
            return 0;
        }
        int b = r[OK_ID_AT] & 0xff;
        int n = b <= 0x7f || b >= 0xe0 ? 1 : switch (b) {
            case 0xcc, 0xd0 -> 2;
            case 0xcd, 0xd1 -> 3;
            case 0xce, 0xd2 -> 5;
            case 0xcf, 0xd3 -> 9;
            default -> 0;
        };
        if (n == 0 || r.length != OK_ID_AT + n + OK_EMPTY_TAIL.length
                || !java.util.Arrays.equals(r, OK_ID_AT + n, r.length, OK_EMPTY_TAIL, 0, OK_EMPTY_TAIL.length)) {
            return 0;
        }
        return n;
    }

    /**
     * Why a {@code hello} does not fit this node (its {@code kv_role}, {@code mode}, {@code dp_rank}
     * or {@code tp_rank} differs, or the vLLM install it names is modelled by another behaviour
     * profile than the node's, as {@link UpstreamVersions} maps a recording's header), or
     * {@code null} when it fits. An install the table has no row for, or a node whose profile is
     * not known, is not checked.
     */
    public static String helloMismatch(HookCall.Hello hello, BridgeNodeInfo node) {
        List<String> wrong = new ArrayList<>();
        if (hello.kvRole() != null && !hello.kvRole().equals(node.kvRole())) {
            wrong.add("kv_role " + clip(hello.kvRole()) + " != " + node.kvRole());
        }
        if (hello.mode() != null && !hello.mode().strip().equalsIgnoreCase(node.modeName())) {
            wrong.add("mode " + clip(hello.mode()) + " != " + node.modeName());
        }
        if (hello.dpRank() != null && hello.dpRank() != node.dpRank()) {
            wrong.add("dp_rank " + hello.dpRank() + " != " + node.dpRank());
        }
        if (hello.tpRank() != null && hello.tpRank() != node.tpRank()) {
            wrong.add("tp_rank " + hello.tpRank() + " != " + node.tpRank());
        }
        String wanted = profileFor(hello);
        if (wanted != null && node.baseProfile() != null && !wanted.equals(node.baseProfile())) {
            wrong.add("the engine's " + install(hello) + " is modelled by profile " + wanted + ", this node runs "
                    + node.profile() + " (start it with --profile " + wanted + ")");
        }
        return wrong.isEmpty() ? null : "this node is not the caller's: " + String.join(", ", wrong);
    }

    /**
     * The behaviour profile a recording with the hello's {@code vllm_version}, {@code vllm_commit}
     * and {@code inner_connector} in its header would be replayed with, or {@code null} when the
     * hello names no install or the table has no row for it.
     */
    public static String profileFor(HookCall.Hello hello) {
        if (hello.vllmVersion() == null && hello.vllmCommit() == null) {
            return null;
        }
        return UpstreamVersions.profileFor(hello.vllmVersion(), hello.vllmCommit(), hello.innerConnector());
    }

    private static String install(HookCall.Hello h) {
        StringBuilder b = new StringBuilder("vLLM");
        if (h.vllmVersion() != null) {
            b.append(' ').append(clip(h.vllmVersion()));
        }
        if (h.vllmCommit() != null) {
            b.append(" (commit ").append(clip(h.vllmCommit())).append(')');
        }
        if (h.innerConnector() != null) {
            String cls = h.innerConnector();
            b.append(" with ").append(clip(cls.substring(cls.lastIndexOf('.') + 1)));
        }
        return b.toString();
    }

    /** An empty successful result ({@code ping}). */
    public static byte[] encodeEmpty(long id) {
        return envelopeOk(id).mapHeader(0).toByteArray();
    }

    /** An error reply; {@code id} may be {@code null} (the request's id was unreadable). */
    public static byte[] encodeError(Long id, String error) {
        PyPacker p = new PyPacker().mapHeader(4);
        p.str("v").integer(VERSION);
        p.str("id");
        if (id == null) {
            p.nil();
        } else {
            p.integer(id);
        }
        p.str("ok").bool(false);
        p.str("error").str(error == null ? "error" : wellFormed(error));
        return p.toByteArray();
    }

    /** The error reply to a rejected request. */
    public static byte[] encodeError(BridgeDecoded.Rejected rejected) {
        return encodeError(rejected.id(), rejected.error());
    }

    /** A packer holding {@code {"v": 1, "id": id, "ok": True, "result": }}: the result's value follows. */
    private static PyPacker envelopeOk(long id) {
        PyPacker p = new PyPacker().mapHeader(4);
        p.str("v").integer(VERSION);
        p.str("id").integer(id);
        p.str("ok").bool(true);
        p.str("result");
        return p;
    }

    /**
     * {@code {request_id: meta}}, each meta's dict written from its fields. A request id that
     * comes twice keeps its first place and its last meta, as a dict built in order does.
     */
    private static void metas(PyPacker p, List<ReqMeta> metas) {
        if (metas == null) {
            p.mapHeader(0);
            return;
        }
        int n = metas.size();
        if (n > 8) {
            // many: keyed by a map (fewer allocations than the dict of dicts this replaced, no n^2 scan)
            LinkedHashMap<String, ReqMeta> byId = new LinkedHashMap<>(n * 2);
            for (ReqMeta m : metas) {
                byId.put(m.requestId(), m);
            }
            p.mapHeader(byId.size());
            for (ReqMeta m : byId.values()) {
                meta(p, m);
            }
            return;
        }
        int distinct = 0;
        for (int i = 0; i < n; i++) {
            if (firstOf(metas, i) == i) {
                distinct++;
            }
        }
        p.mapHeader(distinct);
        for (int i = 0; i < n; i++) {
            if (firstOf(metas, i) == i) {
                meta(p, metas.get(lastOf(metas, i)));
            }
        }
    }

    private static void meta(PyPacker p, ReqMeta m) {
        p.strOrNil(m.requestId());
        p.mapHeader(13);
        p.str("local_block_ids").blockGroups(m.localBlockIds());
        p.str("remote_block_ids").blockGroups(m.remoteBlockIds());
        p.str("remote_engine_id").strOrNil(m.remoteEngineId());
        p.str("remote_host").strOrNil(m.remoteHost());
        p.str("remote_handshake_port").integer(m.remoteHandshakePort());
        p.str("remote_notify_port").integer(m.remoteNotifyPort());
        p.str("remote_dp_rank").integer(m.remoteDpRank());
        p.str("remote_dp_size").integer(m.remoteDpSize());
        p.str("remote_dp_size_local").integer(m.remoteDpSizeLocal());
        p.str("remote_tp_size").integer(m.remoteTpSize());
        p.str("transfer_id").transferId(m.transferId());
        p.str("multi_pod_hosts").strsOrNil(m.multiPodHosts());
        p.str("write_mode").bool(m.writeMode());
    }

    /** The first index whose request id is meta {@code i}'s. */
    private static int firstOf(List<ReqMeta> metas, int i) {
        String id = metas.get(i).requestId();
        for (int k = 0; k < i; k++) {
            if (Objects.equals(metas.get(k).requestId(), id)) {
                return k;
            }
        }
        return i;
    }

    /** The last index whose request id is meta {@code i}'s. */
    private static int lastOf(List<ReqMeta> metas, int i) {
        String id = metas.get(i).requestId();
        for (int k = metas.size() - 1; k > i; k--) {
            if (Objects.equals(metas.get(k).requestId(), id)) {
                return k;
            }
        }
        return i;
    }

    private static void idsOrNone(PyPacker p, List<String> ids) {
        if (ids == null || ids.isEmpty()) {
            p.nil();
        } else {
            p.strsOrNil(ids);
        }
    }

    private static <E extends Effect> E first(List<? extends Effect> effects, Class<E> type, BridgeHook hook) {
        E e = find(effects, type);
        if (e == null) {
            throw new Bad(RejectReason.MISSING_FIELD, "the node produced no " + type.getSimpleName() + " for "
                    + hook.wireName() + " (a bug of the node, not of the call)");
        }
        return e;
    }

    private static <E extends Effect> E find(List<? extends Effect> effects, Class<E> type) {
        if (effects == null) {
            return null;
        }
        for (Effect e : effects) {
            if (type.isInstance(e)) {
                return type.cast(e);
            }
        }
        return null;
    }

    // ================================================================== the engine side (Java clients, tests)

    /**
     * Encodes a request as the Python side would build it (same keys, same order, same bytes).
     *
     * @throws IllegalArgumentException when the call's {@code kv_transfer_params} hold a value
     *                                  that has no msgpack form
     */
    public static byte[] encodeRequest(BridgeRequest request) {
        Map<String, PyValue> args = args(request.call());
        PyPacker p = new PyPacker();
        p.mapHeader(4);
        p.str("v").integer(VERSION);
        p.str("id").integer(request.id());
        p.str("hook").str(request.hook().wireName());
        p.str("args").mapHeader(args.size());
        for (Map.Entry<String, PyValue> e : args.entrySet()) {
            p.str(e.getKey()).value(e.getValue());
        }
        return p.toByteArray();
    }

    /** The {@code args} dict of a call, as the Python side sends it (in its key order). */
    static Map<String, PyValue> args(HookCall call) {
        Map<String, PyValue> a = new LinkedHashMap<>();
        switch (call) {
            case HookCall.AddRequest c -> {
                a.put("request_id", pyStr(c.requestId()));
                a.put("num_prompt_tokens", new PyValue.Int(c.numPromptTokens()));
                a.put("prompt_token_ids_len", c.promptTokenIds() < 0 ? PyValue.NONE : new PyValue.Int(c.promptTokenIds()));
                a.put("kv_transfer_params", pyParams(c.params()));
            }
            case HookCall.GetNumNewMatchedTokens c -> {
                a.put("request_id", pyStr(c.requestId()));
                a.put("num_computed_tokens", new PyValue.Int(c.numComputedTokens()));
            }
            case HookCall.UpdateStateAfterAlloc c -> {
                a.put("request_id", pyStr(c.requestId()));
                a.put("block_ids", pyBlocks(c.blockIds()));
                a.put("num_external_tokens", new PyValue.Int(c.numExternalTokens()));
            }
            case HookCall.BuildConnectorMeta c -> {
                a.put("step", new PyValue.Int(c.step()));
                List<PyValue> ids = new ArrayList<>();
                List<PyValue> blocks = new ArrayList<>();
                for (NodeEvent.CachedRequest r : c.cachedRequests()) {
                    ids.add(pyStr(r.requestId()));
                    blocks.add(pyBlocks(r.newBlockIds()));
                }
                a.put("cached_req_ids", new PyValue.List(ids));
                a.put("cached_new_block_ids", new PyValue.List(blocks));
                if (c.scheduledNewReqs() != null) {
                    List<PyValue> reqs = new ArrayList<>();
                    for (NodeEvent.NewRequest r : c.scheduledNewReqs()) {
                        Map<PyValue, PyValue> d = new LinkedHashMap<>();
                        d.put(new PyValue.Str("request_id"), pyStr(r.requestId()));
                        d.put(new PyValue.Str("block_ids"), pyBlocks(r.blockIds()));
                        d.put(new PyValue.Str("num_computed_tokens"), new PyValue.Int(r.numComputedTokens()));
                        d.put(new PyValue.Str("kv_transfer_params"), pyParams(r.params()));
                        reqs.add(new PyValue.Map(d));
                    }
                    a.put("scheduled_new_reqs", new PyValue.List(reqs));
                }
                if (c.preemptedReqIds() != null) {
                    a.put("preempted_req_ids", pyStrs(c.preemptedReqIds()));
                }
            }
            case HookCall.RequestFinished c -> {
                a.put("request_id", pyStr(c.requestId()));
                a.put("status", new PyValue.Str(c.status().name()));
                a.put("block_ids", pyBlocks(c.blockIds()));
            }
            case HookCall.UpdateConnectorOutput c -> {
                a.put("finished_sending", pyStrs(c.finishedSending()));
                a.put("finished_recving", pyStrs(c.finishedRecving()));
            }
            case HookCall.StartLoadKv c -> { }
            case HookCall.SaveKvLayer c -> a.put("layer_name", pyStr(c.layerName()));
            case HookCall.WaitForSave c -> { }
            case HookCall.GetFinished c -> { }
            case HookCall.HandshakeVoted c -> {
                a.put("remote_engine_id", pyStr(c.remoteEngineId()));
                a.put("vote", new PyValue.Int(c.vote()));
                PyValue ranks = PyValue.NONE;
                if (c.failedTpRanks() != null) {
                    List<PyValue> l = new ArrayList<>(c.failedTpRanks().size());
                    for (Integer r : c.failedTpRanks()) {
                        l.add(new PyValue.Int(r));
                    }
                    ranks = new PyValue.List(l);
                }
                a.put("failed_tp_ranks", ranks);
            }
            case HookCall.Hello c -> {
                putIfSet(a, "kv_role", c.kvRole());
                putIfSet(a, "mode", c.mode());
                putIfSet(a, "dp_rank", c.dpRank());
                putIfSet(a, "tp_rank", c.tpRank());
                putIfSet(a, "connector_role", c.connectorRole());
                putIfSet(a, "vllm_version", c.vllmVersion());
                putIfSet(a, "vllm_commit", c.vllmCommit());
                putIfSet(a, "inner_connector", c.innerConnector());
            }
            case HookCall.Ping c -> { }
        }
        return a;
    }

    private static void putIfSet(Map<String, PyValue> m, String k, String v) {
        if (v != null) {
            m.put(k, new PyValue.Str(v));
        }
    }

    private static void putIfSet(Map<String, PyValue> m, String k, Integer v) {
        if (v != null) {
            m.put(k, new PyValue.Int(v));
        }
    }

    /** A str, or None for {@code null}. */
    private static PyValue pyStr(String s) {
        return s == null ? PyValue.NONE : new PyValue.Str(s);
    }

    /** A list of str (each {@code null} as None), or None for {@code null}. */
    private static PyValue pyStrs(List<String> l) {
        if (l == null) {
            return PyValue.NONE;
        }
        List<PyValue> out = new ArrayList<>(l.size());
        for (String s : l) {
            out.add(pyStr(s));
        }
        return new PyValue.List(out);
    }

    /** Block ids by group (a list of lists of ints), or None for {@code null}. */
    private static PyValue pyBlocks(BlockGroups g) {
        return g == null ? PyValue.NONE : PyValues.value(g);
    }

    /** The params' dict, or None for {@code null}. */
    private static PyValue pyParams(KvParams params) {
        return params == null ? PyValue.NONE : PyValues.value(params);
    }

    /** Decodes a reply frame ({@link WireLimits#DEFAULT}); never throws. */
    public static DecodeResult<BridgeReply> decodeReply(byte[] frame) {
        DecodeResult<PyValue> value = PyMsgpack.decodeValue(frame, WireLimits.DEFAULT);
        if (value instanceof DecodeResult.Rejected<PyValue> r) {
            return new DecodeResult.Rejected<>(r.rejection());
        }
        PyValue top = value.valueOrNull();
        try {
            if (!(top instanceof PyValue.Map m)) {
                throw new Bad(RejectReason.NOT_A_MAP, "a reply is a map, got " + typeName(top));
            }
            long v = int64(field(m, "v"), "v");
            if (v != VERSION) {
                throw new Bad(RejectReason.INVALID_VALUE, "reply version " + v + ", expected " + VERSION);
            }
            PyValue idValue = field(m, "id");
            Long id = none(idValue) ? null : int64(idValue, "id");
            if (!(field(m, "ok") instanceof PyValue.Bool(boolean ok))) {
                throw new Bad(RejectReason.WRONG_FIELD_TYPE, "ok must be bool, got " + typeName(m.get("ok")));
            }
            if (ok) {
                if (!(field(m, "result") instanceof PyValue.Map result)) {
                    throw new Bad(RejectReason.WRONG_FIELD_TYPE, "result must be a dict, got " + typeName(m.get("result")));
                }
                return new DecodeResult.Ok<>(new BridgeReply(id, true, result, null));
            }
            return new DecodeResult.Ok<>(new BridgeReply(id, false, null, str(field(m, "error"), "error")));
        } catch (Bad b) {
            return new DecodeResult.Rejected<>(new Rejection(b.reason, b.getMessage(), false));
        } catch (RuntimeException e) {
            return new DecodeResult.Rejected<>(new Rejection(RejectReason.INVALID_VALUE, "reply could not be read: " + e, false));
        }
    }

    // ================================================================== argument readers

    /** A rejection of the request being read (control flow only: no stack trace). */
    private static final class Bad extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final RejectReason reason;

        Bad(RejectReason reason, String detail) {
            super(detail, null, false, false);
            this.reason = reason;
        }
    }

    /** A required argument (present, possibly None). */
    private static PyValue req(PyValue.Map args, String key) {
        PyValue v = args.get(key);
        if (v == null) {
            throw new Bad(RejectReason.MISSING_FIELD, "missing args." + key);
        }
        return v;
    }

    /** A required envelope field of a reply. */
    private static PyValue field(PyValue.Map m, String key) {
        PyValue v = m.get(key);
        if (v == null) {
            throw new Bad(RejectReason.MISSING_FIELD, "missing " + key);
        }
        return v;
    }

    private static String str(PyValue v, String what) {
        if (v instanceof PyValue.Str s) {
            return s.value();
        }
        throw wrong(what, "str", v);
    }

    private static String optionalStr(PyValue v, String what) {
        return none(v) ? null : str(v, what);
    }

    private static long int64(PyValue v, String what) {
        if (v instanceof PyValue.Int l) {
            return l.value();
        }
        if (v instanceof PyValue.BigInt b) {
            throw new Bad(RejectReason.INTEGER_OUT_OF_RANGE, what + " = " + b.value() + " does not fit a signed 64-bit integer");
        }
        throw wrong(what, "int", v);
    }

    private static int int32(PyValue v, String what) {
        long l = int64(v, what);
        if (l < Integer.MIN_VALUE || l > Integer.MAX_VALUE) {
            throw new Bad(RejectReason.INTEGER_OUT_OF_RANGE, what + " = " + l + " does not fit a 32-bit integer");
        }
        return (int) l;
    }

    /** An int, or None as -1. */
    private static int optionalInt(PyValue v, String what) {
        if (none(v)) {
            return -1;
        }
        int i = int32(v, what);
        if (i < 0) {
            throw new Bad(RejectReason.INVALID_VALUE, what + " = " + i + " is negative (send None when there are no token ids)");
        }
        return i;
    }

    private static List<PyValue> list(PyValue v, String what) {
        if (v instanceof PyValue.List l) {
            return l.items();
        }
        throw wrong(what, "list", v);
    }

    private static List<String> optionalStrings(PyValue v, String what) {
        if (none(v)) {
            return null;
        }
        List<PyValue> l = list(v, what);
        List<String> out = new ArrayList<>(l.size());
        for (int i = 0; i < l.size(); i++) {
            out.add(str(l.get(i), what + "[" + i + "]"));
        }
        return out;
    }

    private static KvParams params(PyValue v, String what) {
        if (none(v)) {
            return null;
        }
        if (v instanceof PyValue.Map m) {
            // PyMsgpack gives str keys only; the params keep the plain-Java form the reducer reads
            LinkedHashMap<String, Object> plain = new LinkedHashMap<>(Math.max(4, m.entries().size() * 2));
            for (Map.Entry<PyValue, PyValue> e : m.entries().entrySet()) {
                plain.put(((PyValue.Str) e.getKey()).value(), e.getValue().toObject());
            }
            return KvParams.of(plain);
        }
        throw wrong(what, "dict or None", v);
    }

    private static FinishStatus status(PyValue v, String what) {
        String s = str(v, what);
        String name = s.startsWith("RequestStatus.") ? s.substring("RequestStatus.".length()) : s;
        for (FinishStatus f : FinishStatus.values()) {
            if (f.name().equals(name)) {
                return f;
            }
        }
        List<String> names = new ArrayList<>();
        for (FinishStatus f : FinishStatus.values()) {
            names.add(f.name());
        }
        throw new Bad(RejectReason.INVALID_VALUE, what + " \"" + clip(s) + "\" is not a finished status (one of "
                + String.join(", ", names) + ")");
    }

    /**
     * Block ids as {@code KVCacheBlocks.get_block_ids()} gives them, one list per KV-cache group,
     * or one flat list (a single group). Ids are non-negative ints.
     */
    private static BlockGroups blocks(PyValue v, String what) {
        List<PyValue> l = list(v, what);
        if (l.isEmpty()) {
            return BlockGroups.single();
        }
        boolean grouped = l.get(0) instanceof PyValue.List;
        if (!grouped) {
            return BlockGroups.single(ids(l, what));
        }
        int[][] groups = new int[l.size()][];
        for (int g = 0; g < l.size(); g++) {
            String w = what + "[" + g + "]";
            groups[g] = ids(list(l.get(g), w), w);
        }
        return BlockGroups.of(groups);
    }

    private static int[] ids(List<PyValue> l, String what) {
        int[] out = new int[l.size()];
        for (int i = 0; i < out.length; i++) {
            String w = what + "[" + i + "]";
            PyValue o = l.get(i);
            if (o instanceof PyValue.List) {
                throw new Bad(RejectReason.WRONG_FIELD_TYPE, w + " must be int, got list (mixed flat and grouped block ids)");
            }
            int id = int32(o, w);
            if (id < 0) {
                throw new Bad(RejectReason.INVALID_VALUE, w + " = " + id + " is negative; block ids are non-negative");
            }
            out[i] = id;
        }
        return out;
    }

    private static Bad wrong(String what, String expected, PyValue got) {
        return new Bad(RejectReason.WRONG_FIELD_TYPE, what + " must be " + expected + ", got " + typeName(got));
    }

    /** A value left out ({@code null}: the key is absent) or None. */
    private static boolean none(PyValue v) {
        return v == null || v instanceof PyValue.Nil;
    }

    /** Python's name for the type of a decoded value ({@code null}, a key left out, as None). */
    static String typeName(PyValue v) {
        if (v == null) {
            return "None";
        }
        return switch (v) {
            case PyValue.Nil n -> "None";
            case PyValue.Bool b -> "bool";
            case PyValue.Int l -> "int";
            case PyValue.BigInt b -> "int";
            case PyValue.Float d -> "float";
            case PyValue.Str s -> "str";
            case PyValue.Bytes b -> "bytes";
            case PyValue.List l -> "list";
            case PyValue.Map m -> "dict";
        };
    }

    private static String knownHooks() {
        List<String> names = new ArrayList<>();
        for (BridgeHook h : BridgeHook.values()) {
            names.add(h.wireName());
        }
        return String.join(", ", names);
    }

    private static String clip(String s) {
        return s.length() <= 80 ? s : s.substring(0, 80) + "...(" + s.length() + " chars)";
    }

    /** Replaces unpaired surrogates so an error text always encodes. */
    private static String wellFormed(String s) {
        StringBuilder b = null;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            boolean bad = Character.isHighSurrogate(c) ? !(i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1)))
                    : Character.isLowSurrogate(c) && !(i > 0 && Character.isHighSurrogate(s.charAt(i - 1)));
            if (bad && b == null) {
                b = new StringBuilder(s.substring(0, i));
            }
            if (b != null) {
                b.append(bad ? '\ufffd' : c);
            }
        }
        return b == null ? s : b.toString();
    }
}
