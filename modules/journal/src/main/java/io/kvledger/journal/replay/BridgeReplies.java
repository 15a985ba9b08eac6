package io.kvledger.journal.replay;

import io.kvledger.core.effect.Effect;
import io.kvledger.journal.format.Payloads;
import java.util.List;

/**
 * What a vLLM-bridge recording can be checked against: the real connector's answers to its hooks.
 * A recording (modules/vllm-bridge, header {@code origin} starting with {@link #ORIGIN}) holds
 * every hook reply but the connector metadata ({@code metadata_built}) as derived entries, and no
 * decision records or I/O commands. {@code kvledger replay --verify} and the shadow node
 * ({@code kvledger node --engine shadow}) compare the reducer's replies with those through
 * {@link #firstDifference}, so that both report the same divergences.
 */
public final class BridgeReplies {

    /** The start of the header origin of a journal recorded by the vLLM bridge. */
    public static final String ORIGIN = "vllm-bridge ";

    private BridgeReplies() {}

    /** Whether a bridge recording holds this kind of effect. */
    public static boolean recorded(Effect e) {
        return e instanceof Effect.HookReply && !(e instanceof Effect.MetadataBuilt);
    }

    /** The effects of {@code effects} a bridge recording holds, in order. */
    public static List<Effect> replies(List<? extends Effect> effects) {
        return effects.stream().filter(BridgeReplies::recorded).map(e -> (Effect) e).toList();
    }

    /** Whether two effects are the same answer (equal, or equal once encoded). */
    public static boolean same(Effect a, Effect b) {
        return a != null && b != null && (a.equals(b) || Payloads.same(a, b));
    }

    /**
     * The index of the first position where {@code actual} and {@code expected} differ (one list
     * ending early counts), or -1 when they hold the same effects. Callers filter both lists with
     * {@link #replies} first when comparing with a bridge recording.
     */
    public static int firstDifference(List<? extends Effect> actual, List<? extends Effect> expected) {
        int n = Math.max(actual.size(), expected.size());
        for (int i = 0; i < n; i++) {
            Effect a = i < actual.size() ? actual.get(i) : null;
            Effect e = i < expected.size() ? expected.get(i) : null;
            if (!same(a, e)) {
                return i;
            }
        }
        return -1;
    }
}
