package io.kvledger.cli;

import io.kvledger.core.config.TransferMode;
import io.kvledger.node.cluster.LiveCluster;
import io.kvledger.node.cluster.NodeHealth;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger cluster}: the options of {@link LiveCluster}, which does the work, then the {@code hangs} report; it starts {@code N + M} instances as live node processes on loopback (each
 * {@code kvledger node} with the simulated engine, its own journal and HTTP port), routes
 * {@code K} requests through them as vLLM's toy proxy does (real ZMQ notifies and handshakes,
 * real transfers of KV blocks filled with a verifiable pattern), waits for the prefills to free
 * what they hold, stops the nodes with SIGTERM, and prints the lifecycle summary and the
 * {@code hangs} report over their journals. Exit 0 when every request succeeded, every byte
 * checked and {@code hangs} found nothing.
 *
 * <p>An instance with DP or TP above 1 is one node process per (DP rank, TP rank), each binding
 * its instance's base ports + {@code dp + tp} (MoRIIO's two-argument listener form; DP and TP
 * above 1 together are refused, since MoRIIO's dialers then aim at {@code dp * tp_size + tp}).
 * The simulated engine of a DP rank runs in its TP rank 0 node (vLLM's engine core: one scheduler
 * per DP rank) and drives the nodes of TP ranks 1.. ({@code --engine sim-worker}, vLLM's worker
 * processes) over their engine bridges; each rank moves and checks its own KV. Each DP rank is a
 * leg of the router, in the toy proxy's flat interleaved order, reached at its own HTTP server
 * with {@code X-data-parallel-rank}.
 *
 * <p>A node process that exits by itself during the run (its loop stopped: {@code kvledger node}
 * exits 3 and says why), or that does not exit 0 on SIGTERM, is named in the summary with its exit
 * status and the run is not clean (exit 1). Nodes killed by {@code --kill} are reported as before.
 */
