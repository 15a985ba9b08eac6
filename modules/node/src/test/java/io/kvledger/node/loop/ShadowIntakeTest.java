package io.kvledger.node.loop;


import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.node.TestNodes;
import io.kvledger.node.shadow.ShadowIntake;
import io.kvledger.node.shadow.ShadowMonitor;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The shadow node's intake without sockets: recorder messages in, observed inputs (with the
 * connector's answers) and journaled notes out of the inbox.
 */
class ShadowIntakeTest {

    static final NodeConfig P0 = TestNodes.config(Role.PRODUCER, TransferMode.WRITE, 6301, 61005);
    static final String HEADER = "{\"kind\":\"header\",\"type\":\"header\",\"format_version\":1,\"node_id\":\"P0\","
            + "\"origin\":\"vllm-bridge test\",\"kv_role\":\"kv_producer\",\"transfer_mode\":\"WRITE\",\"dp_rank\":0,"
            + "\"dp_size\":1,\"tp_rank\":0,\"tp_size\":1}";
    static final String ADMIT = "{\"kind\":\"input\",\"type\":\"request_admitted\",\"at_ns\":%d,\"request_id\":\"r%d\","
            + "\"num_prompt_tokens\":4,\"prompt_token_ids_len\":4,\"kv_transfer_params\":null}";
    static final String QUERY = "{\"kind\":\"input\",\"type\":\"matched_tokens_queried\",\"at_ns\":%d,\"request_id\":\"r%d\","
            + "\"num_computed_tokens\":0}";
    static final String MATCHED = "{\"kind\":\"derived\",\"type\":\"matched_tokens\",\"request_id\":\"r%d\",\"count\":0,"
            + "\"load_async\":false}";

    private final Inbox inbox = new Inbox(1000);
    private final ShadowMonitor monitor = new ShadowMonitor();
    private final ShadowIntake intake = new ShadowIntake(inbox, P0, monitor, 0);

    private void send(long arrivalNs, String stream, String role, String header, long first, String... lines) {
        String env = "{\"v\":1,\"stream\":\"" + stream + "\",\"role\":\"" + role + "\",\"dp\":0,\"tp\":0,\"first\":" + first
                + ",\"count\":" + lines.length + ",\"end\":false,\"dropped\":0}";
        intake.onMessage(arrivalNs, env.getBytes(StandardCharsets.UTF_8), header.getBytes(StandardCharsets.UTF_8),
                String.join("\n", lines).getBytes(StandardCharsets.UTF_8));
    }

    private List<Inbox.Item> drain() throws InterruptedException {
        List<Inbox.Item> out = new ArrayList<>();
        Inbox.Item i;
        while ((i = inbox.take(0)) != null) {
            out.add(i);
        }
        return out;
    }

    private static String note(Inbox.Item i) {
        return ((NodeEvent.FrameRejected) ((Inbox.Item.Input) i).event()).reason();
    }

    @Test
    void hookCallsGoToTheLoopWithTheConnectorsAnswersOnTheNodesClock() throws Exception {
        send(5_000, "s1", "scheduler", HEADER, 1, ADMIT.formatted(100, 1), QUERY.formatted(300, 1), MATCHED.formatted(1));
        List<Inbox.Item> items = drain();
        assertThat(items).hasSize(2).allMatch(i -> i instanceof Inbox.Item.Observed);
        Inbox.Item.Observed admit = (Inbox.Item.Observed) items.get(0);
        Inbox.Item.Observed query = (Inbox.Item.Observed) items.get(1);
        assertThat(admit.event()).isInstanceOf(NodeEvent.RequestAdmitted.class);
        assertThat(admit.recorded()).isEmpty();
        assertThat(query.recorded()).containsExactly(new Effect.MatchedTokens("r1", 0, false));
        // the stream's first input lands at its arrival; later ones keep the engine's intervals
        assertThat(admit.event().atNs()).isEqualTo(5_000);
        assertThat(query.event().atNs()).isEqualTo(5_000);
        send(9_000, "s1", "scheduler", HEADER, 4, ADMIT.formatted(1_100, 2));
        Inbox.Item.Observed later = (Inbox.Item.Observed) drain().getFirst();
        assertThat(later.event().atNs()).isEqualTo(6_000);
    }

    @Test
    void gapsUnreadableLinesAndForeignStreamsAreNotedAndCounted() throws Exception {
        send(1_000, "s1", "scheduler", HEADER, 1, ADMIT.formatted(100, 1));
        send(2_000, "s1", "scheduler", HEADER, 5, "{not json", QUERY.formatted(300, 1), MATCHED.formatted(1));
        send(3_000, "w1", "worker", HEADER.replace("\"P0\"", "\"P0-tp0\""), 1, "{\"kind\":\"input\",\"type\":\"save_waited\",\"at_ns\":1}");
        send(4_000, "d1", "scheduler", HEADER.replace("kv_producer", "kv_consumer"), 1, ADMIT.formatted(100, 9));
        List<Inbox.Item> items = drain();
        List<String> notes = items.stream().filter(i -> i instanceof Inbox.Item.Input).map(ShadowIntakeTest::note).toList();
        assertThat(notes).containsExactly(
                "kvledger shadow: stream s1 lost lines 2..4 (3 line(s): the recorder's ZMQ queue was full)",
                "kvledger shadow: stream s1 line 5 is unreadable (" + notes.get(1).substring(notes.get(1).indexOf('(') + 1),
                "kvledger shadow: stream w1 (worker P0-tp0) refused: a worker stream: a shadow node follows the scheduler "
                        + "of its rank (record workers to a file)",
                "kvledger shadow: stream d1 (scheduler P0) refused: not this node's engine: role consumer != producer");
        assertThat(items.stream().filter(i -> i instanceof Inbox.Item.Observed)).hasSize(2);
        assertThat(monitor.linesLost()).isEqualTo(4);
        assertThat(monitor.toJson("P0", 10).get("streams").toString()).contains("shadowed=false");
    }

