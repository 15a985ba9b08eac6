package io.kvledger.node;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.core.model.ToyProxyParams;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

/**
 * The node loop journals an input, applies it, journals its derived entries, then routes its
 * effects. A process killed between the input and its derived entries leaves an input whose
 * effects never ran: the restarted node journals the missing entries (so {@code replay --verify}
 * agrees with the journal) and runs the effects (here: the WRITE decode's {@code remote_blocks}
 * notify reaches the prefill's notify port).
 */
class RecoveryCrashWindowTest {

    @TempDir
    Path dir;

    @Test
    void anInputWhoseDerivedEntriesWereLostHasThemJournaledAndItsEffectsRunOnRestart() throws Exception {
        int prefillBase = TestNodes.freePortBase(4);
        int decodeBase = TestNodes.freePortBase(4);
        NodeConfig cfg = TestNodes.config(Role.CONSUMER, TransferMode.WRITE, decodeBase, decodeBase + 2);
        String rid = RequestIds.proxyRequestId(new ZmqAddress("127.0.0.1", prefillBase, prefillBase + 2),
                new ZmqAddress("127.0.0.1", decodeBase, decodeBase + 2), "0123456789abcdef0123456789abcdef");
        String tid = "tx-00000000-0000-4000-8000-000000000001";
        long t0 = System.currentTimeMillis() * 1_000_000L;
        List<NodeEvent> events = List.of(
                new NodeEvent.RequestAdmitted(t0, rid, 64, 64, ToyProxyParams.decode(1, 1, tid, null)),
                new NodeEvent.MatchedTokensQueried(t0 + 1_000, rid, 0),
                new NodeEvent.BlocksAllocated(t0 + 2_000, rid, BlockGroups.single(4, 5, 6, 7), 64));

        // The journal a killed node leaves: the last input without its derived entries.
        Path journal = dir.resolve("D0");
        NodeState model = NodeState.initial(cfg);
        List<Effect> lastEffects = new ArrayList<>();
        long lastSeq;
        try (JournalWriter w = TestNodes.decodeJournal(journal, cfg)) {
            for (Effect e : NodeReducer.startupChecks(cfg)) {
                w.appendDerived(0, e);
            }
            for (int i = 0; i < events.size(); i++) {
                List<Effect> effects = new ArrayList<>();
                NodeReducer.applyInto(model, events.get(i), effects);
                if (i < events.size() - 1) {
                    w.appendApplied(events.get(i), effects);
                } else {
                    w.appendInput(events.get(i));
                    lastEffects.addAll(effects);
                }
            }
            lastSeq = w.lastInputSeq();
        }
        assertThat(lastEffects).as("the allocation notifies the prefill").anyMatch(e -> e instanceof Effect.SendRemoteBlocks);

        try (ZContext ctx = new ZContext()) {
            ZMQ.Socket prefillNotify = ctx.createSocket(SocketType.ROUTER);
            prefillNotify.bind("tcp://127.0.0.1:" + (prefillBase + 2));
            prefillNotify.setReceiveTimeOut(100);
            try (NodeService node = NodeService.start(TestNodes.options("D0", cfg, journal)
                    .withEngine(NodeOptions.EngineKind.NONE))) {
                assertThat(node.recovery().unjournaled()).hasSize(lastEffects.size());
                String frame = null;
                long end = System.nanoTime() + Duration.ofSeconds(120).toNanos();
                while (frame == null && System.nanoTime() < end) {
                    ZMsg m = ZMsg.recvMsg(prefillNotify);
                    if (m != null) {
                        frame = new String(m.getLast().getData(), StandardCharsets.ISO_8859_1);
                    }
                }
                assertThat(frame).as("the remote_blocks notify the old process never sent").isNotNull()
                        .contains("remote_blocks").contains(tid);
            }
        }

        List<JournalEntry.Derived> derived = new ArrayList<>();
        try (JournalReader r = JournalReader.open(journal)) {
            for (JournalEntry e : r) {
                if (e instanceof JournalEntry.Derived d && d.causeSeq() == lastSeq) {
                    derived.add(d);
                }
            }
        }
        assertThat(derived).extracting(d -> io.kvledger.journal.format.Payloads.dissect(d.effect()))
                .containsExactlyElementsOf(lastEffects.stream().map(io.kvledger.journal.format.Payloads::dissect).toList());
        assertThat(Recovery.replay(journal, cfg).unjournaled()).as("a second restart finds nothing missing").isEmpty();
    }
}
