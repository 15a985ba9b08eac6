package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link JsonLinesTail} hands out, line by line as a file grows, exactly the entry bytes
 * {@code journal import} writes for the same file (every fixture's journal.jsonl, a recording with
 * repeat lines); a half-written last line is waited for; a bad line stops the reading with its file
 * and line number; a file replaced under its name is said.
 */
class JsonLinesTailTest {

    @TempDir
    Path tmp;

    /** The entries of the journal {@code journal import} makes of {@code jsonl}, as bytes. */
    static List<byte[]> imported(Path jsonl, Path dir) {
        JsonLines.importFile(jsonl, dir, null);
        List<byte[]> out = new ArrayList<>();
        try (RawEntryTailer t = RawEntryTailer.open(dir)) {
            byte[] e;
            while ((e = t.poll(Duration.ZERO)) != null) {
                out.add(e);
            }
            assertThat(t.warnings()).isEmpty();
        }
        return out;
    }

    static List<byte[]> tailed(Path jsonl) {
        List<byte[]> out = new ArrayList<>();
        try (JsonLinesTail t = JsonLinesTail.open(jsonl)) {
            byte[] e;
            while ((e = t.poll(true)) != null) {
                out.add(e);
            }
            assertThat(t.problem()).isNull();
        }
        return out;
    }

    static void assertSameBytes(List<byte[]> got, List<byte[]> want, String what) {
        assertThat(got).as(what).hasSameSizeAs(want);
        for (int i = 0; i < want.size(); i++) {
            assertThat(got.get(i)).as("%s entry %d", what, i).isEqualTo(want.get(i));
        }
    }

    @Test
    void every_fixture_file_tails_to_the_bytes_its_import_writes() throws Exception {
        Path fixtures = Path.of("..", "..", "journal", "fixtures");
        List<Path> files;
        try (Stream<Path> s = Files.walk(fixtures)) {
            files = s.filter(p -> p.getFileName().toString().endsWith(".jsonl") && JsonLines.startsWithHeader(p)).sorted().toList();
        }
        assertThat(files).as("fixture journals under %s", fixtures.toAbsolutePath()).hasSizeGreaterThan(20);
        long entries = 0;
        int i = 0;
        for (Path f : files) {
            List<byte[]> want = imported(f, tmp.resolve("j" + i++));
            assertSameBytes(tailed(f), want, f.toString());
            entries += want.size();
        }
        System.out.println("JsonLinesTailTest: " + files.size() + " fixture files, " + entries + " entries");
    }

    @Test
    void a_recording_with_repeat_lines_tails_to_the_bytes_its_import_writes() throws Exception {
        List<String> lines = new ArrayList<>(List.of(JsonLinesRepeatTest.HEADER, JsonLinesRepeatTest.ADMITTED));
        lines.addAll(JsonLinesRepeatTest.step(1, 1_000_000));
        lines.add(JsonLinesRepeatTest.repeat(3, 2, 900_000, 40_000, 950_000, 40_000));
        lines.add("{\"kind\":\"derived\",\"type\":\"anomaly\",\"cause_seq\":0,\"anomaly\":\"DEFERRAL_REAPED\",\"request_id\":\"r1\",\"transfer_id\":\"t1\",\"detail\":\"x\"}");
        Path f = Files.writeString(tmp.resolve("D0.jsonl"), String.join("\n", lines) + "\n", StandardCharsets.UTF_8);
        List<byte[]> want = imported(f, tmp.resolve("D0"));
        assertThat(want).hasSize(1 + 1 + 3 * 3 + 1);
        assertSameBytes(tailed(f), want, f.toString());
    }

    @Test
    void a_half_written_line_is_waited_for_and_then_read_whole() throws Exception {
        Path src = Path.of("..", "..", "journal", "fixtures", "07-reaped-without-ack", "P0", "journal.jsonl");
        List<String> all = Files.readAllLines(src);
        List<byte[]> want = imported(src, tmp.resolve("want"));
        Path f = tmp.resolve("P0.jsonl");
        Files.writeString(f, all.get(0) + "\n" + all.get(1).substring(0, all.get(1).length() / 2));
        List<byte[]> got = new ArrayList<>();
        try (JsonLinesTail t = JsonLinesTail.open(f)) {
            assertThat(t.header().nodeId()).isEqualTo("P0");
            got.add(t.poll(false));
            assertThat(t.poll(false)).as("the half line is not handed out").isNull();
            assertThat(t.poll(false)).isNull();
            Files.writeString(f, all.get(1).substring(all.get(1).length() / 2) + "\n", StandardOpenOption.APPEND);
            for (int i = 2; i < all.size(); i++) {
                byte[] e;
                while ((e = t.poll(false)) != null) {
                    got.add(e);
                }
                Files.writeString(f, all.get(i) + "\n", StandardOpenOption.APPEND);
            }
            byte[] e;
            while ((e = t.poll(false)) != null) {
                got.add(e);
            }
            assertThat(t.problem()).isNull();
            assertThat(t.lines()).isEqualTo(all.size());
        }
        assertSameBytes(got, want, "grown line by line");
    }

