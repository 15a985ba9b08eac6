package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kills a writing child JVM with {@code destroyForcibly} (SIGKILL) and checks that the journal
 * reads back to its last complete entry and that the next writer appends after it.
 */
class CrashSafetyTest {

    @TempDir
    Path tmp;

    /** The child gets this JVM's flags: the surefire config passes them as a system property. */
    static List<String> jvmFlags() {
        String flags = System.getProperty("kvledger.jvm.flags");
        if (flags != null && !flags.isBlank()) {
            return Arrays.asList(flags.strip().split("\\s+"));
        }
        return ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                .filter(a -> !a.startsWith("-javaagent") && !a.startsWith("-agentlib"))
                .toList();
    }

    static Process startChild(String... args) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvmFlags());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(CrashChild.class.getName());
        cmd.addAll(Arrays.asList(args));
        return new ProcessBuilder(cmd).redirectErrorStream(true).start();
    }

    /** Waits for the child to print {@code marker}; returns everything it printed. */
    static String awaitLine(Process p, String marker) throws Exception {
        StringBuilder seen = new StringBuilder();
        BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line;
        while ((line = r.readLine()) != null) {
            seen.append(line).append('\n');
            if (line.equals(marker)) {
                return seen.toString();
            }
        }
        throw new AssertionError("the child exited (" + p.waitFor() + ") before printing " + marker + ":\n" + seen);
    }

    static void kill(Process p) throws Exception {
        p.destroyForcibly();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("child killed").isTrue();
        assertThat(p.exitValue()).as("killed by SIGKILL").isEqualTo(137);
    }

    /** Reads the journal and checks its shape; returns the last seq. */
    static long checkComplete(Path dir) {
        try (JournalReader r = JournalReader.open(dir)) {
            long expect = 0;
            for (JournalEntry e : r) {
                assertThat(e).as("seq %d", e.seq()).isNotInstanceOf(JournalEntry.Unknown.class);
                assertThat(e.seq()).as("monotonic, no gaps").isEqualTo(expect);
                if (e instanceof JournalEntry.Derived d) {
                    assertThat(d.causeSeq()).isLessThan(d.seq());
                }
                expect++;
            }
            // the children append sample events with times of their own among ticks: time goes back
            // (the order rules say so), and nothing else may be said
            assertThat(r.ruleProblems().keySet()).isSubsetOf(EntryRules.Kind.TIME_BACK);
            assertThat(r.warnings()).filteredOn(w -> !w.contains("event time before")).isEmpty();
            return expect - 1;
        }
    }

    static void appendAfterCrash(Path dir, long last) {
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            assertThat(w.appending()).isTrue();
            assertThat(w.nextSeq()).isEqualTo(last + 1);
            long seq = w.appendApplied(new NodeEvent.Tick(1), List.of(new Effect.StaleAckDropped("after-crash")));
            assertThat(seq).isEqualTo(last + 1);
        }
        assertThat(checkComplete(dir)).isEqualTo(last + 2);
    }

    @Test
    void a_writer_killed_inside_an_append_leaves_a_journal_that_reads_to_its_last_complete_entry() throws Exception {
        Path dir = tmp.resolve("stall");
        Process p = startChild("stall", dir.toString(), "500");
        try {
            awaitLine(p, "mid-append");
        } finally {
            kill(p);
        }
        long last = checkComplete(dir);
        assertThat(last).isEqualTo(500);
        appendAfterCrash(dir, last);
    }

    /**
     * Kills {@code rounds} children appending in {@code mode} one after the other on one journal:
     * each time the journal reads back, without a gap or damage, to the last complete append, which
     * grew by more than {@code minGrowth} entries, and a writer appends after it.
     */
    private void killRounds(String mode, int rounds, long minGrowth) throws Exception {
        Path dir = tmp.resolve(mode);
        long previous = -1;
        for (int round = 0; round < rounds; round++) {
            Process p = startChild(mode, dir.toString());
            try {
                awaitLine(p, "ready");
            } finally {
                kill(p);
            }
            long last = checkComplete(dir);
            assertThat(last).as("round %d", round).isGreaterThan(previous + minGrowth);
            assertThat(JournalReader.check(dir).damage()).as("round %d", round).isEmpty();
            appendAfterCrash(dir, last);
            previous = last + 2;
        }
        assertThat(Files.list(dir).anyMatch(f -> f.getFileName().toString().endsWith(".cq4"))).isTrue();
    }

    /** A group is all or nothing: the one being written when the writer dies is not in the journal. */
    @Test
    void writers_killed_while_appending_groups_lose_only_the_group_in_flight() throws Exception {
        killRounds("groups", 2, 200);
    }

    @Test
    void writers_killed_at_arbitrary_points_of_a_hot_append_loop_lose_only_the_entry_in_flight() throws Exception {
        // -Dkvledger.crash.rounds=N kills N writers in a row (a soak); the default suite kills two.
        killRounds("loop", Integer.getInteger("kvledger.crash.rounds", 2), 1000);
    }
}
