package io.kvledger.cli;

import io.kvledger.ledger.kafka.KafkaUri;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.JournalInputs.InputException;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.ledger.replay.JsonLinesInputs;
import io.kvledger.node.ship.ShipMetrics;
import io.kvledger.node.ship.Shipper;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger ship --to kafka://HOST:PORT/TOPIC JOURNAL...}: follows local journals and appends
 * every entry to a Kafka topic ({@link Shipper}); the reading commands then take the topic where
 * they take a directory.
 */
@Command(name = "ship", mixinStandardHelpOptions = true, sortOptions = false,
        description = {
            "Follow journals (of nodes, proxies, taps) and append every entry to a Kafka topic, keyed by node id, "
                    + "the entry's bytes exactly as the journal holds them (journal/FORMAT.md).",
            "The vLLM bridge's recordings (a directory of JSON-lines files, or one file) are followed as they grow: each "
                    + "whole line goes as the entries kvledger journal import makes of it (same seqs, same bytes); a "
                    + "half-written last line is waited for; a bad line stops that file's shipping, named with its file "
                    + "and line number.",
            "At-least-once and resumable: at start it reads the last seq the topic holds for each node and ships "
                    + "what follows; readers drop duplicates by (node, seq). Idempotent producer, acks=all. A separate "
                    + "reader: it never slows or blocks the journals' writers. While the broker is away, entries wait in "
                    + "at most --buffer-mb of memory (then in the journals), and a line on standard error says so.",
            "While following, each directory given is listed once a second and what appears in it (a recording, a "
                    + "journal) is followed too, named on standard error; a directory not there yet, or empty, is waited for.",
            "Then, for example: kvledger hangs kafka://HOST:PORT/TOPIC",
            "Exit status: 0 stopped (or, with --no-follow, everything acknowledged); 1 the producer failed (a restart "
                    + "resumes); 2 usage error; 3 a recording had a bad line (or was replaced), or a journal that "
                    + "appeared later was refused (its node shipped from another journal already), said on standard "
                    + "error: the rest was shipped; 4 stopped (SIGTERM, Ctrl-C) with entries sent and not acknowledged, the "
                    + "broker away: the last line says how many; they stay in the journals and a restart ships them."})
