package io.kvledger.zmq;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.wire.bridge.BridgeCodec;
import io.kvledger.wire.bridge.BridgeDecoded;
import io.kvledger.wire.bridge.BridgeNodeInfo;
import io.kvledger.wire.bridge.BridgeReply;
import io.kvledger.wire.bridge.BridgeRequest;
import io.kvledger.wire.bridge.HookCall;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The engine bridge over {@code tcp://} (JeroMQ's ROUTER and the bridge's own) when the node loop serves the ZMQ socket itself
 * ({@link EngineBridgeServer#openServedByCaller}): the serving thread owns the ROUTER while it
 * waits, reads each call and answers it on its own thread; answers of other threads still arrive.
 */
class ZmqServedByCallerTest {

    private final NodeConfig cfg = NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).build();

    private static EngineBridgeConfig config() {
        return EngineBridgeConfig.forEndpoint("tcp://127.0.0.1:0");
    }

    /**
     * 20,000 unawaited {@code get_finished} calls while a thread serves the socket and another (the
     * test loop) answers: every applied call is answered ok once, in the order sent, none dropped
     * while the caller was connected, every call accounted for; serve says false once closed.
     */
    @ParameterizedTest(name = "jeromq {0}")
    @ValueSource(booleans = {true, false})
    void everyAppliedCallOfABurstIsAnsweredInOrderWhenTheCallerServesTheRouter(boolean jeromq) throws Exception {
        int n = 20_000;
        try (BridgeNodeLoop loop = new BridgeNodeLoop(cfg);
             EngineBridgeServer server = EngineBridgeServer.open(config(), BridgeNodeInfo.of(cfg), loop, true, jeromq);
             BridgeClient engine = new BridgeClient(server.endpoint())) {
            assertThat(server.servedByCaller()).isTrue();
            Thread serving = new Thread(() -> {
                while (server.serve(100_000_000L)) {
                    // the node loop's idle wait, with nothing else in its inbox
                }
            }, "test-serving");
            serving.start();
            assertThat(engine.call(new HookCall.Ping()).ok()).isTrue();
            for (long id = 1; id <= n; id++) {
                engine.send(BridgeCodec.encodeRequest(new BridgeRequest(id, new HookCall.GetFinished())));
            }
            Set<Long> ok = new HashSet<>();
            Set<Long> refused = new HashSet<>();
            long duplicates = 0;
            long lastOk = 0;
            boolean inOrder = true;
            while (ok.size() + refused.size() + server.undeliverable() < n) {
                BridgeReply r = engine.poll(30_000);
                if (r == null) {
                    break;
                }
                if (r.ok()) {
                    inOrder &= r.id() > lastOk;
                    lastOk = r.id();
                }
                if (!(r.ok() ? ok : refused).add(r.id())) {
                    duplicates++;
                }
            }
            int applied = loop.appliedCount();
            assertThat(duplicates).as("answered twice").isZero();
            assertThat(inOrder).as("applied calls answered in the order sent").isTrue();
            assertThat(ok.size()).as("ok answers: one per applied call (refused %d, undeliverable %d)",
                    refused.size(), server.undeliverable()).isEqualTo(applied);
            assertThat(server.undeliverableApplied()).isZero();
            assertThat(ok.size() + refused.size() + server.undeliverable()).isEqualTo(n);
            assertThat(applied).isPositive();
            server.close();
            serving.join(30_000);
            assertThat(serving.isAlive()).as("serve says false once the server closed").isFalse();
        }
    }

    /**
     * As the node loop: the thread that serves the socket is handed each call and answers it
     * itself (nothing crosses to the socket thread); malformed frames between the calls are
     * answered at once and reported, and the serving goes on; closing answers the call still
     * waiting {@code "node closing"}, makes {@code serve} say false, and leaves no thread behind.
     */
    @ParameterizedTest(name = "jeromq {0}")
    @ValueSource(booleans = {true, false})
    void theServingThreadTakesAndAnswersEachCallItselfAndMalformedFramesDoNotStopIt(boolean jeromq) throws Exception {
        Set<String> before = Threads.kvledger();
        ArrayDeque<BridgeCall> taken = new ArrayDeque<>(); // the serving thread's own inbox
        List<String> onHookThreads = new CopyOnWriteArrayList<>();
        List<String> rejected = new CopyOnWriteArrayList<>();
        AtomicReference<BridgeCall> unanswered = new AtomicReference<>();
        HookHandler handler = new HookHandler() {
            @Override
            public void onHook(BridgeCall call) {
                onHookThreads.add(Thread.currentThread().getName());
                taken.add(call);
            }

            @Override
            public void onRejected(long atNs, byte[] frame, BridgeDecoded.Rejected rejection) {
                rejected.add(rejection.rejection().reason().toString());
            }
        };
        int calls = 2_000;
        EngineBridgeServer server = EngineBridgeServer.open(config(), BridgeNodeInfo.of(cfg), handler, true, jeromq);
        Thread serving = new Thread(() -> {
            NodeState state = NodeState.initial(cfg);
            List<Effect> sink = new ArrayList<>();
            while (server.serve(100_000_000L)) {
                for (BridgeCall c; (c = taken.poll()) != null; ) {
                    if (c.hook() == io.kvledger.wire.bridge.BridgeHook.START_LOAD_KV) {
                        unanswered.set(c); // left for close to answer
                        continue;
                    }
                    sink.clear();
                    NodeReducer.applyInto(state, c.event(), sink);
                    c.reply(sink);
                }
            }
        }, "test-serving");
        serving.start();
        try (BridgeClient engine = new BridgeClient(server.endpoint())) {
            for (int i = 1; i <= calls; i++) {
                assertThat(engine.call(new HookCall.GetFinished()).ok()).isTrue();
                if (i % 500 == 0) {
                    engine.send(new byte[] {(byte) 0xc1});
                    BridgeReply bad = engine.reply(10_000);
                    assertThat(bad.ok()).isFalse();
                    assertThat(bad.error()).startsWith("INVALID_FORMAT: ");
                }
            }
            assertThat(onHookThreads).as("each call handed on the serving thread").hasSize(calls)
                    .containsOnly("test-serving");
            assertThat(rejected).containsExactly("INVALID_FORMAT", "INVALID_FORMAT", "INVALID_FORMAT", "INVALID_FORMAT");
            assertThat(server.replied()).isEqualTo(calls);
            assertThat(server.rejected()).isEqualTo(4);

            engine.send(BridgeCodec.encodeRequest(new BridgeRequest(99_999, new HookCall.StartLoadKv())));
            EngineBridgeServerTest.until(() -> unanswered.get() != null, () -> "start_load_kv taken");
            assertThat(server.inFlight()).isEqualTo(1);
            server.close();
            assertThat(engine.reply(10_000)).isEqualTo(new BridgeReply(99_999L, false, null, "node closing"));
            assertThat(unanswered.get().reply(List.of())).as("an answer after close is refused").isFalse();
        } finally {
            server.close();
        }
        serving.join(30_000);
        assertThat(serving.isAlive()).as("serve says false once the server closed").isFalse();
        Threads.assertNoneLeftBeyond(before);
    }
}
