package io.kvledger.cli;

import static io.kvledger.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalFormat;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.format.EntryType;
import io.kvledger.journal.json.Json;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import net.openhft.chronicle.queue.ExcerptAppender;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder;
import net.openhft.chronicle.wire.DocumentContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kvledger verify}: clean journals exit 0; each format problem is listed with its seq and exits 1. */
class VerifyCommandTest {

    @TempDir
    Path tmp;

    private static final int INPUT = 1;
    private static final int DERIVED = 2;

    /**
     * Appends one entry's bytes as another writer would (envelope layout 2 with its CRC32C over
     * bytes 0..28 and the payload, journal/FORMAT.md).
     */
    static void appendRaw(Path dir, int kind, int typeId, long seq, long atNs, long cause, byte... payload) {
        ByteBuffer b = ByteBuffer.allocate(JournalFormat.ENVELOPE_V2 + payload.length).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) 2).put((byte) kind).putShort((short) typeId).putLong(seq).putLong(atNs).putLong(cause);
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(b.array(), 0, JournalFormat.CRC_OFFSET);
        crc.update(payload);
        b.putInt((int) crc.getValue()).put(payload);
        try (SingleChronicleQueue q = SingleChronicleQueueBuilder.single(dir.toFile()).rollCycle(JournalFormat.ROLL_CYCLE).build();
             ExcerptAppender a = q.createAppender();
             DocumentContext dc = a.writingDocument()) {
            dc.wire().bytes().write(b.array());
        }
    }

    private Path cleanJournal(String node) {
        Path dir = tmp.resolve(node);
        try (JournalWriter w = JournalWriter.open(dir, JournalHeader.of(node,
                NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).build(), "verify test"))) {
            w.appendInput(new NodeEvent.Tick(1_000_000_000L));
            w.appendInput(new NodeEvent.Tick(2_000_000_000L));
        }
        return dir;
    }

    @Test
    void clean_journals_exit_0() {
        Path sim = tmp.resolve("sim");
        assertThat(CliRun.simulate(sim, "write", 1, 1, "drop=0.5").code()).isZero();
        CliRun.Outcome o = run("verify", sim.toString());
        assertThat(o.code()).as(o.out() + o.err()).isZero();
        assertThat(o.out()).containsPattern("(?m)^D0: \\d+ entries \\(\\d+ inputs, \\d+ derived\\), t \\d+\\.\\d+\\.\\.\\d+\\.\\d+ s: ok$")
                .containsPattern("(?m)^P0: .*: ok$")
                .contains("verify: 2 journals, no problems");
    }

    @Test
    void every_problem_is_listed_with_its_seq_and_exits_1() {
        Path dir = cleanJournal("D0");
        byte[] tick = {(byte) 0x90};
        byte[] staleAck = {(byte) 0x91, (byte) 0xC0};
        int tickId = EntryType.TICK.id();
        int staleId = EntryType.STALE_ACK_DROPPED.id();
        appendRaw(dir, INPUT, tickId, 4, 3_000_000_000L, -1, tick);          // seq 3 is missing
        appendRaw(dir, INPUT, tickId, 5, 1_500_000_000L, -1, tick);          // time goes back
        appendRaw(dir, DERIVED, staleId, 6, 3_000_000_000L, 9, staleAck);    // cause after it
        appendRaw(dir, DERIVED, staleId, 7, 3_000_000_000L, 6, staleAck);    // cause is a derived entry
        appendRaw(dir, INPUT, 77, 8, 3_000_000_000L, -1, tick);              // a type this version does not know
        CliRun.Outcome o = run("verify", dir.toString());
        assertThat(o.code()).as(o.out()).isEqualTo(1);
        assertThat(o.out())
                .contains("D0: 8 entries (4 inputs, 2 derived)")
                .contains(": 5 problems")
                .contains("  seq 4: seq jumps from 2 to 4 (1 missing)")
                .contains("  seq 5: time goes back: at_ns 1500000000 is before 3000000000 (seq 4)")
                .contains("  seq 6: derived entry's cause_seq 9 is not an earlier entry")
                .contains("  seq 7: derived entry's cause_seq 6 is not an input")
                .contains("  seq 8: type id 77 (input) cannot be read: type id 77 is unknown to this version")
                .contains("verify: 5 problems in 1 of 1 journal");
        assertThat(o.err()).contains("type id 77 is unknown to this version");

        CliRun.Outcome json = run("verify", "--json", dir.toString());
        assertThat(json.code()).isEqualTo(1);
        Map<?, ?> m = (Map<?, ?>) Json.parse(json.out().strip());
        assertThat(m.get("ok")).isEqualTo(false);
        assertThat(m.get("problem_count")).isEqualTo(5L);
        @SuppressWarnings("unchecked")
        List<Object> problems = (List<Object>) ((Map<?, ?>) ((List<?>) m.get("journals")).get(0)).get("problems");
        assertThat(problems).extracting(p -> (Object) ((Map<?, ?>) p).get("seq")).containsExactly(4L, 5L, 6L, 7L, 8L);

        CliRun.Outcome capped = run("verify", "--max-problems", "2", dir.toString());
        assertThat(capped.out()).contains("  ... and 3 more");
    }

    /**
     * Issue 29 item 5: one jump printed a line for every later entry (50,385 lines). A run of
     * entries with the same problem against the same reference is one problem, one line.
     */
    @Test
    void one_jump_is_one_line_however_many_entries_stay_behind_it() {
        Path dir = cleanJournal("D0");
        byte[] tick = {(byte) 0x90};
        int tickId = EntryType.TICK.id();
        appendRaw(dir, INPUT, tickId, 100, 3_000_000_000L, -1, tick);              // seq jumps 2 -> 100
        for (long seq = 3; seq <= 50; seq++) {
            appendRaw(dir, INPUT, tickId, seq, 3_000_000_000L + seq, -1, tick);    // 48 entries behind it
        }
        appendRaw(dir, INPUT, tickId, 101, 9_000_000_000L, -1, tick);              // a time far ahead
        for (long seq = 102; seq <= 140; seq++) {
            appendRaw(dir, INPUT, tickId, seq, 4_000_000_000L + seq, -1, tick);    // 39 entries before it in time
        }
        CliRun.Outcome o = run("verify", dir.toString());
        assertThat(o.code()).as(o.out()).isEqualTo(1);
        assertThat(o.out())
                .contains("  seq 100: seq jumps from 2 to 100 (97 missing)\n")
                .contains("  seq 3 to 50 (48 entries in a row, each like the first): seq 3 does not increase (the entry"
                        + " before it is seq 100)")
                .contains("  seq 102 to 140 (39 entries in a row, each like the first): time goes back: at_ns 4000000102"
                        + " is before 9000000000 (seq 101)")
                .contains(": 3 problems")
                .contains("verify: 3 problems in 1 of 1 journal");
        assertThat(o.out().lines().count()).as(o.out()).isLessThan(8);
        // the readers skip the 48 entries behind the jump and say so in one line
        CliRun.Outcome dump = run("dump", dir.toString());
        assertThat(dump.code()).isEqualTo(1);
        assertThat(dump.lines()).hasSize(3 + 1 + 1 + 39);
        assertThat(dump.err()).contains("48 entries skipped: their seq does not increase")
                .contains("39 entries read with an event time before the entry before them");
    }

    /** Issue 29 item 5: a FIFO or a dangling link named .cq4 was "no .cq4 files"; it is damage, named. */
    @Test
    void a_fifo_or_a_dangling_link_named_cq4_is_named_as_such() throws Exception {
        Path fifoOnly = java.nio.file.Files.createDirectories(tmp.resolve("fifo"));
        Process mk = new ProcessBuilder("mkfifo", fifoOnly.resolve("20261206L.cq4").toString()).start();
        assertThat(mk.waitFor()).isZero();
        CliRun.Outcome o = run("verify", fifoOnly.toString());
        assertThat(o.code()).as(o.out() + o.err()).isEqualTo(1);
        assertThat(o.out()).contains("damaged: 20261206L.cq4 at byte 0: it is a FIFO (a named pipe), no queue file")
                .doesNotContain("no .cq4 files");
        CliRun.Outcome replay = run("replay", fifoOnly.toString());
        assertThat(replay.code()).isEqualTo(2);
        assertThat(replay.err()).contains("20261206L.cq4 is a FIFO (a named pipe)").doesNotContain("no .cq4 files");

        Path dir = cleanJournal("D0");
        java.nio.file.Files.createSymbolicLink(dir.resolve("20991231L.cq4"), tmp.resolve("gone.cq4"));
        CliRun.Outcome v = run("verify", dir.toString());
        assertThat(v.code()).as(v.out()).isEqualTo(1);
        assertThat(v.out()).contains("damaged: 20991231L.cq4 at byte 0: it is a symbolic link to " + tmp.resolve("gone.cq4")
                + ", which does not exist, no queue file: not read");
        CliRun.Outcome dump = run("dump", dir.toString());
        assertThat(dump.code()).isEqualTo(1);
        assertThat(dump.lines()).hasSize(3);
        assertThat(dump.err()).contains("20991231L.cq4 at byte 0: it is a symbolic link to");
    }

    @Test
    void duplicate_node_ids_across_journals_are_a_problem() {
        cleanJournal("D0");
        Path other = tmp.resolve("elsewhere");
        try (JournalWriter w = JournalWriter.open(other.resolve("copy"), JournalHeader.of("D0",
                NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).build(), "verify test"))) {
            w.appendInput(new NodeEvent.Tick(1));
        }
        CliRun.Outcome o = run("verify", tmp.resolve("D0").toString(), other.toString());
        assertThat(o.code()).isEqualTo(1);
        assertThat(o.out()).contains("D0 (journal copy): 2 entries").contains("across journals: node id D0 is used by 2 journals");
    }

    @Test
    void usage_errors_exit_2() {
        CliRun.Outcome o = run("verify", tmp.resolve("missing").toString());
        assertThat(o.code()).isEqualTo(2);
        assertThat(o.err()).contains("no such directory").contains("see 'kvledger help verify'");
        assertThat(run("verify").code()).isEqualTo(2);
        assertThat(run("verify", "--max-problems", "-1", tmp.toString()).code()).isEqualTo(2);
    }

    @Test
    void json_lines_are_verified_line_by_line_as_the_reading_commands_take_them() throws Exception {
        Path fixtures = Path.of(System.getProperty("kvledger.fixtures", "../../journal/fixtures"));
        Path folder = fixtures.resolve("07-reaped-without-ack");
        CliRun.Outcome clean = run("verify", folder.toString());
        assertThat(clean.code()).as(clean.out() + clean.err()).isZero();
        assertThat(clean.out()).contains("P0 (journal " + folder.resolve("P0/journal.jsonl") + "): 132 entries")
                .endsWith("verify: 2 journals, no problems\n");
        // the recorder's layout: one file cut short by a killed process, one with a bad line
        Path rec = java.nio.file.Files.createDirectories(tmp.resolve("rec"));
        byte[] p0 = java.nio.file.Files.readAllBytes(folder.resolve("P0/journal.jsonl"));
        java.nio.file.Files.write(rec.resolve("prefill-scheduler-dp0-tp0.jsonl"), java.util.Arrays.copyOf(p0, p0.length - 30));
        java.nio.file.Files.writeString(rec.resolve("decode-scheduler-dp0-tp0.jsonl"),
                "{\"type\":\"header\",\"node_id\":\"D0\",\"kv_role\":\"kv_consumer\",\"transfer_mode\":\"READ\"}\n"
                        + "{\"type\":\"tick\"}\n");
        CliRun.Outcome bad = run("verify", rec.toString());
        assertThat(bad.code()).as(bad.out() + bad.err()).isEqualTo(1);
        assertThat(bad.out())
                .contains("decode-scheduler-dp0-tp0 (journal " + rec.resolve("decode-scheduler-dp0-tp0.jsonl") + "): "
                        + "0 entries (0 inputs, 0 derived): 1 problem\n  line 2: missing \"at_ns\" (inputs carry their time)")
                .contains("P0 (journal " + rec.resolve("prefill-scheduler-dp0-tp0.jsonl") + "): 131 entries")
                .contains("  " + rec.resolve("prefill-scheduler-dp0-tp0.jsonl") + ": left out its last line (line 132, ")
                .endsWith("verify: 2 problems in 2 of 2 journals\n");
    }
}
