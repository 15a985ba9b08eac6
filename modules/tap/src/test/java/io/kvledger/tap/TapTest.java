package io.kvledger.tap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.node.cluster.LoopbackPorts;
import io.kvledger.wire.NotifyEncoder;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMonitor;
import org.zeromq.ZEvent;

/**
 * The tap on real JeroMQ sockets over loopback: two prefill ranks and one decode rank, each a plain
 * ROUTER at its real notify port; peers send to the shifted ports; everything reaches the real
 * ports byte for byte, is journaled per rank, and the tap journal alone says which write_done
 * never crossed.
 */
class TapTest {

    private static final NotifyEncoder ENC = new NotifyEncoder();
    private static final AtomicInteger MONITORS = new AtomicInteger();

    @TempDir
    Path dir;

    /** A DEALER whose ZMTP handshake with {@code endpoint} completed (kicking its context meanwhile: JeroMQ 0.6.0 stalls ~2 % of fresh connects). */
    static ZMQ.Socket handshaken(ZContext ctx, String endpoint) {
        ZMQ.Socket s = ctx.createSocket(SocketType.DEALER);
        s.setLinger(1000);
        s.setSndHWM(0);
        String mon = "inproc://tap-test-monitor-" + MONITORS.incrementAndGet();
        s.monitor(mon, ZMQ.EVENT_HANDSHAKE_PROTOCOL);
        ZMQ.Socket events = ctx.createSocket(SocketType.PAIR);
        events.setReceiveTimeOut(20);
        events.connect(mon);
        ZMQ.Socket kick = ctx.createSocket(SocketType.DEALER);
        kick.setLinger(0);
        try {
            s.connect(endpoint);
            long deadline = System.nanoTime() + 120_000_000_000L;
            while (true) {
                ZEvent e = ZEvent.recv(events);
                if (e != null && e.getEvent() == ZMonitor.Event.HANDSHAKE_PROTOCOL) {
                    return s;
                }
                assertThat(System.nanoTime()).as("ZMTP handshake with " + endpoint + " within 120 s").isLessThan(deadline);
                kick.bind("tcp://127.0.0.1:*");
                kick.unbind(kick.getLastEndpoint());
            }
        } finally {
            s.monitor(null, 0);
            ctx.destroySocket(events);
            ctx.destroySocket(kick);
        }
    }

    static List<byte[]> receive(ZMQ.Socket router) {
        List<byte[]> parts = new ArrayList<>();
        byte[] id = router.recv(0);
        assertThat(id).as("a message reached the real notify port").isNotNull();
        while (router.hasReceiveMore()) {
            parts.add(router.recv(0));
        }
        return parts;
    }

