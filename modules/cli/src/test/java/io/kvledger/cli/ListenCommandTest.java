package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.wire.NotifyEncoder;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import io.kvledger.wire.OutboundFrame;
import io.kvledger.zmq.EventSink;
import io.kvledger.zmq.NotifyPublisher;
import io.kvledger.zmq.PublisherConfig;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

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
            assertThat(run.get(120, TimeUnit.SECONDS)).as(err.toString()).isZero();
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
    void a_bind_that_is_not_tcp_is_a_usage_error_of_one_line_and_a_hint(@TempDir Path tmp) {
        StringWriter err = new StringWriter();
        int code = Main.run(new PrintWriter(new StringWriter()), new PrintWriter(err), "listen", "--bind", "ipc:///x",
                "--journal", tmp.resolve("j").toString());
        assertThat(code).isEqualTo(2);
        assertThat(err.toString().lines().toList()).containsExactly(
                "kvledger listen: --bind takes tcp://HOST:PORT, got ipc:///x", "see 'kvledger help listen'");
        assertThat(tmp.resolve("j")).doesNotExist();
    }

    @Test
    void a_port_in_use_is_one_line_exit_2_and_leaves_no_journal_behind(@TempDir Path tmp) throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            String bind = "tcp://127.0.0.1:" + taken.getLocalPort();
            Path dir = tmp.resolve("tap");
            CliRun.Outcome o = CliRun.run("listen", "--bind", bind, "--journal", dir.toString(), "--duration-s", "5");
            assertThat(o.code()).isEqualTo(2);
            assertThat(o.err()).isEqualTo("kvledger listen: " + bind + " is already in use" + System.lineSeparator());
            assertThat(o.out()).isEmpty();
            assertThat(dir).as("no header-only journal").doesNotExist();
        }
    }

    /** A second {@code listen} on a journal a child JVM's {@code listen} is writing names the child's pid. */
    @Test
    void a_journal_another_process_writes_is_one_line_naming_its_pid(@TempDir Path tmp) throws Exception {
        Path dir = tmp.resolve("tap");
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        String flags = System.getProperty("kvledger.jvm.flags", "");
        if (!flags.isBlank()) {
            cmd.addAll(Arrays.asList(flags.strip().split("\\s+")));
        }
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName(), "listen", "--bind",
                "tcp://127.0.0.1:" + freePort(), "--journal", dir.toString(), "--duration-s", "60"));
        Process child = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try {
            String started = readLine(child.getErrorStream());
            assertThat(started).contains("listen: bound");
            String bind = "tcp://127.0.0.1:" + freePort();
            CliRun.Outcome o = CliRun.run("listen", "--bind", bind, "--journal", dir.toString(), "--duration-s", "5");
            assertThat(o.code()).isEqualTo(2);
            assertThat(o.err()).isEqualTo("kvledger listen: journal " + dir + " is being written by another process (pid "
                    + child.pid() + ")" + System.lineSeparator());
            // the port it bound first was released again: another listener can have it
            CompletableFuture<CliRun.Outcome> again = CompletableFuture.supplyAsync(() -> CliRun.run("listen", "--bind", bind,
                    "--journal", tmp.resolve("other").toString(), "--duration-s", "0.2"));
            assertThat(again.get(120, TimeUnit.SECONDS).code()).as(again.get().err()).isZero();
        } finally {
            child.destroyForcibly();
            child.waitFor(30, TimeUnit.SECONDS);
        }
    }

    /**
     * The kill: one peer sends a message of two 8 MiB frames (16 MiB concatenated). The
     * listener journals a bounded rejection and the valid frame after it, and exits cleanly.
     */
    @Test
    void a_multi_part_message_of_16_mib_is_journaled_as_a_bounded_rejection_and_listening_goes_on(@TempDir Path tmp)
            throws Exception {
        int port = freePort();
        Path dir = tmp.resolve("tap");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CompletableFuture<Integer> run = CompletableFuture.supplyAsync(() -> Main.run(new PrintWriter(out), new PrintWriter(err),
                "listen", "--bind", "tcp://127.0.0.1:" + port, "--journal", dir.toString(), "--max-frames", "2", "--duration-s", "60"));
        try (ZContext ctx = new ZContext()) {
            ZMQ.Socket dealer = ctx.createSocket(SocketType.DEALER);
            dealer.connect("tcp://127.0.0.1:" + port);
            byte[] part = new byte[8 << 20];
            Arrays.fill(part, (byte) 7);
            dealer.sendMore(part);
            dealer.send(part, 0);
            dealer.send(new NotifyEncoder().writeDone("tx-after"), 0);
            assertThat(run.get(120, TimeUnit.SECONDS)).as(err.toString()).isZero();
        }
        assertThat(out.toString()).contains("2 frame(s) journaled (1 rejected)");
        List<NodeEvent> events = inputs(dir);
        assertThat(events).hasSize(2);
        assertThat(events.get(0)).isInstanceOfSatisfying(NodeEvent.FrameRejected.class, e -> {
            assertThat(e.reason()).startsWith("BAD_FRAMING: 2 frames after the identity (sizes 8388608, 8388608; 16777216 bytes in all)");
            assertThat(e.frame()).hasSize(64 << 10);
        });
        assertThat(events.get(1)).isInstanceOfSatisfying(NodeEvent.WriteDoneReceived.class,
                e -> assertThat(e.transferId()).isEqualTo("tx-after"));
    }

    /** {@code kvledger listen} in a child JVM (its own heap cap when given), stdout to {@code out}, stderr piped. */
    private static Process listenChild(Path dir, int port, Path out, String heap, String... more) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        String flags = System.getProperty("kvledger.jvm.flags", "");
        if (!flags.isBlank()) {
            cmd.addAll(Arrays.asList(flags.strip().split("\\s+")));
        }
        if (heap != null) {
            cmd.addAll(List.of("-Xmx" + heap, "-XX:+ExitOnOutOfMemoryError"));
        }
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName(), "listen", "--bind",
                "tcp://127.0.0.1:" + port, "--journal", dir.toString()));
        cmd.addAll(Arrays.asList(more));
        return new ProcessBuilder(cmd).redirectOutput(out.toFile()).start();
    }

    /** SIGTERM stops {@code listen} cleanly, as it does {@code node}: its journal flushed, exit 0. */
    @Test
    void sigterm_stops_listen_with_exit_0_after_flushing(@TempDir Path tmp) throws Exception {
        int port = freePort();
        Path dir = tmp.resolve("tap");
        Path out = tmp.resolve("out.txt");
        Process child = listenChild(dir, port, out, null);
        try {
            assertThat(readLine(child.getErrorStream())).contains("listen: bound");
            try (ZContext ctx = new ZContext()) {
                ZMQ.Socket dealer = ctx.createSocket(SocketType.DEALER);
                dealer.connect("tcp://127.0.0.1:" + port);
                dealer.send(new NotifyEncoder().writeDone("tx-1"), 0);
                dealer.send(new NotifyEncoder().writeDone("tx-2"), 0);
                long end = System.nanoTime() + 120_000_000_000L;
                while (inputs(dir).size() < 2 && System.nanoTime() - end < 0) {
                    Thread.sleep(20);
                }
            }
            assertThat(inputs(dir)).as("both frames journaled before the signal").hasSize(2);
            child.destroy(); // SIGTERM
            assertThat(child.waitFor(120, TimeUnit.SECONDS)).isTrue();
            assertThat(child.exitValue()).as("exit status on SIGTERM").isZero();
            assertThat(java.nio.file.Files.readString(out)).contains("listen: 2 frame(s) journaled (0 rejected)");
        } finally {
            child.destroyForcibly();
            child.waitFor(30, TimeUnit.SECONDS);
        }
    }

    /**
     * A flood of 4 MiB frames (below the decoder's limit, so each is kept whole in its rejection)
     * into a listener with a 96 MiB heap: it journals every one and ends cleanly, its memory
     * bounded by the hand-off's byte bound and ZMQ's per-peer high-water mark, not by the flood.
     */
    @Test
    void a_flood_of_large_frames_is_journaled_within_a_capped_heap(@TempDir Path tmp) throws Exception {
        int port = freePort();
        int n = 100;
        Path dir = tmp.resolve("tap");
        Path out = tmp.resolve("out.txt");
        Process child = listenChild(dir, port, out, "96m", "--max-frames", String.valueOf(n + 1), "--duration-s", "600");
        try {
            assertThat(readLine(child.getErrorStream())).contains("listen: bound");
            try (ZContext ctx = new ZContext()) {
                ZMQ.Socket dealer = ctx.createSocket(SocketType.DEALER);
                dealer.setSndHWM(n + 1);
                dealer.connect("tcp://127.0.0.1:" + port);
                byte[] junk = new byte[4 << 20];
                Arrays.fill(junk, (byte) 0xc1); // msgpack's never-used byte: not a notify
                for (int i = 0; i < n; i++) {
                    dealer.send(junk, 0);
                }
                dealer.send(new NotifyEncoder().writeDone("tx-last"), 0);
                assertThat(child.waitFor(600, TimeUnit.SECONDS)).as("listen ends after its frames").isTrue();
            }
            assertThat(child.exitValue()).as("exit status (3: out of memory)").isZero();
            assertThat(java.nio.file.Files.readString(out)).contains("listen: " + (n + 1) + " frame(s) journaled (" + n + " rejected)");
            List<NodeEvent> events = inputs(dir);
            assertThat(events).hasSize(n + 1);
            assertThat(events.get(n)).isInstanceOf(NodeEvent.WriteDoneReceived.class);
        } finally {
            child.destroyForcibly();
            child.waitFor(30, TimeUnit.SECONDS);
        }
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

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static String readLine(InputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        int c;
        while ((c = in.read()) >= 0 && c != '\n') {
            b.append((char) c);
        }
        return b.toString();
    }
}
