package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The vLLM bridge's repeat lines: a run of engine steps that repeat the step before them, written
 * as one line, reads as exactly the lines it stands for.
 */
class JsonLinesRepeatTest {

    @TempDir
    Path tmp;

    static final String HEADER = "{\"kind\":\"header\",\"node_id\":\"D0\",\"kv_role\":\"kv_consumer\",\"transfer_mode\":\"READ\","
            + "\"origin\":\"vllm-bridge test recorder scheduler\"}";

    /** One idle scheduler step as the recorder writes it. */
    static List<String> step(long step, long at) {
        return List.of(
                "{\"kind\":\"input\",\"type\":\"step_scheduled\",\"at_ns\":" + at + ",\"step\":" + step
                        + ",\"scheduled_cached_reqs\":[]}",
                "{\"kind\":\"derived\",\"type\":\"metadata_built\",\"step\":" + step
                        + ",\"reqs_to_recv\":[],\"reqs_to_save\":[],\"reqs_to_send\":[],\"mapping_size\":1}",
                "{\"kind\":\"input\",\"type\":\"connector_output_received\",\"at_ns\":" + (at + 40_000)
                        + ",\"finished_sending\":null,\"finished_recving\":null}");
    }

    static String repeat(int lines, long times, long... deltas) {
        StringBuilder b = new StringBuilder("{\"kind\":\"repeat\",\"lines\":").append(lines).append(",\"times\":")
                .append(times).append(",\"at_ns_deltas\":[");
        for (int i = 0; i < deltas.length; i++) {
            b.append(i > 0 ? "," : "").append(deltas[i]);
        }
        return b.append("]}").toString();
    }

    Path write(String name, List<String> lines) throws Exception {
        return Files.writeString(tmp.resolve(name), String.join("\n", lines) + "\n", StandardCharsets.UTF_8);
    }

    static final String ADMITTED = "{\"kind\":\"input\",\"type\":\"request_admitted\",\"at_ns\":500,\"request_id\":\"r1\","
            + "\"num_prompt_tokens\":3,\"kv_transfer_params\":{\"do_remote_prefill\":true}}";

    @Test
    void repeat_lines_import_as_the_lines_they_stand_for() throws Exception {
        // steps 1..7, 1 ms apart (plus a little): steps 2..4 in one repeat line, 5..7 in the next
        List<String> plain = new ArrayList<>(List.of(HEADER, ADMITTED));
        long[] at = new long[8];
        for (int s = 1; s <= 7; s++) {
            at[s] = s * 1_000_000L + s * 13;
            plain.addAll(step(s, at[s]));
        }
        List<String> folded = new ArrayList<>(List.of(HEADER, ADMITTED));
        folded.addAll(step(1, at[1]));
        long prev = at[1] + 40_000;
        List<Long> d = new ArrayList<>();
        for (int s = 2; s <= 7; s++) {
            d.add(at[s] - prev);
            d.add(40_000L);
            prev = at[s] + 40_000;
        }
        folded.add(repeat(3, 3, d.subList(0, 6).stream().mapToLong(Long::longValue).toArray()));
        folded.add(repeat(3, 3, d.subList(6, 12).stream().mapToLong(Long::longValue).toArray()));
        JsonLines.ImportResult a = JsonLines.importFile(write("plain.jsonl", plain), tmp.resolve("plain"), null);
        JsonLines.ImportResult b = JsonLines.importFile(write("folded.jsonl", folded), tmp.resolve("folded"), null);
        assertThat(b.entries()).isEqualTo(a.entries()).isEqualTo(1 + 7 * 3);
        assertThat(JsonLinesTest.export(tmp.resolve("folded"))).isEqualTo(JsonLinesTest.export(tmp.resolve("plain")));
        JsonLinesTest.assertSameEntries(tmp.resolve("plain"), tmp.resolve("folded"));
    }

