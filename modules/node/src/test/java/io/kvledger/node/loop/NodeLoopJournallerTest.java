package io.kvledger.node.loop;

import io.kvledger.node.Recovery;
import io.kvledger.node.TestNodes;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.ServiceClock;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.format.Payloads;
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
 * The node loop hands each applied input to its journaller thread and routes the input's effects
 * only once the input and its derived entries are in the journal (a real Chronicle journal in a
 * temporary directory).
 */
class NodeLoopJournallerTest {

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

    private static List<String> dump(Path journal) {
        List<String> out = new ArrayList<>();
        try (JournalReader r = JournalReader.open(journal)) {
            for (JournalEntry e : r) {
                switch (e) {
                    case JournalEntry.Input in -> out.add(in.seq() + " input " + in.atNs() + " " + in.dissect());
                    case JournalEntry.Derived d -> out.add(d.seq() + " derived of " + d.causeSeq() + " " + d.atNs() + " "
                            + d.dissect());
                    default -> { }
                }
            }
        }
        return out;
    }

    private static long inputs(Path journal) {
        return dump(journal).stream().filter(l -> l.contains(" input ")).count();
    }

    @Test
    void theJournalHoldsWhatTheSynchronousWriterWritesAndEveryEffectIsRoutedAfterItsEntries() throws Exception {
        List<NodeEvent> events = requests(12);
        Path reference = dir.resolve("reference");
        NodeState model = NodeState.initial(cfg);
        List<Effect> expectedRouted = new ArrayList<>();
        try (JournalWriter w = open(reference)) {
            for (NodeEvent e : events) {
                List<Effect> fx = new ArrayList<>();
                NodeReducer.applyInto(model, e, fx);
                w.appendApplied(e, fx);
                fx.stream().filter(x -> x instanceof Effect.IoCommand).forEach(expectedRouted::add);
            }
        }

        Path live = dir.resolve("live");
        List<String> violations = Collections.synchronizedList(new ArrayList<>());
        List<Effect> routed = Collections.synchronizedList(new ArrayList<>());
        try (JournalWriter journal = open(live)) {
            Inbox inbox = new Inbox(1024);
            List<String> seen = new ArrayList<>();
            int[] next = {0};
            NodeLoop loop = new NodeLoop("D0", NodeState.initial(cfg), journal, effect -> {
                // on the loop thread, as the command leaves: it must be the next I/O command among
                // the derived entries in the journal already (read again only when the last read is short)
                String want = Payloads.dissect(effect);
                int k = next[0];
                while (true) {
                    if (k >= seen.size()) {
                        seen.clear();
                        dump(live).stream().filter(l -> l.contains(" derived of ")).forEach(seen::add);
                        if (k >= seen.size()) {
                            violations.add(want);
                            break;
                        }
                    }
                    if (seen.get(k).endsWith(want)) {
                        next[0] = k + 1;
                        break;
                    }
                    k++;
                }
                routed.add(effect);
            }, ServiceClock.system(), inbox, 0, 8);
            loop.start();
            try {
                List<CompletableFuture<List<Effect>>> calls = new ArrayList<>();
                for (NodeEvent e : events) {
                    calls.add(inbox.call(e, TimeUnit.SECONDS.toNanos(120)));
                }
                for (CompletableFuture<List<Effect>> c : calls) {
                    c.get(120, TimeUnit.SECONDS);
                }
                assertThat(loop.applied()).isEqualTo(events.size());
                assertThat(loop.journalErrors()).isZero();
                assertThat(loop.loopErrors()).isZero();
                assertThat(loop.lastSeq()).isEqualTo(journal.nextSeq() - 1);
            } finally {
                loop.close();
            }
        }
        assertThat(violations).as("effects routed before their entries were journaled").isEmpty();
        assertThat(routed).extracting(Payloads::dissect)
                .containsExactlyElementsOf(expectedRouted.stream().map(Payloads::dissect).toList());
        assertThat(dump(live)).as("same entries, seqs, causes and times as appendApplied writes")
                .containsExactlyElementsOf(dump(reference));
    }

