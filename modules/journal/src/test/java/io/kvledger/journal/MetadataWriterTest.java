package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.event.NodeEvent;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 29 item 2: verify passed a {@code metadata.cq4t} that a writer then could not open
 * ("Unable to claim exclusive exclusive lock", after 10 s). What a writer needs of it is checked
 * (its framing, then a trial on a copy), and a writer's refusal names the file and the way out.
 */
class MetadataWriterTest {

    @TempDir
    Path tmp;

    /** A journal of two entries (its queue file sparse, as Chronicle makes it). */
    private Path journal(String name) {
        Path dir = tmp.resolve(name);
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            w.appendInput(new NodeEvent.Tick(1));
        }
        return dir;
    }

    private static int indexOf(byte[] b, String s) {
        byte[] n = s.getBytes(StandardCharsets.US_ASCII);
        for (int i = 0; i + n.length <= b.length; i++) {
            if (java.util.Arrays.equals(b, i, i + n.length, n, 0, n.length)) {
                return i;
            }
        }
        throw new AssertionError("no " + s);
    }

    @Test
    void an_incomplete_header_a_wrong_roll_and_a_wrong_file_name_format_are_named_by_verify_and_by_the_writer()
            throws Exception {
        byte[] intact = Files.readAllBytes(journal("base").resolve(Queues.METADATA_FILE));
        List<String> names = List.of("incomplete", "roll", "format");
        for (String n : names) {
            Path dir = journal(n);
            byte[] b = intact.clone();
            switch (n) {
                case "incomplete" -> b[3] |= (byte) 0x80; // the header excerpt's not-complete bit
                case "roll" -> b[indexOf(b, "SCQSRoll") + 12] ^= 4; // the roll's marshallable length
                default -> b[indexOf(b, "yyyyMMdd'L'") + 9] = 'H'; // the file name format
            }
            Files.write(dir.resolve(Queues.METADATA_FILE), b);
            String problem = JournalReader.metadataWriterProblem(dir);
            assertThat(problem).as(n).isNotNull().startsWith("metadata.cq4t");
            long t0 = System.nanoTime();
            assertThatThrownBy(() -> JournalWriter.open(dir, Samples.header()).close()).as(n)
                    .isInstanceOf(JournalException.class)
                    .hasMessageContaining("is damaged: metadata.cq4t")
                    .hasMessageContaining("move metadata.cq4t away and Chronicle recreates it");
            System.out.println(n + ": " + problem + " (the writer refused in " + (System.nanoTime() - t0) / 1_000_000 + " ms)");
            // the way out the message gives works
            Files.move(dir.resolve(Queues.METADATA_FILE), tmp.resolve(n + "-metadata.cq4t"));
            try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
                assertThat(w.nextSeq()).isEqualTo(2);
            }
        }
        assertThat(Queues.metadataProblem(journal("clean"))).isNull();
        assertThat(JournalReader.metadataWriterProblem(journal("clean2"))).isNull();
    }

    /**
     * One bit flipped at a time over the table store's header and values: verify's verdict is the
     * writer's, both ways (no damage passed, no sound file refused).
     */
    @Test
    void verify_says_a_writer_refuses_exactly_when_it_does() throws Exception {
        byte[] intact = Files.readAllBytes(journal("base").resolve(Queues.METADATA_FILE));
        int end = 0;
        for (int i = 0; i < intact.length; i++) {
            end = intact[i] != 0 ? i : end;
        }
        List<String> disagree = new ArrayList<>();
        int refused = 0;
        for (int pos = 0; pos <= end; pos += 4) {
            Path dir = journal("flip" + pos);
            byte[] b = intact.clone();
            b[pos] ^= 4;
            Files.write(dir.resolve(Queues.METADATA_FILE), b);
            String problem = JournalReader.metadataWriterProblem(dir);
            boolean opened;
            try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
                w.appendInput(new NodeEvent.Tick(2));
                opened = true;
            } catch (JournalException e) {
                opened = false;
                refused++;
                if (!e.getMessage().contains("metadata.cq4t")) {
                    disagree.add("byte " + pos + ": the writer's refusal does not name metadata.cq4t: " + e.getMessage());
                }
            }
            if (opened == (problem != null)) {
                disagree.add("byte " + pos + ": writer " + (opened ? "opened" : "refused") + ", verify says " + problem);
            }
        }
        System.out.println(refused + " of " + (end / 4 + 1) + " flips refused by the writer");
        assertThat(refused).isPositive();
        assertThat(disagree).isEmpty();
    }
}