    /**
     * A recording of a vLLM whose connector another profile models (here vLLM 239b5ff30, which the
     * header names and kvledger's table maps to vllm-239b5ff30) is refused by a node running newest,
     * with the profile to start it with.
     */
    @Test
    void aStreamOfAnotherVllmVersionIsRefusedWithTheProfileToUse() throws Exception {
        send(1_000, "v1", "scheduler", HEADER.replace("\"dp_rank\"", "\"vllm_version\":\"0.0.0.dev0+g239b5ff30\",\"dp_rank\""), 1,
                ADMIT.formatted(100, 1));
        List<String> notes = drain().stream().filter(i -> i instanceof Inbox.Item.Input).map(ShadowIntakeTest::note).toList();
        assertThat(notes).containsExactly("kvledger shadow: stream v1 (scheduler P0) refused: not this node's engine: profile "
                + "vllm-239b5ff30 (the recorded vLLM's, 0.0.0.dev0+g239b5ff30) != newest (start the node with --profile vllm-239b5ff30)");
    }

    /**
     * The recorder's repeat lines (an engine stepping while a request waits) reach the loop as the
     * hook calls they stand for; after lost lines the intake no longer knows what a repeat line
     * repeats, and says so instead of repeating the wrong calls.
     */
    @Test
    void repeatLinesAreUnfoldedAndOneAfterAGapIsNotGuessed() throws Exception {
        String repeat = "{\"kind\":\"repeat\",\"lines\":2,\"times\":3,\"at_ns_deltas\":[100,100,100]}";
        send(1_000, "s1", "scheduler", HEADER, 1, QUERY.formatted(300, 1), MATCHED.formatted(1));
        send(5_000, "s1", "scheduler", HEADER, 3, repeat);
        List<Inbox.Item> items = drain();
        assertThat(items).hasSize(4).allMatch(i -> i instanceof Inbox.Item.Observed);
        for (Inbox.Item i : items) {
            Inbox.Item.Observed o = (Inbox.Item.Observed) i;
            assertThat(o.event()).isEqualTo(new NodeEvent.MatchedTokensQueried(o.event().atNs(), "r1", 0));
            assertThat(o.recorded()).containsExactly(new Effect.MatchedTokens("r1", 0, false));
        }
        assertThat(items).extracting(i -> ((Inbox.Item.Observed) i).event().atNs())
                .containsExactly(1_000L, 1_100L, 1_200L, 1_300L);
        // lines 4..5 lost: the repeat line on line 6 would repeat what came before the gap
        send(2_000, "s1", "scheduler", HEADER, 6, repeat);
        List<String> notes = drain().stream().map(ShadowIntakeTest::note).toList();
        assertThat(notes).hasSize(2);
        assertThat(notes.get(0)).startsWith("kvledger shadow: stream s1 lost lines 4..5");
        assertThat(notes.get(1)).startsWith("kvledger shadow: stream s1 line 6 is unreadable (a repeat line repeats 2 lines, "
                + "and only 0 entry line(s) are above it");
    }

    @Test
    void aDivergenceIsCountedByHookAndJournaledAsAnAnomaly() throws Exception {
        NodeEvent q = new NodeEvent.MatchedTokensQueried(7, "r1", 0);
        List<Effect> derived = monitor.derived(12, q, List.of(new Effect.MatchedTokens("r1", 0, false)),
                List.of(new Effect.MatchedTokens("r1", 16, true)));
        assertThat(derived).hasSize(2);
        assertThat(derived.get(0)).isEqualTo(new Effect.MatchedTokens("r1", 16, true));
        Effect.Anomaly a = (Effect.Anomaly) derived.get(1);
        assertThat(a.kind().name()).isEqualTo("SHADOW_DIVERGENCE");
        assertThat(a.detail()).startsWith("get_num_new_matched_tokens, reply 1: the connector answered matched_tokens rid=r1 count=16");
        assertThat(monitor.divergences("get_num_new_matched_tokens")).isEqualTo(1);
        assertThat(monitor.recent(10).getFirst().seq()).isEqualTo(12);
        assertThat(drain()).as("a divergence is journaled as the anomaly alone, never as an input").isEmpty();
        // the same answer: no divergence, the connector's answer journaled
        assertThat(monitor.derived(13, q, List.of(new Effect.MatchedTokens("r1", 0, false)),
                List.of(new Effect.MatchedTokens("r1", 0, false)))).containsExactly(new Effect.MatchedTokens("r1", 0, false));
        assertThat(monitor.divergences()).isEqualTo(1);
    }
}