    /**
     * One awaited call at a time (a scheduler in drive mode): the loop appends each input itself
     * while the journaller idles, and still answers only once the input and its derived entries
     * are in the journal, the same entries the journaller would write.
     */
    @Test
    void oneCallAtATimeIsJournaledOnTheLoopThreadBeforeItsReply() throws Exception {
        List<NodeEvent> events = requests(40);
        Path reference = dir.resolve("reference");
        NodeState model = NodeState.initial(cfg);
        try (JournalWriter w = open(reference)) {
            for (NodeEvent e : events) {
                List<Effect> fx = new ArrayList<>();
                NodeReducer.applyInto(model, e, fx);
                w.appendApplied(e, fx);
            }
        }
        Path live = dir.resolve("live");
        List<String> early = Collections.synchronizedList(new ArrayList<>());
        try (JournalWriter journal = open(live)) {
            Inbox inbox = new Inbox(1024);
            NodeLoop loop = TestNodes.startLoop(cfg, journal, inbox, effect -> { }, 8);
            try {
                for (int i = 0; i < events.size(); i++) {
                    int n = i + 1;
                    // completed on the loop thread: the journal must hold the input by then
                    inbox.call(events.get(i), TimeUnit.SECONDS.toNanos(120)).thenRun(() -> {
                        if (inputs(live) < n) {
                            early.add("call " + n + " answered with " + inputs(live) + " inputs journaled");
                        }
                    }).get(120, TimeUnit.SECONDS);
                }
                assertThat(loop.applied()).isEqualTo(events.size());
                assertThat(loop.journalErrors()).isZero();
                assertThat(loop.inlineGroups()).as("inputs the loop journaled itself").isPositive();
            } finally {
                loop.close();
            }
        }
        assertThat(early).as("replies before their input was journaled").isEmpty();
        assertThat(dump(live)).containsExactlyElementsOf(dump(reference));
    }

