package io.kvledger.cli;

import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JournalTailer;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger tail [-f] [-n N] DIR}: the last entries of one journal, and with {@code -f}
 * every entry appended after them, as the writer (a live node, a simulation, an import in another
 * process) appends it. {@code -f} waits for a journal that does not exist yet, retrying until its
 * writer starts, and runs until interrupted (Ctrl-C / SIGINT, or SIGTERM), or until {@code --max}
 * entries were printed.
 *
 * <p>Threading: the command runs on the caller's thread; a JVM shutdown hook (run on SIGINT) only
 * raises a flag and waits up to two seconds for the loop to print its last line and close the
 * journal.
 */
@Command(name = "tail", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Prints the last entries of a journal; with -f, follows it while its writer appends. "
                + "Without -f, exit status 1 when the journal is damaged (the damage is printed on standard error).",
            "With -f the journal need not exist yet: tail waits for its writer to start. Ctrl-C stops it."})
final class TailCommand implements Callable<Integer> {

    private static final Duration POLL = Duration.ofMillis(200);

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "DIR", description = "one journal directory (for example out/P0)")
    Path dir;

    @Option(names = {"-f", "--follow"}, description = "keep printing entries as they are appended")
    boolean follow;

    @Option(names = {"-n", "--lines"}, paramLabel = "N", defaultValue = "10",
            description = "print the last N entries first (default: ${DEFAULT-VALUE}; 0: only new ones with -f)")
    int lines;

    @Option(names = "--type", paramLabel = "T", split = ",", description = "only entries of these types (names or ids)")
    List<String> types;

    @Option(names = "--json", description = "JSON lines instead of text")
    boolean json;

    @Option(names = "--max", paramLabel = "N",
            description = "with -f: stop after printing N entries in all (default: run until interrupted)")
    Long max;

    @Option(names = "--retry-ms", paramLabel = "MS", defaultValue = "200",
            description = "with -f: how often to look for a journal that does not exist yet (default: ${DEFAULT-VALUE})")
    long retryMs;

    private TypeFilter filter;
    private String lastProblem;

    @Override
    public Integer call() {
        if (lines < 0) {
            throw usage("-n must not be negative, got " + lines);
        }
        if (max != null && max < 1) {
            throw usage("--max must be at least 1, got " + max);
        }
        if (max != null && !follow) {
            throw usage("--max is only for -f (without -f, -n N says how many entries to print)");
        }
        if (retryMs < 1) {
            throw usage("--retry-ms must be at least 1, got " + retryMs);
        }
        try {
            filter = TypeFilter.parse(types);
        } catch (IllegalArgumentException e) {
            throw usage(e.getMessage());
        }
        if (Files.isDirectory(dir) && !JournalDirs.isJournal(dir)) {
            List<NodeJournal> inside;
            try {
                inside = JournalDirs.resolve(List.of(dir));
            } catch (JournalInputs.InputException none) {
                inside = List.of(); // with -f: wait for the writer
            }
            if (!inside.isEmpty()) {
                throw usage(dir + " holds the journals of " + inside.size() + " node(s) ("
                        + String.join(", ", inside.stream().map(NodeJournal::name).toList())
                        + "): tail one of them, for example " + inside.get(0).dir());
            }
        }
        return follow ? follow() : last();
    }

    /** Without -f: the last N entries, from one pass over the journal. */
    private int last() {
        if (!JournalDirs.isJournal(dir)) {
            throw usage(Files.isDirectory(dir) ? "no journal in " + dir + ": it has no .cq4 queue files"
                    : "no such directory: " + dir);
        }
        JournalReader r;
        try {
            r = JournalReader.open(dir);
        } catch (JournalException e) {
            throw usage(e.getMessage());
        }
        PrintWriter out = spec.commandLine().getOut();
        try (r) {
            ArrayDeque<JournalEntry> ring = new ArrayDeque<>();
            for (JournalEntry e : r) {
                keep(ring, e);
            }
            for (JournalEntry e : ring) {
                print(out, e);
            }
            out.flush();
            r.warnings().forEach(spec.commandLine().getErr()::println);
            return Journals.damaged(r) ? 1 : 0;
        }
    }

    private void keep(ArrayDeque<JournalEntry> ring, JournalEntry e) {
        if (lines == 0 || !filter.accepts(e)) {
            return;
        }
        if (ring.size() == lines) {
            ring.removeFirst();
        }
        ring.addLast(e);
    }

    private void print(PrintWriter out, JournalEntry e) {
        out.println(json ? EntryFormat.json(e, null) : EntryFormat.text(e, null));
    }

    /** With -f: wait for the journal, print its last N entries, then follow it. */
    private int follow() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        AtomicBoolean stop = new AtomicBoolean();
        CountDownLatch finished = new CountDownLatch(1);
        Thread hook = new Thread(() -> {
            stop.set(true);
            try {
                finished.await(2, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "kvledger-tail-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        long printed = 0;
        JournalTailer t = null;
        try {
            boolean waited = false;
            while (!stop.get()) {
                t = tryOpen();
                if (t != null) {
                    break;
                }
                if (!waited) {
                    err.println("tail: waiting for a journal in " + dir + " (Ctrl-C to stop)");
                    err.flush();
                    waited = true;
                }
                LockSupport.parkNanos(retryMs * 1_000_000L);
            }
            if (t == null) {
                return 0;
            }
            if (waited) {
                err.println("tail: following " + t.header().describe());
                err.flush();
            }
            // Entries written before we looked: the last N (all of them when the writer started
            // while we waited: every one is new to us).
            ArrayDeque<JournalEntry> ring = new ArrayDeque<>();
            JournalEntry e;
            while ((e = t.poll(Duration.ZERO)) != null) {
                if (waited) {
                    if (filter.accepts(e)) {
                        print(out, e);
                        printed++;
                        if (max != null && printed >= max) {
                            break;
                        }
                    }
                } else {
                    keep(ring, e);
                }
            }
            for (JournalEntry r : ring) {
                if (max != null && printed >= max) {
                    break;
                }
                print(out, r);
                printed++;
            }
            out.flush();
            while (!stop.get() && (max == null || printed < max)) {
                e = t.poll(POLL);
                if (e != null && filter.accepts(e)) {
                    print(out, e);
                    printed++;
                    if (!json || printed % 64 == 0) {
                        out.flush();
                    }
                } else if (e == null) {
                    out.flush();
                    if (out.checkError()) {
                        break;
                    }
                }
            }
            out.flush();
            if (stop.get()) {
                err.println("tail: stopped after " + printed + " entries");
            }
            t.warnings().forEach(err::println);
            err.flush();
            return 0;
        } finally {
            if (t != null) {
                t.close();
            }
            finished.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running: it is what stopped us
            }
        }
    }

    /** A tailer from the start of the journal, or null while there is none (or only its first file). */
    private JournalTailer tryOpen() {
        if (!JournalDirs.isJournal(dir)) {
            return null;
        }
        try {
            return JournalTailer.open(dir, true);
        } catch (JournalException e) {
            // usually: the writer has created the queue but not yet appended the header; say
            // once why, in case it is something that will not go away
            if (!e.getMessage().equals(lastProblem)) {
                lastProblem = e.getMessage();
                spec.commandLine().getErr().println("tail: not readable yet: " + e.getMessage());
                spec.commandLine().getErr().flush();
            }
            return null;
        }
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
