package io.kvledger.node;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Rebuilds a node's state from its journal: every journaled input is applied again, in order,
 * to a fresh state of the journal's configuration (the reducer is deterministic, so this is the
 * state the node had when it stopped or died). The effects recomputed here are discarded, since
 * they were executed already, with one exception: the loop's journaller appends an input and then
 * its derived entries, and the loop routes the input's effects only after all of them are
 * appended, so a process killed between the input and the last of its derived entries left an
 * input whose effects were never executed. For that last input, {@link #unjournaled} are the
 * derived entries the journal lacks (the node appends them) and {@link #unrouted} all of its
 * effects (the node executes them once its sessions are back). Inputs the loop had applied but the
 * journaller had not appended are simply absent: none of their effects left the node.
 *
 * @param state        the recovered state
 * @param inputs       inputs applied
 * @param lastSeq      the seq of the last complete entry (0: the journal holds only its header)
 * @param lastAtNs     the time of the last input ({@code Long.MIN_VALUE} when none)
 * @param recoveryNs   how long it took (wall clock)
 * @param handshakes   the last handshake started for each peer key (its endpoint), so that a
 *                     restarted node can open again the sessions the recovered state counts on
 * @param lastInputSeq the seq of the last input (0 when none)
 * @param unjournaled  the last input's effects after those the journal holds for it (empty
 *                     when the journal holds them all)
 * @param unrouted     when {@code unjournaled} is not empty, every effect of the last input (none
 *                     of them was routed); else empty
 */
public record Recovery(NodeState state, long inputs, long lastSeq, long lastAtNs, long recoveryNs,
                       Map<String, Effect.StartHandshake> handshakes, long lastInputSeq, List<Effect> unjournaled,
                       List<Effect> unrouted) {

    /** Whether {@code dir} holds a journal to recover. */
    public static boolean present(Path dir) {
        if (!Files.isDirectory(dir)) {
            return false;
        }
        try (var s = Files.list(dir)) {
            return s.anyMatch(p -> p.getFileName().toString().endsWith(".cq4"));
        } catch (java.io.IOException e) {
            return false;
        }
    }

    /** Replays the inputs of the journal in {@code dir} onto a fresh state of {@code config}. */
    public static Recovery replay(Path dir, NodeConfig config) {
        long t0 = System.nanoTime();
        NodeState state = NodeState.initial(config);
        List<Effect> discard = new ArrayList<>(16);
        long inputs = 0;
        long lastSeq = 0;
        long lastAt = Long.MIN_VALUE;
        Map<String, Effect.StartHandshake> handshakes = new LinkedHashMap<>();
        long lastInputSeq = 0;
        int journaledForLast = 0;
        try (JournalReader r = JournalReader.open(dir)) {
            for (JournalEntry e : r) {
                lastSeq = Math.max(lastSeq, e.seq());
                if (e instanceof JournalEntry.Input in) {
                    discard.clear();
                    NodeReducer.applyInto(state, in.event(), discard);
                    inputs++;
                    lastAt = in.atNs();
                    lastInputSeq = in.seq();
                    journaledForLast = 0;
                } else if (e instanceof JournalEntry.Derived d) {
                    if (d.causeSeq() == lastInputSeq && lastInputSeq > 0) {
                        journaledForLast++;
                    }
                    if (d.effect() instanceof Effect.StartHandshake h) {
                        handshakes.put(h.key(), h);
                    }
                }
            }
        }
        List<Effect> unjournaled = List.of();
        List<Effect> unrouted = List.of();
        if (lastInputSeq > 0 && journaledForLast < discard.size()) {
            unjournaled = List.copyOf(discard.subList(journaledForLast, discard.size()));
            unrouted = List.copyOf(discard);
            for (Effect e : unjournaled) {
                if (e instanceof Effect.StartHandshake h) {
                    handshakes.put(h.key(), h);
                }
            }
        }
        return new Recovery(state, inputs, lastSeq, lastAt, System.nanoTime() - t0, handshakes, lastInputSeq,
                unjournaled, unrouted);
    }
}
