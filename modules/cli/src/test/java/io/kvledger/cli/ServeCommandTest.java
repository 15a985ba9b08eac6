package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.journal.json.Json;
import io.kvledger.node.HttpOnceMore;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code kvledger serve} over fixture 27-write-stranded, read with a plain HTTP client: the JSON the
 * web page reads (request list, merged timeline with its findings, hangs), the page's assets, and
 * the usage errors.
 */
class ServeCommandTest {

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Test
    @SuppressWarnings("unchecked")
    void servesThePageAndItsJsonOverAFixture() throws Exception {
        Path fixture = FixtureGoldenTest.fixturesDir().resolve("27-write-stranded");
        StringWriter out = new StringWriter();
        CommandLine cl = Main.commandLine(new PrintWriter(out, true), new PrintWriter(new StringWriter(), true));
        ServeCommand serve = (ServeCommand) cl.getSubcommands().get("serve").getCommand();
        Thread t = new Thread(() -> cl.execute("serve", fixture.toString(), "--http", "127.0.0.1:0"), "serve");
        t.start();
        try {
            assertThat(serve.started.await(120, TimeUnit.SECONDS)).as("%s", out).isTrue();
            String base = "http://127.0.0.1:" + serve.server.port();
            assertThat(out.toString()).startsWith("serve: " + base + "/ over 2 journal(s) (D0, P0)");

            // The list: both legs, each with its node, phase, transfer id and anomalies.
            Map<String, Object> list = json(get(base + "/v1/requests", 200));
            List<Map<String, Object>> rows = (List<Map<String, Object>>) list.get("requests");
            assertThat(rows).extracting(r -> r.get("node")).containsExactlyInAnyOrder("D0", "P0");
            Map<String, Object> d0 = rows.stream().filter(r -> r.get("node").equals("D0")).findFirst().orElseThrow();
            Map<String, Object> p0 = rows.stream().filter(r -> r.get("node").equals("P0")).findFirst().orElseThrow();
            assertThat(d0.get("phase")).isEqualTo("WAITING_FOR_REMOTE_KVS");
            assertThat(d0.get("terminal")).isEqualTo(false);
            assertThat(d0.get("transfer_id")).isEqualTo(p0.get("transfer_id")).isEqualTo("tx-75301b59-de1f-4242-9f7d-3b77de8039a0");
            assertThat((List<Object>) p0.get("anomalies")).contains("WRITE_TASK_EXPIRED");
            assertThat((Double) d0.get("age_s")).isBetween(36.9, 37.0);
            assertThat((List<Map<String, Object>>) list.get("nodes")).extracting(n -> n.get("role"))
                    .containsExactly("consumer", "producer");

            // One request merged across both journals, with the findings that name it.
            Map<String, Object> tl = json(get(base + "/v1/requests/6c5d8182190c404694cda0f3b0e27cc7", 200));
            assertThat((List<Object>) tl.get("lines")).hasSize(27);
            assertThat((List<Map<String, Object>>) tl.get("requests")).extracting(r -> r.get("node"))
                    .containsExactlyInAnyOrder("D0", "P0");
            assertThat((List<Map<String, Object>>) tl.get("journals")).extracting(j -> j.get("transfer_timeout_ns"))
                    .containsOnly(30_000_000_000L);
            assertThat((List<Map<String, Object>>) tl.get("findings")).extracting(f -> f.get("detector"))
                    .containsExactlyInAnyOrder("stuck-waiting", "anomaly", "reaped-warning");
            // A leg's whole id finds the same timeline (the transfer id links the other leg).
            Map<String, Object> byLeg = json(get(base + "/v1/requests/"
                    + java.net.URLEncoder.encode((String) d0.get("request_id"), java.nio.charset.StandardCharsets.UTF_8), 200));
            assertThat((List<Object>) byLeg.get("lines")).hasSize(27);
            assertThat(json(get(base + "/v1/requests/nope", 404)).get("error").toString()).contains("no request id");

            // Hangs: what `kvledger hangs` finds; stuck_after is checked.
            Map<String, Object> hangs = json(get(base + "/v1/hangs", 200));
            assertThat(hangs.get("count")).isEqualTo(3L);
            assertThat(((Map<String, Object>) hangs.get("by_detector")).keySet()).containsExactly("stuck-waiting", "anomaly", "reaped-warning");
            assertThat(json(get(base + "/v1/hangs?stuck_after=100", 200)).get("by_detector"))
                    .isEqualTo(Map.of("anomaly", 1L, "reaped-warning", 1L));
            assertThat(json(get(base + "/v1/hangs?stuck_after=-1", 400)).get("error").toString())
                    .contains("stuck_after must be a positive number");

            // The page: / redirects, the assets come from the jar with their types.
            HttpResponse<String> root = get(base + "/", 302);
            assertThat(root.headers().firstValue("Location")).hasValue("/ui/");
            assertThat(get(base + "/ui/", 200).body()).contains("<script src=\"app.js\"></script>");
            assertThat(get(base + "/ui/app.js", 200).headers().firstValue("Content-Type").orElse("")).startsWith("text/javascript");
            assertThat(get(base + "/ui/app.css", 200).headers().firstValue("Content-Type").orElse("")).startsWith("text/css");
            get(base + "/ui/secret.txt", 404);
            get(base + "/v1/events", 404);
        } finally {
            t.interrupt();
            t.join(10_000);
        }
    }

