package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.wire.NotifyEncoder;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import io.kvledger.wire.OutboundFrame;
import io.kvledger.zmq.EventSink;
import io.kvledger.zmq.NotifyPublisher;
import io.kvledger.zmq.PublisherConfig;

/** {@code kvledger listen}: real frames from a DEALER on loopback end up in the journal, bad ones too. */
class ListenCommandTest {

    @Test
    void journals_every_frame_decoded_or_rejected(@TempDir Path tmp) throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Path dir = tmp.resolve("tap");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        String bind = "tcp://127.0.0.1:" + port;
        CompletableFuture<Integer> run = CompletableFuture.supplyAsync(() -> Main.run(new PrintWriter(out), new PrintWriter(err),
                "listen", "--bind", bind, "--journal", dir.toString(), "--max-frames", "3", "--duration-s", "30"));
        NotifyEncoder enc = new NotifyEncoder();
        // the project's own publisher: single frames on a cached DEALER, as Python peers send them
        try (NotifyPublisher pub = NotifyPublisher.open(PublisherConfig.DEFAULT, EventSink.discarding())) {
            assertThat(pub.send(new OutboundFrame("127.0.0.1", port, "remote_blocks", "tx-1",
                    enc.remoteBlocks("d-1", "tx-1", List.of(1, 2, 3), 0)))).isTrue();
            assertThat(pub.send(new OutboundFrame("127.0.0.1", port, "raw", null, new byte[] {(byte) 0xff, (byte) 0xfe, 0x00}))).isTrue();
            assertThat(pub.send(new OutboundFrame("127.0.0.1", port, "release", "tx-1", enc.release("tx-1", 2)))).isTrue();
            assertThat(run.get(30, TimeUnit.SECONDS)).as(err.toString()).isZero();
        }
        assertThat(out.toString()).contains("3 frame(s) journaled (1 rejected)");
        List<NodeEvent> events = new ArrayList<>();
        try (JournalReader r = JournalReader.open(dir)) {
            for (JournalEntry e : r) {
                if (e instanceof JournalEntry.Input in) {
                    events.add(in.event());
                }
            }
        }
        assertThat(events).hasSize(3);
        assertThat(events.get(0)).isInstanceOfSatisfying(NodeEvent.RemoteBlocksReceived.class, e -> {
            assertThat(e.transferId()).isEqualTo("tx-1");
            assertThat(e.blockNotifyList()).containsExactly(1, 2, 3);
        });
        assertThat(events.get(1)).isInstanceOfSatisfying(NodeEvent.FrameRejected.class,
                e -> assertThat(e.frame()).containsExactly((byte) 0xff, (byte) 0xfe, 0x00));
        assertThat(events.get(2)).isInstanceOfSatisfying(NodeEvent.ReleaseReceived.class,
                e -> assertThat(e.consumerTpSize()).isEqualTo(2));
    }

    @Test
    void a_bind_that_is_not_tcp_is_a_usage_error(@TempDir Path tmp) {
        StringWriter err = new StringWriter();
        int code = Main.run(new PrintWriter(new StringWriter()), new PrintWriter(err), "listen", "--bind", "ipc:///x",
                "--journal", tmp.resolve("j").toString());
        assertThat(code).isEqualTo(2);
        assertThat(err.toString()).contains("--bind takes tcp://HOST:PORT").contains("Usage");
    }
}
