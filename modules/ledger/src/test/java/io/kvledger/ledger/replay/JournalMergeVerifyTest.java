package io.kvledger.ledger.replay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.Samples;
import io.kvledger.ledger.replay.JournalInputs.InputException;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The ledger's merge and verify as libraries, without the CLI around them. */
class JournalMergeVerifyTest {

    @TempDir
    Path tmp;

    Path journal;
    long written;

    @BeforeEach
    void journal() {
        journal = tmp.resolve("node");
        NodeState s = NodeState.initial(Samples.config());
        written = 1; // the header
        try (JournalWriter w = JournalWriter.open(journal, Samples.header())) {
            for (NodeEvent e : Samples.events()) {
                List<Effect> fx = new ArrayList<>();
                NodeReducer.applyInto(s, e, fx);
                w.appendApplied(e, fx);
                written += 1 + fx.size();
            }
        }
    }

    @Test
    void a_journal_the_reducer_wrote_verifies_clean_and_merges_entry_for_entry() throws Exception {
        NodeJournal j = JournalInputs.resolve(List.of(journal)).getFirst();
        List<String> warnings = new ArrayList<>();
        JournalVerify.Report before = JournalVerify.verify(j, 20, new JournalVerify.Progress(), warnings::add);
        assertThat(before.problemCount()).as("%s", before.problems()).isZero();
        assertThat(before.entries()).isEqualTo(written);
        assertThat(before.inputs()).isEqualTo(Samples.events().size());
        assertThat(warnings).isEmpty();

        Path out = tmp.resolve("merged");
        JournalMerge.checkOut(out, List.of(j));
        JournalMerge.Result r;
        try (JournalReader reader = JournalReader.open(journal)) {
            List<String> nodes = TimeMerge.nodeIds(List.of(reader));
            JournalMerge.checkNodes(nodes, List.of(j));
            r = JournalMerge.merge(List.of(reader), nodes, out, n -> { });
        }
        assertThat(r.read()).isEqualTo(written);
        JournalMerge.Node n = r.nodes().getFirst();
        assertThat(n.entries()).isEqualTo(written);
        assertThat(n.skipped()).isZero();
        assertThat(r.index().transfers()).containsKey(Samples.TID);
        assertThat(Files.readAllLines(out.resolve(JournalMerge.INDEX)).getFirst()).startsWith("{\"kind\":\"merge\"");

        NodeJournal copy = JournalInputs.resolve(List.of(out.resolve(n.node()))).getFirst();
        JournalVerify.Report after = JournalVerify.verify(copy, 20, new JournalVerify.Progress(), warnings::add);
        assertThat(after.problemCount()).as("%s", after.problems()).isZero();
        assertThat(after.entries()).isEqualTo(before.entries());
        assertThat(after.lastSeq()).isEqualTo(before.lastSeq());
    }

    @Test
    void merge_refuses_an_output_inside_a_journal_and_a_node_id_given_twice() {
        NodeJournal j = JournalInputs.resolve(List.of(journal)).getFirst();
        assertThatThrownBy(() -> JournalMerge.checkOut(journal.resolve("out"), List.of(j)))
                .isInstanceOf(InputException.class).hasMessageContaining("overlaps the journal");
        assertThatThrownBy(() -> JournalMerge.checkNodes(List.of("p0", "p0"), List.of(j, j)))
                .isInstanceOf(InputException.class).hasMessageContaining("is used by both");
        assertThat(JournalVerify.acrossJournals(List.of(report("a", "p0"), report("b", "p0"))))
                .singleElement().satisfies(p -> assertThat(p.what()).contains("node id p0 is used by 2 journals"));
    }

    private static JournalVerify.Report report(String dir, String node) {
        JournalVerify.Report r = new JournalVerify.Report(dir, 20);
        r.node(node);
        return r;
    }
}
