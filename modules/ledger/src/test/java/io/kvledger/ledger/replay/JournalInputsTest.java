package io.kvledger.ledger.replay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.ledger.replay.JournalInputs.InputException;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import net.openhft.chronicle.queue.ExcerptAppender;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How DIR arguments become node journals (only directory listings are involved). */
class JournalInputsTest {

    @TempDir
    Path tmp;

    private Path fakeJournal(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("20261202L.cq4"), "");
        Files.writeString(dir.resolve("metadata.cq4t"), "");
        return dir;
    }

    @Test
    void a_directory_with_queue_files_is_one_journal_named_after_itself() throws IOException {
        Path p0 = fakeJournal(tmp.resolve("run").resolve("P0"));
        List<NodeJournal> js = JournalInputs.resolve(List.of(p0));
        assertThat(js).extracting(NodeJournal::name).containsExactly("P0");
        assertThat(js.get(0).dir()).isEqualTo(p0);
        assertThat(js.get(0).argument()).isEqualTo(p0.toString());
    }

    @Test
    void otherwise_each_direct_subdirectory_with_queue_files_is_a_journal_in_name_order() throws IOException {
        Path run = tmp.resolve("run");
        fakeJournal(run.resolve("P0"));
        fakeJournal(run.resolve("D1"));
        fakeJournal(run.resolve("D0"));
        Files.createDirectories(run.resolve("notes"));
        fakeJournal(run.resolve("deeper").resolve("P9"));
        Files.writeString(run.resolve("README"), "x");
        List<NodeJournal> js = JournalInputs.resolve(List.of(run));
        assertThat(js).extracting(NodeJournal::name).containsExactly("D0", "D1", "P0");
        assertThat(js).extracting(NodeJournal::dir).containsExactly(run.resolve("D0"), run.resolve("D1"), run.resolve("P0"));
        assertThat(js).allSatisfy(j -> assertThat(j.name()).doesNotContain(tmp.toString()));
    }

    @Test
    void arguments_keep_their_order_and_a_journal_named_twice_is_listed_once() throws IOException {
        Path a = fakeJournal(tmp.resolve("a").resolve("P0"));
        Path b = fakeJournal(tmp.resolve("b").resolve("D0"));
        List<NodeJournal> js = JournalInputs.resolve(List.of(b, a, tmp.resolve("a"), a));
        assertThat(js).extracting(NodeJournal::name).containsExactly("D0", "P0");
    }

    @Test
    void a_directory_without_journals_is_a_usage_error_naming_it() throws IOException {
        Path empty = Files.createDirectories(tmp.resolve("empty"));
        Files.createDirectories(empty.resolve("sub"));
        assertThatThrownBy(() -> JournalInputs.resolve(List.of(empty)))
                .isInstanceOf(InputException.class)
                .hasMessageContaining(empty.toString())
                .hasMessageContaining("no journal there")
                .hasMessageContaining("1 subdirectory");
    }

    @Test
    void a_directory_of_json_lines_is_named_as_such_with_the_import_command() throws IOException {
        Path tree = Files.createDirectories(tmp.resolve("fixture"));
        Files.writeString(Files.createDirectories(tree.resolve("D0")).resolve("inputs.jsonl"), "{}\n");
        Files.createDirectories(tree.resolve("P0"));
        assertThatThrownBy(() -> JournalInputs.resolve(List.of(tree)))
                .isInstanceOf(InputException.class)
                .hasMessageContaining("no journal there")
                .hasMessageContaining("it holds JSON lines (" + tree.resolve("D0").resolve("inputs.jsonl") + ")")
                .hasMessageContaining("kvledger journal import " + tree + " DIR");
        // the vLLM bridge recorder's layout: files side by side that start with a journal header
        Path rec = Files.createDirectories(tmp.resolve("rec"));
        Files.writeString(rec.resolve("decode-scheduler-dp0-tp0.jsonl"), "{\"type\":\"header\"}\n");
        assertThatThrownBy(() -> JournalInputs.resolve(List.of(rec)))
                .isInstanceOf(InputException.class)
                .hasMessageContaining("it holds JSON lines (" + rec.resolve("decode-scheduler-dp0-tp0.jsonl")
                        + "): hangs, inspect, replay and stats read them as they are");
        // other JSON lines are not said to be readable
        Path other = Files.createDirectories(tmp.resolve("other"));
        Files.writeString(other.resolve("merge-index.jsonl"), "{\"merge\":1}\n");
        assertThatThrownBy(() -> JournalInputs.resolve(List.of(other)))
                .isInstanceOf(InputException.class)
                .hasMessageContaining("it holds JSON lines (" + other.resolve("merge-index.jsonl") + "), but none in a "
                        + "journal's layout")
                .message().doesNotContain("read them as they are");
        Path plain = Files.createDirectories(tmp.resolve("plain"));
        assertThatThrownBy(() -> JournalInputs.resolve(List.of(plain)))
                .isInstanceOf(InputException.class)
                .message().doesNotContain("JSON lines");
    }

    @Test
    void a_missing_path_a_file_and_no_argument_are_usage_errors() throws IOException {
        Path file = Files.writeString(tmp.resolve("file.cq4"), "");
        assertThatThrownBy(() -> JournalInputs.resolve(List.of(tmp.resolve("nope"))))
                .isInstanceOf(InputException.class).hasMessageContaining("no such directory");
        assertThatThrownBy(() -> JournalInputs.resolve(List.of(file)))
                .isInstanceOf(InputException.class).hasMessageContaining("not a directory");
        assertThatThrownBy(() -> JournalInputs.resolve(List.of()))
                .isInstanceOf(InputException.class).hasMessageContaining("no journal directory given");
    }

    @Test
    void opening_a_queue_that_is_not_a_journal_is_an_input_error_naming_it() {
        Path dir = tmp.resolve("run").resolve("P0");
        try (SingleChronicleQueue q = SingleChronicleQueueBuilder.single(dir.toFile()).build();
             ExcerptAppender a = q.createAppender()) {
            a.writeText("not a kvledger entry");
        }
        NodeJournal j = JournalInputs.resolve(List.of(tmp.resolve("run"))).get(0);
        assertThat(j.dir()).isEqualTo(dir);
        assertThatThrownBy(j::open).isInstanceOf(InputException.class)
                .hasMessageContaining("cannot read the journal P0 (from " + tmp.resolve("run") + ")");
    }
}