    @Test
    void forwards_every_frame_unchanged_journals_it_per_rank_and_the_report_names_the_missing_write_done() throws Exception {
        int base = LoopbackPorts.freeRange(3);
        int shift = findShift(base);
        String host = "127.0.0.1";
        List<TapTarget> targets = List.of(new TapTarget(Role.PRODUCER, host, base, shift),
                new TapTarget(Role.PRODUCER, host, base + 1, shift), new TapTarget(Role.CONSUMER, host, base + 2, shift));
        StringWriter err = new StringWriter();
        try (ZContext ctx = new ZContext()) {
            List<ZMQ.Socket> real = new ArrayList<>();
            for (TapTarget t : targets) {
                ZMQ.Socket r = ctx.createSocket(SocketType.ROUTER);
                r.setReceiveTimeOut(10_000);
                r.bind(t.endpoint());
                real.add(r);
            }
            byte[] bad = HexFormat.of().parseHex("82a474797065a76578706c6f6465ab7472616e736665725f6964a474782d31");
            List<List<byte[]>> sentTo = List.of(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
            String finalScrape;
            try (Tap tap = Tap.open(new Tap.Config(targets, host, dir, TransferMode.WRITE, "test", System::nanoTime),
                    new PrintWriter(err)); TapMetrics metrics = TapMetrics.serve(tap, "127.0.0.1", 0)) {
                // every series from the first scrape, at 0
                String first = scrape(metrics.port());
                String d0 = "role=\"consumer\",target=\"D 127.0.0.1:" + (base + 2) + "\"";
                assertThat(sample(first, "kvledger_tap_frames_journaled_total{" + d0 + "}")).isZero();
                assertThat(sample(first, "kvledger_tap_forward_failures_total{" + d0 + "}")).isZero();
                assertThat(sample(first, "kvledger_tap_journal_queue_entries")).isZero();
                assertThat(tap.endpoints()).containsExactly("tcp://127.0.0.1:" + (base + shift),
                        "tcp://127.0.0.1:" + (base + 1 + shift), "tcp://127.0.0.1:" + (base + 2 + shift));
                // the decode scheduler: remote_blocks to both prefill TP ranks (base port + shift + tp)
                ZMQ.Socket dsched0 = handshaken(ctx, "tcp://127.0.0.1:" + (base + shift));
                ZMQ.Socket dsched1 = handshaken(ctx, "tcp://127.0.0.1:" + (base + 1 + shift));
                // each prefill worker: write_done to the decode rank
                ZMQ.Socket p0 = handshaken(ctx, "tcp://127.0.0.1:" + (base + 2 + shift));
                ZMQ.Socket p1 = handshaken(ctx, "tcp://127.0.0.1:" + (base + 2 + shift));
                for (String tid : List.of("tx-1", "tx-2")) {
                    byte[] rb = ENC.remoteBlocks("d-" + tid, tid, List.of(4, 5), 0);
                    dsched0.send(rb, 0);
                    sentTo.get(0).add(rb);
                    dsched1.send(rb, 0);
                    sentTo.get(1).add(rb);
                }
                // a frame the Python listener dies on: forwarded all the same; the tap goes on
                dsched0.send(bad, 0);
                sentTo.get(0).add(bad);
                byte[] rb3 = ENC.remoteBlocks("d-tx-3", "tx-3", List.of(9), 0);
                dsched0.send(rb3, 0);
                sentTo.get(0).add(rb3);
                dsched1.send(rb3, 0);
                sentTo.get(1).add(rb3);
                for (byte[] wd : List.of(ENC.writeDone("tx-1"), ENC.writeDone("tx-2"), ENC.writeDone("tx-3"))) {
                    p0.send(wd, 0);
                    sentTo.get(2).add(wd);
                }
                // P1's write_done of tx-2 never leaves
                for (byte[] wd : List.of(ENC.writeDone("tx-1"), ENC.writeDone("tx-3"))) {
                    p1.send(wd, 0);
                    sentTo.get(2).add(wd);
                }
                for (int i = 0; i < 3; i++) {
                    List<String> got = new ArrayList<>();
                    for (int k = 0; k < sentTo.get(i).size(); k++) {
                        List<byte[]> frames = receive(real.get(i));
                        assertThat(frames).hasSize(1);
                        got.add(HexFormat.of().formatHex(frames.get(0)));
                    }
                    List<String> want = sentTo.get(i).stream().map(HexFormat.of()::formatHex).toList();
                    if (i < 2) {
                        assertThat(got).as("one sender: order kept").containsExactlyElementsOf(want);
                    } else {
                        assertThat(got).as("two senders").containsExactlyInAnyOrderElementsOf(want);
                    }
                }
                long deadline = System.nanoTime() + 120_000_000_000L;
                while (tap.framesJournaled() < 12 && System.nanoTime() < deadline) {
                    Thread.sleep(5);
                }
                assertThat(tap.framesJournaled()).isEqualTo(12);
                assertThat(tap.forwarded()).isEqualTo(12);
                finalScrape = scrape(metrics.port());
                String pr0 = "role=\"producer\",target=\"P 127.0.0.1:" + base + "\"";
                assertThat(sample(finalScrape, "kvledger_tap_frames_journaled_total{" + pr0 + "}")).isEqualTo(4);
                assertThat(sample(finalScrape, "kvledger_tap_frames_rejected_total{" + pr0 + "}")).isEqualTo(1);
                assertThat(sample(finalScrape, "kvledger_tap_frames_forwarded_total{" + pr0 + "}")).isEqualTo(4);
                assertThat(sample(finalScrape, "kvledger_tap_frames_journaled_total{" + d0 + "}")).isEqualTo(5);
                assertThat(sample(finalScrape, "kvledger_tap_frames_lost_total{" + d0 + "}")).isZero();
                assertThat(finalScrape).contains("process_cpu_seconds_total", "jvm_memory_used_bytes");
            }
            assertThat(err.toString()).isEmpty();
            // the live scrape passes promtool's lint (last: without promtool the test is skipped here, saying why)
            io.kvledger.node.Promtool.Verdict lint = io.kvledger.node.Promtool.check(io.kvledger.node.Promtool.require(),
                    finalScrape);
            assertThat(lint.output()).as("promtool check metrics on the tap's /metrics").isBlank();
            assertThat(lint.exit()).isZero();
        }

        // the per-rank journals
        try (JournalReader r = JournalReader.open(dir.resolve(targets.get(0).journalName()))) {
            assertThat(r.header().role()).isEqualTo(Role.PRODUCER);
            assertThat(r.header().config().notifyPortBase()).isEqualTo(base);
            List<NodeEvent> events = r.stream().filter(e -> e instanceof JournalEntry.Input)
                    .map(e -> ((JournalEntry.Input) e).event()).toList();
            assertThat(events).hasSize(4);
            assertThat(events.get(2)).isInstanceOfSatisfying(NodeEvent.FrameRejected.class, fr -> {
                assertThat(fr.frame()).isEqualTo(HexFormat.of().parseHex(
                        "82a474797065a76578706c6f6465ab7472616e736665725f6964a474782d31"));
                assertThat(fr.wouldKillPythonListener()).isTrue();
            });
            assertThat(events.get(3)).isInstanceOf(NodeEvent.RemoteBlocksReceived.class);
        }

        TapReport report = TapReport.read(JournalInputs.resolve(List.of(dir)));
        assertThat(report.ranks()).extracting(TapReport.Rank::label).containsExactly(
                "P+0 127.0.0.1:" + base, "P+1 127.0.0.1:" + (base + 1), "D+0 127.0.0.1:" + (base + 2));
        assertThat(report.transfers()).extracting(TapReport.Transfer::transferId).containsExactly("tx-1", "tx-2", "tx-3");
        assertThat(report.transfers()).filteredOn(TapReport.Transfer::complete).extracting(TapReport.Transfer::transferId)
                .containsExactly("tx-1", "tx-3");
        TapReport.Transfer tx2 = report.transfers().get(1);
        assertThat(tx2.missing()).singleElement().asString().startsWith(
                "1 write_done never crossed to D+0 127.0.0.1:" + (base + 2) + " (decode_rank 0): 1 of 2 from the prefill rank(s) told where to write");
        assertThat(report.hasFindings()).isTrue();
        List<String> lines = report.render(false);
        assertThat(lines.get(0)).contains("3 rank(s) tapped").contains("12 frame(s)").contains("3 transfer(s), 1 with a frame that never crossed");
        assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("tx-2 WRITE: crossed ")
                .contains("remote_blocks -> P+0 127.0.0.1:" + base).contains("remote_blocks -> P+1 127.0.0.1:" + (base + 1))
                .contains("; MISSING: 1 write_done never crossed"));
        assertThat(lines).noneMatch(l -> l.startsWith("tx-1 "));
        assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("rejected frame -> P+0 127.0.0.1:" + base)
                .contains("UNKNOWN_TYPE").contains("would kill the Python notify listener of that rank, so the 1 frame(s)"));
    }

    private static String scrape(int port) throws Exception {
        java.net.http.HttpResponse<String> r = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest
                .newBuilder(java.net.URI.create("http://127.0.0.1:" + port + "/metrics")).build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("text/plain; version=0.0.4; charset=utf-8");
        return r.body();
    }

    /** The value of the one sample {@code series} (name and labels as scraped). */
    private static long sample(String scrape, String series) {
        return scrape.lines().filter(l -> l.startsWith(series + " ")).map(l -> (long) Double.parseDouble(l.substring(series.length() + 1)))
                .reduce((a, b) -> {
                    throw new AssertionError("two samples of " + series);
                }).orElseThrow(() -> new AssertionError(series + " missing in:\n" + scrape));
    }

    /** A shift that puts the three tap ports on free ports too. */
    private static int findShift(int base) {
        for (int attempt = 0; attempt < 50; attempt++) {
            int tapBase = LoopbackPorts.freeRange(3);
            if (Math.abs(tapBase - base) >= 3) {
                return tapBase - base;
            }
        }
        throw new AssertionError("no shift found");
    }

    @Test
    void a_tap_port_in_use_fails_the_start_and_leaves_no_journal() {
        int base = LoopbackPorts.freeRange(2);
        try (ZContext ctx = new ZContext()) {
            ZMQ.Socket taken = ctx.createSocket(SocketType.ROUTER);
            taken.bind("tcp://127.0.0.1:" + (base + 1));
            List<TapTarget> targets = List.of(new TapTarget(Role.CONSUMER, "127.0.0.1", base, 1));
            assertThatThrownBy(() -> Tap.open(new Tap.Config(targets, "127.0.0.1", dir.resolve("j"), TransferMode.WRITE, "test",
                    System::nanoTime), new PrintWriter(new StringWriter())))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("cannot bind notify relay at tcp://127.0.0.1:" + (base + 1));
            assertThat(dir.resolve("j")).doesNotExist();
        }
    }

    @Test
    void targets_are_checked_before_anything_binds() {
        assertThatThrownBy(() -> TapTarget.parse(Role.PRODUCER, "10.0.0.1", 1000)).hasMessageContaining("HOST:PORT");
        assertThatThrownBy(() -> TapTarget.parse(Role.PRODUCER, "10.0.0.1:x", 1000)).hasMessageContaining("not a port number");
        assertThatThrownBy(() -> TapTarget.parse(Role.PRODUCER, "10.0.0.1:65000", 1000)).hasMessageContaining("out of range");
        assertThatThrownBy(() -> TapTarget.parse(Role.PRODUCER, "10.0.0.1:6000", 0)).hasMessageContaining("must not be 0");
        TapTarget v6 = TapTarget.parse(Role.CONSUMER, "[::1]:61005", -100);
        assertThat(v6.host()).isEqualTo("::1");
        assertThat(v6.tapPort()).isEqualTo(60905);
        assertThat(v6.endpoint()).isEqualTo("tcp://[::1]:61005");
        assertThat(v6.journalName()).isEqualTo("D-__1-61005");
        assertThatThrownBy(() -> new Tap.Config(List.of(TapTarget.parse(Role.PRODUCER, "10.0.0.1:61005", 1),
                TapTarget.parse(Role.PRODUCER, "10.0.0.1:61006", 1)), "0.0.0.0", dir, TransferMode.WRITE, "t", System::nanoTime))
                .hasMessageContaining("the tap port 61006 of P 10.0.0.1:61005 is the notify port of P 10.0.0.1:61006");
        assertThatThrownBy(() -> new Tap.Config(List.of(), "0.0.0.0", dir, TransferMode.WRITE, "t", System::nanoTime))
                .hasMessageContaining("no target");
    }
}
