package io.kvledger.node.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JsonLines;
import io.kvledger.journal.format.Payloads;
import io.kvledger.sim.NodeReport;
import io.kvledger.sim.SimOptions;
import io.kvledger.sim.Simulation;
import io.kvledger.sim.SimulationResult;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Simulated clusters journaled node by node; every assertion names the seed. */
class SimJournalRecorderTest {

    private static final String FAULTS = "drop=0.02,dup=0.02,delay=0.03,reorder=0.02,fail=0.01,stall=0.005,abort=0.02";

    @TempDir
    Path tmp;

    private SimulationResult simulate(long seed, TransferMode mode, Path out) {
        SimOptions opts = SimOptions.builder(seed, mode).requests(60).nodes(2, 2).faults(FAULTS).build();
        try (SimJournalRecorder rec = new SimJournalRecorder(out, "simulate seed=" + seed + " faults=" + FAULTS)) {
            SimulationResult r = Simulation.run(opts, rec);
            assertThat(rec.nodes()).as("seed %d", seed).containsExactly("P0", "P1", "D0", "D1");
            assertThat(rec.entries()).as("seed %d", seed).isPositive();
            return r;
        }
    }

    /**
     * Replaying each journal's inputs under the header's configuration reproduces every recorded
     * effect and the simulator's final state hash: the journal holds everything the node saw.
     */
    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void replaying_each_node_journal_reproduces_its_effects_and_final_state(TransferMode mode) {
        long seed = 20261203L + mode.ordinal();
        Path out = tmp.resolve("run");
        SimulationResult result = simulate(seed, mode, out);
        for (NodeReport node : result.nodes()) {
            Path dir = out.resolve(node.name());
            try (JournalReader r = JournalReader.open(dir)) {
                assertThat(r.header().nodeId()).isEqualTo(node.name());
                assertThat(r.header().differences(io.kvledger.journal.JournalHeader.of(node.name(), node.config(), "")))
                        .as("seed %d %s header", seed, node.name()).isEmpty();
                assertThat(r.header().origin()).startsWith("simulate seed=" + seed);
                NodeState state = NodeState.initial(r.header().config());
                List<Effect> expected = new ArrayList<>(NodeReducer.startupChecks(r.header().config()));
                int next = 0;
                long inputs = 0;
                long lastSeq = -1;
                for (JournalEntry e : r) {
                    assertThat(e.seq()).as("seed %d %s", seed, node.name()).isEqualTo(lastSeq + 1);
                    lastSeq = e.seq();
                    switch (e) {
                        case JournalEntry.Header h -> { }
                        case JournalEntry.Input in -> {
                            assertThat(next).as("seed %d %s seq %d: effects of the previous input", seed, node.name(),
                                    e.seq()).isEqualTo(expected.size());
                            expected = NodeReducer.apply(state, in.event()).effects();
                            next = 0;
                            inputs++;
                        }
                        case JournalEntry.Derived d -> {
                            assertThat(next).as("seed %d %s seq %d: an extra effect", seed, node.name(), e.seq())
                                    .isLessThan(expected.size());
                            assertThat(Payloads.same(d.effect(), expected.get(next)))
                                    .as("seed %d %s seq %d: %s vs %s", seed, node.name(), e.seq(), d.dissect(),
                                            Payloads.dissect(expected.get(next)))
                                    .isTrue();
                            next++;
                        }
                        case JournalEntry.Unknown u -> throw new AssertionError("seed " + seed + ": " + u.dissect());
                        case JournalEntry.Proxy px -> throw new AssertionError("seed " + seed + ": " + px.dissect());
                    }
                }
                assertThat(next).isEqualTo(expected.size());
                assertThat(inputs).as("seed %d %s inputs", seed, node.name()).isEqualTo(node.eventsApplied());
                assertThat(state.stateHash()).as("seed %d %s state hash", seed, node.name()).isEqualTo(node.stateHash());
                assertThat(r.warnings()).isEmpty();
            }
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void sim_journal_export_import_gives_identical_entries(TransferMode mode) throws Exception {
        long seed = 77L + mode.ordinal();
        Path out = tmp.resolve("run");
        simulate(seed, mode, out);
        for (String node : List.of("P0", "D1")) {
            String text;
            try (JournalReader r = JournalReader.open(out.resolve(node))) {
                StringWriter w = new StringWriter();
                JsonLines.export(r, w);
                text = w.toString();
            }
            Path file = Files.writeString(tmp.resolve(node + ".jsonl"), text);
            Path copy = tmp.resolve("copy").resolve(node);
            JsonLines.ImportResult res = JsonLines.importFile(file, copy, null);
            assertThat(res.entries()).as("seed %d %s", seed, node).isEqualTo(text.lines().count() - 1);
            List<JournalEntry> a = readAll(out.resolve(node));
            List<JournalEntry> b = readAll(copy);
            assertThat(b).as("seed %d %s", seed, node).hasSameSizeAs(a);
            for (int i = 0; i < a.size(); i++) {
                JournalEntry x = a.get(i);
                JournalEntry y = b.get(i);
                assertThat(y.seq()).isEqualTo(x.seq());
                assertThat(y.atNs()).isEqualTo(x.atNs());
                assertThat(y.getClass()).isEqualTo(x.getClass());
                if (x instanceof JournalEntry.Input in) {
                    assertThat(Payloads.same(in.event(), ((JournalEntry.Input) y).event())).as("seed %d %s seq %d",
                            seed, node, x.seq()).isTrue();
                } else if (x instanceof JournalEntry.Derived d) {
                    var e = (JournalEntry.Derived) y;
                    assertThat(e.causeSeq()).isEqualTo(d.causeSeq());
                    assertThat(Payloads.same(d.effect(), e.effect())).as("seed %d %s seq %d", seed, node, x.seq()).isTrue();
                } else if (x instanceof JournalEntry.Header h) {
                    assertThat(((JournalEntry.Header) y).header().differences(h.header())).isEmpty();
                }
            }
            try (JournalReader r = JournalReader.open(copy)) {
                StringWriter w = new StringWriter();
                JsonLines.export(r, w);
                assertThat(w.toString()).as("seed %d %s: export of the import", seed, node).isEqualTo(text);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = TransferMode.class, names = "WRITE")
    void a_second_run_into_the_same_directory_is_refused(TransferMode mode) {
        Path out = tmp.resolve("run");
        simulate(5, mode, out);
        SimOptions opts = SimOptions.builder(5, mode).requests(5).build();
        assertThatThrownBy(() -> {
            try (SimJournalRecorder rec = new SimJournalRecorder(out, "again")) {
                Simulation.run(opts, rec);
            }
        }).isInstanceOf(JournalException.class).hasMessageContaining("already holds a journal");
    }

    private static List<JournalEntry> readAll(Path dir) {
        try (JournalReader r = JournalReader.open(dir)) {
            List<JournalEntry> out = new ArrayList<>();
            r.forEach(out::add);
            return out;
        }
    }
}
