package io.kvledger.cli;

import io.kvledger.ledger.kafka.KafkaUri;
import io.kvledger.ledger.replay.JournalExport;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JsonLines;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger journal export DIR [--out FILE]}: one JSON object per entry, in seq order. A
 * single journal goes to standard output or FILE; a directory of node journals (simulate or merge
 * output), or a Kafka topic {@code ship} writes ({@code kafka://HOST:PORT/TOPIC[?since=10m]}, read
 * through temporary journals by {@link KafkaTopics}), needs {@code --out OUTDIR} and gives
 * {@code OUTDIR/<node>/journal.jsonl} per node (the layout of journal/fixtures). A file is written under a temporary name and renamed when complete,
 * so a failed export leaves no half-written file; an existing file is kept unless {@code --force}.
 * A damaged journal is exported as far as it is intact, its damaged regions are printed on
 * standard error, and the exit status is 1. The files are written by the ledger's
 * {@link JournalExport}; the command keeps its options, the progress line and the exit code.
 */
@Command(name = "export", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Writes a journal as JSON lines: to standard output, or to FILE with --out.",
            "For a directory of node journals or a Kafka topic, --out names a directory: OUT/<node>/journal.jsonl per node.",
            "Exit status: 0, or 1 when a journal is damaged (what is intact is exported; the damage is printed)."})
final class JournalExportCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "DIR", description = "a journal, or a directory of node journals, "
            + "or a Kafka topic kvledger ship writes: kafka://HOST:PORT/TOPIC[?since=10m]")
    String source;

    @Option(names = "--out", paramLabel = "FILE", description = "the file to write (a directory for several journals)")
    Path out;

    @Option(names = "--force", description = "replace files that already exist")
    boolean force;

    @Override
    public Integer call() {
        PrintWriter err = spec.commandLine().getErr();
        boolean topic = KafkaUri.isKafka(source);
        if (topic && out == null) {
            // checked before the topic is read: a topic holds a journal per node, like a directory of them
            throw usage(source + " is a Kafka topic: give --out DIR to write DIR/<node>/journal.jsonl for each node");
        }
        Path dir = topic ? null : Path.of(source);
        List<NodeJournal> journals;
        try {
            journals = topic ? KafkaTopics.read(source, err, "journal export") : JournalDirs.resolve(List.of(dir));
        } catch (JournalInputs.InputException e) {
            throw usage(e.getMessage());
        }
        if (!topic && JournalDirs.isJournal(dir)) {
            if (out == null) {
                return exportTo(dir, null, err);
            }
            if (Files.isDirectory(out)) {
                throw usage("--out " + out + " is a directory; give the file to write");
            }
            return exportTo(dir, out, err);
        }
        if (out == null) {
            throw usage(source + " holds " + journals.size() + " journals: give --out DIR to write DIR/<node>/journal.jsonl for each");
        }
        if (Files.exists(out) && !Files.isDirectory(out)) {
            throw usage("--out " + out + " is a file; with several journals it must be a directory");
        }
        int worst = 0;
        for (NodeJournal j : journals) {
            int code = exportTo(j.dir(), JournalExport.nodeFile(out, j.name()), err);
            if (code == 1 && worst == 0) {
                worst = 1; // a damaged journal: what is intact is exported, and the others too
            } else if (code != 0) {
                return code;
            }
        }
        return worst;
    }

    private int exportTo(Path journal, Path file, PrintWriter err) {
        JournalReader r;
        try {
            r = JournalReader.open(journal);
        } catch (JournalException e) {
            throw usage(e.getMessage());
        }
        Progress progress = new Progress(err, "journal export " + r.header().nodeId());
        try (r) {
            if (file == null) {
                PrintWriter o = spec.commandLine().getOut();
                Counting c = new Counting(o, progress);
                JsonLines.export(r, c);
                c.flush();
                progress.done(String.format(Locale.ROOT, "%,d entries", c.lines));
            } else {
                if (Files.exists(file) && !force) {
                    throw usage(file + " exists; use --force to replace it");
                }
                long n;
                try {
                    n = JournalExport.toFile(r, file, w -> new Counting(w, progress));
                } catch (IOException | RuntimeException e) {
                    progress.done("failed");
                    throw e;
                }
                progress.done(String.format(Locale.ROOT, "%,d entries", n));
                err.println(String.format(Locale.ROOT, "exported %,d entries of %s to %s", n, r.header().nodeId(), file));
            }
            r.warnings().forEach(err::println);
            err.flush();
            return Journals.damaged(r) ? 1 : 0;
        } catch (IOException e) {
            err.println("journal export: writing " + (file == null ? "standard output" : file) + " failed: " + e.getMessage());
            return 1;
        }
    }

    /** Passes text on, counting lines (entries) for the progress line. */
    private static final class Counting extends java.io.FilterWriter {
        private final Progress progress;
        long lines;

        Counting(Writer out, Progress progress) {
            super(out);
            this.progress = progress;
        }

        @Override
        public void write(int c) throws IOException {
            super.write(c);
            if (c == '\n') {
                counted(1);
            }
        }

        @Override
        public void write(char[] buf, int off, int len) throws IOException {
            super.write(buf, off, len);
            int n = 0;
            for (int i = off; i < off + len; i++) {
                if (buf[i] == '\n') {
                    n++;
                }
            }
            counted(n);
        }

        @Override
        public void write(String str, int off, int len) throws IOException {
            super.write(str, off, len);
            int n = 0;
            for (int i = off; i < off + len; i++) {
                if (str.charAt(i) == '\n') {
                    n++;
                }
            }
            counted(n);
        }

        private void counted(int n) {
            if (n > 0) {
                lines += n;
                if (progress.due()) {
                    progress.update(-1, String.format(Locale.ROOT, "%,d entries", lines));
                }
            }
        }
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
