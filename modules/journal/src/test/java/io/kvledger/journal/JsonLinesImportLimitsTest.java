package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.event.NodeEvent;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 29 item 3: an import of a line over the entry limit failed late with a raw Chronicle
 * exception; a killed import left a journal holding only its header, which refused the import
 * run again; a 100 MB cut last line was refused while a short one was left out.
 */
class JsonLinesImportLimitsTest {

    @TempDir
    Path tmp;

    private static String header() {
        return JsonLines.toJson(new JournalEntry.Header(0, Samples.header()));
    }

    private static String tick(long seq, long at) {
        return JsonLines.toJson(new JournalEntry.Input(seq, at, new NodeEvent.Tick(at)));
    }

    @Test
    void a_line_over_the_entry_limit_is_refused_with_its_number_before_anything_is_written() throws IOException {
        Path file = tmp.resolve("big.jsonl");
        String reason = "x".repeat(JsonLines.MAX_ENTRY_BYTES + 10);
        String big = JsonLines.toJson(new JournalEntry.Input(3, 3, new NodeEvent.FrameRejected(3, reason, new byte[0], false)));
        Files.writeString(file, header() + "\n" + tick(1, 1) + "\n" + tick(2, 2) + "\n" + big + "\n" + tick(4, 4) + "\n");
        Path dir = tmp.resolve("j");
        assertThatThrownBy(() -> JsonLines.importFile(file, dir, null)).isInstanceOf(JsonLinesException.class)
                .hasMessageContaining("line 4: the frame_rejected entry would be")
                .hasMessageContaining("over the 16,777,216 bytes a journal entry may hold");
        assertThat(dir).doesNotExist();
        assertThat(siblings()).isEmpty();
    }

    @Test
    void a_cut_last_line_is_left_out_whatever_its_size() throws IOException {
        for (int size : new int[] {20, 20 << 20}) {
            Path file = tmp.resolve("cut" + size + ".jsonl");
            try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
                w.write(header() + "\n" + tick(1, 1) + "\n" + tick(2, 2) + "\n");
                // a frame_rejected line cut short inside its reason: no closing quote, no brace, no newline
                w.write("{\"seq\":3,\"kind\":\"input\",\"type\":\"frame_rejected\",\"at_ns\":3,\"reason\":\"");
                w.write("y".repeat(size));
            }
            JsonLines.ImportResult r = JsonLines.importFile(file, tmp.resolve("j" + size), null);
            assertThat(r.entries()).as("size %d", size).isEqualTo(2);
            assertThat(r.cut()).as("size %d", size).isNotNull();
            assertThat(r.cut().line()).isEqualTo(4);
        }
    }

    /** A killed import leaves its destination as it was; the import run again succeeds and tidies up. */
    @Test
    void a_killed_import_leaves_no_journal_behind_and_runs_again() throws Exception {
        Path file = tmp.resolve("long.jsonl");
        int lines = 1_000_000;
        try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            w.write(header());
            w.write('\n');
            for (int i = 1; i <= lines; i++) {
                w.write(tick(i, i));
                w.write('\n');
            }
        }
        Path dir = tmp.resolve("dest");
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(CrashSafetyTest.jvmFlags());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(ImportChild.class.getName());
        cmd.add(file.toString());
        cmd.add(dir.toString());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(tmp.resolve("child.log").toFile()).start();
        boolean killedWhileWriting = false;
        try {
            // kill it once it writes (its journal's header is in the work directory), unless it is done first
            while (p.isAlive()) {
                if (siblings().stream().anyMatch(JsonLinesImportLimitsTest::holdsQueueFile)) {
                    p.destroyForcibly();
                    killedWhileWriting = true;
                    break;
                }
                Thread.sleep(5);
            }
        } finally {
            p.destroyForcibly();
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        }
        System.out.println("import killed while writing: " + killedWhileWriting + "; child: "
                + Files.readString(tmp.resolve("child.log")).strip());
        if (killedWhileWriting) {
            assertThat(p.exitValue()).isEqualTo(137);
            assertThat(dir).doesNotExist();
            assertThat(siblings()).isNotEmpty();
        }
        JsonLines.ImportResult r = JsonLines.importFile(file, dir, null);
        assertThat(r.entries()).isEqualTo(lines);
        assertThat(siblings()).as("the killed import's work directory is removed").isEmpty();
        try (JournalReader reader = JournalReader.open(dir)) {
            assertThat(reader.header().nodeId()).isEqualTo(Samples.header().nodeId());
        }
    }

    private static boolean holdsQueueFile(Path dir) {
        try (Stream<Path> s = Files.list(dir)) {
            return s.anyMatch(f -> f.getFileName().toString().endsWith(".cq4"));
        } catch (IOException e) {
            return false;
        }
    }

    /** The import work directories beside the destinations in {@link #tmp}. */
    private List<Path> siblings() throws IOException {
        try (Stream<Path> s = Files.list(tmp)) {
            return s.filter(f -> f.getFileName().toString().contains(".importing-")).toList();
        }
    }
}
