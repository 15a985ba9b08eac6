package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.format.EntryType;
import io.kvledger.journal.replay.ConfigOverrides;
import io.kvledger.journal.replay.JournalInputs;
import io.kvledger.journal.replay.Replayer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The replay on helper threads ({@link Replayer#threads}) hands the listener exactly what the
 * replay on the caller's thread hands it: the same inputs, effects and recorded entries in the
 * same merged order, the same counts and warnings, also across batch boundaries, with
 * {@code until}, on damaged journals, and when the listener gives up half-way.
 */
class ReplayerThreadsTest {

    @TempDir
    Path dir;

    List<JournalInputs.NodeJournal> journals;

    /** Three journals of a few batches each, interleaved in time, with ties across journals. */
    @BeforeEach
    void journals() {
        write("P0", Role.PRODUCER, 7, 5_000);
        write("P1", Role.PRODUCER, 11, 3_000);
        write("D0", Role.CONSUMER, 7, 4_000);
        journals = JournalInputs.resolve(List.of(dir));
    }

    private void write(String node, Role role, long stepNs, int inputs) {
        NodeConfig cfg = NodeConfig.builder(role, TransferMode.WRITE).hostIp("10.0.0." + node.length())
                .layerNames(List.of("model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn")).build();
        NodeState s = NodeState.initial(cfg);
        List<NodeEvent> events = new ArrayList<>();
        long t = 1_000;
        for (int r = 0; events.size() < inputs; r++) {
            String rid = "cmpl-" + node + "-" + r;
            events.add(new NodeEvent.RequestAdmitted(t += stepNs, rid, 32, 32, null));
            events.add(new NodeEvent.MatchedTokensQueried(t += stepNs, rid, 0));
            events.add(new NodeEvent.BlocksAllocated(t += stepNs, rid, BlockGroups.single(2 * r, 2 * r + 1), 0));
            events.add(new NodeEvent.StepScheduled(t += stepNs, r, List.of()));
            events.add(new NodeEvent.LoadStarted(t += stepNs));
            events.add(new NodeEvent.LayerSaved(t += stepNs, "model.layers.0.self_attn.attn"));
            events.add(new NodeEvent.LayerSaved(t += stepNs, "model.layers.1.self_attn.attn"));
            events.add(new NodeEvent.SaveWaited(t += stepNs));
            events.add(new NodeEvent.FinishedPolled(t += stepNs));
            events.add(new NodeEvent.ConnectorOutputReceived(t += stepNs, List.of(rid), null));
            events.add(new NodeEvent.RequestFinished(t += stepNs, rid, FinishStatus.FINISHED_STOPPED,
                    BlockGroups.single(2 * r, 2 * r + 1)));
            events.add(new NodeEvent.Tick(t += stepNs));
        }
        try (JournalWriter w = JournalWriter.open(dir.resolve(node), JournalHeader.of(node, cfg, "ReplayerThreadsTest"))) {
            for (NodeEvent e : events) {
                List<Effect> fx = new ArrayList<>();
                NodeReducer.applyInto(s, e, fx);
                w.appendApplied(e, fx);
            }
        }
    }

    /** Everything a listener sees, one line per call, and the counts and warnings at the end. */
    private static List<String> transcript(List<JournalInputs.NodeJournal> journals, int threads, boolean recorded,
                                           Long until) {
        List<String> out = new ArrayList<>();
        try (Replayer r = Replayer.open(journals, ConfigOverrides.none())) {
            r.threads(threads).recorded(recorded);
            if (until != null) {
                r.until(until);
            }
            r.run(new Replayer.Listener() {
                @Override
                public void started(Replayer.Node node, List<Effect> startup, List<JournalEntry.Derived> rec) {
                    out.add("started " + node.name() + " " + startup + " " + rec);
                }

                @Override
                public void applied(Replayer.Node node, JournalEntry.Input in, List<Effect> fx,
                                    List<JournalEntry.Derived> rec) {
                    StringBuilder b = new StringBuilder(node.name()).append(' ').append(in.seq()).append(' ')
                            .append(in.atNs()).append(' ').append(in.dissect());
                    for (Effect e : fx) {
                        b.append(" | ").append(EntryType.of(e).dissect(e));
                    }
                    for (JournalEntry.Derived d : rec) {
                        b.append(" || ").append(d.seq()).append(' ').append(d.dissect());
                    }
                    out.add(b.toString());
                }

                @Override
                public void finished() {
                    out.add("finished");
                }
            });
            out.add("counts " + r.counts());
            out.add("warnings " + r.warnings());
        }
        return out;
    }

    @Test
    void helper_threads_hand_the_listener_what_the_callers_thread_does() {
        for (boolean recorded : new boolean[] {false, true}) {
            List<String> here = transcript(journals, 0, recorded, null);
            assertThat(here.size()).isEqualTo(3 + 5_004 + 3_000 + 4_008 + 3); // started x3, inputs, finished, counts, warnings
            assertThat(here).anyMatch(l -> l.contains(" | ")); // effects are compared, not only inputs
            if (recorded) {
                assertThat(here).anyMatch(l -> l.contains(" || "));
            }
            for (int threads : new int[] {1, 3}) {
                assertThat(transcript(journals, threads, recorded, null)).as("threads %d, recorded %s", threads, recorded)
                        .isEqualTo(here);
            }
        }
    }

    @Test
    void until_stops_each_journal_at_the_same_input() {
        for (long until : new long[] {1, 2_048, 5_000}) {
            assertThat(transcript(journals, 2, true, until)).as("until %d", until)
                    .isEqualTo(transcript(journals, 0, true, until));
        }
    }

    @Test
    void a_damaged_journal_reads_the_same_with_the_same_warnings() {
        Path file = Damage.queueFile(dir.resolve("P0"));
        List<Damage.Excerpt> entries = Damage.entries(file);
        Damage.flip(file, entries.get(3_000).pos(), entries.get(3_010).end(), 6, 7);
        Damage.zero(file, entries.get(6_000).pos(), 200);
        List<String> here = transcript(journals, 0, true, null);
        assertThat(here.getLast()).contains("journal damaged");
        assertThat(transcript(journals, 2, true, null)).isEqualTo(here);
        assertThat(transcript(journals, 2, false, null)).isEqualTo(transcript(journals, 0, false, null));
    }

    @Test
    void a_listener_that_throws_stops_the_run_and_its_helpers() {
        try (Replayer r = Replayer.open(journals, ConfigOverrides.none())) {
            r.threads(2);
            int[] n = {0};
            assertThatThrownBy(() -> r.run((node, in, fx, rec) -> {
                if (++n[0] == 3_000) {
                    throw new IllegalStateException("listener gave up");
                }
            })).hasMessage("listener gave up");
            assertThat(n[0]).isEqualTo(3_000);
        }
        assertThat(Thread.getAllStackTraces().keySet()).noneMatch(t -> t.getName().startsWith("kvledger-replay-"));
    }

    @Test
    void a_negative_thread_count_is_refused() {
        try (Replayer r = Replayer.open(journals, ConfigOverrides.none())) {
            assertThatThrownBy(() -> r.threads(-1)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("threads");
        }
    }
}
