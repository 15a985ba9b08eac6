package io.kvledger.cli;

import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.ledger.replay.JournalTail;
import io.kvledger.ledger.report.EntryText;
import io.kvledger.ledger.report.TypeFilter;
import io.kvledger.ledger.text.Seconds;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalReader;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
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
 * <p>The reading and following are the ledger's {@link JournalTail}. Threading: the command runs
 * on the caller's thread; a JVM shutdown hook (run on SIGINT) only
 * raises a flag and waits up to two seconds for the loop to print its last line and close the
 * journal.
 */
@Command(name = "tail", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Prints the last entries of a journal; with -f, follows it while its writer appends. "
                + "Without -f, exit status 1 when the journal is damaged (the damage is printed on standard error).",
            "With -f the journal need not exist yet: tail waits for its writer to start. Ctrl-C stops it."})
final class TailCommand implements Callable<Integer> {

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

    @Option(names = "--retry-ms", converter = DurationOption.Millis.class, paramLabel = "MS", defaultValue = "200",
            description = "with -f: how often to look for a journal that does not exist yet (default: ${DEFAULT-VALUE})")
    double retryMs;

    private TypeFilter filter;

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
            throw usage("--retry-ms must be at least 1 ms, got " + Seconds.exact(Math.round(retryMs * 1e6), 0));
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
            JournalTail.Last last = JournalTail.last(r, lines, filter::accepts);
            for (JournalEntry e : last.entries()) {
                print(out, e);
            }
            out.flush();
            last.warnings().forEach(spec.commandLine().getErr()::println);
            return last.damaged() ? 1 : 0;
        }
    }

    private void print(PrintWriter out, JournalEntry e) {
        out.println(json ? EntryText.json(e, null) : EntryText.text(e, null));
    }

    /** With -f: wait for the journal, print its last N entries, then follow it until stopped. */
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
        try {
            JournalTail.Followed f = JournalTail.follow(dir, lines, max, Duration.ofNanos(Math.round(retryMs * 1e6)), filter::accepts,
                    stop::get, new JournalTail.Follower() {
                        private long printed;
                        private boolean live;

                        @Override
                        public void entry(JournalEntry e) {
                            print(out, e);
                            printed++;
                            if (live && (!json || printed % 64 == 0)) {
                                out.flush();
                            }
                        }

                        @Override
                        public void caughtUp() {
                            out.flush();
                            live = true;
                        }

                        @Override
                        public boolean idle() {
                            out.flush();
                            return !out.checkError();
                        }

                        @Override
                        public void waiting() {
                            err.println("tail: waiting for a journal in " + dir + " (Ctrl-C to stop)");
                            err.flush();
                        }

                        @Override
                        public void following(String describe) {
                            err.println("tail: following " + describe);
                            err.flush();
                        }

                        @Override
                        public void notReadable(String reason) {
                            err.println("tail: not readable yet: " + reason);
                            err.flush();
                        }
                    });
            if (!f.opened()) {
                return 0;
            }
            out.flush();
            if (stop.get()) {
                err.println("tail: stopped after " + f.handed() + " entries");
            }
            f.warnings().forEach(err::println);
            err.flush();
            return 0;
        } finally {
            finished.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running: it is what stopped us
            }
        }
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
