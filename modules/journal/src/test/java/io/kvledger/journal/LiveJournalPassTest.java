package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.event.NodeEvent;
import java.nio.file.Path;
import java.util.Iterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A pass of a {@link JournalReader} over a journal a live writer keeps appending to (as a node's
 * {@code GET /v1/hangs} and {@code GET /v1/requests/{id}} read their own journal) ends at what was
 * written when it reached the file, however fast the writer goes on: it used to chase the writer,
 * asking Chronicle's header afresh at each end it met and searching the rest of the file for
 * entries each time, and ended only when the writer paused (a node stepping while a request
 * waited kept one pass going for over 30 s).
 */
class LiveJournalPassTest {

    @TempDir
    Path tmp;

    /** Entries in the journal before the pass: the header and the inputs. */
    private static final int BEFORE = 1 + 200;
    /** How far the writer may go on (the old pass read all of it). */
    private static final int AT_MOST = 20_000;

    @Test
    void a_pass_ends_at_what_was_written_while_the_writer_goes_on() {
        Path dir = tmp.resolve("live");
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            for (int i = 1; i < BEFORE; i++) {
                w.appendInput(new NodeEvent.Tick(1_000L * i));
            }
            JournalReader r = JournalReader.open(dir);
            Iterator<JournalEntry> it = r.iterator();
            int read = 0;
            int appended = 0;
            while (it.hasNext()) {
                JournalEntry e = it.next();
                assertThat(e.seq()).isEqualTo(read);
                read++;
                // the writer goes on: an entry for every one read, never pausing while the pass runs
                if (appended < AT_MOST) {
                    w.appendInput(new NodeEvent.Tick(1_000L * (BEFORE + appended)));
                    appended++;
                }
            }
            assertThat(read).as("entries read while the writer appended %d", appended).isEqualTo(BEFORE);
            assertThat(r.integrity().damage()).isEmpty();
            assertThat(r.clean()).as("%s", r.warnings()).isTrue();

            // a later pass reads what was written by then, whole
            int again = 0;
            for (JournalEntry e : r) {
                assertThat(e.seq()).isEqualTo(again);
                again++;
            }
            assertThat(again).isEqualTo(BEFORE + appended);
            assertThat(r.clean()).as("%s", r.warnings()).isTrue();
        }
    }

    /**
     * A pass whose thread is interrupted (Reactor cancels a route's journal read when its client
     * goes away) fails naming the interrupt, not with a bare {@code null}; it closed only its own
     * channel, so the next pass on the same reader reads the journal whole.
     */
    @Test
    void an_interrupted_pass_says_so_and_the_next_pass_reads_everything() {
        Path dir = tmp.resolve("cancelled");
        int entries = 1 + 60_000; // well over one read window, so that the pass reads again after the interrupt
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            for (int i = 1; i < entries; i++) {
                w.appendInput(new NodeEvent.Tick(1_000L * i));
            }
        }
        JournalReader r = JournalReader.open(dir);
        Iterator<JournalEntry> it = r.iterator();
        assertThat(it.next().seq()).isZero();
        Thread.currentThread().interrupt();
        try {
            assertThatThrownBy(() -> {
                while (it.hasNext()) {
                    it.next();
                }
            }).isInstanceOf(JournalException.class)
                    .hasMessageContaining("cannot read ")
                    .hasMessageEndingWith(": the reading thread was interrupted (the pass was cancelled)");
        } finally {
            Thread.interrupted();
        }
        int read = 0;
        for (JournalEntry e : r) {
            assertThat(e.seq()).isEqualTo(read);
            read++;
        }
        assertThat(read).isEqualTo(entries);
        assertThat(r.clean()).as("%s", r.warnings()).isTrue();
    }
}
