package io.kvledger.wire.bridge;

import io.kvledger.core.model.TransferId;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.PyValue;
import io.kvledger.core.model.ReqMeta;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.wire.DecodeResult;
import io.kvledger.wire.PyMsgpack;
import io.kvledger.wire.RejectReason;
import io.kvledger.wire.WireLimits;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class BridgeCodecTest {

    // ------------------------------------------------------------------ requests

    @Test
    void everyRequestRoundTrips() {
        List<BridgeRequest> all = BridgeSamples.all();
        java.util.Set<BridgeHook> seen = java.util.EnumSet.noneOf(BridgeHook.class);
        for (BridgeRequest r : all) {
            byte[] frame = BridgeCodec.encodeRequest(r);
            BridgeDecoded d = BridgeCodec.decode(frame);
            assertThat(d).as("%s", r).isInstanceOf(BridgeDecoded.Request.class);
            BridgeRequest back = ((BridgeDecoded.Request) d).request();
            assertThat(BridgeSamples.same(r, back)).as("%s came back as %s", r, back).isTrue();
            seen.add(r.hook());
        }
        assertThat(seen).containsExactlyInAnyOrder(BridgeHook.values());
    }

    @Test
    void aBatchDecodesEachCallOnItsOwn() {
        Map<String, Object> good = new LinkedHashMap<>();
        good.put("id", 11L);
        good.put("hook", "get_num_new_matched_tokens");
        good.put("args", Map.of("request_id", "r", "num_computed_tokens", 0L));
        Map<String, Object> noArgs = new LinkedHashMap<>();
        noArgs.put("id", 12L);
        noArgs.put("hook", "get_finished");
        Map<String, Object> unknown = new LinkedHashMap<>();
        unknown.put("id", 13L);
        unknown.put("hook", "getfinished");
        Map<String, Object> nested = new LinkedHashMap<>();
        nested.put("id", 14L);
        nested.put("hook", "batch");
        nested.put("args", Map.of("calls", List.of()));
        Map<String, Object> badArg = new LinkedHashMap<>();
        badArg.put("id", 15L);
        badArg.put("hook", "get_num_new_matched_tokens");
        badArg.put("args", Map.of("request_id", "r"));
        Map<String, Object> env = new LinkedHashMap<>();
        env.put("v", 1L);
        env.put("id", 10L);
        env.put("hook", "batch");
        env.put("args", Map.of("calls", List.of(good, noArgs, unknown, nested, badArg, "x")));
        BridgeDecoded d = BridgeCodec.decode(PyMsgpack.encode(env));
        assertThat(d).isInstanceOf(BridgeDecoded.Batch.class);
        BridgeDecoded.Batch b = (BridgeDecoded.Batch) d;
        assertThat(b.id()).isEqualTo(10L);
        assertThat(b.calls()).hasSize(6);
        assertThat(((BridgeDecoded.Request) b.calls().get(0)).request())
                .isEqualTo(new BridgeRequest(11, new HookCall.GetNumNewMatchedTokens("r", 0)));
        assertThat(((BridgeDecoded.Request) b.calls().get(1)).request().hook()).isEqualTo(BridgeHook.GET_FINISHED);
        BridgeDecoded.Rejected u = (BridgeDecoded.Rejected) b.calls().get(2);
        assertThat(u.id()).isEqualTo(13L);
        assertThat(u.rejection().reason()).isEqualTo(RejectReason.UNKNOWN_TYPE);
        BridgeDecoded.Rejected n = (BridgeDecoded.Rejected) b.calls().get(3);
        assertThat(n.rejection().reason()).isEqualTo(RejectReason.INVALID_VALUE);
        assertThat(n.error()).contains("args.calls[3]: a batch cannot hold a batch");
        BridgeDecoded.Rejected a = (BridgeDecoded.Rejected) b.calls().get(4);
        assertThat(a.id()).isEqualTo(15L);
        assertThat(a.error()).contains("args.num_computed_tokens");
        BridgeDecoded.Rejected x = (BridgeDecoded.Rejected) b.calls().get(5);
        assertThat(x.id()).isNull();
        assertThat(x.rejection().reason()).isEqualTo(RejectReason.NOT_A_MAP);
        // a batch without a list of calls is rejected as a whole, with its id
        env.put("args", Map.of("calls", "x"));
        rejected(PyMsgpack.encode(env), 10L, RejectReason.WRONG_FIELD_TYPE, "args.calls must be list, got str");
        env.put("args", Map.of());
        rejected(PyMsgpack.encode(env), 10L, RejectReason.MISSING_FIELD, "missing args.calls");
    }

    /** A {@code scheduled_new_reqs} entry in the long form (mutable: a test may change a field). */
    private static Map<String, Object> newRequest(String id, Object blocks, long computed, Object params) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("request_id", id);
        m.put("block_ids", blocks);
        m.put("num_computed_tokens", computed);
        m.put("kv_transfer_params", params);
        return m;
    }

    private static Map<String, Object> longCall(long id, String hook, Object... kv) {
        Map<String, Object> args = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            args.put((String) kv[i], kv[i + 1]);
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", id);
        m.put("hook", hook);
        m.put("args", args);
        return m;
    }

    private static List<BridgeDecoded> batchOf(List<Object> calls) {
        return batchOf(calls, null);
    }

    private static List<BridgeDecoded> batchOf(List<Object> calls, BridgeSession session) {
        Map<String, Object> env = new LinkedHashMap<>();
        env.put("v", 1L);
        env.put("id", 1L);
        env.put("hook", "batch");
        env.put("args", Map.of("calls", calls));
        return ((BridgeDecoded.Batch) BridgeCodec.decode(PyMsgpack.encode(env), WireLimits.DEFAULT, session)).calls();
    }

    @Test
    void aCompactCallDecodesIntoTheSameCallAsItsLongForm() {
        Map<String, Object> params = new LinkedHashMap<>();
        params.put("do_remote_decode", true);
        params.put("transfer_id", "tx-1");
        params.put("remote_block_ids", null);
        List<Object> blocks = List.of(List.of(1L, 2L, 3L), List.of(7L));
        Map<String, Object> acted = new LinkedHashMap<>();
        acted.put("num_tokens", null);
        acted.put("load_async", false);
        Map<String, Object> newReq = newRequest("r1", blocks, 16L, params);
        java.util.Map<String, Object> newReqNoParams = new LinkedHashMap<>(newReq);
        newReqNoParams.put("kv_transfer_params", null);
        java.util.ArrayList<Object> cachedBlocks = new java.util.ArrayList<>();
        cachedBlocks.add(null);
        cachedBlocks.add(List.of(List.of(9L)));
        List<Object> longForm = List.of(
                longCall(2, "add_request", "request_id", "r1", "num_prompt_tokens", 64L, "prompt_token_ids_len", 64L,
                        "kv_transfer_params", params),
                longCall(3, "add_request", "request_id", "r2", "num_prompt_tokens", 0L, "prompt_token_ids_len", null,
                        "kv_transfer_params", null),
                longCall(4, "get_num_new_matched_tokens", "request_id", "r1", "num_computed_tokens", 0L, "acted", acted),
                longCall(5, "get_num_new_matched_tokens", "request_id", "r2", "num_computed_tokens", 16L),
                longCall(6, "update_state_after_alloc", "request_id", "r1", "block_ids", blocks, "num_external_tokens", 0L),
                longCall(7, "build_connector_meta", "step", 3L, "cached_req_ids", List.of("r0", "r9"),
                        "cached_new_block_ids", cachedBlocks, "scheduled_new_reqs", List.of(newReq, newReqNoParams),
                        "preempted_req_ids", List.of("r5")),
                longCall(8, "build_connector_meta", "step", 4L, "cached_req_ids", List.of(), "cached_new_block_ids",
                        List.of()),
                longCall(9, "build_connector_meta", "step", 5L, "cached_req_ids", List.of(), "cached_new_block_ids",
                        List.of(), "preempted_req_ids", List.of()));
        java.util.ArrayList<Object> noParams = new java.util.ArrayList<>(Arrays.asList("r2", 0L, null, null));
        List<Object> compact = List.of(
                List.of(2L, "add_request", "r1", 64L, 64L, params),
                compactOf(3L, "add_request", noParams),
                List.of(4L, "get_num_new_matched_tokens", "r1", 0L, Arrays.asList(null, false)),
                compactOf(5L, "get_num_new_matched_tokens", Arrays.asList("r2", 16L, null)),
                List.of(6L, "update_state_after_alloc", "r1", blocks, 0L),
                List.of(7L, "build_connector_meta", 3L, List.of("r0", "r9"), cachedBlocks,
                        List.of(List.of("r1", blocks, 16L, params), Arrays.asList("r1", blocks, 16L, null)), List.of("r5")),
                List.of(8L, "build_connector_meta", 4L, List.of(), List.of()),
                compactOf(9L, "build_connector_meta", Arrays.asList(5L, List.of(), List.of(), null, List.of())));
        List<BridgeDecoded> fromLong = batchOf(longForm);
        List<BridgeDecoded> fromCompact = batchOf(compact);
        assertThat(fromCompact).hasSize(longForm.size());
        for (int i = 0; i < longForm.size(); i++) {
            assertThat(fromLong.get(i)).as("long %d", i).isInstanceOf(BridgeDecoded.Request.class);
            BridgeRequest l = ((BridgeDecoded.Request) fromLong.get(i)).request();
            assertThat(fromCompact.get(i)).as("compact %d", i).isInstanceOf(BridgeDecoded.Request.class);
            BridgeRequest c = ((BridgeDecoded.Request) fromCompact.get(i)).request();
            assertThat(BridgeSamples.same(c, l)).as("call %d: %s against %s", i, c, l).isTrue();
        }
        assertThat(((HookCall.GetNumNewMatchedTokens) ((BridgeDecoded.Request) fromCompact.get(2)).request().call())
                .acted()).isNotNull();
        assertThat(((HookCall.BuildConnectorMeta) ((BridgeDecoded.Request) fromCompact.get(6)).request().call())
                .scheduledNewReqs()).isNull();
        // mixed with long-form calls, and each malformed one on its own, naming the long form's field
        List<BridgeDecoded> mixed = batchOf(List.of(longForm.get(0), List.of(20L, "update_state_after_alloc", "r1",
                List.of(List.of("x")), 0L), List.of(21L, "request_finished", "r1"), List.of(22L), Arrays.asList(23L,
                "add_request", "r1", 1L, 1L, null, "more"), compact.get(4)));
        assertThat(BridgeSamples.same(((BridgeDecoded.Request) mixed.get(0)).request(),
                ((BridgeDecoded.Request) fromLong.get(0)).request())).isTrue();
        assertThat(((BridgeDecoded.Rejected) mixed.get(1)).id()).isEqualTo(20L);
        assertThat(((BridgeDecoded.Rejected) mixed.get(1)).error()).contains("args.block_ids[0][0] must be int");
        assertThat(((BridgeDecoded.Rejected) mixed.get(2)).error()).contains("request_finished has no compact form");
        assertThat(((BridgeDecoded.Rejected) mixed.get(3)).rejection().reason()).isEqualTo(RejectReason.MISSING_FIELD);
        assertThat(((BridgeDecoded.Rejected) mixed.get(4)).error()).contains("at most 4 fields");
        assertThat(BridgeSamples.same(((BridgeDecoded.Request) mixed.get(5)).request(),
                ((BridgeDecoded.Request) fromLong.get(4)).request())).isTrue();
    }

    @Test
    void aDerivedNewRequestIsTheCallWithTheBlocksAndParamsItsBatchSentBefore() {
        // "derived": a compact build_connector_meta's new request [request_id, num_computed_tokens]
        // takes the block ids of that request's last compact update_state_after_alloc and the params
        // of its last compact add_request before it in the same batch: the long form's call
        Map<String, Object> params = new LinkedHashMap<>();
        params.put("do_remote_decode", true);
        params.put("transfer_id", "tx-1");
        List<Object> first = List.of(List.of(1L, 2L));
        List<Object> blocks = List.of(List.of(1L, 2L, 3L), List.of(7L));
        List<Object> blocks2 = List.of(List.of(4L));
        Map<String, Object> r1 = newRequest("r1", blocks, 16L, params);
        Map<String, Object> r2 = newRequest("r2", blocks2, 0L, null);
        List<Object> longForm = List.of(
                longCall(2, "add_request", "request_id", "r1", "num_prompt_tokens", 64L, "prompt_token_ids_len", 64L,
                        "kv_transfer_params", params),
                longCall(3, "add_request", "request_id", "r2", "num_prompt_tokens", 8L, "prompt_token_ids_len", 8L),
                longCall(4, "update_state_after_alloc", "request_id", "r1", "block_ids", first, "num_external_tokens", 0L),
                longCall(5, "update_state_after_alloc", "request_id", "r2", "block_ids", blocks2, "num_external_tokens", 0L),
                longCall(6, "update_state_after_alloc", "request_id", "r1", "block_ids", blocks, "num_external_tokens", 0L),
                longCall(7, "build_connector_meta", "step", 3L, "cached_req_ids", List.of(), "cached_new_block_ids",
                        List.of(), "scheduled_new_reqs", List.of(r1, r2, r1)));
        List<Object> derived = List.of(
                List.of(2L, "add_request", "r1", 64L, 64L, params),
                List.of(3L, "add_request", "r2", 8L, 8L),
                List.of(4L, "update_state_after_alloc", "r1", first, 0L),
                List.of(5L, "update_state_after_alloc", "r2", blocks2, 0L),
                List.of(6L, "update_state_after_alloc", "r1", blocks, 0L),
                List.of(7L, "build_connector_meta", 3L, List.of(), List.of(),
                        List.of(List.of("r1", 16L), List.of("r2", 0L), List.of("r1", blocks, 16L, params))));
        List<BridgeDecoded> fromLong = batchOf(longForm);
        List<BridgeDecoded> fromDerived = batchOf(derived);
        assertThat(fromDerived).hasSize(longForm.size());
        for (int i = 0; i < longForm.size(); i++) {
            BridgeRequest l = ((BridgeDecoded.Request) fromLong.get(i)).request();
            assertThat(fromDerived.get(i)).as("derived %d", i).isInstanceOf(BridgeDecoded.Request.class);
            BridgeRequest c = ((BridgeDecoded.Request) fromDerived.get(i)).request();
            assertThat(BridgeSamples.same(c, l)).as("call %d: %s against %s", i, c, l).isTrue();
        }
        // one the batch did not allocate, or admit, before it: the step is refused, naming what is missing
        List<BridgeDecoded> missing = batchOf(List.of(List.of(4L, "update_state_after_alloc", "r1", blocks, 0L),
                List.of(7L, "build_connector_meta", 3L, List.of(), List.of(), List.of(List.of("r1", 16L))),
                List.of(8L, "add_request", "r1", 64L, 64L, params),
                List.of(9L, "build_connector_meta", 4L, List.of(), List.of(), List.of(List.of("r2", 16L)))));
        assertThat(((BridgeDecoded.Rejected) missing.get(1)).id()).isEqualTo(7L);
        assertThat(((BridgeDecoded.Rejected) missing.get(1)).error())
                .contains("scheduled_new_reqs[0]").contains("\"r1\", which has no compact add_request before it");
        assertThat(((BridgeDecoded.Rejected) missing.get(3)).error())
                .contains("\"r2\", which has no compact update_state_after_alloc before it");
        // nothing carries over from one batch to the next
        assertThat(batchOf(List.of(List.of(7L, "build_connector_meta", 3L, List.of(), List.of(),
                List.of(List.of("r1", 16L))))).getFirst()).isInstanceOf(BridgeDecoded.Rejected.class);
    }

    @Test
    void aSteadyStepsNumberAndSparseBlocksAreTheLongFormsCall() {
        // "steady": a compact build_connector_meta's cached_req_ids as the number of the last step read
        // on the connection (its session), across frames, and its new block ids as {"at", "blocks"}
        List<Object> ids = List.of("a", "b", "c");
        List<Object> g1 = List.of(List.of(1L));
        List<Object> g7 = List.of(List.of(7L, 8L), List.of(9L));
        List<Object> longForm = List.of(
                longCall(2, "build_connector_meta", "step", 1L, "cached_req_ids", ids, "cached_new_block_ids",
                        Arrays.asList(g1, null, null)),
                longCall(3, "build_connector_meta", "step", 2L, "cached_req_ids", ids, "cached_new_block_ids",
                        Arrays.asList(null, null, null)),
                longCall(4, "build_connector_meta", "step", 3L, "cached_req_ids", ids, "cached_new_block_ids",
                        Arrays.asList(null, List.of(), g7), "scheduled_new_reqs", List.of()),
                longCall(5, "build_connector_meta", "step", 4L, "cached_req_ids", List.of("c", "a"), "cached_new_block_ids",
                        Arrays.asList(null, null)));
        BridgeSession session = new BridgeSession();
        List<BridgeDecoded> steady = new ArrayList<>(batchOf(List.of(
                List.of(2L, "build_connector_meta", 1L, ids, Map.of("at", List.of(0L), "blocks", List.of(g1))),
                List.of(3L, "build_connector_meta", 2L, 1L, Map.of())), session));
        steady.addAll(batchOf(List.of(
                List.of(4L, "build_connector_meta", 3L, 2L, Map.of("at", List.of(2L, 1L), "blocks", List.of(g7, List.of())),
                        List.of())), session));
        steady.addAll(batchOf(List.of(List.of(5L, "build_connector_meta", 4L, List.of("c", "a"), Map.of())), session));
        List<BridgeDecoded> fromLong = batchOf(longForm);
        for (int i = 0; i < longForm.size(); i++) {
            BridgeRequest l = ((BridgeDecoded.Request) fromLong.get(i)).request();
            assertThat(steady.get(i)).as("steady %d", i).isInstanceOf(BridgeDecoded.Request.class);
            BridgeRequest c = ((BridgeDecoded.Request) steady.get(i)).request();
            assertThat(BridgeSamples.same(c, l)).as("call %d: %s against %s", i, c, l).isTrue();
            assertThat(c.call()).isEqualTo(l.call());
        }
        // a number naming another step than the last one read: refused, naming why; the session then
        // forgets, so the next number is refused too until a step comes in full
        List<BridgeDecoded> other = batchOf(List.of(List.of(6L, "build_connector_meta", 5L, 3L, Map.of()),
                List.of(7L, "build_connector_meta", 6L, 4L, Map.of()),
                List.of(8L, "build_connector_meta", 7L, List.of("c"), Map.of()),
                List.of(9L, "build_connector_meta", 8L, 7L, Map.of("at", List.of(0L), "blocks", List.of(g1)))), session);
        assertThat(((BridgeDecoded.Rejected) other.get(0)).error())
                .contains("args.cached_req_ids) = 3 stands for the ids of step 3, but the last step read on this connection is 4");
        assertThat(((BridgeDecoded.Rejected) other.get(1)).error()).contains("no step is remembered on this connection");
        assertThat(other.get(2)).isInstanceOf(BridgeDecoded.Request.class);
        assertThat(((HookCall.BuildConnectorMeta) ((BridgeDecoded.Request) other.get(3)).request().call()).cachedRequests())
                .extracting(NodeEvent.CachedRequest::requestId).containsExactly("c");
        // a new connection (no session, or a new one) remembers nothing
        for (BridgeSession fresh : Arrays.asList(null, new BridgeSession())) {
            assertThat(((BridgeDecoded.Rejected) batchOf(List.<Object>of(List.of(2L, "build_connector_meta", 2L, 1L, Map.of())),
                    fresh).getFirst()).error()).contains("no step is remembered on this connection");
        }
        // block indexes out of range, twice, or not parallel to the block ids: refused, and forgotten
        String[] why = {"at[0] = 3 is not one of the 3 cached requests", "at[1] = 0 names a cached request twice",
            "has 1 indexes (at) but 0 block ids (blocks)", "must be int"};
        List<Map<String, Object>> bad = List.of(Map.of("at", List.of(3L), "blocks", List.of(g1)),
                Map.of("at", List.of(0L, 0L), "blocks", List.of(g1, g1)), Map.of("at", List.of(0L)),
                Map.of("at", List.of("0"), "blocks", List.of(g1)));
        for (int i = 0; i < bad.size(); i++) {
            batchOf(List.of(List.of(2L, "build_connector_meta", 1L, ids, Map.of())), session);
            List<BridgeDecoded> got = batchOf(List.of(List.of(3L, "build_connector_meta", 2L, 1L, bad.get(i)),
                    List.of(4L, "build_connector_meta", 3L, 2L, Map.of())), session);
            assertThat(((BridgeDecoded.Rejected) got.get(0)).error()).as(why[i]).contains("cached_new_block_ids").contains(why[i]);
            assertThat(((BridgeDecoded.Rejected) got.get(1)).error()).contains("no step is remembered");
        }
    }

    @Test
    void aCompactBatchsEmptyAnswersAreTheirIdsAlone() {
        assertThat(((BridgeDecoded.Batch) BridgeCodec.decode(PyMsgpack.encode(Map.of("v", 1L, "id", 1L, "hook", "batch",
                "args", Map.of("calls", List.of(List.of(2L, "update_state_after_alloc", "r", List.of(), 0L)))))))
                .compact()).isTrue();
        assertThat(((BridgeDecoded.Batch) BridgeCodec.decode(PyMsgpack.encode(Map.of("v", 1L, "id", 1L, "hook", "batch",
                "args", Map.of("calls", List.of(longCall(2, "update_state_after_alloc", "request_id", "r", "block_ids",
                        List.of(), "num_external_tokens", 0L)))))))
                .compact()).isFalse();
        List<byte[]> replies = new ArrayList<>();
        long[] ids = {5, -3, 1L << 40, 200, -200, 70000, Long.MIN_VALUE};
        for (long id : ids) {
            replies.add(BridgeCodec.encodeReply(id, BridgeHook.ADD_REQUEST, List.of()));
        }
        replies.add(BridgeCodec.encodeReply(9, BridgeHook.GET_NUM_NEW_MATCHED_TOKENS,
                List.of(new Effect.MatchedTokens("r", 3, false))));
        replies.add(BridgeCodec.encodeReply(10, BridgeHook.ADD_REQUEST, List.of(), Map.of("note", new PyValue.Str("x"))));
        replies.add(BridgeCodec.encodeError(11L, "no"));
        for (boolean compact : new boolean[] {true, false}) {
            Map<String, Object> top = plainMap(BridgeCodec.encodeBatchReply(4, replies, compact));
            List<?> got = (List<?>) ((Map<?, ?>) top.get("result")).get("replies");
            assertThat(got).hasSize(replies.size());
            for (int i = 0; i < ids.length; i++) {
                if (compact) {
                    assertThat(got.get(i)).isEqualTo(ids[i]);
                } else {
                    assertThat(((Map<?, ?>) got.get(i)).get("id")).isEqualTo(ids[i]);
                }
            }
            // an answer with something in it, or an error, stays the call's whole reply
            for (int i = ids.length; i < replies.size(); i++) {
                assertThat(got.get(i)).isInstanceOf(Map.class);
                assertThat(PyMsgpack.encode(got.get(i))).isEqualTo(replies.get(i));
            }
        }
        assertThat(BridgeCodec.encodeBatchReply(4, replies, false)).isEqualTo(BridgeCodec.encodeBatchReply(4, replies));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> plainMap(byte[] frame) {
        return (Map<String, Object>) PyMsgpack.decodeValue(frame, WireLimits.DEFAULT).valueOrNull().toObject();
    }

    private static List<Object> compactOf(long id, String hook, List<Object> fields) {
        java.util.ArrayList<Object> out = new java.util.ArrayList<>();
        out.add(id);
        out.add(hook);
        out.addAll(fields);
        return out;
    }

    @Test
    void aBatchReplyHoldsEachCallsReplyAsPythonPacksIt() {
        for (int n : new int[] {0, 1, 15, 16, 300}) {
            List<byte[]> replies = new ArrayList<>();
            List<Object> expected = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                byte[] r = i % 3 == 2 ? BridgeCodec.encodeError((long) i, "busy: 1 calls already wait for the node")
                        : BridgeCodec.encodeEmpty(i);
                replies.add(r);
                expected.add(PyMsgpack.decodeValue(r, WireLimits.DEFAULT).valueOrNull().toObject());
            }
            byte[] frame = BridgeCodec.encodeBatchReply(-7, replies);
            Map<?, ?> m = (Map<?, ?>) PyMsgpack.decodeValue(frame, WireLimits.DEFAULT).valueOrNull().toObject();
            assertThat(m.get("v")).isEqualTo(1L);
            assertThat(m.get("id")).isEqualTo(-7L);
            assertThat(m.get("ok")).isEqualTo(true);
            assertThat(((Map<?, ?>) m.get("result")).get("replies")).as("n=%d", n).isEqualTo(expected);
            // the bytes Python's msgpack.packb would give for the same value
            assertThat(PyMsgpack.encode(m)).isEqualTo(frame);
        }
    }

    @Test
    void engineHooksBecomeTheirEventsAtTheStampedTime() {
        KvParams p = BridgeSamples.proxyParams();
        assertThat(new HookCall.AddRequest("r", 5, -1, p).at(42)).isEqualTo(new NodeEvent.RequestAdmitted(42, "r", 5, -1, p));
        assertThat(new HookCall.GetNumNewMatchedTokens("r", 3).at(7)).isEqualTo(new NodeEvent.MatchedTokensQueried(7, "r", 3));
        assertThat(new HookCall.UpdateStateAfterAlloc("r", BlockGroups.single(1), 16).at(8))
                .isEqualTo(new NodeEvent.BlocksAllocated(8, "r", BlockGroups.single(1), 16));
        assertThat(new HookCall.BuildConnectorMeta(2, List.of(new NodeEvent.CachedRequest("r", null))).at(9))
                .isEqualTo(new NodeEvent.StepScheduled(9, 2, List.of(new NodeEvent.CachedRequest("r", null))));
        assertThat(new HookCall.RequestFinished("r", FinishStatus.FINISHED_STOPPED, BlockGroups.single(1)).at(10))
                .isEqualTo(new NodeEvent.RequestFinished(10, "r", FinishStatus.FINISHED_STOPPED, BlockGroups.single(1)));
        assertThat(new HookCall.UpdateConnectorOutput(null, List.of("x")).at(11))
                .isEqualTo(new NodeEvent.ConnectorOutputReceived(11, null, List.of("x")));
        assertThat(new HookCall.StartLoadKv().at(12)).isEqualTo(new NodeEvent.LoadStarted(12));
        assertThat(new HookCall.SaveKvLayer("l0").at(13)).isEqualTo(new NodeEvent.LayerSaved(13, "l0"));
        assertThat(new HookCall.WaitForSave().at(14)).isEqualTo(new NodeEvent.SaveWaited(14));
        assertThat(new HookCall.GetFinished().at(15)).isEqualTo(new NodeEvent.FinishedPolled(15));
    }

    @Test
    void aRequestAsPythonBuildsItDecodes() {
        // what the connector sends: flat block ids, no kv_transfer_params key, an extra unknown arg
        Map<String, Object> args = new LinkedHashMap<>();
        args.put("request_id", "cmpl-x");
        args.put("block_ids", new ArrayList<>(List.of(new ArrayList<>(List.of(3L, 4L)), new ArrayList<>(List.of(9L)))));
        args.put("num_external_tokens", 32L);
        args.put("future_arg", "ignored");
        BridgeRequest r = ok(frame(7, "update_state_after_alloc", args));
        assertThat(r).isEqualTo(new BridgeRequest(7, new HookCall.UpdateStateAfterAlloc("cmpl-x",
                BlockGroups.of(new int[] {3, 4}, new int[] {9}), 32)));

        Map<String, Object> add = new LinkedHashMap<>();
        add.put("request_id", "emb");
        add.put("num_prompt_tokens", 4L);
        add.put("prompt_token_ids_len", null);
        assertThat(ok(frame(8, "add_request", add)).call()).isEqualTo(new HookCall.AddRequest("emb", 4, -1, null));

        Map<String, Object> flat = new LinkedHashMap<>();
        flat.put("request_id", "r");
        flat.put("status", "RequestStatus.FINISHED_LENGTH_CAPPED");
        flat.put("block_ids", new ArrayList<>(List.of(1L, 2L)));
        assertThat(ok(frame(9, "request_finished", flat)).call())
                .isEqualTo(new HookCall.RequestFinished("r", FinishStatus.FINISHED_LENGTH_CAPPED, BlockGroups.single(1, 2)));

        Map<String, Object> envelope = new LinkedHashMap<>();
        envelope.put("v", 1L);
        envelope.put("id", 10L);
        envelope.put("hook", "get_finished");
        assertThat(ok(PyMsgpack.encode(envelope)).call()).as("args may be left out").isEqualTo(new HookCall.GetFinished());
        envelope.put("args", null);
        assertThat(ok(PyMsgpack.encode(envelope)).call()).as("args may be None").isEqualTo(new HookCall.GetFinished());
    }

    /** The args of {@code request_finished} for request r, length-capped, with blocks [[1, 2]]. */
    private static Map<String, Object> lengthCappedFinishOfR() {
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("request_id", "r");
        f.put("status", "FINISHED_LENGTH_CAPPED");
        f.put("block_ids", new ArrayList<>(List.of(new ArrayList<>(List.of(1L, 2L)))));
        return f;
    }

    /** The args of {@code get_num_new_matched_tokens} for request r at 16 computed tokens, vLLM having acted on 24, async. */
    private static Map<String, Object> matchedQueryActedOn24Async() {
        Map<String, Object> q = new LinkedHashMap<>();
        q.put("request_id", "r");
        q.put("num_computed_tokens", 16L);
        q.put("acted", new LinkedHashMap<>(Map.of("num_tokens", 24L, "load_async", true)));
        return q;
    }

    @Test
    void theAnswerVllmActedOnIsReadIntoTheEvent() {
        // drive mode answering from the inner connector: args.acted, the answer vLLM acted on
        Map<String, Object> q = matchedQueryActedOn24Async();
        HookCall.GetNumNewMatchedTokens call = (HookCall.GetNumNewMatchedTokens) ok(frame(3, "get_num_new_matched_tokens", q)).call();
        assertThat(call.at(5)).isEqualTo(new io.kvledger.core.event.NodeEvent.MatchedTokensQueried(5, "r", 16,
                new io.kvledger.core.event.NodeEvent.MatchedAnswer(24, true)));
        Map<String, Object> none = new LinkedHashMap<>();
        none.put("num_tokens", null);
        none.put("load_async", false);
        q.put("acted", none);
        assertThat(((HookCall.GetNumNewMatchedTokens) ok(frame(3, "get_num_new_matched_tokens", q)).call()).acted())
                .isEqualTo(new io.kvledger.core.event.NodeEvent.MatchedAnswer(null, false));

        Map<String, Object> f = lengthCappedFinishOfR();
        Map<String, Object> acted = new LinkedHashMap<>();
        acted.put("delay_free", true);
        acted.put("kv_transfer_params", new LinkedHashMap<>(Map.of("transfer_id", "tx-1",
                "remote_block_ids", new ArrayList<>(List.of(new ArrayList<>(List.of(1L, 2L)))))));
        f.put("acted", acted);
        HookCall.RequestFinished fin = (HookCall.RequestFinished) ok(frame(4, "request_finished", f)).call();
        assertThat(fin.at(6)).isEqualTo(new io.kvledger.core.event.NodeEvent.RequestFinished(6, "r",
                FinishStatus.FINISHED_LENGTH_CAPPED, BlockGroups.single(1, 2), null,
                new io.kvledger.core.event.NodeEvent.FinishAnswer(true, io.kvledger.core.model.KvParams.of(
                        "transfer_id", "tx-1", "remote_block_ids", List.of(List.of(1L, 2L))))));
        f.put("acted", null);
        assertThat(ok(frame(4, "request_finished", f)).call())
                .isEqualTo(new HookCall.RequestFinished("r", FinishStatus.FINISHED_LENGTH_CAPPED, BlockGroups.single(1, 2)));

        f.put("acted", List.of(true));
        argRejected("request_finished", f, RejectReason.WRONG_FIELD_TYPE, "args.acted must be dict or None");
        f.put("acted", new LinkedHashMap<>(Map.of("kv_transfer_params", new LinkedHashMap<>())));
        argRejected("request_finished", f, RejectReason.MISSING_FIELD, "missing args.acted.delay_free");
        q.put("acted", new LinkedHashMap<>(Map.of("num_tokens", 1L, "load_async", 1L)));
        argRejected("get_num_new_matched_tokens", q, RejectReason.WRONG_FIELD_TYPE, "args.acted.load_async must be bool");
    }

    @Test
    void aBatchAsksForTheAgreedFormAndItsReplyLeavesOutEmptyAndAgreeingAnswers() {
        // args.agreed: True asks for it; absent (an older client), or anything but True, does not
        Map<String, Object> env = new LinkedHashMap<>();
        env.put("v", 1L);
        env.put("id", 1L);
        env.put("hook", "batch");
        Map<String, Object> args = new LinkedHashMap<>();
        args.put("agreed", true);
        args.put("calls", List.of(longCall(2, "ping")));
        env.put("args", args);
        BridgeDecoded.Batch asked = (BridgeDecoded.Batch) BridgeCodec.decode(PyMsgpack.encode(env));
        assertThat(asked.agreed()).isTrue();
        assertThat(asked.calls()).hasSize(1);
        assertThat(asked.brief()).isFalse();
        // args.brief: True with it asks for the brief form too; brief alone is nothing
        args.put("brief", true);
        assertThat(((BridgeDecoded.Batch) BridgeCodec.decode(PyMsgpack.encode(env))).brief()).isTrue();
        args.put("agreed", 1L);
        assertThat(((BridgeDecoded.Batch) BridgeCodec.decode(PyMsgpack.encode(env))).agreed()).isFalse();
        assertThat(((BridgeDecoded.Batch) BridgeCodec.decode(PyMsgpack.encode(env))).brief()).isFalse();
        args.remove("brief");
        args.remove("agreed");
        assertThat(((BridgeDecoded.Batch) BridgeCodec.decode(PyMsgpack.encode(env))).agreed()).isFalse();

        // the reply: an empty frame (an agreeing answer) and an ok empty answer left out, the rest in order as they are
        List<byte[]> replies = new ArrayList<>();
        replies.add(BridgeCodec.encodeReply(5, BridgeHook.ADD_REQUEST, List.of()));
        replies.add(new byte[0]);
        byte[] matched = BridgeCodec.encodeReply(7, BridgeHook.GET_NUM_NEW_MATCHED_TOKENS,
                List.of(new Effect.MatchedTokens("r", 3, false)));
        replies.add(matched);
        replies.add(new byte[0]);
        byte[] error = BridgeCodec.encodeError(9L, "busy");
        replies.add(error);
        byte[] extra = BridgeCodec.encodeReply(10, BridgeHook.ADD_REQUEST, List.of(), Map.of("note", new PyValue.Str("x")));
        replies.add(extra);
        replies.add(BridgeCodec.encodeEmpty(11));
        // an empty answer to a call that carried acted and does not agree (a node that rewrites no
        // finished_sending, answering {}): kept, or the client would take it for agreeing
        replies.add(BridgeCodec.encodeEmpty(12));
        boolean[] kept = new boolean[replies.size()];
        kept[replies.size() - 1] = true;
        for (boolean compact : new boolean[] {true, false}) {
            Map<String, Object> top = plainMap(BridgeCodec.encodeBatchReply(4, replies, compact, kept));
            assertThat(top).containsEntry("id", 4L).containsEntry("ok", true);
            List<?> got = (List<?>) ((Map<?, ?>) top.get("result")).get("replies");
            assertThat(got).hasSize(4);
            assertThat(PyMsgpack.encode(got.get(0))).isEqualTo(matched);
            assertThat(PyMsgpack.encode(got.get(1))).isEqualTo(error);
            assertThat(PyMsgpack.encode(got.get(2))).isEqualTo(extra);
            if (compact) {
                assertThat(got.get(3)).isEqualTo(12L);
            } else {
                assertThat(PyMsgpack.encode(got.get(3))).isEqualTo(BridgeCodec.encodeEmpty(12));
            }
        }
        // every call agreed or was empty: an empty list
        List<?> none = (List<?>) ((Map<?, ?>) plainMap(BridgeCodec.encodeBatchReply(4,
                List.of(new byte[0], BridgeCodec.encodeEmpty(3)), true, new boolean[2])).get("result")).get("replies");
        assertThat(none).isEmpty();
        // not asked: as before
        List<byte[]> plainReplies = List.of(replies.get(0), matched, error);
        assertThat(BridgeCodec.encodeBatchReply(4, plainReplies, true, null)).isEqualTo(BridgeCodec.encodeBatchReply(4, plainReplies, true));
    }

    @Test
    void anAnswerAgreesWithTheActedOneAsTheDriveClientComparesThem() {
        // get_num_new_matched_tokens: the same count (not None) and load_async
        Map<String, Object> q = matchedQueryActedOn24Async();
        HookCall.Engine query = (HookCall.Engine) ok(frame(3, "get_num_new_matched_tokens", q)).call();
        assertThat(BridgeCodec.agrees(query, List.of(new Effect.MatchedTokens("r", 24, true)))).isTrue();
        assertThat(BridgeCodec.agrees(query, List.of(new Effect.MatchedTokens("r", 24, false)))).isFalse();
        assertThat(BridgeCodec.agrees(query, List.of(new Effect.MatchedTokens("r", 0, true)))).isFalse();
        assertThat(BridgeCodec.agrees(query, List.of())).isFalse();
        Map<String, Object> none = new LinkedHashMap<>();
        none.put("num_tokens", null);
        none.put("load_async", false);
        q.put("acted", none);
        HookCall.Engine askAgain = (HookCall.Engine) ok(frame(3, "get_num_new_matched_tokens", q)).call();
        assertThat(BridgeCodec.agrees(askAgain, List.of(new Effect.MatchedTokens("r", 0, false)))).isFalse();
        q.remove("acted");
        HookCall.Engine notActed = (HookCall.Engine) ok(frame(3, "get_num_new_matched_tokens", q)).call();
        assertThat(BridgeCodec.agrees(notActed, List.of(new Effect.MatchedTokens("r", 0, false)))).isFalse();

        // request_finished: the same delay_free and params key for key, value types included; no NaN
        Map<String, Object> f = lengthCappedFinishOfR();
        Map<String, Object> acted = new LinkedHashMap<>();
        acted.put("delay_free", true);
        Map<String, Object> params = new LinkedHashMap<>();
        params.put("transfer_id", "tx-1");
        params.put("remote_block_ids", new ArrayList<>(List.of(new ArrayList<>(List.of(1L, 2L)))));
        params.put("tp_size", 1L);
        acted.put("kv_transfer_params", params);
        f.put("acted", acted);
        HookCall.Engine fin = (HookCall.Engine) ok(frame(4, "request_finished", f)).call();
        KvParams same = KvParams.of("tp_size", 1L, "transfer_id", "tx-1", "remote_block_ids", List.of(List.of(1L, 2L)));
        assertThat(BridgeCodec.agrees(fin, List.of(new Effect.FinishDecision("r", true, same)))).isTrue();
        assertThat(BridgeCodec.agrees(fin, List.of(new Effect.FinishDecision("r", false, same)))).isFalse();
        assertThat(BridgeCodec.agrees(fin, List.of(new Effect.FinishDecision("r", true, null)))).isFalse();
        assertThat(BridgeCodec.agrees(fin, List.of(new Effect.FinishDecision("r", true,
                KvParams.of("tp_size", 1.0, "transfer_id", "tx-1", "remote_block_ids", List.of(List.of(1L, 2L))))))).isFalse();
        assertThat(BridgeCodec.agrees(fin, List.of(new Effect.FinishDecision("r", true,
                KvParams.of("tp_size", 1L, "transfer_id", "tx-2", "remote_block_ids", List.of(List.of(1L, 2L))))))).isFalse();
        params.put("tp_size", Double.NaN);
        HookCall.Engine nan = (HookCall.Engine) ok(frame(4, "request_finished", f)).call();
        assertThat(BridgeCodec.agrees(nan, List.of(new Effect.FinishDecision("r", true,
                KvParams.of("tp_size", Double.NaN, "transfer_id", "tx-1", "remote_block_ids", List.of(List.of(1L, 2L))))))).isFalse();
        acted.put("delay_free", false);
        acted.put("kv_transfer_params", null);
        HookCall.Engine kept = (HookCall.Engine) ok(frame(4, "request_finished", f)).call();
        assertThat(BridgeCodec.agrees(kept, List.of(new Effect.FinishDecision("r", false, null)))).isTrue();

        // update_connector_output: the same requests as a set; the set as it came when the node rewrites nothing
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("finished_sending", new ArrayList<>(List.of("r1", "r2", "r3")));
        o.put("finished_recving", null);
        Map<String, Object> freed = new LinkedHashMap<>();
        freed.put("finished_sending", new ArrayList<>(List.of("r1", "r2")));
        o.put("acted", freed);
        HookCall.Engine out = (HookCall.Engine) ok(frame(5, "update_connector_output", o)).call();
        assertThat(BridgeCodec.agrees(out, List.of(new Effect.FinishedSendingRewritten(List.of("r2", "r1"))))).isTrue();
        assertThat(BridgeCodec.agrees(out, List.of(new Effect.FinishedSendingRewritten(List.of("r1"))))).isFalse();
        assertThat(BridgeCodec.agrees(out, List.of())).isFalse();  // the set as it came: r1, r2, r3
        freed.put("finished_sending", null);
        HookCall.Engine noneFreed = (HookCall.Engine) ok(frame(5, "update_connector_output", o)).call();
        assertThat(BridgeCodec.agrees(noneFreed, List.of(new Effect.FinishedSendingRewritten(List.of())))).isTrue();
        assertThat(BridgeCodec.agrees(noneFreed, List.of(new Effect.FinishedSendingRewritten(null)))).isTrue();
        o.remove("acted");
        HookCall.Engine plainOut = (HookCall.Engine) ok(frame(5, "update_connector_output", o)).call();
        assertThat(BridgeCodec.agrees(plainOut, List.of(new Effect.FinishedSendingRewritten(List.of("r1", "r2", "r3"))))).isFalse();
        // other hooks never agree
        assertThat(BridgeCodec.agrees((HookCall.Engine) ok(frame(6, "add_request", addArgs())).call(), List.of())).isFalse();
        assertThat(BridgeCodec.carriesActed(out)).isTrue();
        assertThat(BridgeCodec.carriesActed(plainOut)).isFalse();
        assertThat(BridgeCodec.carriesActed(query) && BridgeCodec.carriesActed(fin)).isTrue();
        assertThat(BridgeCodec.carriesActed(notActed)).isFalse();
        assertThat(BridgeCodec.carriesActed((HookCall.Engine) ok(frame(6, "add_request", addArgs())).call())).isFalse();
    }

    @Test
    void theFreedSetVllmActedOnIsReadIntoTheEvent() {
        // a producer's update_connector_output with drive_freed_from_inner: args.acted, the
        // finished_sending vLLM kept from the inner connector's rewrite
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("finished_sending", new ArrayList<>(List.of("r1", "r2")));
        o.put("finished_recving", null);
        Map<String, Object> acted = new LinkedHashMap<>();
        acted.put("finished_sending", new ArrayList<>(List.of("r2")));
        o.put("acted", acted);
        HookCall.UpdateConnectorOutput call = (HookCall.UpdateConnectorOutput) ok(frame(5, "update_connector_output", o)).call();
        assertThat(call.at(7)).isEqualTo(new io.kvledger.core.event.NodeEvent.ConnectorOutputReceived(7,
                List.of("r1", "r2"), null, new io.kvledger.core.event.NodeEvent.FreedAnswer(List.of("r2"))));
        acted.put("finished_sending", null);
        assertThat(((HookCall.UpdateConnectorOutput) ok(frame(5, "update_connector_output", o)).call()).acted())
                .isEqualTo(new io.kvledger.core.event.NodeEvent.FreedAnswer(null));
        o.put("acted", null);
        assertThat(ok(frame(5, "update_connector_output", o)).call())
                .isEqualTo(new HookCall.UpdateConnectorOutput(List.of("r1", "r2"), null));
        o.remove("acted");
        assertThat(((HookCall.UpdateConnectorOutput) ok(frame(5, "update_connector_output", o)).call()).acted()).isNull();

        o.put("acted", List.of("r2"));
        argRejected("update_connector_output", o, RejectReason.WRONG_FIELD_TYPE, "args.acted must be dict or None");
        o.put("acted", new LinkedHashMap<>());
        argRejected("update_connector_output", o, RejectReason.MISSING_FIELD, "missing args.acted.finished_sending");
        o.put("acted", new LinkedHashMap<>(Map.of("finished_sending", List.of(3L))));
        argRejected("update_connector_output", o, RejectReason.WRONG_FIELD_TYPE, "args.acted.finished_sending[0] must be str");
    }

    @Test
    void requestBytesAreWhatPythonPacks() {
        // msgpack.packb({"v": 1, "id": 3, "hook": "get_num_new_matched_tokens",
        //                "args": {"request_id": "r", "num_computed_tokens": 0}}), by hand
        byte[] expected = HexFormat.of().parseHex("84" + "a176" + "01" + "a26964" + "03"
                + "a4686f6f6b" + "ba" + hex("get_num_new_matched_tokens")
                + "a461726773" + "82" + "aa" + hex("request_id") + "a172" + "b3" + hex("num_computed_tokens") + "00");
        byte[] got = BridgeCodec.encodeRequest(new BridgeRequest(3, new HookCall.GetNumNewMatchedTokens("r", 0)));
        assertThat(HexFormat.of().formatHex(got)).isEqualTo(HexFormat.of().formatHex(expected));
    }

    // ------------------------------------------------------------------ rejections

    @Test
    void envelopeRejectionsNameWhatIsWrong() {
        rejected(new byte[0], null, RejectReason.EMPTY_FRAME, "zero-length");
        rejected(PyMsgpack.encode(List.of(1L)), null, RejectReason.NOT_A_MAP, "got list");
        rejected(PyMsgpack.encode("hello"), null, RejectReason.NOT_A_MAP, "got str");
        rejected(new byte[] {(byte) 0xc0}, null, RejectReason.NOT_A_MAP, "got None");
        rejected(HexFormat.of().parseHex("81a376"), null, RejectReason.TRUNCATED, "claims 3 bytes");
        rejected(new byte[] {(byte) 0xdf, 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff}, null,
                RejectReason.LENGTH_CLAIM_EXCEEDS_FRAME, "claims");
        rejected(map("v", 1L, "hook", "ping"), null, RejectReason.MISSING_FIELD, "\"id\"");
        rejected(map("v", 1L, "id", "7", "hook", "ping"), null, RejectReason.WRONG_FIELD_TYPE, "id must be int, got str");
        rejected(map("v", 1L, "id", 1.5, "hook", "ping"), null, RejectReason.WRONG_FIELD_TYPE, "id must be int, got float");
        rejected(map("v", 1L, "id", new java.math.BigInteger("18446744073709551615"), "hook", "ping"), null,
                RejectReason.INTEGER_OUT_OF_RANGE, "id");
        rejected(map("id", 4L, "hook", "ping"), 4L, RejectReason.MISSING_FIELD, "\"v\"");
        rejected(map("v", 2L, "id", 4L, "hook", "ping"), 4L, RejectReason.INVALID_VALUE, "protocol version 2 is not supported; this node speaks 1");
        rejected(map("v", true, "id", 4L, "hook", "ping"), 4L, RejectReason.WRONG_FIELD_TYPE, "v must be int, got bool");
        rejected(map("v", 1L, "id", 4L), 4L, RejectReason.MISSING_FIELD, "\"hook\"");
        rejected(map("v", 1L, "id", 4L, "hook", 5L), 4L, RejectReason.WRONG_FIELD_TYPE, "hook must be str, got int");
        rejected(map("v", 1L, "id", 4L, "hook", "get_num_matched_tokens"), 4L, RejectReason.UNKNOWN_TYPE,
                "unknown hook \"get_num_matched_tokens\" (known: add_request, get_num_new_matched_tokens");
        rejected(map("v", 1L, "id", 4L, "hook", "ping", "args", List.of()), 4L, RejectReason.WRONG_FIELD_TYPE,
                "args must be a dict, got list");
        byte[] trailing = Arrays.copyOf(map("v", 1L, "id", 4L, "hook", "ping"), map("v", 1L, "id", 4L, "hook", "ping").length + 1);
        rejected(trailing, null, RejectReason.TRAILING_BYTES, "1 bytes follow");
        // a bin key, an int key, a duplicate key, an ext value, invalid UTF-8
        rejected(HexFormat.of().parseHex("81c4017601"), null, RejectReason.BIN_KEY, "bin");
        rejected(HexFormat.of().parseHex("810101"), null, RejectReason.NON_STRING_KEY, "keys must be str");
        rejected(HexFormat.of().parseHex("82a17601a17602"), null, RejectReason.DUPLICATE_KEY, "\"v\" appears twice");
        rejected(HexFormat.of().parseHex("81a176d40100"), null, RejectReason.INVALID_FORMAT, "ext");
        rejected(HexFormat.of().parseHex("81a176a2c328"), null, RejectReason.NOT_UTF8, "UTF-8");
        rejected(HexFormat.of().parseHex("81a176c1"), null, RejectReason.INVALID_FORMAT, "0xc1");
    }

    @Test
    void oversizeAndTooDeepFramesAreRejectedBoundedly() {
        WireLimits small = WireLimits.DEFAULT.withMaxFrameBytes(64);
        byte[] big = BridgeCodec.encodeRequest(new BridgeRequest(1, new HookCall.SaveKvLayer("x".repeat(100))));
        BridgeDecoded d = BridgeCodec.decode(big, small);
        assertThat(((BridgeDecoded.Rejected) d).rejection().reason()).isEqualTo(RejectReason.FRAME_TOO_LARGE);
        assertThat(((BridgeDecoded.Rejected) d).error()).contains("exceeds the limit of 64 bytes");

        Object deep = 1L;
        for (int i = 0; i < 40; i++) {
            deep = new ArrayList<>(List.of(deep));
        }
        Map<String, Object> args = new LinkedHashMap<>();
        args.put("request_id", "r");
        args.put("num_prompt_tokens", 1L);
        args.put("prompt_token_ids_len", 1L);
        args.put("kv_transfer_params", Map.of("deep", deep));
        BridgeDecoded deepResult = BridgeCodec.decode(frame(5, "add_request", args));
        assertThat(((BridgeDecoded.Rejected) deepResult).rejection().reason()).isEqualTo(RejectReason.NESTING_TOO_DEEP);
    }

    @Test
    void everyRequiredArgumentIsNamedWhenMissing() {
        for (BridgeRequest r : BridgeSamples.all()) {
            Map<String, PyValue> args = BridgeCodec.args(r.call());
            for (String key : args.keySet()) {
                boolean optional = switch (r.hook()) {
                    case ADD_REQUEST -> key.equals("kv_transfer_params");
                    case BUILD_CONNECTOR_META -> key.startsWith("cached_") || key.equals("scheduled_new_reqs")
                            || key.equals("preempted_req_ids");
                    case HANDSHAKE_VOTED -> key.equals("failed_tp_ranks");
                    case UPDATE_CONNECTOR_OUTPUT, HELLO -> true;
                    default -> false;
                };
                Map<String, Object> without = new LinkedHashMap<>(args);
                without.remove(key);
                BridgeDecoded d = BridgeCodec.decode(frame(r.id(), r.hook().wireName(), without));
                if (optional) {
                    if (!key.startsWith("cached_")) {
                        assertThat(d).as("%s without %s", r.hook(), key).isInstanceOf(BridgeDecoded.Request.class);
                    }
                    continue;
                }
                assertThat(d).as("%s without %s", r.hook(), key).isInstanceOf(BridgeDecoded.Rejected.class);
                BridgeDecoded.Rejected rej = (BridgeDecoded.Rejected) d;
                assertThat(rej.id()).isEqualTo(r.id());
                assertThat(rej.hook()).isEqualTo(r.hook());
                assertThat(rej.rejection().reason()).isEqualTo(RejectReason.MISSING_FIELD);
                assertThat(rej.error()).contains("args." + key);
            }
        }
    }

    @Test
    void mistypedArgumentsAreNamed() {
        Map<String, Object> a = addArgs();
        a.put("num_prompt_tokens", "17");
        argRejected("add_request", a, RejectReason.WRONG_FIELD_TYPE, "args.num_prompt_tokens must be int, got str");
        a = addArgs();
        a.put("num_prompt_tokens", true);
        argRejected("add_request", a, RejectReason.WRONG_FIELD_TYPE, "args.num_prompt_tokens must be int, got bool");
        a = addArgs();
        a.put("num_prompt_tokens", 1L << 33);
        argRejected("add_request", a, RejectReason.INTEGER_OUT_OF_RANGE, "args.num_prompt_tokens = 8589934592 does not fit");
        a = addArgs();
        a.put("prompt_token_ids_len", -3L);
        argRejected("add_request", a, RejectReason.INVALID_VALUE, "args.prompt_token_ids_len = -3 is negative");
        a = addArgs();
        a.put("kv_transfer_params", List.of());
        argRejected("add_request", a, RejectReason.WRONG_FIELD_TYPE, "args.kv_transfer_params must be dict or None, got list");
        a = addArgs();
        a.put("request_id", new byte[] {1});
        argRejected("add_request", a, RejectReason.WRONG_FIELD_TYPE, "args.request_id must be str, got bytes");

        Map<String, Object> alloc = new LinkedHashMap<>();
        alloc.put("request_id", "r");
        alloc.put("num_external_tokens", 0L);
        alloc.put("block_ids", List.of(List.of(1L, 2L), List.of(3L, "4")));
        argRejected("update_state_after_alloc", alloc, RejectReason.WRONG_FIELD_TYPE, "args.block_ids[1][1] must be int, got str");
        alloc.put("block_ids", List.of(1L, -2L));
        argRejected("update_state_after_alloc", alloc, RejectReason.INVALID_VALUE, "args.block_ids[1] = -2 is negative");
        alloc.put("block_ids", List.of(1L, List.of(2L)));
        argRejected("update_state_after_alloc", alloc, RejectReason.WRONG_FIELD_TYPE, "args.block_ids[1] must be int, got list");
        alloc.put("block_ids", List.of(List.of(1L), 2L));
        argRejected("update_state_after_alloc", alloc, RejectReason.WRONG_FIELD_TYPE, "args.block_ids[1] must be list, got int");
        alloc.put("block_ids", Map.of());
        argRejected("update_state_after_alloc", alloc, RejectReason.WRONG_FIELD_TYPE, "args.block_ids must be list, got dict");
        alloc.put("block_ids", List.of(1.0));
        argRejected("update_state_after_alloc", alloc, RejectReason.WRONG_FIELD_TYPE, "args.block_ids[0] must be int, got float");

        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("step", 1L);
        meta.put("cached_req_ids", List.of("a", "b"));
        meta.put("cached_new_block_ids", List.of(List.of(List.of(1L))));
        argRejected("build_connector_meta", meta, RejectReason.INVALID_VALUE, "args.cached_req_ids has 2 items but args.cached_new_block_ids has 1");
        meta.remove("cached_new_block_ids");
        argRejected("build_connector_meta", meta, RejectReason.MISSING_FIELD, "args.cached_new_block_ids is missing");
        meta.put("cached_new_block_ids", List.of(List.of(List.of(1L)), List.of("x")));
        argRejected("build_connector_meta", meta, RejectReason.WRONG_FIELD_TYPE, "args.cached_new_block_ids[1][0] must be int, got str");
        meta.put("cached_req_ids", List.of("a", 2L));
        argRejected("build_connector_meta", meta, RejectReason.WRONG_FIELD_TYPE, "args.cached_req_ids[1] must be str, got int");

        Map<String, Object> fin = new LinkedHashMap<>();
        fin.put("request_id", "r");
        fin.put("status", "FINISHED_SOMEHOW");
        fin.put("block_ids", List.of());
        argRejected("request_finished", fin, RejectReason.INVALID_VALUE, "args.status \"FINISHED_SOMEHOW\" is not a finished status (one of FINISHED_STOPPED");

        Map<String, Object> out = new LinkedHashMap<>();
        out.put("finished_sending", List.of("a", 1L));
        argRejected("update_connector_output", out, RejectReason.WRONG_FIELD_TYPE, "args.finished_sending[1] must be str, got int");
        out.put("finished_sending", "a");
        argRejected("update_connector_output", out, RejectReason.WRONG_FIELD_TYPE, "args.finished_sending must be list, got str");

        argRejected("save_kv_layer", new LinkedHashMap<>(Map.of("layer_name", 3L)), RejectReason.WRONG_FIELD_TYPE,
                "args.layer_name must be str, got int");
        argRejected("hello", new LinkedHashMap<>(Map.of("tp_rank", "0")), RejectReason.WRONG_FIELD_TYPE,
                "args.tp_rank must be int, got str");
    }

    @Test
    void newAndPreemptedRequestsAreOptionalAndReachTheStep() {
        // an older connector sends neither: the step says they were not sent (null), not "none"
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("step", 3L);
        HookCall.BuildConnectorMeta old = (HookCall.BuildConnectorMeta) ok(frame(1, "build_connector_meta", meta)).call();
        assertThat(old.scheduledNewReqs()).isNull();
        assertThat(old.preemptedReqIds()).isNull();
        assertThat(old.at(5)).isEqualTo(new NodeEvent.StepScheduled(5, 3, List.of(), null, null));
        meta.put("scheduled_new_reqs", null);
        meta.put("preempted_req_ids", null);
        assertThat(((HookCall.BuildConnectorMeta) ok(frame(2, "build_connector_meta", meta)).call()).scheduledNewReqs()).isNull();
        assertThat(BridgeCodec.args(old)).doesNotContainKeys("scheduled_new_reqs", "preempted_req_ids");

        // as the recorder sends them: a flat block list is one group, kv_transfer_params may be left out
        Map<String, Object> n1 = new LinkedHashMap<>();
        n1.put("request_id", "n1");
        n1.put("block_ids", List.of(List.of(4L, 5L), List.of(6L)));
        n1.put("num_computed_tokens", 0L);
        n1.put("kv_transfer_params", Map.of("do_remote_prefill", true, "transfer_id", "tx-9"));
        n1.put("future_key", "ignored");
        Map<String, Object> n2 = new LinkedHashMap<>();
        n2.put("request_id", "n2");
        n2.put("block_ids", List.of(7L));
        n2.put("num_computed_tokens", 32L);
        meta.put("scheduled_new_reqs", List.of(n1, n2));
        meta.put("preempted_req_ids", List.of());
        HookCall.BuildConnectorMeta c = (HookCall.BuildConnectorMeta) ok(frame(3, "build_connector_meta", meta)).call();
        List<NodeEvent.NewRequest> want = List.of(
                new NodeEvent.NewRequest("n1", BlockGroups.of(new int[] {4, 5}, new int[] {6}), 0,
                        KvParams.of(Map.of("do_remote_prefill", true, "transfer_id", "tx-9"))),
                new NodeEvent.NewRequest("n2", BlockGroups.single(7), 32, null));
        assertThat(c.scheduledNewReqs()).isEqualTo(want);
        assertThat(c.preemptedReqIds()).isEmpty();
        assertThat(c.at(9)).isEqualTo(new NodeEvent.StepScheduled(9, 3, List.of(), want, List.of()));
    }

    @Test
    void malformedNewAndPreemptedRequestsAreNamed() {
        argRejected("build_connector_meta", newReqs("n"), RejectReason.WRONG_FIELD_TYPE,
                "args.scheduled_new_reqs must be list, got str");
        argRejected("build_connector_meta", newReqs(List.of("n")), RejectReason.WRONG_FIELD_TYPE,
                "args.scheduled_new_reqs[0] must be dict, got str");
        Map<String, Object> entry = newReq();
        entry.remove("request_id");
        argRejected("build_connector_meta", newReqs(List.of(newReq(), entry)), RejectReason.MISSING_FIELD,
                "missing args.scheduled_new_reqs[1].request_id");
        entry = newReq();
        entry.remove("block_ids");
        argRejected("build_connector_meta", newReqs(List.of(entry)), RejectReason.MISSING_FIELD,
                "missing args.scheduled_new_reqs[0].block_ids");
        entry = newReq();
        entry.remove("num_computed_tokens");
        argRejected("build_connector_meta", newReqs(List.of(entry)), RejectReason.MISSING_FIELD,
                "missing args.scheduled_new_reqs[0].num_computed_tokens");
        entry = newReq();
        entry.put("request_id", 5L);
        argRejected("build_connector_meta", newReqs(List.of(entry)), RejectReason.WRONG_FIELD_TYPE,
                "args.scheduled_new_reqs[0].request_id must be str, got int");
        entry = newReq();
        entry.put("block_ids", List.of(List.of(1L), List.of(-3L)));
        argRejected("build_connector_meta", newReqs(List.of(entry)), RejectReason.INVALID_VALUE,
                "args.scheduled_new_reqs[0].block_ids[1][0] = -3 is negative");
        entry = newReq();
        entry.put("block_ids", null);
        argRejected("build_connector_meta", newReqs(List.of(entry)), RejectReason.WRONG_FIELD_TYPE,
                "args.scheduled_new_reqs[0].block_ids must be list, got None");
        entry = newReq();
        entry.put("num_computed_tokens", -1L);
        argRejected("build_connector_meta", newReqs(List.of(entry)), RejectReason.INVALID_VALUE,
                "args.scheduled_new_reqs[0].num_computed_tokens = -1 is negative");
        entry = newReq();
        entry.put("num_computed_tokens", 1L << 31);
        argRejected("build_connector_meta", newReqs(List.of(entry)), RejectReason.INTEGER_OUT_OF_RANGE,
                "args.scheduled_new_reqs[0].num_computed_tokens = 2147483648 does not fit a 32-bit integer");
        entry = newReq();
        entry.put("kv_transfer_params", List.of());
        argRejected("build_connector_meta", newReqs(List.of(entry)), RejectReason.WRONG_FIELD_TYPE,
                "args.scheduled_new_reqs[0].kv_transfer_params must be dict or None, got list");
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("step", 1L);
        meta.put("preempted_req_ids", List.of("a", 2L));
        argRejected("build_connector_meta", meta, RejectReason.WRONG_FIELD_TYPE, "args.preempted_req_ids[1] must be str, got int");
        meta.put("preempted_req_ids", Map.of());
        argRejected("build_connector_meta", meta, RejectReason.WRONG_FIELD_TYPE, "args.preempted_req_ids must be list, got dict");
        // nested too deep inside an entry's params: the frame's bound, before any field is read
        Object deep = 1L;
        for (int i = 0; i < 40; i++) {
            deep = List.of(deep);
        }
        entry = newReq();
        entry.put("kv_transfer_params", Map.of("deep", deep));
        BridgeDecoded d = BridgeCodec.decode(frame(5, "build_connector_meta", newReqs(List.of(entry))));
        assertThat(((BridgeDecoded.Rejected) d).rejection().reason()).isEqualTo(RejectReason.NESTING_TOO_DEEP);
    }

    private static Map<String, Object> newReq() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("request_id", "n");
        m.put("block_ids", List.of(List.of(1L)));
        m.put("num_computed_tokens", 0L);
        m.put("kv_transfer_params", null);
        return m;
    }

    private static Map<String, Object> newReqs(Object reqs) {
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("step", 1L);
        meta.put("cached_req_ids", List.of());
        meta.put("cached_new_block_ids", List.of());
        meta.put("scheduled_new_reqs", reqs);
        return meta;
    }

    @Test
    void helloAcceptsTheProfileARecordingsHeaderWouldPick() {
        String moriio = "vllm.distributed.kv_transfer.kv_connector.v1.moriio.moriio_connector.MoRIIOConnector";
        BridgeNodeInfo newest = new BridgeNodeInfo(io.kvledger.core.config.Role.CONSUMER,
                io.kvledger.core.config.TransferMode.WRITE, 0, 1, 0, 1, "10.0.0.1:6301", "newest");
        BridgeNodeInfo old = new BridgeNodeInfo(io.kvledger.core.config.Role.CONSUMER,
                io.kvledger.core.config.TransferMode.WRITE, 0, 1, 0, 1, "10.0.0.1:6301", "vllm-239b5ff30");
        BridgeNodeInfo custom = new BridgeNodeInfo(io.kvledger.core.config.Role.CONSUMER,
                io.kvledger.core.config.TransferMode.WRITE, 0, 1, 0, 1, "10.0.0.1:6301", "vllm-239b5ff30+custom");
        HookCall.Hello byCommit = new HookCall.Hello("kv_consumer", "write", 0, null, "scheduler", "0.11.1",
                "239b5ff30cf46f9196149c888a20be2096fdff03", moriio);
        HookCall.Hello byVersion = new HookCall.Hello(null, null, null, null, null, "0.11.1.dev5+g239b5ff30.d20260518",
                null, null);
        assertThat(BridgeCodec.profileFor(byCommit)).isEqualTo("vllm-239b5ff30");
        assertThat(BridgeCodec.profileFor(byVersion)).isEqualTo("vllm-239b5ff30");
        assertThat(BridgeCodec.helloMismatch(byCommit, old)).isNull();
        assertThat(BridgeCodec.helloMismatch(byVersion, custom)).isNull();
        assertThat(BridgeCodec.helloMismatch(byCommit, newest)).isEqualTo("this node is not the caller's: the engine's vLLM "
                + "0.11.1 (commit 239b5ff30cf46f9196149c888a20be2096fdff03) with MoRIIOConnector is modelled by profile "
                + "vllm-239b5ff30, this node runs newest (start it with --profile vllm-239b5ff30)");
        // an install the table does not know, another connector, or a node of unknown profile: not checked
        assertThat(BridgeCodec.helloMismatch(new HookCall.Hello(null, null, null, null, null, "0.10.0", null, moriio), old))
                .isNull();
        assertThat(BridgeCodec.helloMismatch(new HookCall.Hello(null, null, null, null, null, null,
                "239b5ff30cf46f9196149c888a20be2096fdff03", "my.Connector"), newest)).isNull();
        assertThat(BridgeCodec.helloMismatch(byCommit, new BridgeNodeInfo(io.kvledger.core.config.Role.CONSUMER,
                io.kvledger.core.config.TransferMode.WRITE, 0, 1, 0, 1, "10.0.0.1:6301"))).isNull();
        // the reply names the node's profile
        assertThat(plain(reply(BridgeCodec.encodeHello(3, custom)))).containsEntry("profile", "vllm-239b5ff30+custom");
        assertThat(plain(reply(BridgeCodec.encodeHello(3, new BridgeNodeInfo(io.kvledger.core.config.Role.CONSUMER,
                io.kvledger.core.config.TransferMode.WRITE, 0, 1, 0, 1, "e"))))).doesNotContainKey("profile");
        argRejected("hello", new LinkedHashMap<>(Map.of("vllm_commit", 239L)), RejectReason.WRONG_FIELD_TYPE,
                "args.vllm_commit must be str, got int");
    }

    // ------------------------------------------------------------------ replies

    @Test
    void matchedTokensReply() {
        List<Effect> effects = List.of(new Effect.PhaseChanged("r", null, RequestPhase.ADMITTED, "x"),
                new Effect.MatchedTokens("r", 15, true));
        BridgeReply r = reply(BridgeCodec.encodeReply(3, BridgeHook.GET_NUM_NEW_MATCHED_TOKENS, effects));
        assertThat(r.id()).isEqualTo(3L);
        assertThat(r.ok()).isTrue();
        assertThat(plain(r)).containsExactly(e("num_tokens", 15L), e("load_async", true));
    }

    @Test
    void metadataReplyCarriesEveryReqMetaField() {
        ReqMeta recv = new ReqMeta("d1", BlockGroups.single(7, 8), BlockGroups.of(new int[] {1, 2}), "10.0.0.1:6301",
                "10.0.0.1", 6301, 61005, 0, 1, 1, 2, TransferId.of("tx-1"), List.of("10.0.0.1"), false);
        ReqMeta save = new ReqMeta("p1", BlockGroups.single(3), null, "10.0.0.2:6301", "10.0.0.2", 6301, 61006, 1, 2, 0, 0,
                null, List.of(), true);
        List<Effect> effects = List.of(new Effect.SendRemoteBlocks("h", 1, "r", TransferId.of("t"), List.of(), 0),
                new Effect.MetadataBuilt(12, List.of(recv), List.of(save), List.of("p0"), 5),
                new Effect.Anomaly(AnomalyKind.REQUEST_UNKNOWN, "r", null, "x"));
        BridgeReply r = reply(BridgeCodec.encodeReply(4, BridgeHook.BUILD_CONNECTOR_META, effects));
        assertThat(plain(r).keySet()).containsExactly("step", "reqs_to_recv", "reqs_to_save", "reqs_to_send", "mapping_size");
        assertThat(plain(r).get("step")).isEqualTo(12L);
        assertThat(plain(r).get("reqs_to_send")).isEqualTo(List.of("p0"));
        assertThat(plain(r).get("mapping_size")).isEqualTo(5L);
        Map<?, ?> d1 = (Map<?, ?>) ((Map<?, ?>) plain(r).get("reqs_to_recv")).get("d1");
        assertThat(new ArrayList<Object>(d1.keySet())).containsExactly("local_block_ids", "remote_block_ids", "remote_engine_id",
                "remote_host", "remote_handshake_port", "remote_notify_port", "remote_dp_rank", "remote_dp_size",
                "remote_dp_size_local", "remote_tp_size", "transfer_id", "multi_pod_hosts", "write_mode");
        assertThat(d1.get("local_block_ids")).isEqualTo(List.of(List.of(7L, 8L)));
        assertThat(d1.get("remote_block_ids")).isEqualTo(List.of(List.of(1L, 2L)));
        assertThat(d1.get("remote_notify_port")).isEqualTo(61005L);
        assertThat(d1.get("remote_tp_size")).isEqualTo(2L);
        assertThat(d1.get("transfer_id")).isEqualTo("tx-1");
        assertThat(d1.get("write_mode")).isEqualTo(false);
        Map<?, ?> p1 = (Map<?, ?>) ((Map<?, ?>) plain(r).get("reqs_to_save")).get("p1");
        assertThat(p1.get("remote_block_ids")).isNull();
        assertThat(p1.get("transfer_id")).isNull();
        assertThat(p1.get("write_mode")).isEqualTo(true);
    }

    @Test
    void finishDecisionReplyPacksParamsAsPythonDoes() {
        KvParams params = BridgeSamples.proxyParams();
        byte[] frame = BridgeCodec.encodeReply(5, BridgeHook.REQUEST_FINISHED,
                List.of(new Effect.DeferralStarted("r", "tx", 99), new Effect.FinishDecision("r", true, params)));
        BridgeReply r = reply(frame);
        assertThat(plain(r).get("delay_free")).isEqualTo(true);
        assertThat(BridgeSamples.valueEquals(plain(r).get("kv_transfer_params"), params.asMap())).isTrue();
        // the params' bytes inside the reply are exactly msgpack.packb(params)
        String paramsHex = HexFormat.of().formatHex(PyMsgpack.encode(params.asMap()));
        assertThat(HexFormat.of().formatHex(frame)).endsWith(hex("kv_transfer_params") + paramsHex);

        BridgeReply none = reply(BridgeCodec.encodeReply(6, BridgeHook.REQUEST_FINISHED,
                List.of(new Effect.FinishDecision("r", false, null))));
        assertThat(plain(none)).containsExactly(e("delay_free", false), e("kv_transfer_params", NULL));
    }

    @Test
    void connectorOutputReply() {
        BridgeReply safe = reply(BridgeCodec.encodeReply(7, BridgeHook.UPDATE_CONNECTOR_OUTPUT,
                List.of(new Effect.AckSurfaced("a", "t", Effect.SurfaceReason.ACKED), new Effect.FinishedSendingRewritten(List.of("a", "b")))));
        assertThat(plain(safe)).containsExactly(e("finished_sending", List.of("a", "b")));
        BridgeReply empty = reply(BridgeCodec.encodeReply(8, BridgeHook.UPDATE_CONNECTOR_OUTPUT,
                List.of(new Effect.FinishedSendingRewritten(List.of()))));
        assertThat(plain(empty)).as("SAFE or None").containsExactly(e("finished_sending", NULL));
        BridgeReply consumer = reply(BridgeCodec.encodeReply(9, BridgeHook.UPDATE_CONNECTOR_OUTPUT, List.of()));
        assertThat(plain(consumer)).as("no rewrite: leave finished_sending as it is").isEmpty();
    }

    @Test
    void getFinishedReply() {
        BridgeReply r = reply(BridgeCodec.encodeReply(10, BridgeHook.GET_FINISHED,
                List.of(new Effect.FinishedReported(List.of("p1"), List.of(), List.of(4, 5)))));
        assertThat(plain(r)).containsExactly(e("finished_sending", List.of("p1")),
                e("finished_recving", NULL), e("load_error_blocks", List.of(4L, 5L)));
        BridgeReply none = reply(BridgeCodec.encodeReply(11, BridgeHook.GET_FINISHED,
                List.of(new Effect.FinishedReported(List.of(), List.of("d1"), List.of()))));
        assertThat(plain(none)).containsExactly(e("finished_sending", NULL),
                e("finished_recving", List.of("d1")), e("load_error_blocks", List.of()));
    }

    @Test
    void voidHooksReplyEmptyAndIgnoreIoAndDecisions() {
        List<Effect> noise = List.of(new Effect.SendWriteDone("h", 1, "t"),
                new Effect.PostWrite(1, "t", "l", "k", new int[] {1}, new int[] {2}),
                new Effect.Anomaly(AnomalyKind.REQUEST_UNKNOWN, "r", null, "x"));
        for (BridgeHook h : List.of(BridgeHook.ADD_REQUEST, BridgeHook.UPDATE_STATE_AFTER_ALLOC, BridgeHook.START_LOAD_KV,
                BridgeHook.SAVE_KV_LAYER, BridgeHook.WAIT_FOR_SAVE, BridgeHook.PING)) {
            byte[] f = BridgeCodec.encodeReply(12, h, noise);
            BridgeReply r = reply(f);
            assertThat(r.ok()).as("%s", h).isTrue();
            assertThat(plain(r)).as("%s", h).isEmpty();
            assertThat(HexFormat.of().formatHex(f)).isEqualTo("84a17601a269640ca26f6bc3a6726573756c7480");
        }
    }

    @Test
    void aMissingReplyEffectOrAnUnpackableValueIsAnErrorReplyNotAnException() {
        BridgeReply missing = reply(BridgeCodec.encodeReply(13, BridgeHook.GET_NUM_NEW_MATCHED_TOKENS, List.of()));
        assertThat(missing.ok()).isFalse();
        assertThat(missing.id()).isEqualTo(13L);
        assertThat(missing.error()).contains("no MatchedTokens for get_num_new_matched_tokens");

        ReqMeta odd = new ReqMeta("d", BlockGroups.single(), null, "e", "h", 1, 2, 0, 1, 1, 1, TransferId.of(new Object()), List.of(), false);
        BridgeReply unpackable = reply(BridgeCodec.encodeReply(14, BridgeHook.BUILD_CONNECTOR_META,
                List.of(new Effect.MetadataBuilt(1, List.of(odd), List.of(), List.of(), 0))));
        assertThat(unpackable.ok()).isFalse();
        assertThat(unpackable.error()).contains("cannot encode the build_connector_meta reply");

        BridgeReply hello = reply(BridgeCodec.encodeReply(15, BridgeHook.HELLO, List.of()));
        assertThat(hello.ok()).isFalse();
    }

    @Test
    @SuppressWarnings("unchecked")
    void errorRepliesAndHello() {
        BridgeReply e = reply(BridgeCodec.encodeError(null, "bad \ud800 text"));
        assertThat(e.id()).isNull();
        assertThat(e.ok()).isFalse();
        assertThat(e.error()).isEqualTo("bad \ufffd text");
        assertThat(HexFormat.of().formatHex(BridgeCodec.encodeError(2L, "x"))).isEqualTo("84a17601a26964" + "02" + "a26f6bc2a56572726f72a178");

        BridgeNodeInfo node = new BridgeNodeInfo(io.kvledger.core.config.Role.CONSUMER, io.kvledger.core.config.TransferMode.WRITE,
                1, 2, 0, 1, "10.0.0.1:6301");
        BridgeReply h = reply(BridgeCodec.encodeHello(16, node));
        assertThat(plain(h)).containsEntry("protocol", 1L).containsEntry("kv_role", "kv_consumer").containsEntry("mode", "write")
                .containsEntry("dp_rank", 1L).containsEntry("dp_size", 2L).containsEntry("tp_rank", 0L).containsEntry("tp_size", 1L)
                .containsEntry("engine_id", "10.0.0.1:6301");
        assertThat((List<Object>) plain(h).get("hooks")).contains("add_request", "get_finished", "hello", "ping", "batch", "compact", "derived", "steady", "agreed", "brief");
        assertThat(BridgeCodec.helloMismatch(new HookCall.Hello("kv_consumer", "WRITE", 1, 0, "scheduler"), node)).isNull();
        assertThat(BridgeCodec.helloMismatch(new HookCall.Hello(null, null, null, null, null), node)).isNull();
        assertThat(BridgeCodec.helloMismatch(new HookCall.Hello("kv_producer", "read", 0, 1, null), node))
                .isEqualTo("this node is not the caller's: kv_role kv_producer != kv_consumer, mode read != write, dp_rank 0 != 1, tp_rank 1 != 0");
    }

    @Test
    void malformedRepliesAreRejectedNotThrown() {
        assertThat(BridgeCodec.decodeReply(new byte[0]).isOk()).isFalse();
        assertThat(BridgeCodec.decodeReply(map("v", 1L, "id", 1L)).rejectionOrNull().detail()).contains("missing ok");
        assertThat(BridgeCodec.decodeReply(map("v", 1L, "id", 1L, "ok", true, "result", 3L)).rejectionOrNull().detail())
                .contains("result must be a dict");
        assertThat(BridgeCodec.decodeReply(map("v", 9L, "id", 1L, "ok", true, "result", Map.of())).rejectionOrNull().detail())
                .contains("reply version 9");
    }

    // ------------------------------------------------------------------ helpers

    private static final Object NULL = null;

    /** A map entry that may hold None (Map.entry refuses null). */
    static Map.Entry<String, Object> e(String k, Object v) {
        return new java.util.AbstractMap.SimpleEntry<>(k, v);
    }

    static Map<String, Object> addArgs() {
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("request_id", "r");
        a.put("num_prompt_tokens", 17L);
        a.put("prompt_token_ids_len", 17L);
        return a;
    }

    static byte[] frame(long id, String hook, Map<String, Object> args) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("v", 1L);
        m.put("id", id);
        m.put("hook", hook);
        m.put("args", args);
        return PyMsgpack.encode(m);
    }

    static byte[] map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return PyMsgpack.encode(m);
    }

    private static BridgeRequest ok(byte[] frame) {
        BridgeDecoded d = BridgeCodec.decode(frame);
        assertThat(d).isInstanceOf(BridgeDecoded.Request.class);
        return ((BridgeDecoded.Request) d).request();
    }

    private static void rejected(byte[] frame, Long id, RejectReason reason, String detail) {
        BridgeDecoded d = BridgeCodec.decode(frame);
        assertThat(d).as("%s", HexFormat.of().formatHex(frame)).isInstanceOf(BridgeDecoded.Rejected.class);
        BridgeDecoded.Rejected r = (BridgeDecoded.Rejected) d;
        assertThat(r.rejection().reason()).as(r.error()).isEqualTo(reason);
        assertThat(r.error()).contains(detail);
        assertThat(r.id()).isEqualTo(id);
        BridgeReply reply = reply(BridgeCodec.encodeError(r));
        assertThat(reply.ok()).isFalse();
        assertThat(reply.id()).isEqualTo(id);
        assertThat(reply.error()).startsWith(reason.name() + ": ");
    }

    private static void argRejected(String hook, Map<String, Object> args, RejectReason reason, String detail) {
        BridgeDecoded d = BridgeCodec.decode(frame(77, hook, args));
        assertThat(d).as("%s %s", hook, args).isInstanceOf(BridgeDecoded.Rejected.class);
        BridgeDecoded.Rejected r = (BridgeDecoded.Rejected) d;
        assertThat(r.error()).contains(detail);
        assertThat(r.rejection().reason()).as(r.error()).isEqualTo(reason);
        assertThat(r.id()).isEqualTo(77L);
        assertThat(r.hook().wireName()).isEqualTo(hook);
    }

    static BridgeReply reply(byte[] frame) {
        DecodeResult<BridgeReply> d = BridgeCodec.decodeReply(frame);
        assertThat(d.isOk()).as("%s", d.rejectionOrNull()).isTrue();
        return d.valueOrNull();
    }

    static String hex(String s) {
        return HexFormat.of().formatHex(s.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    /** A reply's result in the plain-Java form ({@code PyValue.toObject}), for map assertions. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> plain(BridgeReply r) {
        return r.result() == null ? null : (Map<String, Object>) r.result().toObject();
    }
}
