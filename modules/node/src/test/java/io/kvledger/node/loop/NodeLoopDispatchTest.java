package io.kvledger.node.loop;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalWriter;
import io.kvledger.node.TestNodes;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Each effect family of an applied input goes to its one owner: I/O commands to the router,
 * decision records to the listeners' {@code onDecision} (in order, after {@code onApplied} saw
 * the whole list), hook replies to the hook's caller; a hook reply of an input that was offered
 * rather than called is counted, not lost quietly.
 */
class NodeLoopDispatchTest {

    @TempDir
    Path dir;

    private final NodeConfig cfg = TestNodes.config(Role.CONSUMER, TransferMode.READ, 21000, 21002);
    private final long t0 = System.currentTimeMillis() * 1_000_000L;

    @Test
    void everyFamilyReachesItsOwnerAndAnOfferedHooksReplyIsCounted() throws Exception {
        List<Effect> applied = Collections.synchronizedList(new ArrayList<>());
        List<Effect.Decision> decided = Collections.synchronizedList(new ArrayList<>());
        List<Effect.IoCommand> routed = Collections.synchronizedList(new ArrayList<>());
        List<Effect> replies = new ArrayList<>();
        Inbox inbox = new Inbox(64);
        try (JournalWriter journal = TestNodes.decodeJournal(dir.resolve("j"), cfg)) {
            NodeLoop loop = new NodeLoop("D0", io.kvledger.core.node.NodeState.initial(cfg), journal, routed::add,
                    io.kvledger.journal.ServiceClock.system(), inbox, 0, 16);
            loop.addListener(new NodeLoop.Listener() {
                @Override
                public void onApplied(long seq, NodeEvent event, List<Effect> effects) {
                    applied.addAll(effects);
                }

                @Override
                public void onDecision(long seq, NodeEvent event, Effect.Decision decision) {
                    decided.add(decision);
                }
            });
            loop.start();
            List<NodeEvent> called = TestNodes.decodeRequests(2, t0);
            for (NodeEvent e : called) {
                replies.addAll(inbox.call(e, TimeUnit.SECONDS.toNanos(120)).get(120, TimeUnit.SECONDS));
            }
            assertThat(loop.unansweredReplies()).as("every hook reply had its caller").isZero();
            assertThat(replies).as("the callers got the inputs' effects").containsExactlyElementsOf(applied);

            // the same hooks for another request, offered instead of called: their replies have no caller
            List<NodeEvent> offered = TestNodes.decodeRequests(3, t0 + 1_000_000L).subList(6, 9);
            int before = applied.size();
            for (NodeEvent e : offered) {
                assertThat(inbox.offer(e)).isTrue();
            }
            // a call after them: the loop took them in order, so they were emitted before it returns
            inbox.call(new NodeEvent.Tick(t0 + 2_000_000L), TimeUnit.SECONDS.toNanos(120)).get(120, TimeUnit.SECONDS);
            long offeredReplies = applied.subList(before, applied.size()).stream()
                    .filter(e -> e instanceof Effect.HookReply).count();
            assertThat(offeredReplies).as("the offered hooks produce replies (matched tokens)").isPositive();
            assertThat(loop.unansweredReplies()).isEqualTo(offeredReplies);
            loop.close();
        }
        assertThat(routed).containsExactlyElementsOf(
                applied.stream().filter(e -> e instanceof Effect.IoCommand).map(e -> (Effect.IoCommand) e).toList());
        assertThat(decided).isNotEmpty().containsExactlyElementsOf(
                applied.stream().filter(e -> e instanceof Effect.Decision).map(e -> (Effect.Decision) e).toList());
    }
}
