package io.kvledger.ledger.replay;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.Invariants;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.Samples;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link Replayer#invariants}: each node's state is checked after every input, and a broken one is named with it. */
class ReplayInvariantsTest {

    @TempDir
    Path tmp;

    private Path journal() {
        Path dir = tmp.resolve("N0");
        try (JournalWriter w = JournalWriter.open(dir, JournalHeader.of("N0", Samples.config(), "test"))) {
            for (NodeEvent e : Samples.events()) {
                w.appendInput(e);
            }
        }
        return dir;
    }

    /** Replays the journal with {@code check}; returns the seqs applied and, after them, the seqs found broken. */
    private List<List<Long>> replay(Path dir, Consumer<Replayer> setup) {
        List<Long> applied = new ArrayList<>();
        List<Long> broken = new ArrayList<>();
        try (Replayer r = Replayer.open(JournalInputs.resolve(List.of(dir)), ConfigOverrides.none())) {
            setup.accept(r);
            r.run(new Replayer.Listener() {
                @Override
                public void applied(Replayer.Node node, JournalEntry.Input in, List<Effect> fx, List<JournalEntry.Derived> rec) {
                    applied.add(in.seq());
                }

                @Override
                public void invariantsBroken(Replayer.Node node, JournalEntry.Input in, List<Invariants.Violation> v) {
                    assertThat(applied).as("reported right after its input").endsWith(in.seq());
                    assertThat(v).isNotEmpty();
                    broken.add(in.seq());
                }
            });
        }
        return List.of(applied, broken);
    }

    @Test
    void a_sound_replay_reports_nothing_with_the_real_check() {
        List<List<Long>> r = replay(journal(), x -> x.invariants(true));
        assertThat(r.get(0)).hasSize(Samples.events().size());
        assertThat(r.get(1)).isEmpty();
    }

    @Test
    void a_broken_state_is_reported_with_the_seq_of_the_input_after_which_it_broke() {
        Path dir = journal();
        AtomicInteger calls = new AtomicInteger();
        Invariants.Violation v = new Invariants.Violation(Invariants.Check.TABLES_BOUNDED, "stand-in");
        List<List<Long>> r = replay(dir, x -> x.invariants(s -> calls.incrementAndGet() == 3 ? List.of(v) : List.of()));
        assertThat(calls.get()).as("one check per input").isEqualTo(r.get(0).size());
        assertThat(r.get(1)).containsExactly(r.get(0).get(2));
    }

    @Test
    void unchecked_when_turned_off() {
        AtomicInteger calls = new AtomicInteger();
        List<List<Long>> r = replay(journal(), x -> x.invariants(s -> {
            calls.incrementAndGet();
            return List.of(new Invariants.Violation(Invariants.Check.TABLES_BOUNDED, "stand-in"));
        }).invariants(false));
        assertThat(r.get(0)).isNotEmpty();
        assertThat(r.get(1)).isEmpty();
        assertThat(calls.get()).isZero();
    }
}
