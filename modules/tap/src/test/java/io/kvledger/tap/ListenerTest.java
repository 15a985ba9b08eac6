package io.kvledger.tap;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.zmq.InboundFrame;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@code kvledger listen} journals a frame as ({@link FrameJournal}) and its bounded hand-off
 * from the socket thread ({@link Listener.EventQueue}); the command itself is tested in the CLI's
 * {@code ListenCommandTest}.
 */
class ListenerTest {

    /** An event the journal refuses is journaled as a rejection saying so, and the next one goes in as usual. */
    @Test
    void a_frame_the_journal_refuses_is_journaled_as_a_rejection_in_its_place(@TempDir Path tmp) {
        Path dir = tmp.resolve("tap");
        byte[] huge = new byte[40 << 20];
        Arrays.fill(huge, (byte) 3);
        FrameJournal.Tally tally = new FrameJournal.Tally();
        StringWriter err = new StringWriter();
        NodeConfig config = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).build();
        try (JournalWriter w = JournalWriter.open(dir, JournalHeader.of("tap", config, "test"))) {
            FrameJournal.append(w, new NodeEvent.FrameRejected(10, "TRUNCATED: made up", huge, true), tally, new PrintWriter(err), "listen");
            FrameJournal.append(w, new NodeEvent.WriteDoneReceived(20, "tx-next"), tally, new PrintWriter(err), "listen");
        }
        assertThat(err.toString()).isEmpty();
        assertThat(tally.frames).isEqualTo(2);
        assertThat(tally.lost).isZero();
        List<NodeEvent> events = inputs(dir);
        assertThat(events).hasSize(2);
        assertThat(events.get(0)).isInstanceOfSatisfying(NodeEvent.FrameRejected.class, e -> {
            assertThat(e.atNs()).isEqualTo(10);
            assertThat(e.wouldKillPythonListener()).isTrue();
            assertThat(e.frame()).hasSize(FrameJournal.KEPT_WHEN_REFUSED);
            if (tally.substituted == 1) {
                assertThat(e.reason()).startsWith("FRAME_TOO_LARGE: the journal refused the frame as received (")
                        .contains("it was: TRUNCATED: made up; first 65536 of 41943040 bytes kept");
            }
        });
        assertThat(tally.substituted).as("40 MiB is beyond what one journal entry holds").isEqualTo(1);
        assertThat(events.get(1)).isEqualTo(new NodeEvent.WriteDoneReceived(20, "tx-next"));
    }

    /** The hand-off to the journal refuses (the listener backs off) past its byte bound, but always takes one event. */
    @Test
    void the_hand_off_to_the_journal_is_bounded_in_bytes() throws Exception {
        Listener.EventQueue q = new Listener.EventQueue(10_000, 1000);
        InboundFrame big = new InboundFrame(0, 1, "tcp://x:1", new byte[0], List.of(new byte[0]),
                new NodeEvent.FrameRejected(1, "MALFORMED: made up", new byte[20_000], true));
        InboundFrame small = new InboundFrame(1, 2, "tcp://x:1", new byte[0], List.of(new byte[0]),
                new NodeEvent.WriteDoneReceived(2, "tx"));
        assertThat(q.offer(big)).as("one event is taken when none waits, whatever its size").isTrue();
        assertThat(q.offer(small)).as("past the bound the listener is asked to back off").isFalse();
        assertThat(q.poll(1, TimeUnit.SECONDS)).isInstanceOf(NodeEvent.FrameRejected.class);
        assertThat(q.bytes()).isZero();
        for (int i = 0; i < 39; i++) {
            assertThat(q.offer(small)).isTrue();
        }
        assertThat(q.offer(small)).as("40 events of 256 bytes are past 10,000").isFalse();
    }

    private static List<NodeEvent> inputs(Path dir) {
        List<NodeEvent> events = new ArrayList<>();
        try (JournalReader r = JournalReader.open(dir)) {
            for (JournalEntry e : r) {
                if (e instanceof JournalEntry.Input in) {
                    events.add(in.event());
                }
            }
        }
        return events;
    }
}
