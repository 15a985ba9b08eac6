package io.kvledger.cli;

import static io.kvledger.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kvledger tail}: the last entries, following a live writer, and stopping on SIGINT. */
class TailCommandTest {

    @TempDir
    Path tmp;

    private static JournalHeader header(String node) {
        return JournalHeader.of(node, NodeConfig.builder(Role.PRODUCER, TransferMode.READ).build(), "tail test");
    }

    private Path journalWithTicks(String node, int ticks) {
        Path dir = tmp.resolve(node);
        try (JournalWriter w = JournalWriter.open(dir, header(node))) {
            for (int i = 1; i <= ticks; i++) {
                w.appendInput(new NodeEvent.Tick(i * 1_000_000_000L));
            }
        }
        return dir;
    }

    @Test
    void prints_the_last_n_entries() {
        Path dir = journalWithTicks("P0", 20);
        CliRun.Outcome o = run("tail", "-n", "3", dir.toString());
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.lines()).hasSize(3);
        assertThat(o.lines()).extracting(l -> l.strip().split(" +")[0]).containsExactly("18", "19", "20");
        assertThat(run("tail", dir.toString()).lines()).as("10 by default").hasSize(10);
        assertThat(run("tail", "-n", "2", "--json", dir.toString()).lines()).allMatch(l -> l.startsWith("{\"seq\":"));
    }

    /** tail -f starts before the writer, waits for it, and prints what it appends. */
    @Test
    void follow_waits_for_the_writer_and_prints_new_entries() throws Exception {
        Path dir = tmp.resolve("later");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        AtomicInteger code = new AtomicInteger(-1);
        Thread tail = new Thread(() -> code.set(Main.run(new PrintWriter(out), new PrintWriter(err, true),
                "tail", "-f", "--max", "6", "--retry-ms", "20", dir.toString())));
        tail.start();
        while (!err.toString().contains("waiting for a journal")) {
            LockSupport.parkNanos(5_000_000);
        }
        try (JournalWriter w = JournalWriter.open(dir, header("P0"))) {
            w.appendInput(new NodeEvent.Tick(1));
            w.appendInput(new NodeEvent.Tick(2));
            for (int i = 3; i <= 8; i++) {
                w.appendInput(new NodeEvent.Tick(i));
            }
        }
        tail.join(TimeUnit.SECONDS.toMillis(60));
        assertThat(tail.isAlive()).as("tail -f --max 6 ended; stderr: %s", err).isFalse();
        assertThat(code.get()).isZero();
        List<String> lines = out.toString().lines().toList();
        assertThat(lines).hasSize(6);
        assertThat(lines.get(0)).contains("header P0");
        assertThat(lines).extracting(l -> l.strip().split(" +")[0]).containsExactly("0", "1", "2", "3", "4", "5");
        assertThat(err.toString()).contains("tail: following P0 kv_producer READ");
    }

    @Test
    void usage_errors_exit_2() {
        journalWithTicks("P0", 1);
        journalWithTicks("D0", 1);
        CliRun.Outcome several = run("tail", tmp.toString());
        assertThat(several.code()).isEqualTo(2);
        assertThat(several.err()).contains("holds the journals of 2 node(s) (D0, P0): tail one of them")
                .contains("see 'kvledger help tail'");
        assertThat(run("tail", tmp.resolve("none").toString()).err()).contains("no such directory");
        assertThat(run("tail", "--max", "3", tmp.resolve("P0").toString()).err()).contains("--max is only for -f");
        assertThat(run("tail", "-n", "-1", tmp.resolve("P0").toString()).code()).isEqualTo(2);
        assertThat(run("tail", "--type", "nope", tmp.resolve("P0").toString()).code()).isEqualTo(2);
    }

    /** Whether this process ignores SIGINT (bit 2 of SigIgn in /proc/self/status). */
    private static boolean sigintIgnoredHere() throws IOException {
        Path status = Path.of("/proc/self/status");
        if (!Files.isReadable(status)) {
            return false;
        }
        for (String line : Files.readAllLines(status)) {
            if (line.startsWith("SigIgn:")) {
                return (Long.parseUnsignedLong(line.substring(7).strip(), 16) & (1L << 1)) != 0;
            }
        }
        return false;
    }

    /** A real SIGINT to a child JVM running {@code tail -f}: it prints its summary and exits. */
    @Test
    void sigint_stops_a_following_tail() throws Exception {
        Path dir = journalWithTicks("P0", 3);
        List<String> cmd = new ArrayList<>();
        if (sigintIgnoredHere()) {
            // started in the background by a non-interactive shell, this JVM (and so its child)
            // ignores SIGINT, and a JVM that starts with it ignored installs no handler for it:
            // the child gets SIGINT's default disposition back from GNU env
            cmd.addAll(List.of("env", "--default-signal=INT"));
        }
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        String flags = System.getProperty("kvledger.jvm.flags", "");
        if (!flags.isBlank()) {
            cmd.addAll(Arrays.asList(flags.strip().split("\\s+")));
        }
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName(), "tail", "-f", dir.toString()));
        Process p = new ProcessBuilder(cmd).start();
        try {
            String out = readUntil(p.getInputStream(), " tick");
            assertThat(out).contains("header P0");
            Process kill = new ProcessBuilder("kill", "-INT", Long.toString(p.pid())).inheritIO().start();
            assertThat(kill.waitFor()).isZero();
            assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("tail -f exits on SIGINT").isTrue();
            String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(err).contains("tail: stopped after 4 entries");
            assertThat(p.exitValue()).as("128 + SIGINT").isEqualTo(130);
        } finally {
            p.destroyForcibly();
        }
    }

    /** Reads the child's output until {@code marker} has appeared on a complete line. */
    private static String readUntil(InputStream in, String marker) throws IOException {
        StringBuilder b = new StringBuilder();
        int c;
        while ((c = in.read()) >= 0) {
            b.append((char) c);
            if (c == '\n' && b.indexOf(marker) >= 0) {
                return b.toString();
            }
        }
        throw new IOException("the child ended before printing '" + marker + "': " + b);
    }
}
