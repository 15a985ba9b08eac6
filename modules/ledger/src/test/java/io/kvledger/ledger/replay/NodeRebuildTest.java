package io.kvledger.ledger.replay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.Samples;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NodeRebuildTest {

    @TempDir
    Path dir;

    @Test
    void rebuild_reaches_the_live_state_and_reports_the_last_seq_and_input_time() {
        NodeState live = NodeState.initial(Samples.config());
        long lastInput = -1;
        long lastAny = -1;
        List<NodeEvent> events = Samples.events();
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            for (NodeEvent e : events) {
                List<Effect> fx = new ArrayList<>();
                NodeReducer.applyInto(live, e, fx);
                lastInput = w.appendInput(e);
                lastAny = lastInput;
                for (Effect f : fx) {
                    lastAny = w.appendDerived(lastInput, f);
                }
            }
        }
        NodeRebuild.Rebuilt r = NodeRebuild.rebuild(dir);
        assertThat(r.inputs()).isEqualTo(events.size());
        assertThat(r.lastInputSeq()).isEqualTo(lastInput);
        assertThat(r.lastSeq()).isEqualTo(lastAny);
        assertThat(r.lastInputAtNs()).isEqualTo(events.get(events.size() - 1).atNs());
        assertThat(r.header().nodeId()).isEqualTo(Samples.header().nodeId());
        assertThat(r.state().stateHash()).isEqualTo(live.stateHash());
        assertThat(r.state().phases()).isEqualTo(live.phases());
        assertThat(r.warnings()).isEmpty();
    }

    @Test
    void a_journal_with_only_its_header_rebuilds_the_initial_state() {
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            assertThat(w).isNotNull();
        }
        NodeRebuild.Rebuilt r = NodeRebuild.rebuild(dir);
        assertThat(r.inputs()).isZero();
        assertThat(r.lastInputSeq()).isEqualTo(-1);
        assertThat(r.lastInputAtNs()).isEqualTo(Long.MIN_VALUE);
        assertThat(r.state().stateHash()).isEqualTo(NodeState.initial(Samples.config()).stateHash());
    }

    @Test
    void a_directory_without_a_journal_is_a_clear_error() {
        assertThatThrownBy(() -> NodeRebuild.rebuild(dir.resolve("missing")))
                .isInstanceOf(JournalException.class);
    }
}