@Command(name = "cluster", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Start N prefill and M decode live nodes as processes on loopback, send K requests through them, then report.")
final class ClusterCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--prefill", defaultValue = "1", description = "Prefill nodes (default: ${DEFAULT-VALUE}).")
    int prefill;

    @Option(names = "--decode", defaultValue = "1", description = "Decode nodes (default: ${DEFAULT-VALUE}).")
    int decode;

    @Option(names = "--tp", defaultValue = "1", paramLabel = "T",
            description = "TP size of every instance: one node process per TP rank (default: ${DEFAULT-VALUE}).")
    int tp;

    @Option(names = "--prefill-tp", paramLabel = "T", description = "TP size of the prefill instances (default: --tp; READ only when it differs from the decode's).")
    Integer prefillTp;

    @Option(names = "--decode-tp", paramLabel = "T", description = "TP size of the decode instances (default: --tp).")
    Integer decodeTp;

    @Option(names = "--dp", defaultValue = "1", paramLabel = "D",
            description = "DP size of every instance: one node process per DP rank; not with TP above 1 (default: ${DEFAULT-VALUE}).")
    int dp;

    @Option(names = "--mode", defaultValue = "write", paramLabel = "read|write", description = "Transfer mode (default: ${DEFAULT-VALUE}).")
    String mode;

    @Option(names = "--requests", defaultValue = "100", description = "Client requests to send (default: ${DEFAULT-VALUE}).")
    int requests;

    @Option(names = "--faults", defaultValue = "", paramLabel = "SPEC",
            description = "Faults injected inside the nodes, e.g. drop=0.01,dup=0.01,delay=0.02,fail=0.005. " + FaultSpecOption.KEYS_HELP
                    + " (abort is not supported live.)")
    String faults;

    @Option(names = "--faults-on", split = ",", paramLabel = "NODE",
            description = "Inject --faults only inside these nodes (e.g. D0-tp1); default: every node.")
    List<String> faultsOn;

    @Option(names = "--kill", paramLabel = "NODE@N", description = "kill -9 node NODE (e.g. D0) after N requests were sent.")
    String kill;

    @Option(names = "--fail-journal", paramLabel = "NODE@N",
            description = "Testing only, an injected fault: node NODE's journal refuses every input after its first N "
                    + "(kvledger node --fail-journal-after N), so its loop stops and the process exits by itself.")
    String failJournal;

    @Option(names = "--out", required = true, paramLabel = "DIR", description = "Where the nodes' journals and logs go (DIR/<node>/).")
    Path out;

    @Option(names = "--seed", defaultValue = "1", description = "Seed of the router and the fault draws (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--concurrency", defaultValue = "16", description = "Client requests in flight at once (default: ${DEFAULT-VALUE}).")
    int concurrency;

    @Option(names = "--transfer-engine", defaultValue = "auto", paramLabel = "auto|ucx", description = "The nodes' transfer engine (default: ${DEFAULT-VALUE}).")
    String transferEngine;

    @Option(names = "--defer-timeout-s", converter = DurationOption.class, defaultValue = "10", description = "The nodes' defer_timeout (default: ${DEFAULT-VALUE}).")
    double deferTimeoutS;

    @Option(names = "--transfer-timeout-s", converter = DurationOption.class, defaultValue = "5", description = "The nodes' transfer_timeout (default: ${DEFAULT-VALUE}).")
    double transferTimeoutS;

    @Option(names = "--stuck-after-s", converter = DurationOption.class, defaultValue = "5", description = "hangs --stuck-after for the report (default: ${DEFAULT-VALUE}).")
    double stuckAfterS;

    @Option(names = "--timeout-s", converter = DurationOption.class, defaultValue = "300", description = "Give up on requests not answered this many seconds after the nodes are up (default: ${DEFAULT-VALUE}).")
    double timeoutS;

    @Option(names = "--start-timeout-s", converter = DurationOption.class, defaultValue = NodeHealth.DEFAULT_START_TIMEOUT_S, paramLabel = "S",
            description = "Give up on a node process that does not answer on its HTTP port this many seconds after it was "
                    + "started (default: ${DEFAULT-VALUE}; a loaded machine can take minutes).")
    double startTimeoutS;

    @Option(names = "--ship", paramLabel = "kafka://HOST:PORT/TOPIC",
            description = "Every node ships its journal to this Kafka topic (kvledger node --ship).")
    String ship;

    @Option(names = "--otlp", paramLabel = "URL",
            description = "Every node exports its requests' traces to this OTLP/HTTP receiver (kvledger node --otlp).")
    String otlp;

    @Override
    public Integer call() throws Exception {
        PrintWriter o = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        TransferMode m = ModeOption.parse(spec, mode);
        LiveCluster cluster;
        try {
            cluster = LiveCluster.prepare(new LiveCluster.Options(prefill, decode, tp, prefillTp, decodeTp, dp, m, requests,
                    faults, faultsOn, kill, failJournal, out, seed, concurrency, transferEngine, deferTimeoutS,
                    transferTimeoutS, stuckAfterS, timeoutS, startTimeoutS, otlp, ship));
        } catch (LiveCluster.UsageException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        LiveCluster.Result r = cluster.run(Main.class.getName(), err);
        if (r.notStarted()) {
            return 2;
        }
        for (String l : r.summary()) {
            o.println(l);
        }
        o.flush();
        List<String> hangArgs = new ArrayList<>(List.of("hangs", "--stuck-after", String.valueOf(stuckAfterS)));
        for (Path j : r.journals()) {
            hangArgs.add(j.toString());
        }
        int hangs = Main.run(o, err, hangArgs.toArray(String[]::new));
        o.println();
        o.println("journals: " + cluster.dir() + " (kvledger inspect " + r.journals().get(0) + " ... --request ID)");
        o.flush();
        return r.clean() && hangs == 0 ? 0 : 1;
    }
}