final class ShipCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--to", required = true, paramLabel = "kafka://HOST:PORT/TOPIC",
            description = "The topic (created with --partitions when missing).")
    String to;

    @Parameters(paramLabel = "JOURNAL", arity = "1..*",
            description = "journal directories, directories of node journals (one journal per node id), or the vLLM "
                    + "bridge's recordings (a directory of NAME.jsonl files, or one file)")
    List<Path> journals = new ArrayList<>();

    @Option(names = "--no-follow", description = "Ship what the journals hold now, wait for the acknowledgements, and exit.")
    boolean noFollow;

    @Option(names = "--buffer-mb", defaultValue = "32", paramLabel = "MB",
            description = "Memory for entries not yet acknowledged (default: ${DEFAULT-VALUE}).")
    int bufferMb;

    @Option(names = "--partitions", defaultValue = "8", paramLabel = "N",
            description = "Partitions of the topic when ship creates it (default: ${DEFAULT-VALUE}).")
    int partitions;

    @Option(names = "--metrics", paramLabel = "HOST:PORT",
            description = "Serve Prometheus metrics (GET /metrics) here: the backlog (entries and bytes handed to the "
                    + "producer and not acknowledged), entries acknowledged, whether the buffer is full, per node too; "
                    + "port 0 picks a free one, said on standard error.")
    String metrics;

    @Override
    public Integer call() throws Exception {
        PrintWriter err = spec.commandLine().getErr();
        KafkaUri target;
        try {
            target = KafkaUri.parse(to);
        } catch (IllegalArgumentException e) {
            throw usage("--to: " + e.getMessage());
        }
        if (target.since() != null) {
            throw usage("--to: a window (?since=) is for reading; ship appends to the whole topic");
        }
        if (bufferMb < 1 || partitions < 1) {
            throw usage("--buffer-mb and --partitions must be positive");
        }
        HostPort metricsAt;
        try {
            metricsAt = metrics == null ? null : HostPort.parse("--metrics", metrics);
        } catch (IllegalArgumentException e) {
            throw usage(e.getMessage());
        }
        List<Path> dirs = new ArrayList<>();
        List<Path> watch = new ArrayList<>();
        Shipper shipper;
        try {
            for (Path arg : journals) {
                if (!noFollow && (Files.isDirectory(arg) || !Files.exists(arg))) {
                    watch.add(arg);
                }
                if (!noFollow && !Files.exists(arg)) {
                    err.println("kvledger ship: note: " + arg + " does not exist yet; waiting for it, and for the journals "
                            + "and recordings that appear in it");
                    continue;
                }
                JsonLinesInputs.Recordings rec = JsonLinesInputs.files(arg.toString());
                if (rec.nodes().isEmpty()) {
                    if (!noFollow && noJournalYet(arg)) {
                        err.println("kvledger ship: note: " + arg + " holds no journal or recording yet; watching it for "
                                + "new ones");
                        continue;
                    }
                    for (NodeJournal j : JournalInputs.resolve(List.of(arg))) {
                        dirs.add(j.dir());
                    }
                    continue;
                }
                for (JsonLinesInputs.NodeFile f : rec.nodes()) {
                    if (f.inputsOnly()) {
                        throw usage(f.jsonl() + " holds inputs only: ship sends lines as journal import takes them; "
                                + "import it with --derive (kvledger journal import --derive) and ship that journal");
                    }
                    dirs.add(f.jsonl());
                }
                if (!rec.earlierRuns().isEmpty()) {
                    err.println("kvledger ship: note: " + JsonLinesInputs.leftOut(rec.earlierRuns())
                            + " (a node's topic stream is one run; ship an earlier one to another topic)");
                }
            }
            shipper = new Shipper(new Shipper.Options(target, dirs, !noFollow, (long) bufferMb << 20, partitions, watch),
                    err);
        } catch (InputException e) {
            throw usage(e.getMessage());
        }
        ShipMetrics served;
        try {
            served = metricsAt == null ? null : ShipMetrics.serve(shipper, metricsAt.host(), metricsAt.port());
        } catch (java.io.UncheckedIOException e) {
            shipper.close();
            throw usage(e.getMessage());
        }
        int rc;
        try (StopOnSignal signal = new StopOnSignal("kvledger-ship-stop"); shipper; AutoCloseable metricsServer = served) {
            if (served != null) {
                err.println("kvledger ship: metrics on http://" + metricsAt.urlHost() + ":" + served.port() + "/metrics");
            }
            err.println("kvledger ship: shipping " + (shipper.nodes().isEmpty() ? "nothing yet"
                    : String.join(", ", shipper.nodes())) + " to " + target + (watch.isEmpty() ? ""
                    : "; watching " + String.join(", ", watch.stream().map(Path::toString).toList())
                            + " for new journals and recordings (listed every " + Shipper.SCAN_EVERY_MS + " ms)"));
            err.flush();
            rc = shipper.run(signal::stopping);
            err.println("kvledger ship: " + (signal.stopping() ? "stopped: " : "") + shipper.acknowledged()
                    + " entries acknowledged, " + shipper.skipped() + " already in the topic"
                    + (shipper.backlog() > 0 ? ", " + shipper.backlog() + " not acknowledged (they stay in the journals; "
                            + "a restart ships them from what the topic holds); exit status " + rc : ""));
            err.flush();
            signal.exitStatus(rc);
        }
        return rc;
    }

    /** Whether {@code dir} is a directory holding no journal, neither itself nor in a subdirectory. */
    private static boolean noJournalYet(Path dir) throws java.io.IOException {
        if (!Files.isDirectory(dir) || JournalInputs.holdsQueueFiles(dir)) {
            return false;
        }
        try (java.util.stream.Stream<Path> s = Files.list(dir)) {
            return s.noneMatch(JournalInputs::holdsQueueFiles);
        }
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
