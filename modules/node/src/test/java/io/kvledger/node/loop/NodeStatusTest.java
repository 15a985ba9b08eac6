package io.kvledger.node.loop;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.ServiceClock;
import io.kvledger.node.TestNodes;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The status snapshot: the JSON of {@code GET /v1/status} keeps its keys, order and value types,
 * and the loop publishes a snapshot when it starts, after a batch and on request, the last one
 * marked not running once it stopped.
 */
class NodeStatusTest {

    @TempDir
    Path dir;

    private final NodeConfig cfg = TestNodes.config(Role.CONSUMER, TransferMode.WRITE, 21000, 21002);

    private static NodeStatus full(long applied, boolean running) {
        return new NodeStatus("D0", "consumer", "write", running, applied, 2, 3, 4, 5, 6, 7, 8, 9, 10, "in-jvm", 11,
                12, 13, 14, 15, 16, 17, 18,
                new NodeStatus.Shadow(19, 20, 21, 22, 23, 24, Map.of("request_finished", 20L)),
                new NodeStatus.Bridge(25, 26, 27, 28, 29, 30, 31, 32, 33),
                new NodeStatus.Worker(1, 34, 35, 36),
                new NodeStatus.Engine(37, 38, 39, 40, 41, 42, 43, 44));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> sub(Map<String, Object> m, String key) {
        return (Map<String, Object>) m.get(key);
    }

    @Test
    void theJsonKeepsTheKeysTheirOrderAndTheirTypes() {
        Map<String, Object> m = full(1, true).toJson();
        assertThat(m.keySet()).containsExactly("node", "role", "mode", "running", "events_applied", "ticks", "last_seq",
                "journal_errors", "loop_errors", "inbox_depth", "inbox_capacity", "inbox_refused", "events_lost",
                "transfer_engine", "sessions_bound", "handshakes_failed", "transfers_pending", "notifies_sent",
                "notifies_failed", "frames_received", "frames_rejected", "shadow_inputs", "shadow_divergences",
                "shadow_lines_received", "shadow_lines_lost", "shadow_messages", "bridge", "faults_injected", "worker",
                "engine");
        assertThat(m.get("inbox_depth")).isEqualTo(7);
        assertThat(m.get("transfers_pending")).isEqualTo(13);
        assertThat(m.get("shadow_messages")).isEqualTo(24L);
        assertThat(sub(m, "bridge").keySet()).containsExactly("calls_received", "calls_handed_off",
                "calls_busy", "calls_timed_out", "calls_rejected", "calls_in_flight", "replies_held",
                "replies_undeliverable", "replies_undeliverable_applied");
        assertThat(sub(m, "bridge").get("calls_in_flight")).isEqualTo(30L);
        assertThat(sub(m, "worker")).containsExactly(Map.entry("tp_rank", 1L),
                Map.entry("verified_bytes", 34L), Map.entry("verified_requests", 35L), Map.entry("corrupt_requests", 36L));
        assertThat(sub(m, "engine").keySet()).containsExactly("submitted", "completed", "failed",
                "verified_bytes", "corrupt_requests", "steps", "free_blocks", "held_requests");
        assertThat(sub(m, "engine").get("free_blocks")).isEqualTo(43);

        NodeStatus bare = new NodeStatus("P0", "producer", "read", false, 0, 0, 0, 0, 0, Long.MIN_VALUE, 0, 64, 0, 0,
                "in-jvm", 0, 0, 0, 0, 0, 0, 0, 0, null, null, null, null);
        assertThat(bare.toJson()).doesNotContainKeys("shadow_inputs", "bridge", "worker", "engine")
                .containsEntry("faults_injected", 0L).containsEntry("running", false);
        assertThat(full(1, true).notRunning()).isEqualTo(full(1, false));
    }

    @Test
    void theLoopPublishesAtStartAfterABatchAndOnRequestAndSaysWhenItStopped() throws Exception {
        AtomicInteger built = new AtomicInteger();
        List<NodeLoop> holder = new ArrayList<>();
        try (JournalWriter journal = TestNodes.decodeJournal(dir.resolve("live"), cfg)) {
            Inbox inbox = new Inbox(64);
            NodeLoop loop = new NodeLoop("D0", NodeState.initial(cfg), journal, c -> { }, ServiceClock.system(), inbox,
                    0, 16);
            holder.add(loop);
            loop.publishStatusWith(() -> {
                built.incrementAndGet();
                return full(holder.get(0).applied(), true);
            });
            assertThat(loop.status()).as("nothing before the start").isNull();
            loop.start();
            assertThat(loop.status()).as("published at the start").isNotNull();
            assertThat(loop.status().eventsApplied()).isZero();
            List<NodeEvent> events = TestNodes.decodeRequests(3, System.currentTimeMillis() * 1_000_000L);
            for (NodeEvent e : events) {
                inbox.call(e, TimeUnit.SECONDS.toNanos(120)).get(120, TimeUnit.SECONDS);
            }
            assertThat(TestNodes.eventually(Duration.ofSeconds(120),
                    () -> loop.status().eventsApplied() == events.size()))
                    .as("the batch's snapshot counts every input").isTrue();
            int before = built.get();
            NodeStatus fresh = loop.freshStatus(Duration.ofSeconds(120));
            assertThat(fresh.eventsApplied()).isEqualTo(events.size());
            assertThat(fresh.running()).isTrue();
            assertThat(built.get()).as("built for the request").isGreaterThan(before);
            assertThat(loop.status()).isSameAs(fresh);
            loop.close();
            NodeStatus last = loop.freshStatus(Duration.ofSeconds(1));
            assertThat(last.running()).as("a stopped loop's last snapshot").isFalse();
            assertThat(last.eventsApplied()).isEqualTo(events.size());
        }
    }
}
