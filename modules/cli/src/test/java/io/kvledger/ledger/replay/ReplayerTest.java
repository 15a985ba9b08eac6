// Stays in the cli module: it journals simulations (io.kvledger.node.sim),
// and the ledger module sees neither the simulator nor the node.
package io.kvledger.ledger.replay;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.format.Payloads;
import io.kvledger.node.sim.SimJournalRecorder;
import io.kvledger.sim.SimOptions;
import io.kvledger.sim.Simulation;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The merged, recomputing replay over simulated and hand-written journals. */
class ReplayerTest {

    @TempDir
    static Path sim;

    @TempDir
    Path tmp;

    @BeforeAll
    static void simulate() {
        SimOptions o = SimOptions.builder(3, TransferMode.WRITE).requests(30).nodes(1, 2)
                .faults("drop=0.02,abort=0.05").keepLog(false).build();
        try (SimJournalRecorder rec = new SimJournalRecorder(sim, "test seed=3")) {
            Simulation.run(o, rec);
        }
    }

    private record Seen(int node, long seq, long atNs) {}

    @Test
    void inputs_come_merged_by_time_then_node_order_and_recomputed_effects_match_the_recorded_ones() {
        List<JournalInputs.NodeJournal> js = JournalInputs.resolve(List.of(sim));
        assertThat(js).extracting(JournalInputs.NodeJournal::name).containsExactly("D0", "D1", "P0");
        long[] inputsPerJournal = new long[js.size()];
        for (int i = 0; i < js.size(); i++) {
            try (JournalReader r = js.get(i).open()) {
                inputsPerJournal[i] = r.stream().filter(e -> e instanceof JournalEntry.Input).count();
            }
        }
        List<Seen> seen = new ArrayList<>();
        long[] mismatches = {0};
        long[] compared = {0};
        try (Replayer r = Replayer.open(js, ConfigOverrides.none())) {
            assertThat(r.nodes()).extracting(Replayer.Node::name).containsExactly("D0", "D1", "P0");
            assertThat(r.nodes().get(2).config()).isEqualTo(r.nodes().get(2).recordedConfig());
            r.run((node, in, fx, recorded) -> {
                seen.add(new Seen(node.index(), in.seq(), in.atNs()));
                compared[0] += recorded.size();
                if (fx.size() != recorded.size()) {
                    mismatches[0]++;
                    return;
                }
                for (int i = 0; i < fx.size(); i++) {
                    if (!Payloads.same(fx.get(i), recorded.get(i).effect()) || recorded.get(i).causeSeq() != in.seq()) {
                        mismatches[0]++;
                    }
                }
            });
            assertThat(r.counts()).extracting(Replayer.NodeCounts::inputs)
                    .containsExactly(inputsPerJournal[0], inputsPerJournal[1], inputsPerJournal[2]);
            assertThat(r.warnings()).isEmpty();
        }
        assertThat(mismatches[0]).as("recomputed vs recorded effects (seed 3)").isZero();
        assertThat(compared[0]).isPositive();
        for (int i = 1; i < seen.size(); i++) {
            Seen a = seen.get(i - 1);
            Seen b = seen.get(i);
            assertThat(b.atNs()).as("time order at %s", b).isGreaterThanOrEqualTo(a.atNs());
            if (a.atNs() == b.atNs() && a.node() == b.node()) {
                assertThat(b.seq()).isGreaterThan(a.seq());
            }
            if (a.atNs() == b.atNs() && a.node() != b.node()) {
                assertThat(b.node()).as("ties go to the journal listed first, at %s", b).isGreaterThan(a.node());
            }
        }
    }

    private static List<String> dissect(List<Effect> fx) {
        return fx.stream().map(Payloads::dissect).toList();
    }

    @Test
    void without_the_recorded_entries_the_same_inputs_and_effects_come_and_nothing_recorded() {
        List<String> with = new ArrayList<>();
        List<String> without = new ArrayList<>();
        long[] recordedWithout = {0};
        try (Replayer r = Replayer.open(JournalInputs.resolve(List.of(sim)), ConfigOverrides.none())) {
            r.run((node, in, fx, recorded) -> with.add(node.name() + in.seq() + dissect(fx)));
            assertThat(r.counts()).allMatch(c -> c.derived() > 0);
        }
        try (Replayer r = Replayer.open(JournalInputs.resolve(List.of(sim)), ConfigOverrides.none())) {
            r.recorded(false).run((node, in, fx, recorded) -> {
                without.add(node.name() + in.seq() + dissect(fx));
                recordedWithout[0] += recorded.size();
            });
            assertThat(r.counts()).allMatch(c -> c.derived() == -1 && c.inputs() > 0);
        }
        assertThat(without).isEqualTo(with);
        assertThat(recordedWithout[0]).isZero();
    }

    @Test
    void until_stops_each_journal_after_that_seq() {
        List<Long> seqs = new ArrayList<>();
        try (Replayer r = Replayer.open(JournalInputs.resolve(List.of(sim.resolve("P0"))), ConfigOverrides.none())) {
            r.until(40).run((node, in, fx, recorded) -> seqs.add(in.seq()));
        }
        assertThat(seqs).isNotEmpty().allMatch(s -> s <= 40);
        assertThat(seqs.get(seqs.size() - 1)).isGreaterThan(30);
    }

    @Test
    void a_journal_of_inputs_only_is_recomputed_and_has_nothing_recorded() {
        Path dir = tmp.resolve("P0");
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).build();
        try (JournalWriter w = JournalWriter.open(dir, JournalHeader.of("P0", cfg, "hand-written"))) {
            w.appendInput(new NodeEvent.RequestAdmitted(1_000, "req-1", 32, 32, null));
            w.appendInput(new NodeEvent.RequestFinished(2_000, "req-1", FinishStatus.FINISHED_STOPPED, BlockGroups.single()));
            w.appendInput(new NodeEvent.Tick(3_000));
        }
        List<RequestPhase> phases = new ArrayList<>();
        List<Integer> recordedSizes = new ArrayList<>();
        try (Replayer r = Replayer.open(JournalInputs.resolve(List.of(dir)), ConfigOverrides.parse("seed", List.of()))) {
            assertThat(r.nodes().get(0).config().behaviour().profile()).isEqualTo("seed");
            assertThat(r.nodes().get(0).recordedConfig().behaviour().profile()).isEqualTo("newest");
            r.run((node, in, fx, recorded) -> {
                recordedSizes.add(recorded.size());
                for (Effect e : fx) {
                    if (e instanceof Effect.PhaseChanged p) {
                        phases.add(p.to());
                    }
                }
            });
            assertThat(r.counts().get(0).derived()).isZero();
        }
        assertThat(recordedSizes).containsExactly(0, 0, 0);
        assertThat(phases).containsExactly(RequestPhase.ADMITTED, RequestPhase.FINISHED);
    }

    @Test
    void journals_with_the_same_node_id_are_told_apart_by_their_directory() {
        Path a = tmp.resolve("a").resolve("P0");
        Path b = tmp.resolve("b").resolve("other");
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).build();
        for (Path p : List.of(a, b)) {
            try (JournalWriter w = JournalWriter.open(p, JournalHeader.of("P0", cfg, ""))) {
                w.appendInput(new NodeEvent.Tick(5));
            }
        }
        try (Replayer r = Replayer.open(JournalInputs.resolve(List.of(a, b)), ConfigOverrides.none())) {
            assertThat(r.nodes()).extracting(Replayer.Node::name).containsExactly("P0", "other");
        }
    }
}
