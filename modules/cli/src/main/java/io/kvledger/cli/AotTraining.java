package io.kvledger.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * The training run of the JVM's class archive for the CLI (a dynamic CDS archive): the launcher
 * runs {@code java -XX:ArchiveClassesAtExit=FILE -cp kvledger.jar io.kvledger.cli.AotTraining}
 * once per build of the jar, and every later command starts with
 * {@code -XX:SharedArchiveFile=FILE}: the classes this run loaded, the lambdas' classes included,
 * come already parsed and verified. (It was JDK 25's AOT cache until the fourth round of issue 14
 * item 3: that cache keeps lambdas only with AOT-linked classes, which a small heap cannot start
 * with; and the method profiles of a run this small made the JIT work more over a big journal.)
 *
 * <p>It writes a small seeded simulation (2 prefill and 2 decode journals, the BigJournal
 * benchmark's light faults) into a temporary directory, runs the journal commands over it
 * in-process with their output thrown away, and deletes the directory. Nothing of it reaches
 * the user: the launcher sends this run's output to nowhere and drops the cache when it fails.
 * Exit status: 0, or 1 when a command did not give its expected status.
 */
public final class AotTraining {

    private AotTraining() {}

    /** The commands run over the journals in {@code DIR}, with the exit status each should give. */
    static final List<List<String>> COMMANDS = List.of(
            List.of("0", "replay", "DIR"),
            List.of("0", "replay", "DIR"),
            List.of("*", "hangs", "DIR"),
            List.of("*", "hangs", "DIR"),
            List.of("0", "replay", "--verify", "DIR"),
            List.of("0", "stats", "DIR"),
            List.of("0", "verify", "DIR/P0"),
            List.of("0", "dump", "DIR/D0", "--type", "header"));

    public static void main(String[] args) throws IOException {
        int requests = args.length > 0 ? Integer.parseInt(args[0]) : DEFAULT_REQUESTS;
        System.exit(train(Path.of(System.getProperty("java.io.tmpdir")), requests) == 0 ? 0 : 1);
    }

    /** How many simulated requests the default training run journals. */
    static final int DEFAULT_REQUESTS = 50;

    /**
     * Runs the training workload in a fresh directory under {@code parent}, deleted at the end;
     * returns how many commands did not give their expected exit status.
     */
    static int train(Path parent, int requests) throws IOException {
        Path dir = Files.createTempDirectory(parent, "kvledger-aot-");
        int failed = 0;
        try {
            PrintWriter none = new PrintWriter(Writer.nullWriter());
            Path journals = dir.resolve("j");
            failed += check(List.of("0"), Main.run(none, none, "simulate", "--seed", "7", "--requests",
                    String.valueOf(requests), "--prefill", "2", "--decode", "2",
                    "--faults", "drop=0.0005,dup=0.0005,delay=0.001,fail=0.0002,abort=0.002",
                    "--out", journals.toString()));
            for (List<String> c : COMMANDS) {
                String[] a = c.subList(1, c.size()).stream().map(s -> s.replace("DIR", journals.toString()))
                        .toArray(String[]::new);
                failed += check(c.subList(0, 1), Main.run(none, none, a));
            }
        } finally {
            try (Stream<Path> s = Files.walk(dir)) {
                s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        return failed;
    }

    private static int check(List<String> expected, int code) {
        return expected.get(0).equals("*") || expected.get(0).equals(String.valueOf(code)) ? 0 : 1;
    }
}
