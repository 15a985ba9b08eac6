package io.kvledger.ledger.replay;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalReader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Crash recovery: rebuilds a node's {@link NodeState} by re-running its reducer over the inputs of
 * its own journal, configured from the journal header. The derived entries are not compared
 * (that is {@code replay --verify}); the effects the reducer produces are dropped (they were
 * executed, or lost with the crash, before the restart).
 */
final class NodeRebuild {

    /**
     * A rebuilt node.
     *
     * @param header        the journal header (node identity and recorded configuration)
     * @param config        the configuration the state was rebuilt with
     * @param state         the state after the last input
     * @param lastSeq       the highest seq of any entry in the journal (header, input, derived or
     *                      unknown); a writer continuing the journal appends after it. 0 for a
     *                      journal holding only its header
     * @param lastInputSeq  the seq of the last input applied, or -1 when none
     * @param lastInputAtNs the event time of the last input applied, or {@link Long#MIN_VALUE} when none
     * @param inputs        how many inputs were applied
     * @param warnings      what the reader skipped or doubted (unknown entries of a newer format ...)
     */
    public record Rebuilt(JournalHeader header, NodeConfig config, NodeState state, long lastSeq, long lastInputSeq,
                          long lastInputAtNs, long inputs, List<String> warnings) {}

    private NodeRebuild() {}

    /**
     * Rebuilds the node journaled in {@code dir} with its recorded configuration.
     *
     * @throws io.kvledger.journal.JournalException when the journal cannot be opened or read
     */
    public static Rebuilt rebuild(Path dir) {
        return rebuild(dir, ConfigOverrides.none());
    }

    /**
     * Rebuilds the node journaled in {@code dir}, with {@code overrides} applied to its recorded
     * configuration.
     *
     * @throws io.kvledger.journal.JournalException when the journal cannot be opened or read
     */
    public static Rebuilt rebuild(Path dir, ConfigOverrides overrides) {
        try (JournalReader reader = JournalReader.open(dir)) {
            JournalHeader header = reader.header();
            NodeConfig config = overrides.apply(header.config());
            NodeState state = NodeState.initial(config);
            List<Effect> sink = new ArrayList<>();
            long lastSeq = 0;
            long lastInputSeq = -1;
            long lastInputAt = Long.MIN_VALUE;
            long inputs = 0;
            for (JournalEntry e : reader) {
                lastSeq = Math.max(lastSeq, e.seq());
                if (e instanceof JournalEntry.Input in) {
                    sink.clear();
                    NodeReducer.applyInto(state, in.event(), sink);
                    lastInputSeq = in.seq();
                    lastInputAt = in.atNs();
                    inputs++;
                }
            }
            return new Rebuilt(header, config, state, lastSeq, lastInputSeq, lastInputAt, inputs,
                    List.copyOf(reader.warnings()));
        }
    }
}
