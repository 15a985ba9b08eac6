package io.kvledger.journal.format;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.KvParams;
import io.kvledger.journal.Samples;
import io.kvledger.journal.json.Json;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class EntryTypeTest {

    /**
     * The permanent id table. A failure here means an id changed: ids are written to journals and
     * must never change; add new types with new ids instead.
     */
    private static final String PERMANENT_IDS = """
            0 header, 1 request_admitted, 2 matched_tokens_queried, 3 blocks_allocated, 4 step_scheduled, \
            5 request_finished, 6 connector_output_received, 7 load_started, 8 layer_saved, 9 save_waited, \
            10 finished_polled, 11 handshake_completed, 12 handshake_failed, 13 transfer_completed, \
            14 remote_blocks_received, 15 write_done_received, 16 release_received, 17 raw_completion_received, \
            18 frame_rejected, 19 tick, 20 notify_send_failed, 21 shut_down, 22 handshake_voted, 23 kv_caches_registered, 24 forward_done, 100 matched_tokens, \
            101 metadata_built, 102 finish_decision, \
            103 finished_reported, 104 finished_sending_rewritten, 120 send_remote_blocks, 121 send_release, \
            122 send_write_done, 123 send_write_failed, 124 start_handshake, 125 post_write, 126 post_read, \
            140 phase_changed, 141 deferral_started, 142 ack_parked, 143 ack_surfaced, 144 stale_ack_dropped, \
            145 unmapped, 146 anomaly, 200 proxy_started, 201 instance_registered, 202 instance_expired, \
            203 registration_rejected, 204 request_rejected, 205 request_routed, 206 leg_sent, 207 leg_answered, \
            208 leg_failed, 209 leg_cancelled, 210 request_completed, 211 records_dropped""";

    @Test
    void type_ids_and_names_are_the_permanent_ones() {
        String table = Arrays.stream(EntryType.values()).map(t -> t.id() + " " + t.typeName())
                .collect(Collectors.joining(", "));
        assertThat(table).isEqualTo(PERMANENT_IDS);
    }

    @Test
    void every_event_and_effect_record_has_exactly_one_type_in_its_id_range() {
        Set<Class<?>> records = new HashSet<>();
        records.addAll(Arrays.asList(NodeEvent.class.getPermittedSubclasses()));
        // Effect is split into sealed families (HookReply, IoCommand with its Notify and Post, Decision):
        // its records are their leaves
        java.util.ArrayDeque<Class<?>> families = new java.util.ArrayDeque<>(List.of(Effect.class));
        while (!families.isEmpty()) {
            for (Class<?> c : families.poll().getPermittedSubclasses()) {
                if (c.isInterface()) {
                    assertThat(c.isSealed()).as("%s is a sealed family", c).isTrue();
                    families.add(c);
                } else {
                    records.add(c);
                }
            }
        }
        for (Class<?> c : io.kvledger.journal.proxy.ProxyEvent.class.getPermittedSubclasses()) {
            // OfRequest is a sealed family of the request records
            records.addAll(c.isInterface() ? Arrays.asList(c.getPermittedSubclasses()) : List.of(c));
        }
        Set<Class<?>> typed = new HashSet<>();
        for (EntryType t : EntryType.values()) {
            if (t == EntryType.HEADER) {
                continue;
            }
            assertThat(typed.add(t.recordClass())).as("%s registered twice", t.recordClass()).isTrue();
            assertThat(t.kind()).isEqualTo(NodeEvent.class.isAssignableFrom(t.recordClass()) ? EntryKind.INPUT
                    : io.kvledger.journal.proxy.ProxyEvent.class.isAssignableFrom(t.recordClass()) ? EntryKind.PROXY
                    : EntryKind.DERIVED);
            if (t.kind() == EntryKind.INPUT) {
                assertThat(t.id()).as(t.typeName()).isBetween(1, 99);
            } else if (t.kind() == EntryKind.PROXY) {
                assertThat(t.id()).as(t.typeName()).isBetween(200, 239);
            } else {
                assertThat(t.id()).as(t.typeName()).isBetween(100, 199);
            }
            assertThat(t.typeName()).matches("[a-z]+(_[a-z]+)*");
            assertThat(EntryType.byId(t.id())).isSameAs(t);
            assertThat(EntryType.byName(t.typeName())).isSameAs(t);
        }
        assertThat(typed).isEqualTo(records);
        assertThat(EntryType.byId(999)).isNull();
        assertThat(EntryType.byId(-1)).isNull();
    }

    @Test
    void the_samples_cover_every_type_once_in_id_order() {
        List<Object> all = Samples.all();
        List<EntryType> types = all.stream().map(Payloads::typeOf).toList();
        assertThat(types).containsExactlyElementsOf(
                Arrays.stream(EntryType.values()).filter(t -> t != EntryType.HEADER).toList());
    }

    @Test
    void every_sample_round_trips_through_msgpack() {
        for (Object record : Samples.all()) {
            EntryType t = Payloads.typeOf(record);
            long at = record instanceof NodeEvent e ? e.atNs()
                    : record instanceof io.kvledger.journal.proxy.ProxyEvent e ? e.atNs() : 0;
            Object back = Payloads.decode(t, at, Payloads.encode(record));
            assertThat(Payloads.same(record, back)).as("%s", t).isTrue();
            String text = record.toString();
            if (!text.contains("[I@") && !text.contains("[B@")) {
                // an independent check of the records without array components
                assertThat(back).as("%s", t).hasToString(text);
            }
        }
    }

    @Test
    void every_sample_round_trips_through_json_text() {
        for (Object record : Samples.all()) {
            EntryType t = Payloads.typeOf(record);
            long at = record instanceof NodeEvent e ? e.atNs()
                    : record instanceof io.kvledger.journal.proxy.ProxyEvent e ? e.atNs() : 0;
            String text = Json.write(t.toJson(record));
            @SuppressWarnings("unchecked")
            Map<String, Object> parsed = (Map<String, Object>) Json.parse(text);
            Object back = t.fromJson(parsed, at, Set.of());
            assertThat(Payloads.same(record, back)).as("%s: %s", t, text).isTrue();
            assertThat(parsed.keySet()).as(t.typeName()).containsExactlyElementsOf(t.schema().fields().stream()
                    .filter(f -> !f.omitNull() || parsed.containsKey(f.name())).map(Field::name).toList());
        }
    }

    @Test
    void field_names_are_snake_case_and_never_envelope_keys() {
        for (EntryType t : EntryType.values()) {
            if (t.schema() == null) {
                continue;
            }
            for (Field f : t.schema().fields()) {
                assertThat(f.name()).as(t.typeName()).matches("[a-z]+(_[a-z]+)*")
                        .isNotIn("seq", "kind", "type", "at_ns", "cause_seq");
            }
        }
    }

    @Test
    void every_dissector_renders_one_line_starting_with_the_type_name() {
        for (Object record : Samples.all()) {
            String line = Payloads.dissect(record);
            assertThat(line).as("%s", record).startsWith(Payloads.typeOf(record).typeName()).doesNotContain("\n");
        }
        assertThat(Payloads.dissect(Samples.effects().get(12)))
                .isEqualTo("phase_changed rid=" + Samples.RID + " PREFILLING -> DEFERRED_FREE (delay_free)");
        assertThat(Payloads.dissect(Samples.effects().get(18))).isEqualTo("anomaly DEFERRAL_REAPED [HANG_RISK, bug class 7]"
                + " rid=" + Samples.RID + " tid=" + Samples.TID + ": no ACK within defer_timeout=30s");
        assertThat(Payloads.dissect(Samples.events().get(2))).isEqualTo(
                "blocks_allocated rid=" + Samples.RID + " blocks=[[7,8,9]] external=0");
        assertThat(Payloads.dissect(new NodeEvent.Tick(5))).isEqualTo("tick");
    }

    @Test
    void long_block_lists_are_cut_in_dissections() {
        int[] ids = new int[50];
        Arrays.setAll(ids, i -> i);
        assertThat(Render.ints(ids)).isEqualTo("[0,1,2,3,4,5,6,7,...(+42)]");
    }

    @Test
    void content_equality_ignores_integer_width_but_not_values() {
        var a = new Effect.FinishDecision("r", true, KvParams.of("n", 1L));
        var b = new Effect.FinishDecision("r", true, KvParams.of(Map.of("n", (Object) Integer.valueOf(1))));
        var c = new Effect.FinishDecision("r", true, KvParams.of("n", 2L));
        assertThat(a).isNotEqualTo(b);
        assertThat(Payloads.same(a, b)).isTrue();
        assertThat(Payloads.same(a, c)).isFalse();
        assertThat(Payloads.same(new NodeEvent.Tick(1), new NodeEvent.Tick(2))).isFalse();
        var w1 = new Effect.PostWrite(1, "t", "l", "s", new int[] {1}, new int[] {2});
        var w2 = new Effect.PostWrite(1, "t", "l", "s", new int[] {1}, new int[] {2});
        assertThat(w1).isNotEqualTo(w2);
        assertThat(Payloads.same(w1, w2)).isTrue();
    }

    @Test
    void an_older_payload_without_trailing_fields_reads_with_defaults_and_extra_fields_are_skipped() throws Exception {
        // transfer_completed as an older writer might have written it: status_id and succeeded only.
        byte[] older;
        try (var p = org.msgpack.core.MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(2).packLong(9).packBoolean(true);
            older = p.toByteArray();
        }
        var e = (NodeEvent.TransferCompleted) Payloads.decode(EntryType.TRANSFER_COMPLETED, 77, older);
        assertThat(e).isEqualTo(new NodeEvent.TransferCompleted(77, 9, true, 0, null));
        byte[] newer;
        try (var p = org.msgpack.core.MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(3).packString("k").packString("why").packMapHeader(1).packString("future").packInt(1);
            newer = p.toByteArray();
        }
        assertThat(Payloads.decode(EntryType.HANDSHAKE_FAILED, 5, newer))
                .isEqualTo(new NodeEvent.HandshakeFailed(5, "k", "why"));
    }

    /**
     * {@code admitted_request_id} was added to request_finished after format version 2 shipped: a
     * finish without it writes exactly the bytes and the JSON it wrote before, and an older
     * payload reads as null.
     */
    @Test
    void request_finished_names_an_admitted_id_only_when_it_differs() throws Exception {
        var plain = new NodeEvent.RequestFinished(9, "r-0-956053a4", io.kvledger.core.model.FinishStatus.FINISHED_LENGTH_CAPPED,
                io.kvledger.core.model.BlockGroups.single(1, 2));
        var renamed = new NodeEvent.RequestFinished(9, "r-0-956053a4", io.kvledger.core.model.FinishStatus.FINISHED_LENGTH_CAPPED,
                io.kvledger.core.model.BlockGroups.single(1, 2), "r-0");
        byte[] older;
        try (var p = org.msgpack.core.MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(3).packString("r-0-956053a4").packString("FINISHED_LENGTH_CAPPED");
            p.packArrayHeader(1).packArrayHeader(2).packInt(1).packInt(2);
            older = p.toByteArray();
        }
        assertThat(Payloads.encode(plain)).isEqualTo(older);
        assertThat(Payloads.decode(EntryType.REQUEST_FINISHED, 9, older)).isEqualTo(plain);
        assertThat(Payloads.decode(EntryType.REQUEST_FINISHED, 9, Payloads.encode(renamed))).isEqualTo(renamed);
        assertThat(EntryType.REQUEST_FINISHED.toJson(plain)).doesNotContainKey("admitted_request_id");
        Map<String, Object> json = EntryType.REQUEST_FINISHED.toJson(renamed);
        assertThat(json).containsEntry("admitted_request_id", "r-0");
        @SuppressWarnings("unchecked")
        Map<String, Object> parsed = (Map<String, Object>) Json.parse(Json.write(json));
        assertThat(EntryType.REQUEST_FINISHED.fromJson(parsed, 9, Set.of())).isEqualTo(renamed);
        assertThat(new io.kvledger.journal.JournalEntry.Input(1, 9, renamed).dissect()).endsWith("admitted_as=r-0");
    }

    /**
     * {@code acted}, the answer vLLM acted on when drive mode took it from the inner connector, was
     * added to matched_tokens_queried and request_finished later: written only when there is one
     * (nil in the admitted id's place before it), read back from msgpack and JSON, shown by the
     * dissector; a payload without it reads as null.
     */
    @Test
    void the_answer_vllm_acted_on_travels_with_its_call_and_only_then() throws Exception {
        var blocks = io.kvledger.core.model.BlockGroups.single(1, 2);
        var status = io.kvledger.core.model.FinishStatus.FINISHED_LENGTH_CAPPED;
        var params = io.kvledger.core.model.KvParams.of("do_remote_prefill", true, "remote_block_ids",
                List.of(List.of(1L, 2L)), "transfer_id", "tx-1");
        var finish = new NodeEvent.RequestFinished(9, "r-0", status, blocks, null, new NodeEvent.FinishAnswer(true, params));
        var query = new NodeEvent.MatchedTokensQueried(7, "r-0", 16, new NodeEvent.MatchedAnswer(null, true));
        for (NodeEvent e : List.of(finish, query, new NodeEvent.MatchedTokensQueried(7, "r-0", 16,
                new NodeEvent.MatchedAnswer(24, false)))) {
            assertActedRoundTrips(e);
        }
        try (var u = org.msgpack.core.MessagePack.newDefaultUnpacker(Payloads.encode(finish))) {
            assertThat(u.unpackArrayHeader()).isEqualTo(5);
            u.skipValue();
            u.skipValue();
            u.skipValue();
            assertThat(u.tryUnpackNil()).isTrue(); // no admitted id
        }
        assertThat(EntryType.REQUEST_FINISHED.toJson(finish)).doesNotContainKey("admitted_request_id");
        assertThat(new io.kvledger.journal.JournalEntry.Input(1, 9, finish).dissect())
                .endsWith("acted=delay_free=true params={\"do_remote_prefill\":true,\"remote_block_ids\":[[1,2]],"
                        + "\"transfer_id\":\"tx-1\"}");
        assertThat(new io.kvledger.journal.JournalEntry.Input(1, 7, query).dissect()).endsWith("acted=(None, True)");
        var plain = new NodeEvent.MatchedTokensQueried(7, "r-0", 16);
        assertThat(Payloads.encode(plain)).hasSize(Payloads.encode(query).length - 3); // [nil, true] and a longer header
        assertThat(EntryType.MATCHED_TOKENS_QUERIED.toJson(plain)).doesNotContainKey("acted");
        assertThat(Payloads.decode(EntryType.MATCHED_TOKENS_QUERIED, 7, Payloads.encode(plain))).isEqualTo(plain);
    }

    /**
     * {@code acted} of connector_output_received, the producer's finished_sending vLLM kept from
     * the inner connector, was added later still: written only when there is one, read back from
     * msgpack and JSON, shown by the dissector; an older payload (two fields) reads as null.
     */
    @Test
    void the_freed_set_vllm_acted_on_travels_with_the_output_and_only_then() throws Exception {
        var kept = new NodeEvent.ConnectorOutputReceived(9, List.of("r-0", "r-1"), null,
                new NodeEvent.FreedAnswer(List.of("r-1")));
        var none = new NodeEvent.ConnectorOutputReceived(9, null, null, new NodeEvent.FreedAnswer(null));
        for (NodeEvent e : List.of(kept, none)) {
            assertActedRoundTrips(e);
        }
        assertThat(new io.kvledger.journal.JournalEntry.Input(1, 9, kept).dissect())
                .endsWith("finished_sending=[r-0,r-1] finished_recving=None acted=finished_sending=[r-1]");
        var plain = new NodeEvent.ConnectorOutputReceived(9, List.of("r-0"), null);
        byte[] older = Payloads.encode(plain);
        try (var u = org.msgpack.core.MessagePack.newDefaultUnpacker(older)) {
            assertThat(u.unpackArrayHeader()).isEqualTo(2); // as written before the field existed
        }
        assertThat(Payloads.decode(EntryType.CONNECTOR_OUTPUT_RECEIVED, 9, older)).isEqualTo(plain);
        assertThat(EntryType.CONNECTOR_OUTPUT_RECEIVED.toJson(plain)).doesNotContainKey("acted");
    }

    @Test
    void a_payload_that_does_not_match_its_schema_is_reported_with_the_field() throws Exception {
        byte[] bad;
        try (var p = org.msgpack.core.MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(2).packString("rid").packString("not a number");
            bad = p.toByteArray();
        }
        assertThatThrownBy(() -> Payloads.decode(EntryType.MATCHED_TOKENS_QUERIED, 0, bad))
                .isInstanceOf(PayloadException.class).hasMessage("num_computed_tokens: expected integer, found string");
        byte[] code;
        try (var p = org.msgpack.core.MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(4).packInt(999).packNil().packNil().packNil();
            code = p.toByteArray();
        }
        assertThatThrownBy(() -> Payloads.decode(EntryType.ANOMALY, 0, code))
                .isInstanceOf(PayloadException.class).hasMessage("anomaly: AnomalyKind code 999 is unknown to this version");
        assertThatThrownBy(() -> Payloads.decode(EntryType.TICK, 0, new byte[] {(byte) 0xdd}))
                .isInstanceOf(PayloadException.class);
    }

    @Test
    void json_import_names_missing_unknown_and_mistyped_fields() {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("request_id", "r");
        assertThatThrownBy(() -> EntryType.MATCHED_TOKENS_QUERIED.fromJson(m, 0, Set.of()))
                .isInstanceOf(PayloadException.class).hasMessage("missing field \"num_computed_tokens\"");
        m.put("num_computed_tokens", "3");
        assertThatThrownBy(() -> EntryType.MATCHED_TOKENS_QUERIED.fromJson(m, 0, Set.of()))
                .hasMessage("num_computed_tokens: expected an integer, found a string");
        m.put("num_computed_tokens", 3L);
        m.put("num_computed_token", 3L);
        assertThatThrownBy(() -> EntryType.MATCHED_TOKENS_QUERIED.fromJson(m, 0, Set.of()))
                .hasMessage("unknown field \"num_computed_token\" (fields: request_id, num_computed_tokens, acted)");
        m.remove("num_computed_token");
        m.put("request_id", null);
        assertThatThrownBy(() -> EntryType.MATCHED_TOKENS_QUERIED.fromJson(m, 0, Set.of()))
                .hasMessage("request_id: must not be null");
    }

    @Test
    void request_admitted_accepts_the_token_ids_themselves_and_none() {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("request_id", "r");
        m.put("num_prompt_tokens", 3L);
        m.put("prompt_token_ids", List.of(1L, 2L, 3L));
        assertThat(EntryType.REQUEST_ADMITTED.fromJson(m, 9, Set.of()))
                .isEqualTo(new NodeEvent.RequestAdmitted(9, "r", 3, 3, null));
        m.put("prompt_token_ids", null);
        assertThat(EntryType.REQUEST_ADMITTED.fromJson(m, 9, Set.of()))
                .isEqualTo(new NodeEvent.RequestAdmitted(9, "r", 3, -1, null));
        var none = new NodeEvent.RequestAdmitted(9, "r", 3, -1, null);
        assertThat(EntryType.REQUEST_ADMITTED.toJson(none)).containsEntry("prompt_token_ids_len", null);
    }

    /** {@code e}, which carries {@code acted}, reads back equal from msgpack and from JSON, where {@code acted} is written. */
    private static void assertActedRoundTrips(NodeEvent e) throws Exception {
        EntryType t = EntryType.of(e);
        assertThat(Payloads.decode(t, e.atNs(), Payloads.encode(e))).isEqualTo(e);
        @SuppressWarnings("unchecked")
        Map<String, Object> parsed = (Map<String, Object>) Json.parse(Json.write(t.toJson(e)));
        assertThat(parsed).containsKey("acted");
        assertThat(t.fromJson(parsed, e.atNs(), Set.of())).isEqualTo(e);
    }
}
