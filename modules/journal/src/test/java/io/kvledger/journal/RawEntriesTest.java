package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link RawEntryTailer} hands out every entry (a group's members one by one) as the journal holds
 * it, following the writer; {@link RawJournalWriter} writes those bytes into a journal that reads
 * back entry for entry as the original.
 */
class RawEntriesTest {

    @TempDir
    Path tmp;

    @Test
    void copiesAJournalEntryForEntryAndFollowsItsWriter() {
        Path original = tmp.resolve("orig");
        try (JournalWriter w = JournalWriter.open(original, Samples.header());
             RawEntryTailer t = RawEntryTailer.open(original)) {
            for (NodeEvent e : Samples.events()) {
                w.appendInput(e);
            }
            w.beginGroup();
            long cause = w.appendInput(new NodeEvent.Tick(9_000_000_000L));
            w.appendDerived(cause, new Effect.StaleAckDropped("r1"));
            w.appendDerived(cause, new Effect.StaleAckDropped("r2"));
            w.endGroup();
            List<byte[]> raw = drain(t);
            assertThat(raw).hasSize(Samples.events().size() + 4);
            assertThat(raw).extracting(RawEntryTailer::seq).containsExactlyElementsOf(
                    java.util.stream.LongStream.range(0, raw.size()).boxed().toList());
            assertThat(t.header().nodeId()).isEqualTo(Samples.header().nodeId());

            // what the writer appends later is handed out too
            w.appendInput(new NodeEvent.Tick(10_000_000_000L));
            byte[] later = t.poll(Duration.ofSeconds(30));
            assertThat(later).isNotNull();
            assertThat(RawEntryTailer.seq(later)).isEqualTo(raw.size());
            raw.add(later);

            Path copy = tmp.resolve("copy");
            try (RawJournalWriter c = RawJournalWriter.create(copy)) {
                raw.forEach(c::append);
                assertThat(c.entries()).isEqualTo(raw.size());
            }
            assertThat(dissected(copy)).isEqualTo(dissected(original)).hasSize(raw.size());
            try (RawEntryTailer again = RawEntryTailer.open(copy)) {
                List<byte[]> back = drain(again);
                assertThat(back).hasSize(raw.size());
                for (int i = 0; i < raw.size(); i++) {
                    assertThat(back.get(i)).as("entry %d", i).isEqualTo(raw.get(i));
                }
                assertThat(again.warnings()).isEmpty();
            }
            assertThat(t.warnings()).isEmpty();
        }
    }

    @Test
    void aDamagedEntryInTheCopyIsFoundByTheReader() {
        Path original = tmp.resolve("orig");
        try (JournalWriter w = JournalWriter.open(original, Samples.header())) {
            for (NodeEvent e : Samples.events()) {
                w.appendInput(e);
            }
        }
        List<byte[]> raw;
        try (RawEntryTailer t = RawEntryTailer.open(original)) {
            raw = drain(t);
        }
        raw.get(2)[raw.get(2).length - 1] ^= 0x01; // one payload bit flipped: the checksum no longer matches
        Path copy = tmp.resolve("copy");
        try (RawJournalWriter c = RawJournalWriter.create(copy)) {
            raw.forEach(c::append);
        }
        try (JournalReader r = JournalReader.open(copy)) {
            long n = r.stream().count();
            assertThat(n).isEqualTo(raw.size() - 1);
            assertThat(r.clean()).isFalse();
            assertThat(r.warnings()).isNotEmpty();
        }
    }

    private static List<byte[]> drain(RawEntryTailer t) {
        List<byte[]> out = new ArrayList<>();
        for (byte[] e; (e = t.poll(Duration.ZERO)) != null; ) {
            out.add(e);
        }
        return out;
    }

    private static List<String> dissected(Path dir) {
        try (JournalReader r = JournalReader.open(dir)) {
            return r.stream().map(e -> e.seq() + " " + e.dissect()).toList();
        }
    }
}
