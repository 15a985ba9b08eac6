package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.journal.format.Payloads;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JsonLinesTest {

    @TempDir
    Path tmp;

    static String export(Path dir) throws Exception {
        try (JournalReader r = JournalReader.open(dir)) {
            StringWriter out = new StringWriter();
            JsonLines.export(r, out);
            return out.toString();
        }
    }

    static Path write(Path file, String... lines) throws Exception {
        Files.writeString(file, String.join("\n", lines) + "\n", StandardCharsets.UTF_8);
        return file;
    }

    @Test
    void exports_one_snake_case_object_per_entry() throws Exception {
        Path dir = tmp.resolve("P1");
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            long seq = w.appendInput(Samples.events().getFirst());
            w.appendDerived(seq, new Effect.PhaseChanged(Samples.RID, null, RequestPhase.ADMITTED, "admitted"));
        }
        List<String> lines = export(dir).lines().toList();
        assertThat(lines).hasSize(3);
        assertThat(lines.get(0)).startsWith("{\"seq\":0,\"kind\":\"header\",\"type\":\"header\",\"format_version\":2,"
                + "\"node_id\":\"P1\",\"origin\":\"samples\",\"kv_role\":\"kv_producer\",\"transfer_mode\":\"WRITE\","
                + "\"host_ip\":\"10.0.0.1\",\"handshake_port\":\"6301\",\"notify_port\":\"61005\",\"dp_rank\":1,");
        assertThat(lines.get(1)).isEqualTo("{\"seq\":1,\"kind\":\"input\",\"type\":\"request_admitted\",\"at_ns\":1000000000,"
                + "\"request_id\":\"" + Samples.RID + "\",\"num_prompt_tokens\":48,\"prompt_token_ids_len\":48,"
                + "\"kv_transfer_params\":{\"remote_dp_size\":1,\"remote_tp_size\":1,\"transfer_id\":\"" + Samples.TID
                + "\",\"do_remote_decode\":true,\"do_remote_prefill\":false,\"remote_engine_id\":null,"
                + "\"remote_block_ids\":null,\"client_extra\":{\"ratio\":0.5,\"none\":null,\"list\":[1,\"two\",[3]]}}}");
        assertThat(lines.get(2)).isEqualTo("{\"seq\":2,\"kind\":\"derived\",\"type\":\"phase_changed\",\"at_ns\":1000000000,"
                + "\"cause_seq\":1,\"request_id\":\"" + Samples.RID + "\",\"from\":null,\"to\":\"ADMITTED\",\"reason\":\"admitted\"}");
    }

    @Test
    void export_then_import_gives_identical_entries_for_every_type() throws Exception {
        Path dir = tmp.resolve("src");
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            for (Effect f : Samples.effects()) {
                w.appendDerived(0, f);
            }
            for (NodeEvent e : Samples.events()) {
                w.appendApplied(e, Samples.effects().subList(0, 3));
            }
        }
        String text = export(dir);
        Path file = Files.writeString(tmp.resolve("all.jsonl"), text);
        JsonLines.ImportResult res = JsonLines.importFile(file, tmp.resolve("copy"), null);
        assertThat(res.headerFromFile()).isTrue();
        assertThat(res.appended()).isFalse();
        assertThat(res.firstSeq()).isEqualTo(1);
        assertThat(res.entries()).isEqualTo(text.lines().count() - 1);
        assertThat(export(tmp.resolve("copy"))).isEqualTo(text);
        assertSameEntries(dir, tmp.resolve("copy"));
    }

    static void assertSameEntries(Path a, Path b) {
        List<JournalEntry> x = JournalTest.readAll(a);
        List<JournalEntry> y = JournalTest.readAll(b);
        assertThat(y).hasSameSizeAs(x);
        for (int i = 0; i < x.size(); i++) {
            JournalEntry p = x.get(i);
            JournalEntry q = y.get(i);
            assertThat(q.seq()).isEqualTo(p.seq());
            assertThat(q.atNs()).isEqualTo(p.atNs());
            assertThat(q.getClass()).isEqualTo(p.getClass());
            switch (p) {
                case JournalEntry.Header h -> assertThat(((JournalEntry.Header) q).header().differences(h.header())).isEmpty();
                case JournalEntry.Input in -> assertThat(Payloads.same(in.event(), ((JournalEntry.Input) q).event()))
                        .as("seq %d", p.seq()).isTrue();
                case JournalEntry.Derived d -> {
                    assertThat(((JournalEntry.Derived) q).causeSeq()).isEqualTo(d.causeSeq());
                    assertThat(Payloads.same(d.effect(), ((JournalEntry.Derived) q).effect())).as("seq %d", p.seq()).isTrue();
                }
                case JournalEntry.Proxy px -> assertThat(Payloads.same(px.event(), ((JournalEntry.Proxy) q).event()))
                        .as("seq %d", p.seq()).isTrue();
                case JournalEntry.Unknown u -> assertThat(((JournalEntry.Unknown) q).bytes()).isEqualTo(u.bytes());
            }
        }
    }

    @Test
    void lines_from_another_tool_may_leave_out_seq_kind_cause_and_time_of_derived_entries() throws Exception {
        Path file = write(tmp.resolve("engine.jsonl"),
                "{\"type\":\"header\",\"node_id\":\"D3\",\"kv_role\":\"kv_consumer\",\"transfer_mode\":\"READ\",\"tp_size\":2}",
                "",
                "{\"type\":\"request_admitted\",\"at_ns\":5,\"request_id\":\"r\",\"num_prompt_tokens\":3,"
                        + "\"prompt_token_ids\":[1,2,3],\"kv_transfer_params\":{\"do_remote_prefill\":true}}",
                "{\"type\":\"phase_changed\",\"request_id\":\"r\",\"from\":null,\"to\":\"ADMITTED\",\"reason\":\"admitted\"}",
                "{\"type\":\"tick\",\"at_ns\":9}");
        Path dir = tmp.resolve("D3");
        JsonLines.ImportResult res = JsonLines.importFile(file, dir, null);
        assertThat(res.entries()).isEqualTo(3);
        try (JournalReader r = JournalReader.open(dir)) {
            assertThat(r.header().role()).isEqualTo(Role.CONSUMER);
            assertThat(r.header().mode()).isEqualTo(TransferMode.READ);
            assertThat(r.header().config().tpSize()).isEqualTo(2);
            assertThat(r.header().profile()).isEqualTo("newest");
            List<JournalEntry> all = new ArrayList<>();
            r.forEach(all::add);
            assertThat(all.get(1)).isInstanceOf(JournalEntry.Input.class);
            assertThat(((NodeEvent.RequestAdmitted) ((JournalEntry.Input) all.get(1)).event()).promptTokenIds()).isEqualTo(3);
            assertThat(all.get(2)).isEqualTo(new JournalEntry.Derived(2, 1, 5,
                    new Effect.PhaseChanged("r", null, RequestPhase.ADMITTED, "admitted")));
            assertThat(all.get(3)).isEqualTo(new JournalEntry.Input(3, 9, new NodeEvent.Tick(9)));
        }
    }

    /**
     * A vLLM bridge recording's header says which vLLM and which inner connector made it; the keys
     * are kept through the journal and written back on export, and a header without them reads
     * them as unknown.
     */
    @Test
    void a_recording_header_keeps_the_vllm_version_commit_and_inner_connector() throws Exception {
        Path file = write(tmp.resolve("rec.jsonl"),
                "{\"kind\":\"header\",\"type\":\"header\",\"node_id\":\"P0-10.0.0.7-6301\",\"kv_role\":\"kv_producer\","
                        + "\"transfer_mode\":\"READ\",\"vllm_version\":\"0.11.1.dev7+g239b5ff30\",\"vllm_commit\":\"239b5ff30\","
                        + "\"inner_connector\":\"vllm.distributed.kv_transfer.kv_connector.v1.moriio.moriio_connector.MoRIIOConnector\"}",
                "{\"type\":\"tick\",\"at_ns\":9}");
        Path dir = tmp.resolve("P0");
        JsonLines.importFile(file, dir, null);
        try (JournalReader r = JournalReader.open(dir)) {
            assertThat(r.header().nodeId()).isEqualTo("P0-10.0.0.7-6301");
            assertThat(r.header().vllmVersion()).isEqualTo("0.11.1.dev7+g239b5ff30");
            assertThat(r.header().vllmCommit()).isEqualTo("239b5ff30");
            assertThat(r.header().innerConnector())
                    .isEqualTo("vllm.distributed.kv_transfer.kv_connector.v1.moriio.moriio_connector.MoRIIOConnector");
            assertThat(r.header().describe()).contains(" vllm=0.11.1.dev7+g239b5ff30 vllm_commit=239b5ff30 inner=");
        }
        String exported = export(dir);
        assertThat(exported).contains("\"origin\":\"\",\"vllm_version\":\"0.11.1.dev7+g239b5ff30\",\"vllm_commit\":\"239b5ff30\","
                + "\"inner_connector\":\"vllm.distributed.kv_transfer.kv_connector.v1.moriio.moriio_connector.MoRIIOConnector\",");
        Path again = tmp.resolve("again");
        JsonLines.importFile(write(tmp.resolve("exported.jsonl"), exported.strip()), again, null);
        try (JournalReader r = JournalReader.open(again)) {
            assertThat(r.header().vllmCommit()).isEqualTo("239b5ff30");
        }
        JsonLines.importFile(write(tmp.resolve("old.jsonl"),
                "{\"type\":\"header\",\"node_id\":\"P0\",\"kv_role\":\"kv_producer\",\"transfer_mode\":\"WRITE\"}"),
                tmp.resolve("old"), null);
        try (JournalReader r = JournalReader.open(tmp.resolve("old"))) {
            assertThat(r.header().vllmVersion()).isNull();
            assertThat(r.header().vllmCommit()).isNull();
            assertThat(r.header().innerConnector()).isNull();
        }
        assertThat(export(tmp.resolve("old"))).doesNotContain("vllm_").doesNotContain("inner_connector");
        assertThatThrownBy(() -> JsonLines.importFile(write(tmp.resolve("bad.jsonl"),
                "{\"type\":\"header\",\"node_id\":\"P0\",\"kv_role\":\"kv_producer\",\"transfer_mode\":\"WRITE\","
                        + "\"vllm_version\":11}"), tmp.resolve("bad"), null))
                .hasMessageContaining("vllm_version must be a string");
    }

    /**
     * {@code scheduled_new_reqs} and {@code preempted_req_ids} of a step: absent (a recording that
     * predates them) reads as not recorded, null; empty lists stay empty; values round-trip.
     */
    @Test
    void a_step_without_new_or_preempted_requests_reads_them_as_not_recorded() throws Exception {
        Path file = write(tmp.resolve("steps.jsonl"),
                "{\"type\":\"header\",\"node_id\":\"D0\",\"kv_role\":\"kv_consumer\",\"transfer_mode\":\"WRITE\"}",
                "{\"type\":\"step_scheduled\",\"at_ns\":5,\"step\":1,\"scheduled_cached_reqs\":[]}",
                "{\"type\":\"step_scheduled\",\"at_ns\":6,\"step\":2,\"scheduled_cached_reqs\":[],\"scheduled_new_reqs\":[],"
                        + "\"preempted_req_ids\":[]}",
                "{\"type\":\"step_scheduled\",\"at_ns\":7,\"step\":3,\"scheduled_cached_reqs\":[],\"scheduled_new_reqs\":["
                        + "{\"request_id\":\"r1\",\"block_ids\":[[4,5]],\"num_computed_tokens\":0,"
                        + "\"kv_transfer_params\":{\"do_remote_prefill\":true,\"remote_block_ids\":[1,2]}},"
                        + "{\"request_id\":\"r2\",\"block_ids\":[[6],[7]],\"num_computed_tokens\":16,\"kv_transfer_params\":null}]}",
                "{\"type\":\"step_scheduled\",\"at_ns\":8,\"step\":4,\"scheduled_cached_reqs\":[],\"preempted_req_ids\":[\"r2\"]}");
        Path dir = tmp.resolve("D0");
        JsonLines.importFile(file, dir, null);
        List<NodeEvent.StepScheduled> steps = new ArrayList<>();
        try (JournalReader r = JournalReader.open(dir)) {
            r.forEach(e -> {
                if (e instanceof JournalEntry.Input in && in.event() instanceof NodeEvent.StepScheduled s) {
                    steps.add(s);
                }
            });
        }
        assertThat(steps).hasSize(4);
        assertThat(steps.get(0).scheduledNewReqs()).isNull();
        assertThat(steps.get(0).preemptedReqIds()).isNull();
        assertThat(steps.get(1).scheduledNewReqs()).isEmpty();
        assertThat(steps.get(1).preemptedReqIds()).isEmpty();
        NodeEvent.NewRequest r1 = steps.get(2).scheduledNewReqs().get(0);
        assertThat(r1.requestId()).isEqualTo("r1");
        assertThat(r1.blockIds().group(0)).containsExactly(4, 5);
        assertThat(r1.numComputedTokens()).isZero();
        assertThat(r1.params().get("do_remote_prefill")).isEqualTo(true);
        NodeEvent.NewRequest r2 = steps.get(2).scheduledNewReqs().get(1);
        assertThat(r2.blockIds().size()).isEqualTo(2);
        assertThat(r2.numComputedTokens()).isEqualTo(16);
        assertThat(r2.params()).isNull();
        assertThat(steps.get(2).preemptedReqIds()).isNull();
        assertThat(steps.get(3).scheduledNewReqs()).isNull();
        assertThat(steps.get(3).preemptedReqIds()).containsExactly("r2");
        List<String> lines = export(dir).lines().toList();
        assertThat(lines.get(1)).doesNotContain("scheduled_new_reqs").doesNotContain("preempted_req_ids");
        assertThat(lines.get(2)).endsWith("\"scheduled_cached_reqs\":[],\"scheduled_new_reqs\":[],\"preempted_req_ids\":[]}");
        assertThat(lines.get(4)).endsWith("\"scheduled_cached_reqs\":[],\"preempted_req_ids\":[\"r2\"]}");
        assertThat(new JournalEntry.Input(3, 7, steps.get(2)).dissect())
                .contains("new=[r1 blocks=[[4,5]] computed=0 params=").contains("r2 blocks=[[6],[7]] computed=16]");
    }

    /**
     * kv_both is recorded as what it is (moriio-protocol.md 1.1: a consumer scheduler and a
     * producer worker), not refused: it imports, exports as kv_both and replays with the worker
     * modelled as a producer.
     */
    @Test
    void a_kv_both_journal_imports_exports_and_replays_as_kv_both() throws Exception {
        Path file = write(tmp.resolve("both.jsonl"),
                "{\"type\":\"header\",\"node_id\":\"B0\",\"kv_role\":\"kv_both\",\"transfer_mode\":\"WRITE\"}",
                "{\"type\":\"write_done_received\",\"at_ns\":5,\"transfer_id\":\"tx-1\"}");
        Path dir = tmp.resolve("B0");
        JsonLines.importFile(file, dir, null);
        try (JournalReader r = JournalReader.open(dir)) {
            assertThat(r.header().role()).isEqualTo(Role.BOTH);
            assertThat(r.header().config().isProducer()).as("scheduler side").isFalse();
            assertThat(r.header().config().workerIsProducer()).as("worker side").isTrue();
        }
        assertThat(export(dir)).contains("\"kv_role\":\"kv_both\"");
        List<String> kinds = new ArrayList<>();
        try (JournalReader r = JournalReader.open(dir)) {
            var config = r.header().config();
            io.kvledger.core.node.NodeReducer.startupChecks(config).forEach(e -> kinds.add(((Effect.Anomaly) e).kind().name()));
            var state = io.kvledger.core.node.NodeState.initial(config);
            r.forEach(e -> {
                if (e instanceof JournalEntry.Input in) {
                    io.kvledger.core.node.NodeReducer.apply(state, in.event()).effects().stream()
                            .filter(x -> x instanceof Effect.Anomaly).forEach(x -> kinds.add(((Effect.Anomaly) x).kind().name()));
                }
            });
        }
        // the producer worker's listener asserts on a write_done (the consumer scheduler asked for it)
        assertThat(kinds).containsExactly("KV_BOTH_ROLE_ASYMMETRY", "NOTIFY_ROLE_MISMATCH", "LISTENER_WOULD_DIE_IN_PYTHON");
    }

    @Test
    void malformed_lines_are_all_reported_with_their_number_and_nothing_is_written() throws Exception {
        Path file = write(tmp.resolve("bad.jsonl"),
                JsonLines.toJson(new JournalEntry.Header(0, Samples.header())),
                "{\"seq\":1,\"kind\":\"input\",\"type\":\"tick\",\"at_ns\":1}",
                "{\"seq\":2,\"type\":\"tick\",\"at_ns\":2,}",
                "{\"seq\":3,\"type\":\"tik\",\"at_ns\":3}",
                "{\"seq\":4,\"type\":\"layer_saved\",\"at_ns\":4}",
                "{\"seq\":1,\"type\":\"tick\",\"at_ns\":5}",
                "{\"seq\":6,\"type\":\"stale_ack_dropped\",\"cause_seq\":5,\"request_id\":\"r\"}",
                "{\"seq\":7,\"kind\":\"derived\",\"type\":\"tick\",\"at_ns\":6}",
                "[1,2]",
                "{\"type\":\"header\",\"node_id\":\"x\",\"kv_role\":\"kv_consumer\",\"transfer_mode\":\"READ\"}",
                "{\"seq\":9,\"type\":\"matched_tokens_queried\",\"at_ns\":9,\"request_id\":\"r\",\"num_computed_tokens\":1.5}");
        Path dir = tmp.resolve("never");
        assertThatThrownBy(() -> JsonLines.importFile(file, dir, null))
                .isInstanceOfSatisfying(JsonLinesException.class, e -> {
                    assertThat(e.total()).isEqualTo(9);
                    assertThat(e.errors()).extracting(JsonLinesException.LineError::line)
                            .containsExactly(3L, 4L, 5L, 6L, 7L, 8L, 9L, 10L, 11L);
                    assertThat(e.errors().get(0).reason()).isEqualTo("expected a string key but found '}' at column 34");
                    assertThat(e.errors().get(1).reason()).isEqualTo("unknown type \"tik\"");
                    assertThat(e.errors().get(2).reason()).isEqualTo("missing field \"layer_name\"");
                    assertThat(e.errors().get(3).reason()).isEqualTo("seq 1 is not greater than the seq before it (1)");
                    assertThat(e.errors().get(4).reason()).isEqualTo("cause_seq 5 is not the seq of an input line above it");
                    assertThat(e.errors().get(5).reason()).isEqualTo("tick is an input type, not derived");
                    assertThat(e.errors().get(6).reason()).isEqualTo("expected a JSON object");
                    assertThat(e.errors().get(7).reason()).isEqualTo("a header is only allowed on the first line");
                    assertThat(e.errors().get(8).reason()).isEqualTo("num_computed_tokens: expected an integer, found a float");
                    assertThat(e.getMessage()).startsWith(file + ": 9 bad lines, nothing imported\n  line 3: ");
                });
        assertThat(dir).doesNotExist();
    }

    @Test
    void a_file_without_a_header_needs_one_given() throws Exception {
        Path file = write(tmp.resolve("no-header.jsonl"), "{\"type\":\"tick\",\"at_ns\":1}");
        assertThatThrownBy(() -> JsonLines.importFile(file, tmp.resolve("x"), null))
                .isInstanceOfSatisfying(JsonLinesException.class, e -> assertThat(e.errors()).singleElement()
                        .isEqualTo(new JsonLinesException.LineError(1, "no header: the first line is not a header and none was given")));
        JsonLines.ImportResult res = JsonLines.importFile(file, tmp.resolve("x"), Samples.header());
        assertThat(res.headerFromFile()).isFalse();
        assertThat(JournalTest.readAll(tmp.resolve("x"))).hasSize(2);
    }

    @Test
    void bad_header_lines_and_bad_utf8_are_reported() throws Exception {
        Path file = write(tmp.resolve("h.jsonl"),
                "{\"type\":\"header\",\"node_id\":\"x\",\"kv_role\":\"kv_prefill\",\"transfer_mode\":\"READ\"}");
        assertThatThrownBy(() -> JsonLines.importFile(file, tmp.resolve("x"), null))
                .isInstanceOfSatisfying(JsonLinesException.class, e -> assertThat(e.errors().getFirst().reason())
                        .isEqualTo("kv_role must be kv_producer, kv_consumer or kv_both, found \"kv_prefill\""));
        Path typo = write(tmp.resolve("t.jsonl"),
                "{\"type\":\"header\",\"node_id\":\"x\",\"kv_role\":\"kv_consumer\",\"transfer_mode\":\"READ\",\"dp_rnak\":1}");
        assertThatThrownBy(() -> JsonLines.importFile(typo, tmp.resolve("x"), null))
                .isInstanceOfSatisfying(JsonLinesException.class, e -> assertThat(e.errors().getFirst().reason())
                        .isEqualTo("unknown header key \"dp_rnak\""));
        Path bin = tmp.resolve("bin.jsonl");
        Files.write(bin, ("{\"type\":\"tick\",\"at_ns\":1}\n\"\u00ff\u00fe\"\n{\"type\":\"tick\",\"at_ns\":2}\n")
                .getBytes(StandardCharsets.ISO_8859_1));
        assertThatThrownBy(() -> JsonLines.importFile(bin, tmp.resolve("x"), Samples.header()))
                .isInstanceOfSatisfying(JsonLinesException.class, e -> assertThat(e.errors()).singleElement()
                        .isEqualTo(new JsonLinesException.LineError(2, "not valid UTF-8")));
        assertThat(tmp.resolve("x")).doesNotExist();
    }

    @Test
    void importing_into_an_existing_journal_appends_and_refuses_another_node() throws Exception {
        Path dir = tmp.resolve("P1");
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            w.appendInput(new NodeEvent.Tick(1));
        }
        Path file = write(tmp.resolve("more.jsonl"), "{\"type\":\"tick\",\"at_ns\":2}",
                "{\"type\":\"stale_ack_dropped\",\"request_id\":\"r\"}");
        JsonLines.ImportResult res = JsonLines.importFile(file, dir, Samples.header());
        assertThat(res.appended()).isTrue();
        assertThat(res.firstSeq()).isEqualTo(2);
        assertThat(res.lastSeq()).isEqualTo(3);
        assertThat(JournalTest.readAll(dir).get(3)).isEqualTo(new JournalEntry.Derived(3, 2, 2, new Effect.StaleAckDropped("r")));
        Path other = write(tmp.resolve("other.jsonl"),
                "{\"type\":\"header\",\"node_id\":\"D0\",\"kv_role\":\"kv_consumer\",\"transfer_mode\":\"READ\"}",
                "{\"type\":\"tick\",\"at_ns\":3}");
        assertThatThrownBy(() -> JsonLines.importFile(other, dir, null)).isInstanceOf(JournalException.class)
                .hasMessageContaining("node_id: \"P1\" vs \"D0\"");
        assertThat(JournalTest.readAll(dir)).hasSize(4);
    }

    /** A journal of the sample events exported: the header line, then one line per input. */
    private String sampleExport() throws Exception {
        Path dir = tmp.resolve("sample");
        if (!Files.isDirectory(dir)) {
            try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
                for (NodeEvent e : Samples.events()) {
                    w.appendInput(e);
                }
            }
        }
        return export(dir);
    }

    private static int utf8Length(String s) {
        return s.getBytes(StandardCharsets.UTF_8).length;
    }

    @Test
    void a_last_line_cut_short_is_left_out_and_said_and_the_lines_before_it_import() throws Exception {
        List<String> lines = sampleExport().lines().toList();
        assertThat(lines.size()).isGreaterThan(3);
        String whole = String.join("\n", lines.subList(0, lines.size() - 1)) + "\n";
        String last = lines.getLast();
        for (int cut : new int[] {1, last.length() / 2, last.length() - 1}) {
            Path file = tmp.resolve("cut-" + cut + ".jsonl");
            Files.writeString(file, whole + last.substring(0, cut), StandardCharsets.UTF_8);
            Path dir = tmp.resolve("cut-" + cut);
            JsonLines.ImportResult r = JsonLines.importFile(file, dir, null);
            assertThat(r.cut()).isEqualTo(new JsonLines.CutTail(lines.size(), utf8Length(last.substring(0, cut)), 0));
            assertThat(r.entries()).isEqualTo(lines.size() - 2);
            assertThat(export(dir)).isEqualTo(whole);
            assertThat(r.cut().describe(file)).startsWith(file + ": left out its last line (line " + lines.size() + ", ");
        }
        // a cut in the middle of a character: not UTF-8, still a cut line
        Path split = tmp.resolve("split.jsonl");
        byte[] head = (whole + "{\"type\":\"tick\",\"at_ns\":9,\"x\":\"\u00e9").getBytes(StandardCharsets.UTF_8);
        Files.write(split, java.util.Arrays.copyOf(head, head.length - 1));
        assertThat(JsonLines.importFile(split, tmp.resolve("split"), null).cut().line()).isEqualTo(lines.size());
        // a header cut short is the whole file: nothing to import, and the error says why
        Path headerCut = tmp.resolve("header-cut.jsonl");
        Files.writeString(headerCut, lines.getFirst().substring(0, 40), StandardCharsets.UTF_8);
        assertThatThrownBy(() -> JsonLines.importFile(headerCut, tmp.resolve("header-cut"), null))
                .isInstanceOfSatisfying(JsonLinesException.class, e -> assertThat(e.errors()).singleElement()
                        .isEqualTo(new JsonLinesException.LineError(1, "no header: the file's only line (40 bytes without "
                                + "a newline) was cut short before it was written whole")));
        Path empty = Files.write(tmp.resolve("empty.jsonl"), new byte[0]);
        assertThatThrownBy(() -> JsonLines.importFile(empty, tmp.resolve("empty"), null))
                .isInstanceOfSatisfying(JsonLinesException.class, e -> assertThat(e.errors().getFirst().reason())
                        .isEqualTo("no header: the file holds no line"));
        // the whole last line without its newline is read, and nothing is said
        Path noNewline = tmp.resolve("no-newline.jsonl");
        Files.writeString(noNewline, whole + last, StandardCharsets.UTF_8);
        JsonLines.ImportResult all = JsonLines.importFile(noNewline, tmp.resolve("no-newline"), null);
        assertThat(all.cut()).isNull();
        assertThat(all.entries()).isEqualTo(lines.size() - 1);
        // and so is a blank one: skipped, as blank lines are
        Path blank = tmp.resolve("blank-end.jsonl");
        Files.writeString(blank, whole + last + "\n  \r", StandardCharsets.UTF_8);
        assertThat(JsonLines.importFile(blank, tmp.resolve("blank-end"), null).cut()).isNull();
    }

    @Test
    void zero_bytes_at_the_end_are_left_out_but_a_bad_line_before_the_end_is_still_refused() throws Exception {
        String text = sampleExport();
        int lines = (int) text.lines().count();
        byte[] data = text.getBytes(StandardCharsets.UTF_8);
        Path zeros = tmp.resolve("zeros.jsonl");
        Files.write(zeros, java.util.Arrays.copyOf(data, data.length + 70_000));
        JsonLines.ImportResult r = JsonLines.importFile(zeros, tmp.resolve("zeros"), null);
        assertThat(r.cut()).isEqualTo(new JsonLines.CutTail(0, 0, 70_000));
        assertThat(r.entries()).isEqualTo(lines - 1);
        assertThat(r.cut().describe(zeros)).isEqualTo(zeros + ": left out 70000 zero bytes at its end: what a write cut "
                + "short leaves (a recording process killed, or still writing, or a crash before the file's last blocks "
                + "were written); the lines before them are read");
        // a cut line, then zeros (the file's size written before its last block)
        Path both = tmp.resolve("both.jsonl");
        Files.write(both, java.util.Arrays.copyOf(java.util.Arrays.copyOf(data, data.length - 10), data.length + 4086));
        assertThat(JsonLines.importFile(both, tmp.resolve("both"), null).cut())
                .isEqualTo(new JsonLines.CutTail(lines, utf8Length(text.lines().toList().getLast()) - 9, 4096));
        // zeros with lines after them are damage, not a cut
        Path hole = tmp.resolve("hole.jsonl");
        Files.write(hole, (text + "\0\0\0\n{\"type\":\"tick\",\"at_ns\":9999999999999}\n").getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(() -> JsonLines.importFile(hole, tmp.resolve("hole"), null))
                .isInstanceOfSatisfying(JsonLinesException.class, e -> assertThat(e.errors()).extracting(JsonLinesException.LineError::line)
                        .containsExactly((long) lines + 1));
        // a last line that does not parse but has its newline was written whole: a bad line
        Path bad = tmp.resolve("bad-last.jsonl");
        Files.writeString(bad, text + "{\"type\":\"tick\",\n", StandardCharsets.UTF_8);
        assertThatThrownBy(() -> JsonLines.importFile(bad, tmp.resolve("bad-last"), null))
                .isInstanceOfSatisfying(JsonLinesException.class, e -> assertThat(e.errors()).extracting(JsonLinesException.LineError::line)
                        .containsExactly((long) lines + 1));
        assertThat(tmp.resolve("hole")).doesNotExist();
        assertThat(tmp.resolve("bad-last")).doesNotExist();
    }

    @Test
    void a_byte_order_mark_is_skipped_and_a_bad_first_line_is_reported_once() throws Exception {
        String text = sampleExport();
        Path bom = tmp.resolve("bom.jsonl");
        Files.write(bom, ("\uFEFF" + text).getBytes(StandardCharsets.UTF_8));
        JsonLines.importFile(bom, tmp.resolve("bom"), null);
        assertThat(export(tmp.resolve("bom"))).isEqualTo(text);
        Path garbage = write(tmp.resolve("garbage.jsonl"), "garbage", "{\"type\":\"tick\",\"at_ns\":1}");
        assertThatThrownBy(() -> JsonLines.importFile(garbage, tmp.resolve("g"), null))
                .isInstanceOfSatisfying(JsonLinesException.class, e -> assertThat(e.errors()).singleElement()
                        .satisfies(l -> assertThat(l.line()).isEqualTo(1)));
    }

    @Test
    void a_second_pass_reads_no_further_than_the_first_over_a_file_still_growing() throws Exception {
        List<String> lines = sampleExport().lines().toList();
        Path file = tmp.resolve("growing.jsonl");
        String two = lines.get(0) + "\n" + lines.get(1) + "\n";
        // the first pass saw two lines and half the third (a writer mid-write) ...
        Files.writeString(file, two + lines.get(2).substring(0, 10), StandardCharsets.UTF_8);
        long seen;
        try (JsonLines.LineReader first = new JsonLines.LineReader(file)) {
            assertThat(first.next()).isEqualTo(lines.get(0));
            assertThat(first.next()).isEqualTo(lines.get(1));
            assertThat(first.next()).isNull();
            assertThat(first.cutTail()).isEqualTo(new JsonLines.CutTail(3, 10, 0));
            seen = first.size();
        }
        // ... the writer finished that line and wrote more; a pass limited to what the first saw
        // reads what it read
        Files.writeString(file, two + String.join("\n", lines.subList(2, lines.size())) + "\n", StandardCharsets.UTF_8);
        try (JsonLines.LineReader second = new JsonLines.LineReader(file, seen)) {
            assertThat(second.next()).isEqualTo(lines.get(0));
            assertThat(second.next()).isEqualTo(lines.get(1));
            assertThat(second.next()).isNull();
            assertThat(second.cutTail()).isEqualTo(new JsonLines.CutTail(3, 10, 0));
        }
    }
}