    @Test
    void a_bad_line_stops_the_reading_with_its_file_and_line_number() throws Exception {
        Path src = Path.of("..", "..", "journal", "fixtures", "07-reaped-without-ack", "P0", "journal.jsonl");
        List<String> all = new ArrayList<>(Files.readAllLines(src));
        all.add(4, "{\"kind\":\"input\",\"type\":\"no_such_type\",\"at_ns\":1}");
        Path f = Files.writeString(tmp.resolve("P0.jsonl"), String.join("\n", all) + "\n");
        List<byte[]> before = imported(Files.writeString(tmp.resolve("first4.jsonl"),
                String.join("\n", all.subList(0, 4)) + "\n"), tmp.resolve("first4"));
        List<byte[]> got = new ArrayList<>();
        try (JsonLinesTail t = JsonLinesTail.open(f)) {
            byte[] e;
            while ((e = t.poll(true)) != null) {
                got.add(e);
            }
            assertThat(t.problem()).startsWith(f + ": line 5: ").contains("no_such_type");
            assertThat(t.poll(true)).as("nothing after the bad line").isNull();
        }
        assertSameBytes(got, before, "the lines before the bad one");
        assertThatThrownBy(() -> JsonLines.importFile(f, tmp.resolve("refused"), null))
                .isInstanceOf(JsonLinesException.class).hasMessageContaining("line 5");

        // an input whose time goes back, as journal import's check refuses it
        List<String> back = new ArrayList<>(Files.readAllLines(src));
        back.add("{\"kind\":\"input\",\"type\":\"tick\",\"at_ns\":1}");
        Path g = Files.writeString(tmp.resolve("back.jsonl"), String.join("\n", back) + "\n");
        try (JsonLinesTail t = JsonLinesTail.open(g)) {
            while (t.poll(true) != null) {
                // read to the stop
            }
            assertThat(t.problem()).startsWith(g + ": line " + back.size() + ": time 1 ns goes backwards");
        }
    }

    @Test
    void a_cut_last_line_at_the_end_is_left_out_and_said_as_the_import_says() throws Exception {
        Path src = Path.of("..", "..", "journal", "fixtures", "07-reaped-without-ack", "D0", "journal.jsonl");
        String text = Files.readString(src);
        Path f = Files.writeString(tmp.resolve("D0.jsonl"), text + "{\"kind\":\"input\",\"ty");
        List<byte[]> want = imported(src, tmp.resolve("want"));
        try (JsonLinesTail t = JsonLinesTail.open(f)) {
            List<byte[]> got = new ArrayList<>();
            byte[] e;
            while ((e = t.poll(true)) != null) {
                got.add(e);
            }
            assertSameBytes(got, want, "before the cut line");
            assertThat(t.problem()).isNull();
            assertThat(t.warnings()).singleElement().asString().contains("left out its last line");
        }
    }

    @Test
    void a_file_replaced_under_its_name_is_said_and_not_read_on() throws Exception {
        Path src = Path.of("..", "..", "journal", "fixtures", "07-reaped-without-ack", "P0", "journal.jsonl");
        Path f = tmp.resolve("P0.jsonl");
        Files.copy(src, f);
        try (JsonLinesTail t = JsonLinesTail.open(f)) {
            while (t.poll(false) != null) {
                // read what is there
            }
            Files.move(f, tmp.resolve("P0.1.jsonl"));
            Files.copy(src, f);
            for (int i = 0; i < 1000 && t.problem() == null; i++) {
                assertThat(t.poll(false)).isNull();
            }
            assertThat(t.problem()).startsWith(f + ": is now another file").contains("another run of the node");
        }
    }
}
