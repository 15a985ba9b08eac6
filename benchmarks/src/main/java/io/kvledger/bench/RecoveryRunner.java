package io.kvledger.bench;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.journal.JournalReader;
import io.kvledger.node.Recovery;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * Question: how long does a live node take to recover, per million journaled input events? Times
 * {@link Recovery#replay} (what {@code NodeService.start} runs when its journal exists: every
 * entry read, every input applied to a fresh state, the handshakes collected) over each node
 * journal of a journal set, {@code --runs} times, with the configuration from the journal's header.
 *
 * <p>Usage: {@code java <project JVM flags> -cp benchmarks/target/benchmarks.jar
 * io.kvledger.bench.RecoveryRunner DIR [--runs N]}, where DIR is one node's journal or a set of them
 * (for example one written by {@link BigJournal}); default 3 runs, reported with their median.
 */
public final class RecoveryRunner {

    private RecoveryRunner() {}

    public static void main(String[] args) throws IOException {
        if (args.length < 1 || args[0].startsWith("-")) {
            System.err.println("usage: RecoveryRunner DIR [--runs N]");
            System.exit(2);
        }
        Path root = Path.of(args[0]);
        int runs = 3;
        for (int i = 1; i < args.length; i += 2) {
            if (args[i].equals("--runs") && i + 1 < args.length) {
                runs = Integer.parseInt(args[i + 1]);
            } else {
                throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        List<Path> nodes = new ArrayList<>();
        if (Recovery.present(root)) {
            nodes.add(root);
        } else {
            try (Stream<Path> s = Files.list(root)) {
                s.filter(Recovery::present).sorted().forEach(nodes::add);
            }
        }
        if (nodes.isEmpty()) {
            System.err.println("RecoveryRunner: no journal under " + root);
            System.exit(2);
        }
        for (Path node : nodes) {
            NodeConfig config;
            try (JournalReader r = JournalReader.open(node)) {
                config = r.header().config();
            }
            double[] msPerM = new double[runs];
            long inputs = 0;
            for (int run = 0; run < runs; run++) {
                Recovery rec = Recovery.replay(node, config);
                inputs = rec.inputs();
                double ms = rec.recoveryNs() / 1e6;
                msPerM[run] = ms / (inputs / 1e6);
                System.out.printf(Locale.ROOT, "%s run %d: %,d inputs (last seq %,d, %d live requests) in %.0f ms = "
                                + "%.0f ms per million inputs (%.2f M inputs/s)%n", node.getFileName(), run + 1, inputs,
                        rec.lastSeq(), rec.state().liveRequests(), ms, msPerM[run], inputs / (ms / 1e3) / 1e6);
            }
            double[] sorted = msPerM.clone();
            Arrays.sort(sorted);
            System.out.printf(Locale.ROOT, "%s: median %.0f ms per million inputs over %d runs (%,d inputs)%n",
                    node.getFileName(), sorted[sorted.length / 2], runs, inputs);
        }
    }
}
