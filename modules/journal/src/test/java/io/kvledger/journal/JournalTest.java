package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.journal.format.EntryKind;
import io.kvledger.journal.format.EntryType;
import io.kvledger.journal.format.Payloads;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import net.openhft.chronicle.queue.ExcerptAppender;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder;
import net.openhft.chronicle.wire.DocumentContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

class JournalTest {

    @TempDir
    Path tmp;

    static List<JournalEntry> readAll(Path dir) {
        try (JournalReader r = JournalReader.open(dir)) {
            List<JournalEntry> out = new ArrayList<>();
            r.forEach(out::add);
            return out;
        }
    }

    /** Appends raw entry bytes straight into the queue, as a future or older writer would. */
    static void appendRaw(Path dir, byte[] entry) {
        try (SingleChronicleQueue q = SingleChronicleQueueBuilder.single(dir.toFile())
                .rollCycle(JournalFormat.ROLL_CYCLE).build();
             ExcerptAppender a = q.createAppender();
             DocumentContext dc = a.writingDocument()) {
            dc.wire().bytes().write(entry);
        }
    }

    /** An entry's bytes in the given layout; layouts 2 and later carry their CRC32C. */
    static byte[] rawEntry(int layout, EntryKind kind, int typeId, long seq, long atNs, byte[] payload) {
        int env = layout == 0 ? JournalFormat.ENVELOPE_V0 : layout == 1 ? JournalFormat.ENVELOPE_V1 : JournalFormat.ENVELOPE_V2;
        byte[] b = new byte[env + payload.length];
        if (layout == 0) {
            EntryCodec.envelopeV0(b, kind, typeId, seq, atNs);
        } else if (layout == 1) {
            EntryCodec.envelopeV1(b, kind, typeId, seq, atNs, JournalFormat.NO_CAUSE);
        } else {
            EntryCodec.envelope(b, kind, typeId, seq, atNs, JournalFormat.NO_CAUSE);
            b[0] = (byte) layout;
        }
        System.arraycopy(payload, 0, b, env, payload.length);
        if (layout >= 2) {
            EntryCodec.seal(b, EntryCodec.crc(b, 0, b.length));
        }
        return b;
    }

    @Test
    void writes_a_header_then_inputs_and_derived_entries_and_reads_them_back() {
        Path dir = tmp.resolve("P1");
        JournalHeader header = Samples.header();
        var admitted = new NodeEvent.RequestAdmitted(100, "r1", 16, 16, KvParams.of("do_remote_decode", true));
        var phase = new Effect.PhaseChanged("r1", null, RequestPhase.ADMITTED, "admitted");
        try (JournalWriter w = JournalWriter.open(dir, header)) {
            assertThat(w.appending()).isFalse();
            assertThat(w.appendInput(admitted)).isEqualTo(1);
            assertThat(w.appendDerived(1, phase)).isEqualTo(2);
            assertThat(w.appendApplied(new NodeEvent.Tick(200), List.of(
                    new Effect.Anomaly(AnomalyKind.DEFERRAL_REAPED, "r1", "t1", "late")))).isEqualTo(3);
            assertThat(w.nextSeq()).isEqualTo(5);
        }
        List<JournalEntry> all = readAll(dir);
        assertThat(all).hasSize(5);
        var h = (JournalEntry.Header) all.get(0);
        assertThat(h.seq()).isZero();
        assertThat(h.header().differences(header)).isEmpty();
        assertThat(h.header().formatVersion()).isEqualTo(JournalFormat.FORMAT_VERSION);
        assertThat(h.header().nodeId()).isEqualTo("P1");
        assertThat(h.header().origin()).isEqualTo("samples");
        assertThat(h.header().profile()).isEqualTo("newest+custom");
        assertThat(h.header().config().behaviour()).isEqualTo(header.config().behaviour());
        assertThat(h.header().config().deferTimeoutNs()).isEqualTo(30 * NodeConfig.NS_PER_S);
        assertThat(all.get(1)).isEqualTo(new JournalEntry.Input(1, 100, admitted));
        assertThat(all.get(2)).isEqualTo(new JournalEntry.Derived(2, 1, 100, phase));
        assertThat(all.get(3)).isEqualTo(new JournalEntry.Input(3, 200, new NodeEvent.Tick(200)));
        var d = (JournalEntry.Derived) all.get(4);
        assertThat(d.causeSeq()).isEqualTo(3);
        assertThat(d.atNs()).isEqualTo(200);
        assertThat(d.dissect()).startsWith("anomaly DEFERRAL_REAPED");
    }

