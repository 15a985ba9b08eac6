package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.node.cluster.LoopbackPorts;
import io.kvledger.wire.NotifyEncoder;
import io.kvledger.wire.OutboundFrame;
import io.kvledger.zmq.EventSink;
import io.kvledger.zmq.InboundFrame;
import io.kvledger.zmq.NotifyListenerAdapter;
import io.kvledger.zmq.NotifyListenerConfig;
import io.kvledger.zmq.NotifyPublisher;
import io.kvledger.zmq.PublisherConfig;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kvledger tap} in front of two kvledger notify listeners, then {@code kvledger tap-report} on its journals. */
class TapCommandTest {

    @Test
    void tap_forwards_to_the_real_ports_and_tap_report_names_what_never_crossed(@TempDir Path tmp) throws Exception {
        int base = LoopbackPorts.freeRange(2);
        int shift = LoopbackPorts.freeRange(2) - base;
        ConcurrentLinkedQueue<InboundFrame> atP = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<InboundFrame> atD = new ConcurrentLinkedQueue<>();
        Path dir = tmp.resolve("tapj");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        NotifyEncoder enc = new NotifyEncoder();
        try (NotifyListenerAdapter p = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint("tcp://127.0.0.1:" + base), atP::add);
             NotifyListenerAdapter d = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint("tcp://127.0.0.1:" + (base + 1)), atD::add)) {
            CompletableFuture<Integer> run = CompletableFuture.supplyAsync(() -> Main.run(new PrintWriter(out), new PrintWriter(err),
                    "tap", "--shift", String.valueOf(shift), "--prefill", "127.0.0.1:" + base, "--decode", "127.0.0.1:" + (base + 1),
                    "--bind-host", "127.0.0.1", "--journal", dir.toString(), "--max-frames", "4", "--duration-s", "30",
                    "--metrics", "127.0.0.1:0"));
            try (NotifyPublisher pub = NotifyPublisher.open(PublisherConfig.DEFAULT, EventSink.discarding())) {
                int tapP = base + shift;
                int tapD = base + 1 + shift;
                pub.send(new OutboundFrame("127.0.0.1", tapP, "remote_blocks", "tx-1", enc.remoteBlocks("d-1", "tx-1", List.of(1), 0)));
                pub.send(new OutboundFrame("127.0.0.1", tapP, "remote_blocks", "tx-2", enc.remoteBlocks("d-2", "tx-2", List.of(2), 0)));
                pub.send(new OutboundFrame("127.0.0.1", tapP, "raw", null, new byte[] {(byte) 0xff, (byte) 0xfe}));
                pub.send(new OutboundFrame("127.0.0.1", tapD, "write_done", "tx-1", enc.writeDone("tx-1")));
                assertThat(run.get(120, TimeUnit.SECONDS)).as(err.toString()).isZero();
            }
            long deadline = System.nanoTime() + 120_000_000_000L;
            while ((atP.size() < 3 || atD.size() < 1) && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
        }
        assertThat(out.toString()).contains("tap: 4 frame(s) journaled (1 rejected), 4 forwarded to " + dir);
        assertThat(err.toString()).contains("tap: P 127.0.0.1:" + base + " <- tcp://127.0.0.1:" + (base + shift));
        assertThat(err.toString()).containsPattern("tap: metrics on http://127\\.0\\.0\\.1:[1-9][0-9]*/metrics");
        assertThat(atP).hasSize(3);
        assertThat(atP).extracting(InboundFrame::rejected).containsExactly(false, false, true);
        assertThat(atP.stream().toList().get(2).payload()).containsExactly((byte) 0xff, (byte) 0xfe);
        assertThat(atD).singleElement().extracting(f -> f.event().getClass().getSimpleName()).isEqualTo("WriteDoneReceived");

        CliRun.Outcome report = CliRun.run("tap-report", dir.toString());
        assertThat(report.code()).as(report.err()).isEqualTo(1);
        List<String> lines = report.out().lines().toList();
        assertThat(lines.get(0)).startsWith("tap-report: 2 rank(s) tapped (P+0 127.0.0.1:" + base + ", D+0 127.0.0.1:" + (base + 1)
                + "); 4 frame(s)").contains("2 transfer(s), 1 with a frame that never crossed; 1 rejected frame(s)");
        assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("tx-2 WRITE: crossed remote_blocks -> P+0")
                .contains("MISSING: 1 write_done never crossed to D+0 127.0.0.1:" + (base + 1) + " (decode_rank 0)"));
        assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("rejected frame -> P+0"));
        assertThat(CliRun.run("tap-report", "--all", dir.toString()).out()).contains("tx-1 WRITE: crossed").contains("; complete");
        CliRun.Outcome none = CliRun.run("tap-report", tmp.resolve("nothing").toString());
        assertThat(none.code()).isEqualTo(2);
        assertThat(none.err()).startsWith("kvledger tap-report: ").contains("no such directory");
    }

    @Test
    void a_tap_without_target_is_a_usage_error() {
        CliRun.Outcome o = CliRun.run("tap", "--shift", "1000", "--journal", "j");
        assertThat(o.code()).isEqualTo(2);
        assertThat(o.err().lines().toList()).first().asString()
                .isEqualTo("kvledger tap: give at least one --prefill or --decode HOST:PORT (a rank's notify port)");
        CliRun.Outcome bad = CliRun.run("tap", "--shift", "1000", "--prefill", "nohost", "--journal", "j");
        assertThat(bad.err()).startsWith("kvledger tap: a target is HOST:PORT");
        CliRun.Outcome metrics = CliRun.run("tap", "--shift", "1000", "--prefill", "127.0.0.1:6000", "--journal", "j",
                "--metrics", "nowhere");
        assertThat(metrics.code()).isEqualTo(2);
        assertThat(metrics.err()).startsWith("kvledger tap: --metrics takes HOST:PORT, got nowhere");
    }
}
