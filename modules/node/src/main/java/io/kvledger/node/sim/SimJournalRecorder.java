package io.kvledger.node.sim;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.sim.Recorder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes one journal per simulated node into {@code DIR/<node id>/} (for example {@code out/P0},
 * {@code out/D0}): the header with the node's configuration, the start-up checks as derived
 * entries of the header (cause seq 0), then every event the node's reducer applied, each followed
 * by the effects it produced.
 *
 * <p>The simulator calls it on its only thread; {@link #close()} closes every journal (call it
 * after {@code Simulation.run} returns, also when it throws). A node directory that already holds
 * a journal is refused: a second run would mix two timelines in one journal.
 */
public final class SimJournalRecorder implements Recorder, AutoCloseable {

    private final Path dir;
    private final String origin;
    private final Map<String, JournalWriter> writers = new LinkedHashMap<>();
    private long entries;

    /**
     * @param dir    the output directory (created when missing)
     * @param origin what to record as each header's origin, such as
     *               {@code "simulate seed=7 requests=100 faults=loss:0.01"}
     */
    public SimJournalRecorder(Path dir, String origin) {
        this.dir = dir;
        this.origin = origin;
    }

    @Override
    public void nodeStarted(String node, NodeConfig config, List<Effect> startupEffects) {
        Path nodeDir = dir.resolve(node);
        if (Files.isDirectory(nodeDir) && hasEntries(nodeDir)) {
            throw new JournalException(nodeDir + " already holds a journal; simulate into an empty directory");
        }
        if (writers.containsKey(node)) {
            throw new IllegalStateException("node " + node + " started twice");
        }
        // a TP rank above 0 is a worker of its instance's engine: the scheduler-side notifies its
        // reducer decides are sent by TP rank 0's node, as the live node's sim-worker journals say
        String o = config.tpRank() > 0 ? JournalHeader.SIM_WORKER_ORIGIN + " (TP rank " + config.tpRank()
                + " of a simulated engine; scheduler-side notifies are sent by TP rank 0's node): " + origin : origin;
        JournalWriter w = JournalWriter.open(nodeDir, JournalHeader.of(node, config, o));
        writers.put(node, w);
        for (Effect e : startupEffects) {
            w.appendDerived(0, e);
            entries++;
        }
    }

    private static boolean hasEntries(Path nodeDir) {
        try (var s = Files.list(nodeDir)) {
            return s.anyMatch(p -> p.getFileName().toString().endsWith(".cq4"));
        } catch (java.io.IOException e) {
            throw new JournalException("cannot list " + nodeDir + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void applied(String node, long seq, NodeEvent event, List<Effect> effects) {
        JournalWriter w = writers.get(node);
        if (w == null) {
            throw new IllegalStateException("node " + node + " applied an event before it started");
        }
        w.appendApplied(event, effects);
        entries += 1 + effects.size();
    }

    /** The node ids journaled so far, in start order. */
    public List<String> nodes() {
        return Collections.unmodifiableList(new ArrayList<>(writers.keySet()));
    }

    /** The directory of a node's journal. */
    public Path journalDir(String node) {
        return dir.resolve(node);
    }

    /** Entries written so far over all nodes (headers not counted). */
    public long entries() {
        return entries;
    }

    /** Closes every journal; the first failure is thrown after all were tried. */
    @Override
    public void close() {
        RuntimeException first = null;
        for (JournalWriter w : writers.values()) {
            try {
                w.close();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