    @Test
    void every_sample_type_survives_the_journal() {
        Path dir = tmp.resolve("all");
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            for (NodeEvent e : Samples.events()) {
                long seq = w.appendInput(e);
                for (Effect f : Samples.effects()) {
                    w.appendDerived(seq, f);
                }
            }
        }
        List<JournalEntry> all = readAll(dir);
        assertThat(all).hasSize(1 + Samples.events().size() * (1 + Samples.effects().size()));
        int i = 1;
        for (NodeEvent e : Samples.events()) {
            var in = (JournalEntry.Input) all.get(i++);
            assertThat(Payloads.same(in.event(), e)).as("%s", e).isTrue();
            for (Effect f : Samples.effects()) {
                var d = (JournalEntry.Derived) all.get(i++);
                assertThat(Payloads.same(d.effect(), f)).as("%s", f).isTrue();
                assertThat(d.causeSeq()).isEqualTo(in.seq());
                assertThat(d.atNs()).isEqualTo(e.atNs());
            }
        }
        for (int k = 0; k < all.size(); k++) {
            assertThat(all.get(k).seq()).isEqualTo(k);
        }
    }

    @Test
    void a_second_writer_continues_the_sequence_and_keeps_the_header() {
        Path dir = tmp.resolve("D0");
        NodeConfig cfg = NodeConfig.builder(Role.CONSUMER, TransferMode.READ).build();
        try (JournalWriter w = JournalWriter.open(dir, JournalHeader.of("D0", cfg, "first run"))) {
            w.appendInput(new NodeEvent.Tick(10));
            w.appendDerived(1, new Effect.StaleAckDropped("r"));
        }
        try (JournalWriter w = JournalWriter.open(dir, JournalHeader.of("D0", cfg, "second run"))) {
            assertThat(w.appending()).isTrue();
            assertThat(w.header().origin()).isEqualTo("first run");
            assertThat(w.nextSeq()).isEqualTo(3);
            assertThat(w.lastInputSeq()).isEqualTo(1);
            // derived entries may still name the last input of the previous run
            assertThat(w.appendDerived(1, new Effect.StaleAckDropped("s"))).isEqualTo(3);
            assertThat(w.appendInput(new NodeEvent.Tick(20))).isEqualTo(4);
        }
        List<JournalEntry> all = readAll(dir);
        assertThat(all).extracting(JournalEntry::seq).containsExactly(0L, 1L, 2L, 3L, 4L);
        assertThat(((JournalEntry.Derived) all.get(3)).atNs()).isEqualTo(10);
    }

    @Test
    void appending_with_another_node_or_configuration_is_refused_and_changes_nothing() {
        Path dir = tmp.resolve("P0");
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).build();
        try (JournalWriter w = JournalWriter.open(dir, JournalHeader.of("P0", cfg, ""))) {
            w.appendInput(new NodeEvent.Tick(1));
        }
        NodeConfig other = cfg.toBuilder().dp(1, 2, 2).behaviour(Behaviour.seed()).build();
        assertThatThrownBy(() -> JournalWriter.open(dir, JournalHeader.of("P9", other, "")))
                .isInstanceOf(JournalException.class)
                .hasMessageContaining("belongs to another node or configuration")
                .hasMessageContaining("node_id: \"P0\" vs \"P9\"")
                .hasMessageContaining("dp_rank: 0 vs 1")
                .hasMessageContaining("profile: \"newest\" vs \"seed\"");
        assertThat(readAll(dir)).hasSize(2);
        // and the refused writer released its lock
        try (JournalWriter w = JournalWriter.open(dir, JournalHeader.of("P0", cfg, ""))) {
            assertThat(w.nextSeq()).isEqualTo(2);
        }
    }

    @Test
    void a_journal_has_one_writer_at_a_time() {
        Path dir = tmp.resolve("P0");
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            assertThatThrownBy(() -> JournalWriter.open(dir, Samples.header()))
                    .isInstanceOf(JournalException.class).hasMessageContaining("already open for writing");
            w.appendInput(new NodeEvent.Tick(1));
        }
    }

    @Test
    void a_value_that_cannot_be_journaled_is_refused_and_nothing_is_written() {
        Path dir = tmp.resolve("P0");
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            var bad = new NodeEvent.RequestAdmitted(1, "r", 1, 1, KvParams.of(Map.of("k", new Object())));
            assertThatThrownBy(() -> w.appendInput(bad)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("RequestAdmitted.kv_transfer_params").hasMessageContaining("java.lang.Object");
            assertThat(w.nextSeq()).isEqualTo(1);
            assertThat(w.appendInput(new NodeEvent.Tick(2))).isEqualTo(1);
            assertThatThrownBy(() -> w.appendDerived(7, new Effect.StaleAckDropped("r")))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cause seq 7");
        }
        assertThat(readAll(dir)).extracting(JournalEntry::seq).containsExactly(0L, 1L);
    }

    @Test
    void unknown_future_types_layouts_and_bad_payloads_are_skipped_with_warnings() throws Exception {
        Path dir = tmp.resolve("P0");
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            w.appendInput(new NodeEvent.Tick(1));
        }
        byte[] someMap;
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(1).packString("future");
            someMap = p.toByteArray();
        }
        appendRaw(dir, rawEntry(2, EntryKind.INPUT, 77, 2, 5, someMap));
        appendRaw(dir, rawEntry(2, EntryKind.INPUT, 77, 3, 6, someMap));
        appendRaw(dir, rawEntry(9, EntryKind.INPUT, 1, 4, 7, someMap));
        appendRaw(dir, rawEntry(2, EntryKind.INPUT, EntryType.LAYER_SAVED.id(), 5, 8, new byte[] {(byte) 0x91, 0x05}));
        appendRaw(dir, rawEntry(2, EntryKind.DERIVED, EntryType.TICK.id(), 6, 9, new byte[] {(byte) 0x90}));
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            assertThat(w.nextSeq()).isEqualTo(7);
            w.appendInput(new NodeEvent.Tick(10));
        }
        try (JournalReader r = JournalReader.open(dir)) {
            List<JournalEntry> all = new ArrayList<>();
            r.forEach(all::add);
            assertThat(all).extracting(JournalEntry::seq).containsExactly(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L);
            assertThat(all.subList(2, 7)).allSatisfy(e -> assertThat(e).isInstanceOf(JournalEntry.Unknown.class));
            assertThat(((JournalEntry.Unknown) all.get(2)).reason()).isEqualTo("type id 77 is unknown to this version");
            assertThat(((JournalEntry.Unknown) all.get(4)).reason()).contains("layout version 9 is newer");
            assertThat(((JournalEntry.Unknown) all.get(5)).reason())
                    .isEqualTo("layer_saved payload: layer_name: expected string, found integer");
            assertThat(((JournalEntry.Unknown) all.get(6)).reason()).isEqualTo("tick is an input type but the entry is a derived");
            assertThat(all.get(7)).isInstanceOf(JournalEntry.Input.class);
            assertThat(r.warnings()).hasSize(5);
            // the derived entry's envelope names no cause: the order rules doubt it, as verify does
            assertThat(r.warnings().getFirst()).isEqualTo(dir + ": 1 entry read whose cause is not an earlier input (first: "
                    + "seq 6: derived entry's cause_seq -1 is not an earlier entry); kvledger verify lists them");
            assertThat(r.warnings().get(1)).isEqualTo(dir + ": type id 77 is unknown to this version: 2 entries"
                    + " skipped (first at seq 2)");
            assertThat(r.warnings().get(3)).endsWith("seq 5: layer_saved payload: layer_name: expected string, found integer; skipped");
            assertThat(r.clean()).isFalse();
            // a second pass reports the same, not twice as much
            r.forEach(e -> { });
            assertThat(r.warnings()).hasSize(5);
        }
    }

    /**
     * Compatibility with layout version 0 (pre-release journals, 20-byte envelope without
     * cause_seq): derived entries take the nearest input before them as their cause.
     */
    @Test
    void a_journal_with_layout_0_entries_still_reads() throws Exception {
        Path dir = tmp.resolve("old");
        appendRaw(dir, rawEntry(0, EntryKind.HEADER, 0, 0, 0, EntryCodec.headerPayload(Samples.header().withFormatVersion(0))));
        var tick = new NodeEvent.Tick(500);
        var admitted = Samples.events().getFirst();
        var phase = new Effect.PhaseChanged("r", null, RequestPhase.ADMITTED, "admitted");
        appendRaw(dir, rawEntry(0, EntryKind.INPUT, EntryType.TICK.id(), 1, 500, Payloads.encode(tick)));
        appendRaw(dir, rawEntry(0, EntryKind.INPUT, EntryType.REQUEST_ADMITTED.id(), 2, admitted.atNs(),
                Payloads.encode(admitted)));
        appendRaw(dir, rawEntry(0, EntryKind.DERIVED, EntryType.PHASE_CHANGED.id(), 3, admitted.atNs(),
                Payloads.encode(phase)));
        try (JournalReader r = JournalReader.open(dir)) {
            assertThat(r.header().formatVersion()).isZero();
            assertThat(r.header().nodeId()).isEqualTo("P1");
            List<JournalEntry> all = new ArrayList<>();
            r.forEach(all::add);
            assertThat(all.get(1)).isEqualTo(new JournalEntry.Input(1, 500, tick));
            assertThat(Payloads.same(((JournalEntry.Input) all.get(2)).event(), admitted)).isTrue();
            assertThat(all.get(3)).isEqualTo(new JournalEntry.Derived(3, 2, admitted.atNs(), phase));
            assertThat(r.warnings()).isEmpty();
        }
        // and a current writer appends layout-2 entries after them
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            assertThat(w.nextSeq()).isEqualTo(4);
            w.appendApplied(new NodeEvent.Tick(900), List.of(new Effect.StaleAckDropped("r")));
        }
        List<JournalEntry> all = readAll(dir);
        assertThat(all).hasSize(6);
        assertThat(all.get(5)).isEqualTo(new JournalEntry.Derived(5, 4, 900, new Effect.StaleAckDropped("r")));
    }

    @Test
    void a_journal_of_a_newer_format_version_is_read_but_not_appended_to() {
        Path dir = tmp.resolve("future");
        appendRaw(dir, rawEntry(2, EntryKind.HEADER, 0, 0, 0, EntryCodec.headerPayload(Samples.header().withFormatVersion(3))));
        try (JournalReader r = JournalReader.open(dir)) {
            assertThat(r.header().formatVersion()).isEqualTo(3);
            assertThat(r.warnings()).singleElement().asString().contains("format version 3 is newer");
        }
        assertThatThrownBy(() -> JournalWriter.open(dir, Samples.header())).isInstanceOf(JournalException.class)
                .hasMessageContaining("created by format version 3");
    }

    @Test
    void a_header_with_keys_this_version_does_not_know_reads_with_a_warning() throws Exception {
        Path dir = tmp.resolve("keys");
        Map<String, Object> m = new java.util.LinkedHashMap<>(Samples.header().toMap());
        m.put("gpu_model", "MI300X");
        List<Object> switches = new ArrayList<>((List<?>) m.get("switches"));
        switches.add("some-future-switch");
        m.put("switches", switches);
        byte[] payload;
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            io.kvledger.wire.PyValues.pack(p, m);
            payload = p.toByteArray();
        }
        appendRaw(dir, rawEntry(1, EntryKind.HEADER, 0, 0, 0, payload));
        try (JournalReader r = JournalReader.open(dir)) {
            assertThat(r.header().differences(Samples.header())).isEmpty();
            assertThat(r.warnings()).containsExactly(dir + ": unknown header key \"gpu_model\"",
                    dir + ": unknown switch \"some-future-switch\" ignored");
        }
    }

    @Test
    void opening_something_that_is_not_a_journal_says_so() throws Exception {
        assertThatThrownBy(() -> JournalReader.open(tmp.resolve("missing"))).isInstanceOf(JournalException.class)
                .hasMessageContaining("not a directory");
        Files.createDirectories(tmp.resolve("empty"));
        assertThatThrownBy(() -> JournalReader.open(tmp.resolve("empty"))).isInstanceOf(JournalException.class)
                .hasMessageContaining("no .cq4 queue files");
        Path other = tmp.resolve("other");
        appendRaw(other, rawEntry(1, EntryKind.INPUT, EntryType.TICK.id(), 1, 1, Payloads.encode(new NodeEvent.Tick(1))));
        assertThatThrownBy(() -> JournalReader.open(other)).isInstanceOf(JournalException.class)
                .hasMessageContaining("is not a kvledger journal: its first entry is tick");
        assertThatThrownBy(() -> JournalWriter.open(other, Samples.header())).isInstanceOf(JournalException.class)
                .hasMessageContaining("is not a kvledger journal");
    }

    @Test
    void an_empty_queue_file_is_named_at_once_instead_of_waited_on() throws Exception {
        Path dir = tmp.resolve("truncated");
        Files.createDirectories(dir);
        Files.createFile(dir.resolve("20261202L.cq4"));
        // the reader's own check, not Chronicle's failure after waiting ~12 s for a header ("has no header")
        assertThatThrownBy(() -> JournalReader.open(dir)).isInstanceOf(JournalException.class)
                .hasMessageContaining("empty queue file").hasMessageContaining("20261202L.cq4")
                .hasMessageContaining("move it away");

        // next to a real journal: the reader still refuses, naming the empty file
        Path both = tmp.resolve("both");
        try (JournalWriter w = JournalWriter.open(both, Samples.header())) {
            w.appendInput(new NodeEvent.Tick(1));
        }
        Files.createFile(both.resolve("20991231L.cq4"));
        assertThatThrownBy(() -> JournalReader.open(both)).isInstanceOf(JournalException.class)
                .hasMessageContaining("20991231L.cq4");
    }

    /** The example in FORMAT.md, read back raw from a real journal. */
    @Test
    void an_entry_has_the_documented_byte_layout() {
        Path dir = tmp.resolve("bytes");
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            for (int i = 1; i < 19; i++) {
                w.appendInput(new NodeEvent.Tick(i));
            }
            assertThat(w.appendInput(new NodeEvent.Tick(1_000_000_000L))).isEqualTo(19);
        }
        byte[] last = null;
        try (SingleChronicleQueue q = SingleChronicleQueueBuilder.single(dir.toFile()).readOnly(true).build();
             var t = q.createTailer().direction(net.openhft.chronicle.queue.TailerDirection.BACKWARD).toEnd();
             DocumentContext dc = t.readingDocument()) {
            var b = dc.wire().bytes();
            last = new byte[(int) b.readRemaining()];
            b.read(last);
        }
        assertThat(java.util.HexFormat.of().formatHex(last))
                .isEqualTo("02" + "01" + "1300" + "1300000000000000" + "00ca9a3b00000000" + "ffffffffffffffff" + "33b04075"
                        + "90");
    }

    @Test
    void a_reader_sees_what_a_live_writer_has_written_so_far() {
        Path dir = tmp.resolve("live");
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            w.appendInput(new NodeEvent.Tick(1));
            assertThat(readAll(dir)).hasSize(2);
            w.appendInput(new NodeEvent.Tick(2));
            assertThat(readAll(dir)).hasSize(3);
        }
    }
}