    @Test
    void aStalledJournalHoldsEveryEffectAndBacksThePressureUpToTheInboxWithoutDroppingAnything() throws Exception {
        List<NodeEvent> events = requests(10);
        List<Effect> routed = Collections.synchronizedList(new ArrayList<>());
        Path live = dir.resolve("live");
        try (JournalWriter journal = open(live)) {
            Inbox inbox = new Inbox(1024);
            NodeLoop loop = TestNodes.startLoop(cfg, journal, inbox, routed::add, 4);
            try {
                loop.holdJournal(true);
                List<CompletableFuture<List<Effect>>> calls = new ArrayList<>();
                calls.add(inbox.call(events.getFirst(), TimeUnit.SECONDS.toNanos(120)));
                // the loop now waits for the journal with an empty inbox: what arrives next is
                // still applied while the journal is stalled
                assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> loop.unjournaled() == 1)).isTrue();
                for (NodeEvent e : events.subList(1, events.size())) {
                    calls.add(inbox.call(e, TimeUnit.SECONDS.toNanos(120)));
                }
                assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> loop.unjournaled() == 4))
                        .as("the loop applied a ring's worth (4) and waits").isTrue();
                assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> inbox.depth() == events.size() - 5))
                        .as("the rest waits in the inbox (the loop holds the fifth)").isTrue();
                Thread.sleep(200);
                assertThat(loop.unjournaled()).isEqualTo(4);
                assertThat(routed).as("nothing leaves while its entries are not journaled").isEmpty();
                assertThat(calls).noneMatch(CompletableFuture::isDone);
                assertThat(inputs(live)).isZero();
                assertThat(loop.applied()).isZero();

                loop.holdJournal(false);
                for (CompletableFuture<List<Effect>> c : calls) {
                    c.get(120, TimeUnit.SECONDS);
                }
                assertThat(loop.applied()).isEqualTo(events.size());
                assertThat(inbox.refused()).isZero();
            } finally {
                loop.close();
            }
        }
        assertThat(dump(live).stream().filter(l -> l.contains(" input ")).map(l -> l.substring(l.indexOf(" input ") + 7))
                .toList()).as("every input journaled, in order")
                .containsExactlyElementsOf(events.stream().map(e -> e.atNs() + " "
                        + io.kvledger.journal.format.EntryType.of(e).dissect(e)).toList());
        assertThat(routed).anyMatch(e -> e instanceof Effect.SendRemoteBlocks);
        // what piled up while the journal stalled went in as group excerpts (one per journaller pass)
        JournalReader.Integrity integrity = JournalReader.check(live);
        assertThat(integrity.groups()).isPositive();
        assertThat(integrity.damage()).isEmpty();
    }

    /**
     * The new crash window: inputs applied and handed to the journaller but not appended when the
     * process dies. None of their effects left, and recovery rebuilds the state without them (as if
     * they never arrived); the inputs journaled before are recovered whole.
     */
    @Test
    void aCrashBeforeTheJournallerAppendsLosesOnlyInputsWhoseEffectsNeverLeft() throws Exception {
        List<NodeEvent> events = requests(4);
        List<NodeEvent> first = events.subList(0, 6);
        List<NodeEvent> lost = events.subList(6, events.size());
        List<Effect> routed = Collections.synchronizedList(new ArrayList<>());
        Path live = dir.resolve("live");
        NodeState before = NodeState.initial(cfg);
        List<Effect> routedBefore = new ArrayList<>();
        for (NodeEvent e : first) {
            NodeReducer.applyInto(before, e, routedBefore);
        }
        JournalWriter journal = open(live);
        Inbox inbox = new Inbox(1024);
        NodeLoop loop = TestNodes.startLoop(cfg, journal, inbox, routed::add, 64);
        List<CompletableFuture<List<Effect>>> lostCalls = new ArrayList<>();
        try {
            for (NodeEvent e : first) {
                inbox.call(e, TimeUnit.SECONDS.toNanos(120)).get(120, TimeUnit.SECONDS);
            }
            loop.holdJournal(true);
            for (NodeEvent e : lost) {
                lostCalls.add(inbox.call(e, TimeUnit.SECONDS.toNanos(120)));
            }
            assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> loop.unjournaled() == lost.size())).isTrue();
            // the process dies here: the journaller never appends what it holds
            loop.abandonJournal();
            assertThat(lostCalls).noneMatch(c -> c.isDone() && !c.isCompletedExceptionally());
            assertThat(routed).extracting(Payloads::dissect)
                    .as("only the journaled inputs' effects left the node")
                    .containsExactlyElementsOf(routedBefore.stream().filter(x -> x instanceof Effect.IoCommand).map(Payloads::dissect).toList());

            Recovery r = Recovery.replay(live, cfg);
            assertThat(r.inputs()).isEqualTo(first.size());
            assertThat(r.state().stateHash()).isEqualTo(before.stateHash());
            assertThat(r.unjournaled()).isEmpty();
            assertThat(r.unrouted()).isEmpty();
        } finally {
            loop.close();
            journal.close();
        }
    }

    @Test
    void anInputTheJournalRefusesIsCountedItsCallFailsAndItIsNeverApplied() throws Exception {
        List<NodeEvent> events = requests(2);
        NodeEvent.RequestAdmitted first = (NodeEvent.RequestAdmitted) events.getFirst();
        // a value msgpack cannot carry: the journal refuses the input
        NodeEvent bad = new NodeEvent.RequestAdmitted(first.atNs(), first.requestId(), first.numPromptTokens(),
                first.promptTokenIds(), io.kvledger.core.model.KvParams.of("not_python", new Object()));
        List<Effect> routed = Collections.synchronizedList(new ArrayList<>());
        Path live = dir.resolve("live");
        try (JournalWriter journal = open(live)) {
            Inbox inbox = new Inbox(1024);
            NodeLoop loop = TestNodes.startLoop(cfg, journal, inbox, routed::add, 16);
            try {
                CompletableFuture<List<Effect>> refused = inbox.call(bad, TimeUnit.SECONDS.toNanos(120));
                assertThat(refused).failsWithin(Duration.ofSeconds(30))
                        .withThrowableThat().withMessageContaining("cannot journal");
                assertThat(loop.journalErrors()).isEqualTo(1);
                assertThat(routed).as("nothing of the refused input left the node").isEmpty();
                assertThat(inbox.query(st -> st.phaseOf(first.requestId())).get(120, TimeUnit.SECONDS))
                        .as("the refused input was never applied: the state holds only what its journal holds")
                        .isNull();
                for (NodeEvent e : events.subList(3, 6)) {
                    inbox.call(e, TimeUnit.SECONDS.toNanos(120)).get(120, TimeUnit.SECONDS);
                }
                assertThat(loop.applied()).as("the loop went on").isEqualTo(3);
            } finally {
                loop.close();
            }
        }
        assertThat(inputs(live)).isEqualTo(3);
    }

    @Test
    void closingDrainsTheRingIntoTheJournalAndRoutesWhatItHeld() throws Exception {
        List<NodeEvent> events = requests(20);
        List<Effect> expected = new ArrayList<>();
        NodeState model = NodeState.initial(cfg);
        for (NodeEvent e : events) {
            NodeReducer.applyInto(model, e, expected);
        }
        List<Effect> routed = Collections.synchronizedList(new ArrayList<>());
        Path live = dir.resolve("live");
        try (JournalWriter journal = open(live)) {
            Inbox inbox = new Inbox(1024);
            NodeLoop loop = TestNodes.startLoop(cfg, journal, inbox, routed::add, 16);
            loop.holdJournal(true);
            for (NodeEvent e : events) {
                assertThat(inbox.offer(e)).isTrue();
            }
            assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> loop.unjournaled() == 16)).isTrue();
            loop.holdJournal(false);
            // the stop goes in behind the inputs: the loop applies them all, then drains the ring
            loop.close();
            assertThat(loop.isRunning()).isFalse();
            assertThat(loop.applied()).isEqualTo(events.size());
            assertThat(loop.lastSeq()).isEqualTo(journal.nextSeq() - 1);
        }
        assertThat(inputs(live)).isEqualTo(events.size());
        assertThat(routed).extracting(Payloads::dissect)
                .containsExactlyElementsOf(expected.stream().filter(x -> x instanceof Effect.IoCommand).map(Payloads::dissect).toList());
    }
    /**
     * A restarted node appends on its starting thread before its loop starts (recovery journals
     * the derived entries a crash left out); the journaller thread then takes the journal over.
     * Chronicle's appender is confined to one thread at a time, and a fresh-clone run of
     * NodeRecoveryTest caught the journaller refusing its first input without the hand-over.
     */
    @Test
    void theJournallerTakesTheJournalOverFromTheThreadThatAppendedBeforeTheLoopStarted() throws Exception {
        List<NodeEvent> events = requests(3);
        List<Effect> routed = Collections.synchronizedList(new ArrayList<>());
        Path live = dir.resolve("live");
        try (JournalWriter journal = open(live)) {
            NodeState state = NodeState.initial(cfg);
            List<Effect> first = new ArrayList<>();
            NodeReducer.applyInto(state, events.getFirst(), first);
            journal.appendApplied(events.getFirst(), first);
            Inbox inbox = new Inbox(1024);
            NodeLoop loop = new NodeLoop("D0", state, journal, routed::add, ServiceClock.system(), inbox,
                    journal.nextSeq() - 1, 16);
            loop.start();
            try {
                for (NodeEvent e : events.subList(1, events.size())) {
                    inbox.call(e, TimeUnit.SECONDS.toNanos(120)).get(120, TimeUnit.SECONDS);
                }
                assertThat(loop.journalErrors()).as("the journaller appended after the starting thread").isZero();
                assertThat(loop.isRunning()).isTrue();
            } finally {
                loop.close();
            }
        }
        assertThat(inputs(live)).isEqualTo(events.size());
    }
}

