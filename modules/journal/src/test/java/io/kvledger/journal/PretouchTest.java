package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A writer with a pretoucher ({@link JournalWriter#pretouch}) leaves the same journal a writer
 * without one leaves: same entries, same queue file lengths, nothing damaged; and the pretoucher
 * did touch pages ahead of it.
 */
class PretouchTest {

    @TempDir
    Path dir;

    private static void write(Path d, boolean pretouch, int rounds) {
        try (JournalWriter w = JournalWriter.open(d, Samples.header())) {
            if (pretouch) {
                w.pretouch();
            }
            List<NodeEvent> events = Samples.events();
            List<Effect> effects = Samples.effects();
            for (int r = 0; r < rounds; r++) {
                for (NodeEvent e : events) {
                    w.appendApplied(e, effects.subList(0, r % 3));
                }
            }
            if (pretouch) {
                // the first pass touches 8 MB (2048 pages) ahead; later passes follow the writer
                assertThat(w.pretouchedPages()).as("pages touched ahead of the writer, past the first pass")
                        .isGreaterThan(Pretoucher.AHEAD_BYTES / 4096 + 64);
                if (Pretoucher.canPopulate()) {
                    assertThat(w.pretouchPopulateCalls()).as("the writer's own mapping populated (madvise)").isPositive();
                }
            }
        }
    }

    private static List<String> dump(Path d) {
        List<String> out = new ArrayList<>();
        try (JournalReader r = JournalReader.open(d)) {
            for (JournalEntry e : r) {
                out.add(e.seq() + " " + e.atNs() + " " + e.dissect());
            }
            assertThat(r.integrity().damage()).isEmpty();
        }
        return out;
    }

    private static List<String> lengths(Path d) throws IOException {
        try (Stream<Path> s = Files.list(d)) {
            return s.filter(p -> p.toString().endsWith(".cq4")).map(p -> p.getFileName() + " " + p.toFile().length())
                    .sorted().toList();
        }
    }

    @Test
    void aPretouchedJournalIsTheSameJournal() throws Exception {
        Path plain = dir.resolve("plain");
        Path touched = dir.resolve("touched");
        write(plain, false, 1200);
        write(touched, true, 1200);
        assertThat(dump(touched)).hasSizeGreaterThan(12_000).containsExactlyElementsOf(dump(plain));
        assertThat(lengths(touched)).isEqualTo(lengths(plain));
    }
}