    @Test
    void followStreamsWhatIsAppendedToTheJournals(@TempDir Path tmp) throws Exception {
        Path sim = tmp.resolve("sim");
        assertThat(CliRun.simulate(sim, "read", 2, 1, "drop=0").code()).isIn(0, 1);
        StringWriter out = new StringWriter();
        CommandLine cl = Main.commandLine(new PrintWriter(out, true), new PrintWriter(new StringWriter(), true));
        ServeCommand serve = (ServeCommand) cl.getSubcommands().get("serve").getCommand();
        Thread t = new Thread(() -> cl.execute("serve", sim.toString(), "--http", "127.0.0.1:0", "--follow"), "serve");
        t.start();
        try {
            assertThat(serve.started.await(120, TimeUnit.SECONDS)).as("%s", out).isTrue();
            assertThat(out.toString()).contains("following them");
            String base = "http://127.0.0.1:" + serve.server.port();
            HttpResponse<java.util.stream.Stream<String>> r = http.send(HttpRequest.newBuilder(URI.create(base + "/v1/events"))
                    .GET().build(), HttpResponse.BodyHandlers.ofLines());
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("text/event-stream");
            java.util.Iterator<String> lines = afterReadyEvents(r, 2);

            // An entry appended to P0's journal now reaches the page's stream.
            Path p0 = sim.resolve("P0");
            io.kvledger.journal.JournalHeader header;
            long last;
            try (io.kvledger.journal.JournalReader reader = io.kvledger.journal.JournalReader.open(p0)) {
                header = reader.header();
                long max = 0;
                for (io.kvledger.journal.JournalEntry e : reader) {
                    max = Math.max(max, e.atNs());
                }
                last = max;
            }
            long seq;
            try (io.kvledger.journal.JournalWriter w = io.kvledger.journal.JournalWriter.open(p0, header)) {
                seq = w.appendInput(new io.kvledger.core.event.NodeEvent.Tick(last + 1_000_000));
            }
            String id = null;
            while (lines.hasNext()) {
                String line = lines.next();
                if (line.startsWith("id: ")) {
                    id = line.substring(4);
                }
                if (line.startsWith("data: ") && line.contains("\"type\":\"tick\"") && line.contains("\"at_ns\":" + (last + 1_000_000))) {
                    break;
                }
            }
            assertThat(id).isEqualTo(Long.toString(seq));
            r.body().close();
        } finally {
            t.interrupt();
            t.join(10_000);
        }
        assertThat(t.isAlive()).as("serve stopped").isFalse();
    }

    @Test
    void usageErrors() {
        CliRun.Outcome bad = CliRun.run("serve", "journal-that-is-not-there", "--http", "127.0.0.1:0");
        assertThat(bad.code()).isEqualTo(2);
        assertThat(bad.err()).contains("kvledger serve:");
        CliRun.Outcome port = CliRun.run("serve", FixtureGoldenTest.fixturesDir().resolve("27-write-stranded").toString(),
                "--http", "127.0.0.1:99999");
        assertThat(port.code()).isEqualTo(2);
        assertThat(port.err()).contains("--http needs a port from 0 to 65535, got 99999");
        CliRun.Outcome form = CliRun.run("serve", "x", "--http", "8088");
        assertThat(form.code()).isEqualTo(2);
        assertThat(form.err()).contains("--http takes HOST:PORT, got 8088");
    }

    private HttpResponse<String> get(String url, int status) throws Exception {
        HttpRequest q = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(15)).GET().build();
        HttpResponse<String> r = HttpOnceMore.send(http, q, HttpResponse.BodyHandlers.ofString(), "ServeCommandTest");
        assertThat(r.statusCode()).as("GET %s: %s", url, r.body()).isEqualTo(status);
        return r;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> json(HttpResponse<String> r) {
        return (Map<String, Object>) Json.parse(r.body());
    }

    /**
     * The lines of a served {@code /v1/events} stream after its first {@code journals} ready events
     * (one per journal served), asserting that many came.
     */
    static java.util.Iterator<String> afterReadyEvents(HttpResponse<java.util.stream.Stream<String>> events, int journals) {
        java.util.Iterator<String> lines = events.body().iterator();
        int ready = 0;
        while (ready < journals && lines.hasNext()) {
            if (lines.next().equals("event: ready")) {
                ready++;
            }
        }
        assertThat(ready).as("a ready event from each journal").isEqualTo(journals);
        return lines;
    }
}
