package io.kvledger.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.bench.LifecycleScript.NodeStream;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.node.loop.EffectRouter;
import io.kvledger.node.loop.Inbox;
import io.kvledger.node.loop.NodeLoop;
import io.kvledger.node.Recovery;
import io.kvledger.journal.ServiceClock;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The node-loop benchmark's workload: its size, its time move, and a loop that runs it as the reducer does. */
class LoopWorkloadTest {

    /** Requests per mode: a quarter of the standard script keeps the test quick. */
    private static final int REQUESTS = 128;

    private static List<NodeStream> streams;

    @TempDir
    Path dir;

    @BeforeAll
    static void buildWorkload() {
        streams = LoopWorkload.streams(REQUESTS);
    }

    @Test
    void movedStreamsEndLikeTheScriptAndKeepEveryFieldButTime() {
        for (NodeStream s : streams) {
            NodeEvent[] moved = LoopWorkload.moved(s.events(), 1_000_000_000_000L);
            NodeState a = s.freshState();
            NodeState b = s.freshState();
            for (int i = 0; i < moved.length; i++) {
                assertThat(moved[i].atNs()).isEqualTo(s.events()[i].atNs() + 1_000_000_000_000L);
                assertThat(moved[i].getClass()).isEqualTo(s.events()[i].getClass());
                assertThat(io.kvledger.core.event.NodeEvents.at(moved[i], s.events()[i].atNs())).isEqualTo(s.events()[i]);
                NodeReducer.applyInto(a, s.events()[i], new ArrayList<>());
                NodeReducer.applyInto(b, moved[i], new ArrayList<>());
            }
            assertThat(b.phases()).isEqualTo(a.phases());
            assertThat(b.phases().values()).allMatch(RequestPhase::terminal);
            assertThat(b.liveRequests()).isZero();
        }
    }

    @Test
    void aJournaledLoopAppliesTheWorkloadAsTheReducerDoesAndRecoversToTheSameState() throws Exception {
        ServiceClock clock = ServiceClock.system();
        NodeStream s = streams.get(0);
        NodeEvent[] events = LoopWorkload.moved(s.events(), clock.getAsLong() + LoopWorkload.AHEAD_NS);
        long expected = LoopWorkload.expectedHash(s, events);
        Path journalDir = dir.resolve(s.kind().name());
        Inbox inbox = new Inbox(65_536);
        long hash;
        NodeLoop loop;
        try (JournalWriter journal = JournalWriter.open(journalDir, JournalHeader.of(s.kind().name(), s.config(),
                "LoopWorkloadTest"))) {
            loop = new NodeLoop(s.kind().name(), s.freshState(), journal, EffectRouter.none(), clock, inbox, 0);
            loop.start();
            for (NodeEvent e : events) {
                assertThat(inbox.offer(e)).isTrue();
            }
            hash = inbox.query(NodeState::stateHash).get(60, TimeUnit.SECONDS);
            loop.close();
        }
        assertThat(loop.applied()).isEqualTo(events.length);
        assertThat(loop.ticks()).isZero();
        assertThat(loop.journalErrors() + loop.loopErrors()).isZero();
        assertThat(hash).isEqualTo(expected);
        Recovery r = Recovery.replay(journalDir, s.config());
        assertThat(r.inputs()).isEqualTo(events.length);
        assertThat(r.state().stateHash()).isEqualTo(expected);
    }

    @Test
    void anUnjournaledLoopReachesTheSameState() throws Exception {
        ServiceClock clock = ServiceClock.system();
        long delta = clock.getAsLong() + LoopWorkload.AHEAD_NS;
        NodeStream s = streams.get(streams.size() - 1);
        NodeEvent[] events = LoopWorkload.moved(s.events(), delta);
        Inbox inbox = new Inbox(65_536);
        NodeLoop loop = new NodeLoop("n", s.freshState(), null, EffectRouter.none(), clock, inbox, 0);
        loop.start();
        try {
            for (NodeEvent e : events) {
                assertThat(inbox.offer(e)).isTrue();
            }
            assertThat(inbox.query(NodeState::stateHash).get(60, TimeUnit.SECONDS))
                    .isEqualTo(LoopWorkload.expectedHash(s, events));
            assertThat(loop.lastSeq()).isEqualTo(events.length);
        } finally {
            loop.close();
        }
    }
}
