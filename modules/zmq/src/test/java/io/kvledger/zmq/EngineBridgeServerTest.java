package io.kvledger.zmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.PyValue;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.wire.PyMsgpack;
import io.kvledger.wire.bridge.BridgeCodec;
import io.kvledger.wire.bridge.BridgeNodeInfo;
import io.kvledger.wire.bridge.BridgeReply;
import io.kvledger.wire.bridge.BridgeRequest;
import io.kvledger.wire.bridge.HookCall;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The engine bridge over a real socket, in front of a real reducer loop. */
class EngineBridgeServerTest {

    static final ZmqAddress PREFILL = new ZmqAddress("10.0.0.1", 6301, 61005);
    static final ZmqAddress DECODE = new ZmqAddress("10.0.0.2", 7301, 62005);

    static String rid(String name) {
        return "cmpl-" + RequestIds.proxyRequestId(PREFILL, DECODE, String.format("%032x", name.hashCode() & 0xffffffffL)) + "-0-1a2b3c4d";
    }

    static EngineBridgeConfig config() {
        return EngineBridgeConfig.forEndpoint("tcp://127.0.0.1:0");
    }

    // ------------------------------------------------------------------ a burst of unawaited calls

    /**
     * 20,000 {@code get_finished} calls sent by one DEALER without reading a reply, then read: every
     * call the loop applied is answered ok (none dropped because the caller's queue was full while
     * it was still connected), no call is answered twice, and every call is either answered or
     * counted as an undeliverable reply to a call that was not applied.
     */
    @Test
    void everyAppliedCallOfABurstIsAnswered() throws Exception {
        NodeConfig cfg = NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).build();
        int n = 20_000;
        try (BridgeNodeLoop loop = new BridgeNodeLoop(cfg);
             EngineBridgeServer server = EngineBridgeServer.open(config(), BridgeNodeInfo.of(cfg), loop);
             BridgeClient engine = new BridgeClient(server.endpoint())) {
            assertThat(engine.call(new HookCall.Ping()).ok()).isTrue();
            for (long id = 1; id <= n; id++) {
                engine.send(BridgeCodec.encodeRequest(new BridgeRequest(id, new HookCall.GetFinished())));
            }
            Set<Long> ok = new java.util.HashSet<>();
            Set<Long> refused = new java.util.HashSet<>();
            long duplicates = 0;
            // read until every call is accounted for (answered, or counted undeliverable by the
            // server), or until nothing more comes for a long while
            while (ok.size() + refused.size() + server.undeliverable() < n) {
                BridgeReply r = engine.poll(30_000);
                if (r == null) {
                    break;
                }
                if (!(r.ok() ? ok : refused).add(r.id())) {
                    duplicates++;
                }
            }
            int applied = loop.appliedCount();
            assertThat(duplicates).as("answered twice").isZero();
            assertThat(ok.size()).as("ok answers: one per applied call (applied %d, ok %d, refused %d, undeliverable %d)",
                    applied, ok.size(), refused.size(), server.undeliverable()).isEqualTo(applied);
            assertThat(server.undeliverableApplied()).as("replies to applied calls dropped").isZero();
            assertThat(ok.size() + refused.size() + server.undeliverable()).as("every call accounted for").isEqualTo(n);
            assertThat(applied).as("some calls were applied").isPositive();
        }
    }

    /**
     * Replies held for a caller that then disconnects are released (handed to the socket before it
     * noticed, or dropped and counted once it says the caller is gone), and the bridge goes on.
     */
    @Test
    void repliesHeldForACallerThatLeavesAreReleased() throws Exception {
        NodeConfig cfg = NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).build();
        try (BridgeNodeLoop loop = new BridgeNodeLoop(cfg);
             EngineBridgeServer server = EngineBridgeServer.open(config(), BridgeNodeInfo.of(cfg), loop)) {
            try (BridgeClient engine = BridgeClient.slowReader(server.endpoint())) {
                assertThat(engine.call(new HookCall.Ping()).ok()).isTrue();
                // calls the engine never reads the answers of, until the server holds some with
                // nothing left in flight: the engine's queue and receive buffer are small, but how
                // many replies the buffers take (the server's send buffer grows while it drains, so
                // replies held for a moment may go out after all) is the kernel's to say, so it is
                // not a count: another batch goes out whenever everything sent so far was answered
                // and nothing is held
                long[] id = {1};
                until(() -> {
                    boolean held = server.heldReplies() > 0;
                    boolean idle = server.inFlight() == 0;
                    if (!held && idle && id[0] < 2_000_000) {
                        for (int i = 0; i < 1_000; i++, id[0]++) {
                            engine.send(BridgeCodec.encodeRequest(new BridgeRequest(id[0], new HookCall.GetFinished())));
                        }
                        Collector.sleep(20);
                        return false;
                    }
                    return held && idle;
                }, () -> "replies held for the caller after " + (id[0] - 1) + " calls: " + counters(server, loop));
            }
            until(() -> server.heldReplies() == 0, () -> "the held replies released once the caller is gone: " + counters(server, loop));
            assertThat(server.undeliverable()).isGreaterThanOrEqualTo(server.undeliverableApplied());
            try (BridgeClient again = new BridgeClient(server.endpoint())) {
                assertThat(again.call(new HookCall.GetFinished()).ok()).as("the bridge goes on").isTrue();
            }
        }
    }

    static String counters(EngineBridgeServer server, BridgeNodeLoop loop) {
        return "held " + server.heldReplies() + ", in flight " + server.inFlight() + ", received " + server.received()
                + ", handed off " + server.handedOff() + ", applied " + loop.appliedCount() + ", busy " + server.busy()
                + ", replied " + server.replied() + ", undeliverable " + server.undeliverable();
    }

    /** Waits for {@code cond}, polling; fails after 120 s (it ends as soon as it holds). */
    static void until(java.util.function.BooleanSupplier cond, java.util.function.Supplier<String> what) {
        long end = System.nanoTime() + 120_000_000_000L;
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                throw new AssertionError("waited 120 s for " + what.get());
            }
            Collector.sleep(5);
        }
    }

    // ------------------------------------------------------------------ lifecycles through a real reducer

    @Test
    void aWriteProducerLifecycle() throws Exception {
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).build();
        String rid = rid("write-1");
        KvParams params = KvParams.of("do_remote_decode", true, "do_remote_prefill", false, "transfer_id", "tx-w1",
                "remote_dp_size", 1, "remote_tp_size", 1, "remote_engine_id", null, "remote_block_ids", null);
        try (BridgeNodeLoop loop = new BridgeNodeLoop(cfg);
             EngineBridgeServer server = EngineBridgeServer.open(config(), BridgeNodeInfo.of(cfg), loop);
             BridgeClient engine = new BridgeClient(server.endpoint())) {
            BridgeReply hello = engine.call(new HookCall.Hello("kv_producer", "write", 0, 0, "scheduler"));
            assertThat(hello.ok()).as(hello.error()).isTrue();
            assertThat(plain(hello)).containsEntry("kv_role", "kv_producer").containsEntry("mode", "write")
                    .containsEntry("protocol", 1L).containsEntry("engine_id", cfg.engineId());

            assertThat(ok(engine.call(new HookCall.AddRequest(rid, 32, 32, params)))).isEmpty();
            assertThat(ok(engine.call(new HookCall.GetNumNewMatchedTokens(rid, 0))))
                    .containsEntry("num_tokens", 0L).containsEntry("load_async", false);
            assertThat(ok(engine.call(new HookCall.UpdateStateAfterAlloc(rid, BlockGroups.single(1, 2), 0)))).isEmpty();

            Map<String, Object> meta = ok(engine.call(new HookCall.BuildConnectorMeta(1, List.of())));
            assertThat(meta).containsEntry("step", 1L).containsEntry("reqs_to_recv", Map.of());
            Map<?, ?> save = (Map<?, ?>) ((Map<?, ?>) meta.get("reqs_to_save")).get(rid);
            assertThat(save).as("the prompt is covered: the save is staged with D's address from the request id").isNotNull();
            assertThat(save.get("remote_host")).isEqualTo("10.0.0.2");
            assertThat(save.get("remote_notify_port")).isEqualTo(62005L);
            assertThat(save.get("local_block_ids")).isEqualTo(List.of(List.of(1L, 2L)));
            assertThat(save.get("transfer_id")).isEqualTo("tx-w1");
            assertThat(save.get("write_mode")).isEqualTo(true);
            assertThat(meta.get("mapping_size")).isEqualTo(1L);

            Map<String, Object> fin = ok(engine.call(new HookCall.RequestFinished(rid, FinishStatus.FINISHED_LENGTH_CAPPED,
                    BlockGroups.single(1, 2))));
            assertThat(fin.get("delay_free")).as("blocks stay until D acknowledges").isEqualTo(true);
            assertThat(castMap(fin.get("kv_transfer_params"))).containsEntry("transfer_id", "tx-w1")
                    .containsEntry("do_remote_decode", false);

            Map<String, Object> polled = ok(engine.call(new HookCall.GetFinished()));
            assertThat(polled).containsEntry("finished_sending", null).containsEntry("finished_recving", null)
                    .containsEntry("load_error_blocks", List.of());

            assertThat(ok(engine.call(new HookCall.UpdateConnectorOutput(List.of(rid), null))))
                    .as("the ACKed deferral is safe to free").containsEntry("finished_sending", List.of(rid));
            assertThat(ok(engine.call(new HookCall.UpdateConnectorOutput(null, null))))
                    .as("nothing left to free: SAFE or None").containsEntry("finished_sending", null);

            assertThat(loop.applied()).hasSize(8);
            assertThat(loop.applied().get(0)).isInstanceOf(NodeEvent.RequestAdmitted.class);
            assertThat(loop.applied()).extracting(NodeEvent::atNs).isSorted();
            assertThat(server.handedOff()).isEqualTo(8);
            assertThat(server.replied()).isEqualTo(8);
            assertThat(server.control()).isEqualTo(1);
            assertThat(server.rejected()).isZero();
            assertThat(server.timedOut()).isZero();
        }
    }

    /** One batch frame: its calls applied in order, each answered, the answers in one reply frame. */
    @Test
    @SuppressWarnings("unchecked")
    void aBatchIsAppliedInOrderAndAnsweredInOneFrame() throws Exception {
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).build();
        String rid = rid("batch-1");
        KvParams params = KvParams.of("do_remote_decode", true, "do_remote_prefill", false, "transfer_id", "tx-b1",
                "remote_dp_size", 1, "remote_tp_size", 1, "remote_engine_id", null, "remote_block_ids", null);
        try (BridgeNodeLoop loop = new BridgeNodeLoop(cfg);
             EngineBridgeServer server = EngineBridgeServer.open(config(), BridgeNodeInfo.of(cfg), loop);
             BridgeClient engine = new BridgeClient(server.endpoint())) {
            List<Object> calls = new ArrayList<>();
            calls.add(member(1, new HookCall.AddRequest(rid, 32, 32, params)));
            calls.add(member(2, new HookCall.GetNumNewMatchedTokens(rid, 0)));
            calls.add(member(3, new HookCall.Ping()));
            Map<String, Object> unknown = new LinkedHashMap<>();
            unknown.put("id", 4L);
            unknown.put("hook", "getfinished");
            calls.add(unknown);
            calls.add(member(5, new HookCall.UpdateStateAfterAlloc(rid, BlockGroups.single(1, 2), 0)));
            calls.add(member(6, new HookCall.BuildConnectorMeta(1, List.of())));
            Map<String, Object> env = new LinkedHashMap<>();
            env.put("v", 1L);
            env.put("id", 100L);
            env.put("hook", "batch");
            env.put("args", Map.of("calls", calls));
            engine.send(PyMsgpack.encode(env));
            BridgeReply r = engine.reply(10_000);
            assertThat(r.ok()).as(r.error()).isTrue();
            assertThat(r.id()).isEqualTo(100L);
            List<Map<String, Object>> replies = (List<Map<String, Object>>) (List<?>) plain(r).get("replies");
            assertThat(replies).extracting(m -> m.get("id")).containsExactly(1L, 2L, 3L, 4L, 5L, 6L);
            assertThat(replies).extracting(m -> m.get("ok")).containsExactly(true, true, true, false, true, true);
            assertThat((Map<String, Object>) replies.get(1).get("result"))
                    .containsEntry("num_tokens", 0L).containsEntry("load_async", false);
            assertThat((String) replies.get(3).get("error")).startsWith("UNKNOWN_TYPE: unknown hook \"getfinished\"");
            Map<?, ?> save = (Map<?, ?>) ((Map<?, ?>) ((Map<?, ?>) replies.get(5).get("result")).get("reqs_to_save")).get(rid);
            assertThat(save).as("the step saw the allocation made before it in the batch").isNotNull();
            // each engine hook one event, in the batch's order
            assertThat(loop.applied()).extracting(e -> e.getClass().getSimpleName())
                    .containsExactly("RequestAdmitted", "MatchedTokensQueried", "BlocksAllocated", "StepScheduled");
            assertThat(server.handedOff()).isEqualTo(4);
            assertThat(server.rejected()).isEqualTo(1);
            assertThat(server.control()).isEqualTo(1);
            // a call after the batch sees its state
            Map<String, Object> fin = ok(engine.call(new HookCall.RequestFinished(rid, FinishStatus.FINISHED_LENGTH_CAPPED,
                    BlockGroups.single(1, 2))));
            assertThat(fin.get("delay_free")).isEqualTo(true);
            // an empty batch is answered with no replies
            env.put("args", Map.of("calls", List.of()));
            engine.send(PyMsgpack.encode(env));
            BridgeReply empty = engine.reply(10_000);
            assertThat(plain(empty)).containsEntry("replies", List.of());
            assertThat(server.inFlight()).isZero();
        }
    }

    /**
     * A batch asking for the agreed form ({@code args.agreed}): the reply lists only the answers that
     * are neither empty nor the {@code acted} their call carried, in order; the node applies the same
     * calls (the same events, {@code acted} included) as for a batch that does not ask. Asking also
     * for the brief form ({@code args.brief}) leaves out build_connector_meta's metadata too.
     */
    @Test
    @SuppressWarnings("unchecked")
    void aBatchAskingForTheAgreedFormListsOnlyWhatDiffers() throws Exception {
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).build();
        String r1 = rid("agreed-1");
        String r2 = rid("agreed-2");
        List<List<String>> applied = new ArrayList<>();
        for (String form : List.of("agreed", "brief", "full")) {
            boolean agreed = !form.equals("full");
            try (BridgeNodeLoop loop = new BridgeNodeLoop(cfg);
                 EngineBridgeServer server = EngineBridgeServer.open(config(), BridgeNodeInfo.of(cfg), loop);
                 BridgeClient engine = new BridgeClient(server.endpoint())) {
                List<Object> calls = new ArrayList<>();
                for (String r : List.of(r1, r2)) {
                    calls.add(member(calls.size() + 1, new HookCall.AddRequest(r, 32, 32, KvParams.of("do_remote_decode", true,
                            "do_remote_prefill", false, "transfer_id", "tx-" + r.hashCode(), "remote_engine_id", null,
                            "remote_block_ids", null))));
                }
                Map<String, Object> agrees = member(3, new HookCall.GetNumNewMatchedTokens(r1, 0));
                ((Map<String, Object>) agrees.get("args")).put("acted", Map.of("num_tokens", 0L, "load_async", false));
                calls.add(agrees);
                Map<String, Object> differs = member(4, new HookCall.GetNumNewMatchedTokens(r2, 0));
                ((Map<String, Object>) differs.get("args")).put("acted", Map.of("num_tokens", 16L, "load_async", true));
                calls.add(differs);
                calls.add(member(5, new HookCall.UpdateStateAfterAlloc(r1, BlockGroups.single(1, 2), 0)));
                calls.add(member(6, new HookCall.BuildConnectorMeta(1, List.of())));
                Map<String, Object> freed = member(7, new HookCall.UpdateConnectorOutput(null, null));
                Map<String, Object> none = new LinkedHashMap<>();
                none.put("finished_sending", null);
                ((Map<String, Object>) freed.get("args")).put("acted", none);
                calls.add(freed);
                calls.add(member(8, new HookCall.GetNumNewMatchedTokens(r2, 0)));  // no acted: answered in full
                Map<String, Object> env = new LinkedHashMap<>();
                env.put("v", 1L);
                env.put("id", 100L);
                env.put("hook", "batch");
                Map<String, Object> args = new LinkedHashMap<>();
                if (agreed) {
                    args.put("agreed", true);
                }
                if (form.equals("brief")) {
                    args.put("brief", true);
                }
                args.put("calls", calls);
                env.put("args", args);
                engine.send(PyMsgpack.encode(env));
                BridgeReply r = engine.reply(10_000);
                assertThat(r.ok()).as(r.error()).isTrue();
                List<Map<String, Object>> replies = (List<Map<String, Object>>) (List<?>) plain(r).get("replies");
                if (form.equals("brief")) {
                    // and 6, build_connector_meta's metadata
                    assertThat(replies).extracting(m -> m.get("id")).containsExactly(4L, 8L);
                } else if (agreed) {
                    // 1, 2, 5 empty; 3 and 7 the answers acted on: left out
                    assertThat(replies).extracting(m -> m.get("id")).containsExactly(4L, 6L, 8L);
                    assertThat((Map<String, Object>) replies.get(0).get("result"))
                            .containsEntry("num_tokens", 0L).containsEntry("load_async", false);
                } else {
                    assertThat(replies).extracting(m -> m.get("id")).containsExactly(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L);
                    assertThat((Map<String, Object>) replies.get(6).get("result")).containsEntry("finished_sending", null);
                }
                assertThat(replies).extracting(m -> m.get("ok")).containsOnly(true);
                assertThat(server.handedOff()).isEqualTo(8);
                List<String> events = new ArrayList<>();
                for (NodeEvent e : loop.applied()) {
                    events.add(e.getClass().getSimpleName() + (e instanceof NodeEvent.MatchedTokensQueried q ? " " + q.acted()
                            : e instanceof NodeEvent.ConnectorOutputReceived o ? " " + o.acted() : ""));
                }
                applied.add(events);
            }
        }
        assertThat(applied.get(0)).hasSize(8).isEqualTo(applied.get(1)).isEqualTo(applied.get(2));
    }

    /**
     * The agreed form against a node that rewrites no {@code finished_sending} (its answer {@code {}}):
     * an output whose set as it came is the one vLLM acted on agrees and is left out; one whose set
     * differs is listed though its answer is empty (left out, the client would take it for agreeing).
     */
    @Test
    @SuppressWarnings("unchecked")
    void anEmptyAnswerThatDiffersFromActedIsListed() {
        NodeConfig cfg = NodeConfig.builder(Role.CONSUMER, TransferMode.READ).build();
        try (EngineBridgeServer server = EngineBridgeServer.open(config(), BridgeNodeInfo.of(cfg), call -> call.reply(List.of()));
             BridgeClient engine = new BridgeClient(server.endpoint())) {
            List<Object> calls = new ArrayList<>();
            for (long id = 1; id <= 3; id++) {
                Map<String, Object> out = member(id, new HookCall.UpdateConnectorOutput(List.of("r1", "r2"), null));
                if (id < 3) {
                    ((Map<String, Object>) out.get("args")).put("acted",
                            Map.of("finished_sending", id == 1 ? List.of("r2", "r1") : List.of("r1")));
                }
                calls.add(out);
            }
            Map<String, Object> env = new LinkedHashMap<>();
            env.put("v", 1L);
            env.put("id", 9L);
            env.put("hook", "batch");
            env.put("args", Map.of("agreed", true, "calls", calls));
            engine.send(PyMsgpack.encode(env));
            BridgeReply r = engine.reply(10_000);
            assertThat(r.ok()).as(r.error()).isTrue();
            List<Map<String, Object>> replies = (List<Map<String, Object>>) (List<?>) plain(r).get("replies");
            // 1 agrees (the same set), 3 carried no acted (empty): left out; 2 differs: listed, empty
            assertThat(replies).hasSize(1);
            assertThat(replies.getFirst()).containsEntry("id", 2L).containsEntry("ok", true).containsEntry("result", Map.of());
        }
    }

    /** A batch whose call the node does not answer in time: the batch's reply waits for the timeout and says so. */
    @Test
    @SuppressWarnings("unchecked")
    void aBatchWithAnUnansweredCallIsAnsweredWhenItTimesOut() {
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.READ).build();
        List<BridgeCall> handed = new CopyOnWriteArrayList<>();
        try (EngineBridgeServer server = EngineBridgeServer.open(config().withReplyTimeout(Duration.ofMillis(300)),
                BridgeNodeInfo.of(cfg), call -> {
                    handed.add(call);
                    if (call.hook() != io.kvledger.wire.bridge.BridgeHook.WAIT_FOR_SAVE) {
                        call.reply(List.of());
                    }
                });
             BridgeClient engine = new BridgeClient(server.endpoint())) {
            Map<String, Object> env = new LinkedHashMap<>();
            env.put("v", 1L);
            env.put("id", 7L);
            env.put("hook", "batch");
            env.put("args", Map.of("calls", List.of(member(1, new HookCall.StartLoadKv()), member(2, new HookCall.WaitForSave()))));
            engine.send(PyMsgpack.encode(env));
            BridgeReply r = engine.reply(10_000);
            List<Map<String, Object>> replies = (List<Map<String, Object>>) (List<?>) plain(r).get("replies");
            assertThat(replies).extracting(m -> m.get("ok")).containsExactly(true, false);
            assertThat(replies.get(1).get("error")).isEqualTo("timed out: the node did not answer wait_for_save within 300 ms");
            assertThat(handed).hasSize(2);
            assertThat(server.timedOut()).isEqualTo(1);
            assertThat(server.inFlight()).isZero();
        }
    }

    /** One call of a batch, as the Python side packs it: {"id", "hook", "args"}. */
    private static Map<String, Object> member(long id, HookCall call) {
        Map<?, ?> full = (Map<?, ?>) PyMsgpack.decodeValue(BridgeCodec.encodeRequest(new BridgeRequest(id, call)),
                io.kvledger.wire.WireLimits.DEFAULT).valueOrNull().toObject();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", id);
        m.put("hook", full.get("hook"));
        m.put("args", full.get("args"));
        return m;
    }

    @Test
    void aReadConsumerLifecycle() throws Exception {
        NodeConfig cfg = NodeConfig.builder(Role.CONSUMER, TransferMode.READ).build();
        String rid = rid("read-1");
        KvParams params = KvParams.of("do_remote_decode", false, "do_remote_prefill", true, "remote_engine_id", "10.0.0.1:6301",
                "remote_block_ids", List.of(List.of(11L, 12L)), "transfer_id", "tx-r1", "remote_host", "10.0.0.1",
                "remote_handshake_port", 6301, "remote_notify_port", 61005, "remote_dp_size", 1, "remote_tp_size", 1);
        try (BridgeNodeLoop loop = new BridgeNodeLoop(cfg);
             EngineBridgeServer server = EngineBridgeServer.open(config(), BridgeNodeInfo.of(cfg), loop);
             BridgeClient engine = new BridgeClient(server.endpoint())) {
            assertThat(ok(engine.call(new HookCall.AddRequest(rid, 32, 32, params)))).isEmpty();
            assertThat(ok(engine.call(new HookCall.GetNumNewMatchedTokens(rid, 0))))
                    .as("READ loads synchronously and recomputes the last token")
                    .containsEntry("num_tokens", 31L).containsEntry("load_async", false);
            assertThat(ok(engine.call(new HookCall.UpdateStateAfterAlloc(rid, BlockGroups.single(5, 6), 31)))).isEmpty();

            Map<String, Object> meta = ok(engine.call(new HookCall.BuildConnectorMeta(1, List.of())));
            Map<?, ?> recv = (Map<?, ?>) ((Map<?, ?>) meta.get("reqs_to_recv")).get(rid);
            assertThat(recv).isNotNull();
            assertThat(recv.get("local_block_ids")).isEqualTo(List.of(List.of(5L, 6L)));
            assertThat(recv.get("remote_block_ids")).isEqualTo(List.of(List.of(11L, 12L)));
            assertThat(recv.get("remote_host")).isEqualTo("10.0.0.1");
            assertThat(recv.get("remote_engine_id")).isEqualTo("10.0.0.1:6301");
            assertThat(recv.get("write_mode")).isEqualTo(false);
            assertThat(meta.get("reqs_to_save")).isEqualTo(Map.of());

            // the worker starts loading: the node issues a handshake and reads (I/O commands), the engine gets {}
            assertThat(ok(engine.call(new HookCall.StartLoadKv()))).isEmpty();
            assertThat(loop.effects()).anyMatch(e -> e instanceof Effect.StartHandshake || e instanceof Effect.PostRead);

            Map<String, Object> fin = ok(engine.call(new HookCall.RequestFinished(rid, FinishStatus.FINISHED_STOPPED,
                    BlockGroups.single(5, 6))));
            assertThat(fin).containsEntry("delay_free", false).containsEntry("kv_transfer_params", null);
            assertThat(ok(engine.call(new HookCall.UpdateConnectorOutput(null, null))))
                    .as("a consumer leaves finished_sending alone").isEmpty();
            Map<String, Object> polled = ok(engine.call(new HookCall.GetFinished()));
            assertThat(polled).containsKeys("finished_sending", "finished_recving", "load_error_blocks");
            assertThat(polled.get("finished_recving")).as("READ never reports finished_recving").isNull();
            assertThat(server.replied()).isEqualTo(8);
        }
    }

    // ------------------------------------------------------------------ what the server answers itself

    @Test
    void malformedRequestsAreAnsweredAtOnceAndCounted() throws Exception {
        NodeConfig cfg = NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).build();
        List<BridgeCall> handed = new CopyOnWriteArrayList<>();
        List<String> reported = new CopyOnWriteArrayList<>();
        HookHandler recording = new HookHandler() {
            @Override
            public void onHook(BridgeCall call) {
                handed.add(call);
            }

            @Override
            public void onRejected(long atNs, byte[] frame, io.kvledger.wire.bridge.BridgeDecoded.Rejected rejection) {
                reported.add(rejection.rejection().reason() + " id=" + rejection.id() + " bytes=" + frame.length);
            }
        };
        try (EngineBridgeServer server = EngineBridgeServer.open(config(), BridgeNodeInfo.of(cfg), recording);
             BridgeClient engine = new BridgeClient(server.endpoint())) {
            engine.send(new byte[] {(byte) 0xc1});
            BridgeReply r = engine.reply(10_000);
            assertThat(r.ok()).isFalse();
            assertThat(r.id()).isNull();
            assertThat(r.error()).startsWith("INVALID_FORMAT: ");

            engine.send(BridgeCodec.encodeRequest(new BridgeRequest(5, new HookCall.Ping())).clone());
            assertThat(engine.reply(10_000)).isEqualTo(new BridgeReply(5L, true, new PyValue.Map(Map.of()), null));

            Map<String, Object> bad = new LinkedHashMap<>();
            bad.put("v", 1L);
            bad.put("id", 6L);
            bad.put("hook", "get_num_new_matched_tokens");
            bad.put("args", Map.of("request_id", "r"));
            engine.send(PyMsgpack.encode(bad));
            r = engine.reply(10_000);
            assertThat(r.id()).isEqualTo(6L);
            assertThat(r.error()).isEqualTo("MISSING_FIELD: missing args.num_computed_tokens");

            bad.put("hook", "frobnicate");
            engine.send(PyMsgpack.encode(bad));
            assertThat(engine.reply(10_000).error()).startsWith("UNKNOWN_TYPE: unknown hook \"frobnicate\"");

            engine.sendParts(List.of(new byte[] {1}, new byte[] {2}, new byte[] {3}));
            assertThat(engine.reply(10_000).error()).startsWith("BAD_FRAMING: 3 frames");

            BridgeReply mismatch = engine.call(new HookCall.Hello("kv_producer", null, 0, 3, "worker"));
            assertThat(mismatch.ok()).isFalse();
            assertThat(mismatch.error()).isEqualTo("this node is not the caller's: kv_role kv_producer != kv_consumer, tp_rank 3 != 0");

            assertThat(handed).as("nothing malformed reaches the node").isEmpty();
            assertThat(reported).as("each rejection is reported to the handler once").hasSize(4);
            assertThat(reported.get(0)).isEqualTo("INVALID_FORMAT id=null bytes=1");
            assertThat(reported.get(1)).startsWith("MISSING_FIELD id=6 bytes=");
            assertThat(reported.get(2)).startsWith("UNKNOWN_TYPE id=6 bytes=");
            assertThat(reported.get(3)).isEqualTo("BAD_FRAMING id=null bytes=1");
            assertThat(server.rejected()).isEqualTo(4);
            assertThat(server.control()).isEqualTo(2);
            assertThat(server.received()).isEqualTo(6);
            assertThat(server.isRunning()).isTrue();
        }
    }

    @Test
    void aReqSocketGetsItsDelimiterBack() {
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.READ).build();
        try (EngineBridgeServer server = EngineBridgeServer.open(config(), BridgeNodeInfo.of(cfg), c -> c.reply(List.of()));
             BridgeClient engine = new BridgeClient(server.endpoint(), true)) {
            BridgeReply r = engine.call(new HookCall.SaveKvLayer("l0"));
            assertThat(r.ok()).isTrue();
            assertThat(plain(r)).isEmpty();
            BridgeReply p = engine.call(new HookCall.Ping());
            assertThat(p.ok()).isTrue();
        }
    }

    @Test
    void anUnansweredCallTimesOutAndALateAnswerIsDropped() {
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.READ).build();
        List<BridgeCall> handed = new CopyOnWriteArrayList<>();
        try (EngineBridgeServer server = EngineBridgeServer.open(config().withReplyTimeout(Duration.ofMillis(300)),
                BridgeNodeInfo.of(cfg), handed::add);
             BridgeClient engine = new BridgeClient(server.endpoint())) {
            BridgeReply r = engine.call(new HookCall.WaitForSave());
            assertThat(r.ok()).isFalse();
            assertThat(r.error()).isEqualTo("timed out: the node did not answer wait_for_save within 300 ms");
            assertThat(handed).hasSize(1);
            assertThat(handed.get(0).isAnswered()).isTrue();
            assertThat(handed.get(0).reply(List.of())).as("the late answer is refused").isFalse();
            assertThat(server.timedOut()).isEqualTo(1);
            assertThat(server.lateAnswers()).isEqualTo(1);
            assertThat(server.inFlight()).isZero();
            // the server goes on serving
            assertThat(engine.call(new HookCall.Ping()).ok()).isTrue();
        }
    }

    @Test
    void callsBeyondTheInFlightBoundAreRefusedAsBusy() {
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.READ).build();
        List<BridgeCall> handed = new CopyOnWriteArrayList<>();
        try (EngineBridgeServer server = EngineBridgeServer.open(config().withMaxInFlight(2), BridgeNodeInfo.of(cfg), handed::add);
             BridgeClient engine = new BridgeClient(server.endpoint())) {
            for (long id = 1; id <= 3; id++) {
                engine.send(BridgeCodec.encodeRequest(new BridgeRequest(id, new HookCall.StartLoadKv())));
            }
            BridgeReply busy = engine.reply(10_000);
            assertThat(busy.id()).isEqualTo(3L);
            assertThat(busy.error()).isEqualTo("busy: 2 calls already wait for the node");
            // answers come back in the order they are given, not the order of the requests
            assertThat(handed).hasSize(2);
            assertThat(handed.get(1).fail("second first")).isTrue();
            assertThat(handed.get(0).reply(List.of())).isTrue();
            BridgeReply second = engine.reply(10_000);
            BridgeReply first = engine.reply(10_000);
            assertThat(second).isEqualTo(new BridgeReply(2L, false, null, "second first"));
            assertThat(first).isEqualTo(new BridgeReply(1L, true, new PyValue.Map(Map.of()), null));
            assertThat(server.busy()).isEqualTo(1);
            assertThat(server.failed()).isEqualTo(1);
            assertThat(server.replied()).isEqualTo(1);
        }
    }

    @Test
    void aHandlerThatThrowsAnswersTheCallAndTheServerGoesOn() {
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.READ).build();
        AtomicLong calls = new AtomicLong();
        HookHandler flaky = c -> {
            if (calls.incrementAndGet() == 1) {
                throw new IllegalStateException("inbox closed");
            }
            c.reply(List.of(new Effect.FinishedReported(List.of("x"), List.of(), List.of())));
        };
        try (EngineBridgeServer server = EngineBridgeServer.open(config(), BridgeNodeInfo.of(cfg), flaky);
             BridgeClient engine = new BridgeClient(server.endpoint())) {
            BridgeReply r = engine.call(new HookCall.GetFinished());
            assertThat(r.ok()).isFalse();
            assertThat(r.error()).isEqualTo("node failed to take the call: IllegalStateException: inbox closed");
            BridgeReply ok = engine.call(new HookCall.GetFinished());
            assertThat(plain(ok)).containsEntry("finished_sending", List.of("x"));
            assertThat(server.handlerErrors()).isEqualTo(1);
        }
    }

    @Test
    void anAnswerFromAnInterruptedThreadArrivesAndKeepsTheWakeUpOpen() throws Exception {
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.READ).build();
        java.util.concurrent.atomic.AtomicBoolean stillInterrupted = new java.util.concurrent.atomic.AtomicBoolean();
        HookHandler fromInterrupted = c -> {
            Thread t = new Thread(() -> {
                Thread.currentThread().interrupt();
                c.reply(List.of(new Effect.MatchedTokens("r", 4, true)));
                stillInterrupted.set(Thread.currentThread().isInterrupted());
            });
            t.start();
        };
        try (EngineBridgeServer server = EngineBridgeServer.open(config(), BridgeNodeInfo.of(cfg), fromInterrupted);
             BridgeClient engine = new BridgeClient(server.endpoint())) {
            for (int i = 0; i < 3; i++) {
                BridgeReply r = engine.call(new HookCall.GetNumNewMatchedTokens("r", 0));
                assertThat(ok(r)).containsEntry("num_tokens", 4L);
            }
            assertThat(stillInterrupted).as("the answerer's interrupt flag is kept").isTrue();
            assertThat(server.wakeUpOpen()).isTrue();
        }
    }

    @Test
    void closeAnswersWaitingCallsAndEndsEveryThread() {
        Set<String> before = Threads.kvledger();
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.READ).build();
        List<BridgeCall> handed = new CopyOnWriteArrayList<>();
        EngineBridgeServer server = EngineBridgeServer.open(config(), BridgeNodeInfo.of(cfg), handed::add);
        try (BridgeClient engine = new BridgeClient(server.endpoint())) {
            engine.send(BridgeCodec.encodeRequest(new BridgeRequest(9, new HookCall.StartLoadKv())));
            long deadline = System.nanoTime() + 120_000_000_000L;
            while (handed.isEmpty() && System.nanoTime() < deadline) {
                engine.keepConnecting();
                Collector.sleep(5);
            }
            assertThat(handed).hasSize(1);
            assertThat(server.inFlight()).isEqualTo(1);
            server.close();
            BridgeReply r = engine.reply(10_000);
            assertThat(r).isEqualTo(new BridgeReply(9L, false, null, "node closing"));
            assertThat(handed.get(0).reply(List.of())).isFalse();
            assertThat(server.isRunning()).isFalse();
        } finally {
            server.close();
        }
        Threads.assertNoneLeftBeyond(before);
    }

    @Test
    void onlyLoopbackTcpEndpointsAreAccepted() {
        assertThatThrownBy(() -> EngineBridgeConfig.forEndpoint("ws://127.0.0.1:5555"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("binds tcp://127.0.0.1:PORT");
        assertThatThrownBy(() -> EngineBridgeConfig.forEndpoint("tcp://0.0.0.0:5555"))
                .hasMessageContaining("binds only loopback");
        assertThatThrownBy(() -> EngineBridgeConfig.forEndpoint("tcp://127.0.0.1"))
                .hasMessageContaining("needs a host and a port");
        assertThatThrownBy(() -> EngineBridgeConfig.forEndpoint("tcp://127.0.0.1:70000"))
                .hasMessageContaining("out of range");
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.READ).build();
        try (EngineBridgeServer a = EngineBridgeServer.open(EngineBridgeConfig.forEndpoint("tcp://127.0.0.1:*"),
                BridgeNodeInfo.of(cfg), c -> c.reply(List.of()))) {
            assertThat(a.endpoint()).startsWith("tcp://127.0.0.1:");
            assertThat(a.port()).isPositive();
            try (EngineBridgeServer byName = EngineBridgeServer.open(EngineBridgeConfig.forEndpoint("tcp://localhost:0"),
                    BridgeNodeInfo.of(cfg), c -> c.reply(List.of()));
                 BridgeClient engine = new BridgeClient("tcp://127.0.0.1:" + byName.port())) {
                assertThat(engine.call(new HookCall.Ping()).ok()).isTrue();
            }
            assertThatThrownBy(() -> EngineBridgeServer.open(EngineBridgeConfig.forEndpoint("tcp://127.0.0.1:" + a.port()),
                    BridgeNodeInfo.of(cfg), c -> c.reply(List.of())))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("cannot bind the engine bridge");
        }
    }

    @Test
    void randomFramesOverTheSocketEachGetOneAnswerAndNeverEndTheServer() {
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).build();
        long seed = Long.getLong("kvledger.fuzz.seed", 0x6c697665L);
        SplittableRandom rnd = new SplittableRandom(seed);
        List<byte[]> seeds = new ArrayList<>();
        seeds.add(BridgeCodec.encodeRequest(new BridgeRequest(1, new HookCall.GetNumNewMatchedTokens("r", 3))));
        seeds.add(BridgeCodec.encodeRequest(new BridgeRequest(2, new HookCall.UpdateStateAfterAlloc("r", BlockGroups.single(1, 2), 16))));
        seeds.add(BridgeCodec.encodeRequest(new BridgeRequest(3, new HookCall.Hello("kv_producer", "write", 0, 0, "worker"))));
        try (BridgeNodeLoop loop = new BridgeNodeLoop(cfg);
             EngineBridgeServer server = EngineBridgeServer.open(config(), BridgeNodeInfo.of(cfg), loop);
             BridgeClient engine = new BridgeClient(server.endpoint())) {
            int n = 2_000;
            for (int i = 0; i < n; i++) {
                byte[] f = seeds.get(rnd.nextInt(seeds.size())).clone();
                switch (rnd.nextInt(4)) {
                    case 0 -> f[rnd.nextInt(f.length)] ^= (byte) (1 << rnd.nextInt(8));
                    case 1 -> f = java.util.Arrays.copyOf(f, Math.max(1, rnd.nextInt(f.length)));
                    case 2 -> f[rnd.nextInt(f.length)] = (byte) rnd.nextInt(256);
                    default -> { }
                }
                engine.send(f);
                BridgeReply r = engine.reply(10_000);
                assertThat(r).as("seed %s frame %d", seed, i).isNotNull();
            }
            assertThat(server.received()).isEqualTo(n);
            assertThat(server.rejected() + server.handedOff() + server.control()).isEqualTo(n);
            assertThat(server.rejected()).isPositive();
            assertThat(server.handedOff()).isPositive();
            assertThat(engine.call(new HookCall.Ping()).ok()).isTrue();
            assertThat(server.isRunning()).isTrue();
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> castMap(Object o) {
        return (Map<String, Object>) o;
    }

    static Map<String, Object> ok(BridgeReply r) {
        assertThat(r.ok()).as("reply error: %s", r.error()).isTrue();
        return plain(r);
    }

    /** A reply's result in the plain-Java form ({@code PyValue.toObject}), for map assertions. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> plain(BridgeReply r) {
        return r.result() == null ? null : (Map<String, Object>) r.result().toObject();
    }
}