    @Test
    void a_repeat_line_that_does_not_fit_the_lines_above_it_is_a_bad_line_with_its_number() throws Exception {
        List<String> lines = new ArrayList<>(List.of(HEADER));
        lines.add(repeat(1, 1, 5));                                                    // 2: nothing above
        lines.addAll(step(1, 1_000_000));                                              // 3-5
        lines.add(repeat(3, 2, 1, 2, 3));                                              // 6: 4 deltas needed
        lines.add(repeat(4, 1, 1, 2));                                                 // 7: fine (admitted? no: 3 + repeat)
        lines.add("{\"kind\":\"repeat\",\"lines\":3,\"times\":1,\"at_ns_deltas\":[1,-2]}"); // 8: negative
        lines.add("{\"kind\":\"repeat\",\"lines\":65,\"times\":1,\"at_ns_deltas\":[]}");   // 9: too many lines
        lines.add("{\"kind\":\"repeat\",\"lines\":3,\"times\":0,\"at_ns_deltas\":[]}");    // 10: no times
        lines.add("{\"kind\":\"repeat\",\"lines\":3,\"times\":1,\"at_ns_deltas\":[1,2],\"step\":4}"); // 11
        lines.add("{\"seq\":9,\"kind\":\"input\",\"type\":\"tick\",\"at_ns\":9000000}");  // 12
        lines.add(repeat(1, 1, 5));                                                    // 13: repeats a seq
        Path file = write("bad.jsonl", lines);
        assertThatThrownBy(() -> JsonLines.importFile(file, tmp.resolve("never"), null))
                .isInstanceOfSatisfying(JsonLinesException.class, e -> {
                    assertThat(e.errors()).extracting(JsonLinesException.LineError::line)
                            .containsExactly(2L, 6L, 7L, 8L, 9L, 10L, 11L, 13L);
                    assertThat(e.errors().get(0).reason()).contains("repeats 1 lines, and only 0 entry line(s) are above it");
                    assertThat(e.errors().get(1).reason()).contains("2 times 2 input(s) needs 4 at_ns_deltas, found 3");
                    assertThat(e.errors().get(2).reason()).contains("repeats 4 lines, and only 3");
                    assertThat(e.errors().get(3).reason()).contains("at_ns_deltas[1] must be an integer of 0 or more");
                    assertThat(e.errors().get(4).reason()).contains("lines must be 1 to 64");
                    assertThat(e.errors().get(5).reason()).contains("times must be 1 or more");
                    assertThat(e.errors().get(6).reason()).contains("no field \"step\"");
                    assertThat(e.errors().get(7).reason()).contains("cannot repeat lines that carry seq");
                });
        assertThat(tmp.resolve("never")).doesNotExist();
    }

    @Test
    void a_repeat_line_cut_short_at_the_end_is_left_out_and_a_whole_one_without_newline_is_read() throws Exception {
        List<String> lines = new ArrayList<>(List.of(HEADER));
        lines.addAll(step(1, 1_000_000));
        String whole = repeat(3, 1, 960_000, 40_000);
        Path cut = tmp.resolve("cut.jsonl");
        Files.writeString(cut, String.join("\n", lines) + "\n" + whole.substring(0, whole.length() - 5));
        JsonLines.ImportResult r = JsonLines.importFile(cut, tmp.resolve("cut"), null);
        assertThat(r.entries()).isEqualTo(3);
        assertThat(r.cut()).isNotNull();
        assertThat(r.cut().line()).isEqualTo(5);
        Path noNewline = tmp.resolve("whole.jsonl");
        Files.writeString(noNewline, String.join("\n", lines) + "\n" + whole);
        JsonLines.ImportResult w = JsonLines.importFile(noNewline, tmp.resolve("whole"), null);
        assertThat(w.entries()).isEqualTo(6);
        assertThat(w.cut()).isNull();
    }

    @Test
    void parse_line_alone_refuses_a_repeat_line_and_the_parser_unfolds_it_with_steps_and_times() {
        assertThatThrownBy(() -> JsonLines.parseLine(repeat(1, 1, 1))).hasMessageContaining("JsonLines.Parser");
        JsonLines.Parser p = new JsonLines.Parser();
        p.parse(HEADER);
        for (String s : step(7, 1_000)) {
            p.parse(s);
        }
        List<JsonLines.Line> again = p.parse(repeat(3, 2, 10, 20, 30, 40));
        assertThat(again).extracting(JsonLines.Line::atNs)
                .containsExactly(41_010L, Long.MIN_VALUE, 41_030L, 41_060L, Long.MIN_VALUE, 41_100L);
        assertThat(again.get(3).record()).hasToString(new io.kvledger.core.event.NodeEvent.StepScheduled(41_060, 9,
                List.of()).toString());
        // a next repeat line repeats the last copy
        assertThat(p.parse(repeat(3, 1, 1, 1)).get(0).record()).isInstanceOfSatisfying(
                io.kvledger.core.event.NodeEvent.StepScheduled.class, s -> assertThat(s.step()).isEqualTo(10));
        p.reset();
        assertThatThrownBy(() -> p.parse(repeat(3, 1, 1, 1))).hasMessageContaining("only 0 entry line(s)");
    }
}
