package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Progress frames: only on a terminal, never in the first second, at most four a second; on a manual clock. */
class ProgressTest {

    private final AtomicLong now = new AtomicLong(1_000_000_000_000L);
    private final StringWriter err = new StringWriter();

    @Test
    void a_bar_on_a_terminal_after_the_first_second_ended_by_done() {
        Progress p = new Progress(new PrintWriter(err), "import", true, now::get);
        p.update(0.1, "early");
        assertThat(err.toString()).as("nothing in the first second").isEmpty();
        now.addAndGet(1_100_000_000L);
        assertThat(p.due()).isTrue();
        p.update(0.5, "half");
        assertThat(err.toString()).isEqualTo("\rimport [###############               ]  50% half   ");
        now.addAndGet(100_000_000L);
        p.update(0.6, "too soon");
        assertThat(err.toString()).doesNotContain("too soon");
        now.addAndGet(300_000_000L);
        p.update(-1, "12 entries");
        assertThat(err.toString()).endsWith("\rimport 12 entries   ");
        p.done("done");
        assertThat(err.toString()).endsWith("\rimport [##############################] 100% done   " + System.lineSeparator());
    }

    @Test
    void nothing_at_all_when_standard_error_is_not_a_terminal() {
        Progress p = new Progress(new PrintWriter(err), "import", false, now::get);
        now.addAndGet(5_000_000_000L);
        assertThat(p.due()).isFalse();
        p.update(0.5, "half");
        p.done("done");
        ProgressLine l = new ProgressLine(new PrintWriter(err), "replay", false, now::get);
        now.addAndGet(5_000_000_000L);
        l.inputsApplied(1_000_000);
        l.done();
        assertThat(err.toString()).isEmpty();
    }

    @Test
    void a_replay_counter_is_erased_when_done() {
        ProgressLine l = new ProgressLine(new PrintWriter(err), "hangs", true, now::get);
        l.inputsApplied(10);
        assertThat(err.toString()).isEmpty();
        now.addAndGet(2_000_000_000L);
        l.inputsApplied(4_000_000);
        assertThat(err.toString()).isEqualTo("\rhangs: 4,000,000 events replayed (2.000000 s, 2.00 M events/s) ");
        l.done();
        assertThat(err.toString()).endsWith("\r" + " ".repeat(78) + "\r");
    }

    @Test
    void the_launchers_word_on_standard_error_decides() {
        String before = System.getProperty(Progress.TTY_PROPERTY);
        try {
            System.setProperty(Progress.TTY_PROPERTY, "true");
            assertThat(Progress.stderrIsTerminal()).isTrue();
            System.setProperty(Progress.TTY_PROPERTY, "false");
            assertThat(Progress.stderrIsTerminal()).isFalse();
        } finally {
            if (before == null) {
                System.clearProperty(Progress.TTY_PROPERTY);
            } else {
                System.setProperty(Progress.TTY_PROPERTY, before);
            }
        }
    }
}
