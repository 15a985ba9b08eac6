package io.kvledger.ledger.replay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.Samples;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TimelineTest {

    @TempDir
    Path dir;

    List<NodeJournal> journals;

    @BeforeEach
    void journal() {
        NodeState s = NodeState.initial(Samples.config());
        List<NodeEvent> events = new ArrayList<>(Samples.events());
        events.add(new NodeEvent.RequestAdmitted(Samples.T0 + 20_000, "cmpl-zz-1", 16, 16, null));
        events.add(new NodeEvent.RequestAdmitted(Samples.T0 + 21_000, "cmpl-zz-2", 16, 16, null));
        events.add(new NodeEvent.BlocksAllocated(Samples.T0 + 22_000, "cmpl-zz-2", BlockGroups.single(3), 0));
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            for (NodeEvent e : events) {
                List<Effect> fx = new ArrayList<>();
                NodeReducer.applyInto(s, e, fx);
                w.appendApplied(e, fx);
            }
        }
        journals = JournalInputs.resolve(List.of(dir));
    }

    @Test
    void a_request_is_found_with_its_transfer_and_its_lines_in_order() {
        Timeline.Result r = Timeline.of(journals, Samples.RID.substring(0, 20), Timeline.Kind.REQUEST, true, null);
        assertThat(r).isInstanceOf(Timeline.Found.class);
        Timeline.Found f = (Timeline.Found) r;
        assertThat(f.requestIds()).contains(Samples.RID);
        assertThat(f.transferIds()).contains(Samples.TID);
        assertThat(f.lines()).isNotEmpty();
        Timeline.Line first = f.lines().get(0);
        assertThat(first.input()).isTrue();
        assertThat(first.type().typeName()).isEqualTo("request_admitted");
        assertThat(first.fields()).isNotNull();
        for (int i = 1; i < f.lines().size(); i++) {
            assertThat(f.lines().get(i).atNs()).isGreaterThanOrEqualTo(f.lines().get(i - 1).atNs());
        }
        assertThat(f.ends()).isNotEmpty().allSatisfy(l -> assertThat(l.phase()).isNotNull());
        assertThat(f.lines()).noneMatch(l -> l.text().contains("cmpl-zz-"));
    }

    @Test
    void a_transfer_is_found_by_its_id() {
        Timeline.Result r = Timeline.of(journals, Samples.TID, Timeline.Kind.TRANSFER, false, null);
        assertThat(r).isInstanceOfSatisfying(Timeline.Found.class, f -> {
            assertThat(f.transferIds()).containsExactly(Samples.TID);
            assertThat(f.lines()).anyMatch(l -> l.input() && l.type().typeName().equals("write_done_received"));
            assertThat(f.lines()).allMatch(l -> l.fields() == null);
        });
    }

    @Test
    void an_unknown_id_is_not_found_and_a_shared_prefix_is_ambiguous() {
        assertThat(Timeline.of(journals, "nothing-like-this", Timeline.Kind.REQUEST, false, null))
                .isInstanceOfSatisfying(Timeline.NotFound.class, n -> assertThat(n.journals()).isEqualTo(1));
        assertThat(Timeline.of(journals, "cmpl-zz-", Timeline.Kind.REQUEST, false, null))
                .isInstanceOfSatisfying(Timeline.Ambiguous.class,
                        a -> assertThat(a.candidates()).containsExactly("cmpl-zz-1", "cmpl-zz-2"));
        assertThatThrownBy(() -> Timeline.of(journals, "  ", Timeline.Kind.REQUEST, false, null))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
