package io.kvledger.node.loop;

import io.kvledger.node.Recovery;
import io.kvledger.node.TestNodes;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.ServiceClock;
import io.kvledger.journal.JournalWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The owner of a node loop learns how it ended ({@link NodeLoop#stopped()}): a stop it asked for
 * is reported as requested, a loop that stopped by itself (its journal failed under it, its
 * journaller thread ended) carries the cause. Real Chronicle journals in a temporary directory.
 */
class NodeLoopStopTest {

    @TempDir
    Path dir;

    private final NodeConfig cfg = TestNodes.config(Role.CONSUMER, TransferMode.WRITE, 21000, 21002);
    private final long t0 = System.currentTimeMillis() * 1_000_000L;

    private List<NodeEvent> requests(int n) {
        return TestNodes.decodeRequests(n, t0);
    }

    private JournalWriter open(Path d) {
        return TestNodes.decodeJournal(d, cfg);
    }

    private static List<Effect> call(Inbox inbox, NodeEvent e) throws Exception {
        return inbox.call(e, TimeUnit.SECONDS.toNanos(120)).get(120, TimeUnit.SECONDS);
    }

    @Test
    void aRequestedStopIsReportedAsRequestedWithNoCause() throws Exception {
        Path live = dir.resolve("live");
        try (JournalWriter journal = open(live)) {
            Inbox inbox = new Inbox(64);
            NodeLoop loop = new NodeLoop("D0", NodeState.initial(cfg), journal, e -> { }, ServiceClock.system(), inbox, 0, 16);
            CompletableFuture<NodeLoop.Stopped> stopped = loop.stopped();
            loop.start();
            for (NodeEvent e : requests(2)) {
                call(inbox, e);
            }
            assertThat(stopped).as("the loop runs").isNotDone();
            loop.close();
            assertThat(stopped).succeedsWithin(Duration.ofSeconds(120))
                    .isEqualTo(new NodeLoop.Stopped(true, null));
            assertThat(loop.stopped()).as("asked again after the end").isCompletedWithValue(new NodeLoop.Stopped(true, null));
        }
    }

    @Test
    void aJournalClosedUnderTheLoopStopsItAndTheCauseIsDelivered() throws Exception {
        Path live = dir.resolve("live");
        List<NodeEvent> events = requests(3);
        List<Effect> routed = Collections.synchronizedList(new ArrayList<>());
        JournalWriter journal = open(live);
        Inbox inbox = new Inbox(64);
        NodeLoop loop = new NodeLoop("D0", NodeState.initial(cfg), journal, routed::add, ServiceClock.system(), inbox, 0, 16);
        CompletableFuture<NodeLoop.Stopped> stopped = loop.stopped();
        loop.start();
        try {
            for (NodeEvent e : events.subList(0, 3)) {
                call(inbox, e);
            }
            int routedBefore = routed.size();
            // the volume goes away under the running node: the journal refuses the next input,
            // which the loop has applied already
            journal.close();
            CompletableFuture<List<Effect>> refused = inbox.call(events.get(3), TimeUnit.SECONDS.toNanos(10));
            assertThat(refused).failsWithin(Duration.ofSeconds(30));
            NodeLoop.Stopped s = stopped.get(120, TimeUnit.SECONDS);
            assertThat(s.requested()).isFalse();
            assertThat(s.cause()).contains("the journal refused an applied input (RequestAdmitted")
                    .contains("is closed").doesNotContain("\n");
            assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> !loop.isRunning())).isTrue();
            assertThat(routed).as("nothing of the refused input left the node").hasSize(routedBefore);
        } finally {
            loop.close();
            journal.close();
        }
        assertThat(loop.stopped()).as("a later close does not turn it into a requested stop")
                .isCompletedWithValue(stopped.getNow(null));
        assertThat(Recovery.replay(live, cfg).inputs()).as("a restart recovers what the journal took").isEqualTo(3);
    }

    @Test
    void theInjectedJournalFaultRefusesInputsAfterTheGivenCount() throws Exception {
        Path live = dir.resolve("live");
        List<NodeEvent> events = requests(2);
        try (JournalWriter journal = open(live)) {
            Inbox inbox = new Inbox(64);
            NodeLoop loop = TestNodes.startLoop(cfg, journal, inbox, e -> { }, 16);
            loop.failJournalAfter(2, "injected fault (test)");
            call(inbox, events.get(0));
            call(inbox, events.get(1));
            assertThat(inbox.call(events.get(2), TimeUnit.SECONDS.toNanos(10))).failsWithin(Duration.ofSeconds(30));
            NodeLoop.Stopped s = loop.stopped().get(120, TimeUnit.SECONDS);
            assertThat(s.requested()).isFalse();
            assertThat(s.cause()).contains("the journal refused an applied input (BlocksAllocated, injected fault (test))");
            assertThat(loop.lastSeq()).isEqualTo(journal.nextSeq() - 1);
            loop.close();
        }
        assertThat(Recovery.replay(live, cfg).inputs()).isEqualTo(2);
    }

    @Test
    void aJournallerThatEndedWhileTheLoopIdledStopsTheLoopWithItsCause() throws Exception {
        Path live = dir.resolve("live");
        List<NodeEvent> events = requests(1);
        try (JournalWriter journal = open(live)) {
            Inbox inbox = new Inbox(64);
            NodeLoop loop = TestNodes.startLoop(cfg, journal, inbox, e -> { }, 16);
            call(inbox, events.get(0));
            loop.abandonJournal();
            // the next input cannot be journaled: the loop stops and nothing of it leaves
            inbox.offer(events.get(1));
            NodeLoop.Stopped s = loop.stopped().get(120, TimeUnit.SECONDS);
            assertThat(s.requested()).isFalse();
            assertThat(s.cause()).startsWith("the journaller thread ended");
            loop.close();
            assertThat(loop.applied()).isEqualTo(1);
        }
    }

    @Test
    void aJournallerThatDiesWhileTheLoopIdlesStopsItAtOnceWithTheError() throws Exception {
        Path live = dir.resolve("live");
        try (JournalWriter journal = open(live)) {
            Inbox inbox = new Inbox(64);
            NodeLoop loop = TestNodes.startLoop(cfg, journal, inbox, e -> { }, 16);
            call(inbox, requests(1).getFirst());
            // nothing more comes in: the loop blocks on the inbox with no deadline
            loop.killJournaller(new OutOfMemoryError("injected by the test"));
            NodeLoop.Stopped s = loop.stopped().get(120, TimeUnit.SECONDS);
            assertThat(s.requested()).isFalse();
            assertThat(s.cause()).startsWith("the journaller thread died: java.lang.OutOfMemoryError: injected by the test");
            loop.close();
        }
        assertThat(Recovery.replay(live, cfg).inputs()).isEqualTo(1);
    }
}
