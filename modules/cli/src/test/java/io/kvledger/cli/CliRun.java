package io.kvledger.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/** Runs kvledger commands in-process on captured output, and makes small simulated journals. */
final class CliRun {

    private CliRun() {}

    record Outcome(int code, String out, String err) {
        List<String> lines() {
            return out.lines().toList();
        }
    }

    static Outcome run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Main.run(new PrintWriter(out), new PrintWriter(err), args);
        return new Outcome(code, out.toString(), err.toString());
    }

    /** Options that keep a simulated journal to a few hundred entries. */
    static final String[] SMALL = {"--time-limit-s", "5", "--defer-timeout-s", "31", "--idle-step-ms", "5000", "--tick-ms", "5000"};

    /**
     * {@code kvledger simulate} into {@code out}: seed 2, one READ request whose release is dropped
     * (P0 reaps it), unless other faults are given.
     */
    static Outcome simulate(Path out, String mode, long seed, int requests, String faults) {
        String[] base = {"simulate", "--seed", Long.toString(seed), "--requests", Integer.toString(requests), "--faults", faults,
                "--mode", mode, "--out", out.toString()};
        String[] all = new String[base.length + SMALL.length];
        System.arraycopy(base, 0, all, 0, base.length);
        System.arraycopy(SMALL, 0, all, base.length, SMALL.length);
        return run(all);
    }

    static void copyTree(Path from, Path to) {
        try (Stream<Path> s = Files.walk(from)) {
            for (Path p : s.sorted(Comparator.naturalOrder()).toList()) {
                Path t = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(t);
                } else if (!p.getFileName().toString().equals("kvledger-writer.lock")) {
                    Files.copy(p, t);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
