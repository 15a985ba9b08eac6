package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JournalTailerTest {

    @TempDir
    Path tmp;

    private static final Duration LONG = Duration.ofSeconds(30);

    @Test
    void follows_entries_appended_by_another_thread_in_order() throws Exception {
        follow(false);
    }

    /** As the node loop's journaller writes them: group excerpts of 1 to 16 inputs, read member by member. */
    @Test
    void follows_group_excerpts_member_by_member() throws Exception {
        follow(true);
    }

    private void follow(boolean groups) throws Exception {
        Path dir = tmp.resolve("P0");
        int n = 2_000;
        CountDownLatch opened = new CountDownLatch(1);
        try (JournalWriter w = JournalWriter.open(dir, Samples.header());
             JournalTailer t = JournalTailer.open(dir, true)) {
            assertThat(t.header().nodeId()).isEqualTo("P1");
            Thread writer = Thread.ofPlatform().start(() -> {
                try {
                    opened.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                for (int i = 0; i < n; ) {
                    if (groups) {
                        w.beginGroup();
                    }
                    for (int k = 0; k <= i % 16 && i < n; k++, i++) {
                        w.appendApplied(new NodeEvent.Tick(i), List.of(new Effect.StaleAckDropped("r" + i)));
                    }
                    if (groups) {
                        w.endGroup();
                    }
                }
            });
            assertThat(t.poll(LONG)).isInstanceOf(JournalEntry.Header.class);
            opened.countDown();
            List<JournalEntry> got = new ArrayList<>();
            while (got.size() < 2 * n) {
                JournalEntry e = t.poll(LONG);
                assertThat(e).as("entry %d within %s", got.size() + 1, LONG).isNotNull();
                got.add(e);
            }
            writer.join(TimeUnit.SECONDS.toMillis(30));
            for (int i = 0; i < got.size(); i++) {
                assertThat(got.get(i).seq()).isEqualTo(i + 1);
            }
            assertThat(got.getLast()).isEqualTo(new JournalEntry.Derived(2L * n, 2L * n - 1, n - 1,
                    new Effect.StaleAckDropped("r" + (n - 1))));
            assertThat(t.poll(Duration.ofMillis(20))).as("nothing more").isNull();
            assertThat(t.warnings()).isEmpty();
        }
    }

    @Test
    void a_tailer_from_the_end_sees_only_new_entries() {
        Path dir = tmp.resolve("P0");
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            w.appendInput(new NodeEvent.Tick(1));
            try (JournalTailer t = JournalTailer.open(dir, false)) {
                assertThat(t.poll(Duration.ZERO)).isNull();
                w.appendInput(new NodeEvent.Tick(2));
                assertThat(t.poll(LONG)).isEqualTo(new JournalEntry.Input(2, 2, new NodeEvent.Tick(2)));
            }
        }
    }
}
