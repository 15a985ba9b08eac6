package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.ledger.kafka.KafkaUri;
import io.kvledger.ledger.kafka.TestBroker;
import io.kvledger.node.ship.ShipThread;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Figures, not a test (benchmarks/kafka-fleet.sh runs it; skipped otherwise): the end-to-end lag
 * from a node's append to its journal to {@code serve --follow} of the topic showing it on the
 * page's event stream. A node journal (simulated, then appended to by this test as a node's
 * journaller would) is followed by a shipper (the thread {@code node --ship} runs) into a real
 * single-node broker; {@code serve --follow kafka://...} follows the topic. Each of
 * {@code kvledger.kafka.lag.samples} ticks is appended, then waited for on {@code /v1/events}; the
 * time between is one sample (p50, p99, max).
 */
class KafkaFollowLagBenchmarkTest {

    @TempDir
    Path tmp;

    @Test
    void appendToServeFollowLag() throws Exception {
        assumeTrue(Boolean.getBoolean("kvledger.kafka.bench"), "benchmarks/kafka-fleet.sh runs this");
        int samples = Integer.getInteger("kvledger.kafka.lag.samples", 200);
        Path sim = tmp.resolve("sim");
        assertThat(CliRun.simulate(sim, "read", 2, 1, "drop=0").code()).isIn(0, 1);
        Path p0 = sim.resolve("P0");
        try (TestBroker broker = TestBroker.start(tmp.resolve("broker"))) {
            String uri = broker.uri("lag");
            CliRun.Outcome first = CliRun.run("ship", "--no-follow", "--to", uri, sim.toString());
            assertThat(first.code()).as(first.err()).isZero();
            StringWriter shipErr = new StringWriter();
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            CommandLine cl = Main.commandLine(new PrintWriter(out, true), new PrintWriter(err, true));
            ServeCommand serve = (ServeCommand) cl.getSubcommands().get("serve").getCommand();
            Thread t = new Thread(() -> cl.execute("serve", uri, "--http", "127.0.0.1:0", "--follow"), "serve");
            HttpClient http = HttpClient.newHttpClient();
            try (ShipThread ship = ShipThread.open(KafkaUri.parse(uri), p0, new PrintWriter(shipErr, true)).begin()) {
                t.start();
                assertThat(serve.started.await(180, TimeUnit.SECONDS)).as("%s %s", out, err).isTrue();
                HttpResponse<Stream<String>> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                        + serve.server.port() + "/v1/events")).GET().build(), HttpResponse.BodyHandlers.ofLines());
                Iterator<String> lines = r.body().iterator();
                int ready = 0;
                while (ready < 2 && lines.hasNext()) {
                    if (lines.next().equals("event: ready")) {
                        ready++;
                    }
                }
                JournalHeader header;
                long last = 0;
                try (JournalReader reader = JournalReader.open(p0)) {
                    header = reader.header();
                    for (JournalEntry e : reader) {
                        last = Math.max(last, e.atNs());
                    }
                }
                List<Double> lagsMs = new ArrayList<>();
                try (JournalWriter w = JournalWriter.open(p0, header)) {
                    for (int i = 1; i <= samples; i++) {
                        long at = last + i * 1_000_000L;
                        long t0 = System.nanoTime();
                        w.appendInput(new NodeEvent.Tick(at));
                        String want = "\"at_ns\":" + at;
                        boolean seen = false;
                        while (lines.hasNext()) {
                            String line = lines.next();
                            if (line.startsWith("data: ") && line.contains("\"type\":\"tick\"") && line.contains(want)) {
                                seen = true;
                                break;
                            }
                        }
                        assertThat(seen).as("tick %d on the stream", i).isTrue();
                        lagsMs.add((System.nanoTime() - t0) / 1e6);
                        Thread.sleep(10);
                    }
                }
                r.body().close();
                List<Double> s = lagsMs.stream().sorted().toList();
                System.out.printf(Locale.ROOT, "kafka fleet: append to serve --follow (topic) lag over %d ticks: p50 %.1f ms, "
                        + "p99 %.1f ms, max %.1f ms%n", s.size(), pct(s, 0.50), pct(s, 0.99), s.getLast());
            } finally {
                t.interrupt();
                t.join(30_000);
            }
        }
    }

    private static double pct(List<Double> sorted, double q) {
        return sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(q * sorted.size()) - 1));
    }
}
