package io.kvledger.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvledger.journal.json.Json;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvledger node --engine shadow} fed by the vLLM bridge's recorder over ZMQ: a real node
 * process (the CLI, in a child JVM) and a real Python process (the stand-in driver of
 * modules/vllm-bridge, recording with {@code record_to: tcp://127.0.0.1:PORT}). The node runs the
 * reducer on the scheduler's stream as it arrives and reports, over HTTP, where the scripted
 * connector answered otherwise. And the drive mode: {@code kvledger node --engine drive} answers the
 * driver's scheduler hooks over the engine bridge.
 */
class VllmBridgeShadowTest {

    static final Path PYTHON = VllmBridgeRecordingTest.PYTHON;
    static final Path BRIDGE = VllmBridgeRecordingTest.BRIDGE;
    static final String RID1 = "cmpl-___prefill_addr_host:10.0.0.1,handshake:6301,notify:61005___decode_addr_host:10.0.1.1,"
            + "handshake:6301,notify:61005_00000000000000000000000000000001-0-aaaaaaaa";

    @TempDir
    Path tmp;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private Process node;
    private Path nodeLog;
    private int shadowPort;
    private int httpPort;

    @BeforeAll
    static void python() throws Exception {
        VllmBridgeRecordingTest.python();
    }

    @AfterEach
    void stopNode() throws InterruptedException {
        if (node != null && node.isAlive()) {
            node.destroy();
            if (!node.waitFor(30, TimeUnit.SECONDS)) {
                node.destroyForcibly();
            }
        }
    }

    /** Starts {@code kvledger node --engine shadow} as the driver's producer engine is configured. */
    private Path startShadow(String role) throws Exception {
        return startNode(role, "shadow");
    }

    /** A {@code unix://} endpoint for a node's bridge in a new directory {@code run} only this user may enter. */
    private static String unixEndpointIn(Path run) throws java.io.IOException {
        Files.createDirectory(run);
        Files.setPosixFilePermissions(run, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
        return "unix://" + run.resolve("node.sock").toAbsolutePath();
    }

    /**
     * Starts {@code kvledger node --engine ENGINE} (shadow: --shadow; drive: --bridge on the same
     * port, or the {@code --bridge ENDPOINT} given first in {@code more}).
     */
    private Path startNode(String role, String engine, String... more) throws Exception {
        int[] ports = io.kvledger.node.cluster.LoopbackPorts.distinct(2);
        shadowPort = ports[0];
        httpPort = ports[1];
        Path journal = tmp.resolve(engine + "-" + role);
        nodeLog = tmp.resolve(engine + "-" + role + ".log");
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (a.startsWith("--") || a.startsWith("-Dchronicle")) {
                cmd.add(a);
            }
        }
        String host = role.equals("producer") ? "10.0.0.1" : "10.0.1.1";
        cmd.addAll(List.of("-XX:+UseParallelGC", "-cp", System.getProperty("java.class.path"), Main.class.getName(), "node",
                "--engine", engine, engine.equals("shadow") ? "--shadow" : "--bridge",
                more.length > 1 && more[0].equals("--bridge") ? more[1] : "tcp://127.0.0.1:" + shadowPort,
                "--kv-transfer-config", "{\"kv_role\":\"kv_" + role + "\",\"kv_connector_extra_config\":{\"host_ip\":\"" + host
                        + "\",\"proxy_ip\":\"127.0.0.1\",\"proxy_ping_port\":1}}",
                "--http", "127.0.0.1:" + httpPort, "--journal", journal.toString()));
        cmd.addAll(List.of(more).subList(more.length > 1 && more[0].equals("--bridge") ? 2 : 0, more.length));
        node = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(nodeLog.toFile()).start();
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (System.nanoTime() < end && node.isAlive()) {
            try {
                if (get("/healthz").statusCode() == 200) {
                    return journal;
                }
            } catch (IOException notYet) {
                // starting
            }
            Thread.sleep(50);
        }
        throw new AssertionError("the " + engine + " node did not come up: " + Files.readString(nodeLog));
    }

    private HttpResponse<String> get(String path) throws IOException, InterruptedException {
        // longer than the node's own bound on a journal read (60 s, then 503): on two loaded cores
        // the first /v1/hangs of a fresh node once took over 10 s, and the client gave up first
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + path))
                .timeout(Duration.ofSeconds(70)).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    @SuppressWarnings("unchecked")
    private Map<String, Object> json(String path) throws IOException, InterruptedException {
        HttpResponse<String> r = get(path);
        assertEquals(200, r.statusCode(), path + ": " + r.body());
        return (Map<String, Object>) Json.parse(r.body());
    }

    /** Runs the driver streaming to the shadow node; returns its output. */
    private String drive(String scenario, String role) throws Exception {
        return runDriver("--scenario", scenario, "--role", role, "--to", "tcp://127.0.0.1:" + shadowPort);
    }

    private static String runDriver(String... args) throws Exception {
        return VllmBridgeRecordingTest.runDriver(args);
    }

    /** Waits until the scheduler stream has ended and its {@code inputs} hook calls are applied. */
    @SuppressWarnings("unchecked")
    private Map<String, Object> awaitStream(long inputs) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        Map<String, Object> d = null;
        while (System.nanoTime() < end) {
            d = json("/v1/divergences");
            List<Map<String, Object>> streams = (List<Map<String, Object>>) d.get("streams");
            boolean ended = streams.stream().anyMatch(s -> "scheduler".equals(s.get("role")) && Boolean.TRUE.equals(s.get("ended")));
            if (ended && ((Long) d.get("observed_inputs")) >= inputs) {
                return d;
            }
            Thread.sleep(50);
        }
        throw new AssertionError("the scheduler stream did not arrive: " + d + "\n" + Files.readString(nodeLog));
    }

    private static long metric(String scrape, String name, String hook) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + "\\{hook=\"" + hook + "\",[^}]*\\} ([0-9.]+)$").matcher(scrape);
        assertTrue(m.find(), name + " " + hook + " missing in:\n" + scrape);
        return (long) Double.parseDouble(m.group(1));
    }

    @Test
    @SuppressWarnings("unchecked")
    void healthyConnectorShowsNoDivergenceLive() throws Exception {
        Path journal = startShadow("producer");
        drive("healthy", "producer");
        Map<String, Object> d = awaitStream(25);
        assertEquals(0L, d.get("count"), d.toString());
        assertEquals(25L, d.get("observed_inputs"), d.toString());
        // 3 get_num_new_matched_tokens, 3 request_finished, 6 update_connector_output replies and
        // the connector metadata of the 6 steps
        assertEquals(18L, d.get("replies_compared"), d.toString());
        List<Map<String, Object>> streams = (List<Map<String, Object>>) d.get("streams");
        Map<String, Object> sched = streams.stream().filter(s -> "scheduler".equals(s.get("role"))).findFirst().orElseThrow();
        assertEquals(Boolean.TRUE, sched.get("shadowed"));
        assertEquals("P0-10.0.0.1-6301", sched.get("node_id"));
        assertEquals(0L, sched.get("lines_lost"));
        Map<String, Object> worker = streams.stream().filter(s -> "worker".equals(s.get("role"))).findFirst().orElseThrow();
        assertEquals(Boolean.FALSE, worker.get("shadowed"), worker.toString());
        String scrape = get("/metrics").body();
        assertEquals(0, metric(scrape, "kvledger_shadow_divergences_total", "request_finished"));
        assertEquals(0, metric(scrape, "kvledger_shadow_divergences_total", "get_num_new_matched_tokens"));
        // the node acted on nothing: no notify left it
        Map<String, Object> status = json("/v1/status");
        assertEquals(0L, status.get("notifies_sent"), status.toString());
        assertEquals(0L, status.get("shadow_divergences"), status.toString());
        // the hang detectors over the live journal: the request aborted mid-prefill leaves its
        // pending save behind in MoRIIO's scheduler (kvledger's model says so; nothing else hangs)
        Map<String, Object> hangs = json("/v1/hangs?stuck_after=0.05");
        assertEquals(Map.of("mapping-leak", 1L), hangs.get("by_detector"), hangs.toString());
        Map<String, Object> leak = ((List<Map<String, Object>>) hangs.get("findings")).getFirst();
        assertEquals(RID1.replace("0001-0-", "0002-0-"), leak.get("request_id"), hangs.toString());
        // the shadow journal is a recording: replay --verify agrees with the node
        stopNode();
        CliRun.Outcome o = CliRun.run("replay", "--verify", journal.toString());
        assertEquals(0, o.code(), o.out() + o.err());
        assertTrue(o.out().contains("verify: no divergence"), o.out());
        assertTrue(o.out().contains("the same 18 hook replies"), o.out());
    }

    @Test
    @SuppressWarnings("unchecked")
    void divergingConnectorIsReportedLiveAtItsRequestFinished() throws Exception {
        Path journal = startShadow("producer");
        drive("diverge", "producer");
        Map<String, Object> d = awaitStream(25);
        // the finish decision, then the next step's metadata: kvledger ships the request it defers
        // in reqs_to_send, the connector (which freed it) does not
        assertEquals(2L, d.get("count"), d.toString());
        assertEquals(Map.of("request_finished", 1L, "build_connector_meta", 1L), d.get("by_hook"));
        List<Map<String, Object>> list = (List<Map<String, Object>>) d.get("divergences");
        assertEquals(2, list.size());
        Map<String, Object> meta = list.get(1);
        assertEquals("build_connector_meta", meta.get("hook"), meta.toString());
        assertTrue(((String) meta.get("connector")).contains("(reqs_to_send: the connector [], kvledger [" + RID1 + "])"),
                meta.toString());
        Map<String, Object> div = list.getFirst();
        assertEquals("request_finished", div.get("hook"));
        assertEquals(RID1, div.get("request_id"));
        assertTrue(((String) div.get("connector")).startsWith("finish_decision rid=" + RID1 + " delay_free=false"), div.toString());
        assertTrue(((String) div.get("kvledger")).startsWith("finish_decision rid=" + RID1 + " delay_free=true"), div.toString());
        long seq = (Long) div.get("seq");
        String scrape = get("/metrics").body();
        assertEquals(1, metric(scrape, "kvledger_shadow_divergences_total", "request_finished"));
        assertEquals(0, metric(scrape, "kvledger_shadow_divergences_total", "update_connector_output"));
        // kvledger's model still holds the request's blocks the real connector freed: a hang, live
        Map<String, Object> hangs = json("/v1/hangs?stuck_after=0.05");
        assertEquals(Map.of("mapping-leak", 1L, "stuck", 1L), hangs.get("by_detector"), hangs.toString());
        Map<String, Object> stuck = ((List<Map<String, Object>>) hangs.get("findings")).stream()
                .filter(f -> "stuck".equals(f.get("detector"))).findFirst().orElseThrow();
        assertEquals(RID1, stuck.get("request_id"), hangs.toString());
        assertEquals("DEFERRED_FREE", stuck.get("phase"), hangs.toString());
        stopNode();
        CliRun.Outcome o = CliRun.run("replay", "--verify", "--full-ids", journal.toString());
        assertEquals(1, o.code(), o.out() + o.err());
        assertTrue(o.out().contains("2 of "), o.out());
        assertTrue(o.out().contains("the first at seq " + seq + " (request_finished)"), o.out());
        CliRun.Outcome dump = CliRun.run("dump", journal.toString(), "--type", "anomaly");
        assertTrue(dump.out().contains("SHADOW_DIVERGENCE"), dump.out() + dump.err());
        // the shadow node's live scrape, its divergence series included, passes promtool's lint
        // (last: without promtool the test is skipped here, saying why, after every other check)
        assertTrue(scrape.contains("kvledger_shadow_inputs_total"), scrape);
        io.kvledger.node.Promtool.Verdict lint = io.kvledger.node.Promtool.check(io.kvledger.node.Promtool.require(), scrape);
        assertEquals("", lint.output().strip(), "promtool check metrics on the shadow node's /metrics");
        assertEquals(0, lint.exit(), "promtool's exit status on the shadow node's /metrics");
    }

    @Test
    @SuppressWarnings("unchecked")
    void driveModeHandsTheSchedulersDecisionsToTheNode() throws Exception {
        // The scripted connector would free the first request at once; kvledger defers it, and the
        // driver (vLLM) gets kvledger's answer (every finish awaited: by default vLLM takes the inner's
        // until the first divergence, this one). The recording keeps the connector's own answers.
        Path journal = startNode("producer", "drive");
        Path rec = tmp.resolve("rec-drive");
        String out = runDriver("--scenario", "diverge", "--role", "producer", "--out", rec.toString(),
                "--drive", "tcp://127.0.0.1:" + shadowPort, "--drive-finished-awaited");
        assertTrue(out.contains("answer driving True"), out);
        assertTrue(out.contains("answer " + RID1 + " True"), out);
        Map<String, Object> timeline = json("/v1/requests/" + java.net.URLEncoder.encode(RID1, StandardCharsets.UTF_8));
        List<Map<String, Object>> end = (List<Map<String, Object>>) timeline.get("end");
        assertEquals("DEFERRED_FREE", end.getFirst().get("phase"), Json.write(timeline));
        Map<String, Object> status = json("/v1/status");
        assertEquals(0L, status.get("notifies_sent"), status.toString());
        stopNode();
        // the node's journal: its own decisions, replayed identically
        CliRun.Outcome v = CliRun.run("replay", "--verify", journal.toString());
        assertEquals(0, v.code(), v.out() + v.err());
        // the recording: the connector's answers, which kvledger overrode at that request_finished
        Path p0 = tmp.resolve("rec-drive-P0");
        CliRun.Outcome imp = CliRun.run("journal", "import", rec.resolve("scheduler-dp0-tp0.jsonl").toString(), p0.toString());
        assertEquals(0, imp.code(), imp.out() + imp.err());
        CliRun.Outcome o = CliRun.run("replay", "--verify", "--full-ids", p0.toString());
        assertEquals(1, o.code(), o.out() + o.err());
        assertTrue(o.out().contains("journal: finish_decision rid=" + RID1 + " delay_free=false"), o.out());
    }

    /**
     * Drive mode over the bridge's Unix socket, {@code unix://} (length-prefixed frames) or
     * {@code ipc://} (the recorder's pyzmq DEALER, ZMTP on the socket): the same answers, the same journal.
     */
    @ParameterizedTest
    @ValueSource(strings = {"unix", "ipc"})
    void driveModeOverAUnixSocket(String scheme) throws Exception {
        Path run = tmp.resolve("run");
        String endpoint = scheme + "://" + java.net.URI.create(unixEndpointIn(run)).getPath();
        Path journal = startNode("producer", "drive", "--bridge", endpoint);
        String out = runDriver("--scenario", "diverge", "--role", "producer", "--out", tmp.resolve("rec-" + scheme).toString(),
                "--drive", endpoint, "--drive-finished-awaited");
        assertTrue(out.contains("answer driving True"), out);
        assertTrue(out.contains("answer " + RID1 + " True"), out);
        stopNode();
        assertTrue(Files.readString(nodeLog).contains("engine bridge " + endpoint), Files.readString(nodeLog));
        assertFalse(Files.exists(run.resolve("node.sock")), "the node removes its socket at exit");
        CliRun.Outcome v = CliRun.run("replay", "--verify", journal.toString());
        assertEquals(0, v.code(), v.out() + v.err());
    }

    @Test
    void compactDriveCallsOverAUnixSocketJournalTheSameEventsAsTheLongForm() throws Exception {
        // The node lists "compact" in its hello: from the inner, the engine's admissions, queries,
        // allocations and steps travel in its batches as arrays. The node applies the same calls in
        // the same order as from the long form: the same journal entries, the same replayed decisions.
        // It lists "derived" too: a step's new requests go as [request_id, num_computed_tokens] when
        // their blocks and params are those their batch's allocation and admission sent (the same again).
        // And "steady": six decode steps follow the scenario, each scheduling the same three running
        // requests; a step's ids go as the previous step's number when they are its ids (the node
        // remembers the connection's last step) and its new block ids by index (the same again).
        List<List<String>> acted = new ArrayList<>();
        List<String> replays = new ArrayList<>();
        List<String> dumps = new ArrayList<>();
        for (String form : new String[] {"steady", "derived", "compact", "long"}) {
            boolean compact = !form.equals("long");
            String endpoint = unixEndpointIn(tmp.resolve("run-compact-" + form));
            Path journal = startNode("producer", "drive", "--bridge", endpoint);
            List<String> args = new ArrayList<>(List.of("--scenario", "diverge", "--role", "producer", "--out",
                    tmp.resolve("rec-compact-" + form).toString(), "--drive", endpoint, "--drive-from-inner",
                    "--steady-steps", "6"));
            if (!compact) {
                args.add("--no-drive-compact");
            } else if (form.equals("compact")) {
                args.add("--no-drive-derived");
            }
            if (!form.equals("steady")) {
                args.add("--no-drive-steady");
            }
            String out = runDriver(args.toArray(String[]::new));
            assertTrue(out.contains("drive compact " + (compact ? "True" : "False")), out);
            assertTrue(out.contains("drive derived " + (compact && !form.equals("compact") ? "True" : "False")), out);
            // five of the six decode steps repeat the ids of the step before
            assertTrue(out.contains("drive steady " + (form.equals("steady") ? "True 5" : "False 0")), out);
            assertTrue(out.contains("drive divergences 1"), out);
            acted.add(out.lines().filter(l -> l.startsWith("acted ") || l.startsWith("answer ")).toList());
            stopNode();
            CliRun.Outcome v = CliRun.run("replay", "--verify", "--full-ids", journal.toString());
            assertEquals(0, v.code(), v.out() + v.err());
            assertTrue(v.out().contains("DRIVE_ANSWER_DIVERGED 1"), v.out());
            replays.add(v.out().replaceAll("span [0-9.]+ s", "span"));  // the run's length differs
            CliRun.Outcome dump = CliRun.run("dump", journal.toString(), "--from", "1");
            assertEquals(0, dump.code(), dump.out() + dump.err());
            // the event times differ from run to run (and the deadlines set from them), nothing else
            dumps.add(dump.out().replaceAll("t\\+[0-9.]+ ?s", "t").replaceAll("deadline_ns=[0-9]+", "deadline_ns"));
            Files.move(journal, tmp.resolve("drive-producer-compact-" + form));
        }
        assertTrue(dumps.getFirst().contains("step_scheduled") && dumps.getFirst().contains("blocks_allocated"),
                dumps.getFirst());
        assertTrue(dumps.getFirst().contains("decode-2"), dumps.getFirst());
        for (int i = 1; i < 4; i++) {
            assertEquals(acted.get(i), acted.get(0));
            assertEquals(replays.get(i), replays.get(0));
            assertEquals(dumps.get(i), dumps.get(0));
        }
    }

    @Test
    void agreedRepliesOverAUnixSocketGiveTheSameAnswersJournalAndVerify() throws Exception {
        // The node lists "agreed" in its hello: a batch asks for replies without the empty answers and
        // those equal to the answer vLLM acted on (from the inner). Against the same node without it
        // (--no-drive-agreed: every answer in full, checked one by one): the same answers acted on, the
        // same journal and replayed decisions; the forced divergence (the scripted connector frees the
        // first request at once where kvledger defers it) still reaches the client, counted.
        List<List<String>> acted = new ArrayList<>();
        List<String> replays = new ArrayList<>();
        List<String> dumps = new ArrayList<>();
        for (boolean agreed : new boolean[] {true, false}) {
            String endpoint = unixEndpointIn(tmp.resolve("run-agreed-" + agreed));
            Path journal = startNode("producer", "drive", "--bridge", endpoint);
            List<String> args = new ArrayList<>(List.of("--scenario", "diverge", "--role", "producer", "--out",
                    tmp.resolve("rec-agreed-" + agreed).toString(), "--idle-steps", "3", "--drive", endpoint,
                    "--drive-from-inner"));
            if (!agreed) {
                args.add("--no-drive-agreed");
            }
            String out = runDriver(args.toArray(String[]::new));
            assertTrue(out.contains("answer driving True"), out);
            assertTrue(out.contains("drive agreed " + (agreed ? "True" : "False")), out);
            assertTrue(out.contains("drive divergences 1"), out);
            // agreed: the node left answers out (the empty ones and those acted on); otherwise none
            Matcher left = Pattern.compile("drive left out (\\d+)").matcher(out);
            assertTrue(left.find(), out);
            assertEquals(agreed, Long.parseLong(left.group(1)) > 0, out);
            acted.add(out.lines().filter(l -> l.startsWith("acted ") || l.startsWith("answer ")).toList());
            stopNode();
            CliRun.Outcome v = CliRun.run("replay", "--verify", "--full-ids", journal.toString());
            assertEquals(0, v.code(), v.out() + v.err());
            assertTrue(v.out().contains("DRIVE_ANSWER_DIVERGED 1"), v.out());
            replays.add(v.out().replaceAll("span [0-9.]+ s", "span"));
            CliRun.Outcome dump = CliRun.run("dump", journal.toString(), "--from", "1");
            assertEquals(0, dump.code(), dump.out() + dump.err());
            dumps.add(dump.out().replaceAll("t\\+[0-9.]+ ?s", "t").replaceAll("deadline_ns=[0-9]+", "deadline_ns"));
            Files.move(journal, tmp.resolve("drive-producer-agreed-" + agreed));
        }
        assertTrue(dumps.getFirst().contains(" acted="), dumps.getFirst());
        assertEquals(acted.get(1), acted.get(0));
        assertEquals(replays.get(1), replays.get(0));
        assertEquals(dumps.get(1), dumps.get(0));
    }

    @Test
    void pipelinedDriveModeActsOnTheSameAnswersAndItsJournalReplays() throws Exception {
        // The hooks whose answer vLLM ignores go out without waiting (the default), in batches, and so do
        // the matched-tokens queries while the node agrees with the inner (the default: the inner's answer
        // until the first divergence); the node still applies every call in vLLM's order: the engine acts
        // on the same answers as when it awaits every call, and each node's journal replays to the
        // decisions it gave. By default the finishes too are the inner's until the first divergence: here
        // the three finish in one step, the first (which the scripted connector frees at once where
        // kvledger defers it) diverges, vLLM acted on the inner's answer, and the node journals and names it.
        List<List<String>> acted = new ArrayList<>();
        List<Long> awaited = new ArrayList<>();
        for (String form : new String[] {"default", "finished-awaited", "matched-awaited", "unpipelined"}) {
            boolean byDefault = form.equals("default");
            Path journal = startNode("producer", "drive");
            List<String> args = new ArrayList<>(List.of("--scenario", "diverge", "--role", "producer", "--out",
                    tmp.resolve("rec-pipelined-" + form).toString(), "--idle-steps", "3",
                    "--drive", "tcp://127.0.0.1:" + shadowPort));
            if (form.equals("unpipelined")) {
                args.add("--no-drive-pipeline");
            } else if (form.equals("matched-awaited")) {
                args.addAll(List.of("--drive-matched-awaited", "--drive-finished-awaited"));
            } else if (form.equals("finished-awaited")) {
                args.add("--drive-finished-awaited");
            }
            boolean pipelined = !form.equals("unpipelined");
            String out = runDriver(args.toArray(String[]::new));
            assertTrue(out.contains("answer driving True"), out);
            // the node's matched tokens are the inner's; its first finish is not (vLLM waits for it but by default)
            assertTrue(out.contains("drive divergences " + (byDefault ? 1 : 0)), out);
            // pipelined, the unawaited calls travel in batches (the node lists them in its hello)
            assertEquals(pipelined, !out.contains("drive batches 0") && out.contains("drive batches "), out);
            if (pipelined) {
                Matcher m = Pattern.compile("drive awaited (\\d+)").matcher(out);
                assertTrue(m.find(), out);
                awaited.add(Long.parseLong(m.group(1)));
            }
            List<String> lines = out.lines().filter(l -> l.startsWith("acted ") || l.startsWith("answer ")).toList();
            // every request's query and finish, each step's freed set
            assertTrue(lines.stream().filter(l -> l.startsWith("acted [\"matched\"")).count() == 3, out);
            assertTrue(lines.stream().filter(l -> l.startsWith("acted [\"finished\"")).count() == 3, out);
            // kvledger's decision when vLLM waits for it; by default the connector's, which vLLM acted on
            assertTrue(lines.contains("answer " + RID1 + (byDefault ? " False" : " True")), out);
            if (!byDefault) {
                acted.add(lines);
            }
            Map<String, Object> status = json("/v1/status");
            stopNode();
            CliRun.Outcome v = CliRun.run("replay", "--verify", journal.toString());
            assertEquals(0, v.code(), status + "\n" + v.out() + v.err());
            assertEquals(byDefault, v.out().contains("DRIVE_ANSWER_DIVERGED 1"), v.out());
            // by default the three queries carry the answer vLLM acted on (the inner's), journaled with them
            CliRun.Outcome dump = CliRun.run("dump", journal.toString(), "--type", "matched_tokens_queried");
            assertEquals(0, dump.code(), dump.out() + dump.err());
            assertEquals(byDefault || form.equals("finished-awaited") ? 3 : 0,
                    dump.out().lines().filter(l -> l.contains(" acted=")).count(), dump.out());
            // and so do the three finishes
            dump = CliRun.run("dump", journal.toString(), "--type", "request_finished");
            assertEquals(0, dump.code(), dump.out() + dump.err());
            assertEquals(byDefault ? 3 : 0, dump.out().lines().filter(l -> l.contains(" acted=")).count(), dump.out());
            Files.move(journal, tmp.resolve("drive-producer-pipelined-" + form));
        }
        assertEquals(acted.get(1), acted.get(0));
        assertEquals(acted.get(2), acted.get(0));
        // by default none of the three queries is awaited: three awaited calls fewer
        assertEquals(awaited.get(2) - 3, awaited.get(1), awaited.toString());
        // nor any of the three finishes (the frees after the divergence are awaited, as when finishes are)
        assertTrue(awaited.getFirst() <= awaited.get(1) - 3, awaited.toString());
    }

    @Test
    void driveModeFromTheInnerJournalsTheAnswerVllmActedOnAndNamesADivergence() throws Exception {
        // vLLM acts on the inner connector's answers at once (drive_matched_from_inner,
        // drive_finished_from_inner); each call carries the answer acted on over the real bridge. The
        // scripted connector frees the first request at once where kvledger defers it: the node
        // journals the call with vLLM's answer, names the divergence on the request, and replays it.
        Path journal = startNode("producer", "drive");
        String out = runDriver("--scenario", "diverge", "--role", "producer", "--out", tmp.resolve("rec-inner").toString(),
                "--drive", "tcp://127.0.0.1:" + shadowPort, "--drive-from-inner");
        assertTrue(out.contains("answer driving True"), out);
        assertTrue(out.contains("answer " + RID1 + " False"), out); // the inner's answer, which vLLM acted on
        assertTrue(out.contains("drive divergences 1"), out); // the node's answer, read later, differs
        stopNode();
        // the replay recomputes the same decisions, the named divergence among them
        CliRun.Outcome v = CliRun.run("replay", "--verify", "--full-ids", journal.toString());
        assertEquals(0, v.code(), v.out() + v.err());
        assertTrue(v.out().contains("DRIVE_ANSWER_DIVERGED 1"), v.out());
        CliRun.Outcome dump = CliRun.run("dump", journal.toString(), "--type",
                "matched_tokens_queried,request_finished,anomaly");
        assertEquals(0, dump.code(), dump.out() + dump.err());
        List<String> acted = dump.out().lines().filter(l -> l.contains(" acted=")).toList();
        // three queries and three finishes carried the answer acted on; the first request's: not deferred
        assertEquals(6, acted.size(), dump.out());
        assertTrue(acted.stream().anyMatch(l -> l.contains("request_finished rid=" + RID1)
                && l.contains("acted=delay_free=false params={\"do_remote_prefill\":true")), dump.out());
        List<String> diverged = dump.out().lines().filter(l -> l.contains("DRIVE_ANSWER_DIVERGED")).toList();
        assertEquals(1, diverged.size(), dump.out());
        assertTrue(diverged.getFirst().contains("rid=" + RID1) && diverged.getFirst().contains(
                "request_finished: vLLM acted on delay_free=False from the inner connector; this node answers delay_free=True"),
                diverged.getFirst());
        CliRun.Outcome inspect = CliRun.run("inspect", journal.toString(), "--request", RID1, "--full-ids");
        assertTrue(inspect.out().contains("DRIVE_ANSWER_DIVERGED"), inspect.out() + inspect.err());
        CliRun.Outcome hangs = CliRun.run("hangs", "--full-ids", journal.toString());
        assertTrue(hangs.out().contains("DRIVE_ANSWER_DIVERGED") && hangs.out().contains(RID1), hangs.out() + hangs.err());
    }

    @Test
    void driveModeFreedFromTheInnerAwaitsNothingAndReplaysAsWhenItWaits() throws Exception {
        // drive_freed_from_inner (on with drive_finished_from_inner): after finishes vLLM keeps the
        // inner connector's rewrite of finished_sending at once, and the call carries it as acted.
        // Against a real node, off and on: the same answers acted on and the same replayed decisions;
        // on, no call after the hello is awaited and each update_connector_output is journaled with
        // the set vLLM freed, which the node's own rewrite matches (no divergence).
        List<List<String>> acted = new ArrayList<>();
        List<String> replays = new ArrayList<>();
        for (boolean freed : new boolean[] {false, true}) {
            Path journal = startNode("producer", "drive");
            List<String> args = new ArrayList<>(List.of("--scenario", "healthy", "--role", "producer", "--out",
                    tmp.resolve("rec-freed-" + freed).toString(), "--idle-steps", "3",
                    "--drive", "tcp://127.0.0.1:" + shadowPort, "--drive-from-inner"));
            if (!freed) {
                args.add("--no-drive-freed-from-inner");
            }
            String out = runDriver(args.toArray(String[]::new));
            assertTrue(out.contains("answer driving True") && out.contains("drive divergences 0"), out);
            // on: the hello is the only call awaited; off: the output after the finishes waits too
            assertEquals(freed, out.contains("drive awaited 1\n"), out);
            acted.add(out.lines().filter(l -> l.startsWith("acted ") || l.startsWith("answer ")).toList());
            assertTrue(acted.getLast().stream().anyMatch(l -> l.startsWith("acted [\"freed\", [\"")), out);
            stopNode();
            CliRun.Outcome v = CliRun.run("replay", "--verify", "--full-ids", journal.toString());
            assertEquals(0, v.code(), v.out() + v.err());
            assertTrue(!v.out().contains("DRIVE_ANSWER_DIVERGED"), v.out());
            replays.add(v.out().replaceAll("span [0-9.]+ s", "span"));
            CliRun.Outcome dump = CliRun.run("dump", journal.toString(), "--type", "connector_output_received");
            assertEquals(0, dump.code(), dump.out() + dump.err());
            List<String> outputs = dump.out().lines().filter(l -> l.contains("connector_output_received")).toList();
            assertTrue(outputs.size() >= 6, dump.out());
            long withActed = outputs.stream().filter(l -> l.contains(" acted=finished_sending=")).count();
            assertEquals(freed ? outputs.size() : 0, withActed, dump.out());
            if (freed) {
                assertTrue(outputs.stream().anyMatch(l -> l.contains(" acted=finished_sending=[" + RID1)), dump.out());
            }
            Files.move(journal, tmp.resolve("drive-producer-freed-" + freed));
        }
        assertEquals(acted.get(0), acted.get(1));
        assertEquals(replays.get(0), replays.get(1));
    }

    @Test
    void driveModeHandsAWriteConsumerOf239b5ff30ItsNewRequests() throws Exception {
        // vLLM 239b5ff30's WRITE consumer builds reqs_to_recv from scheduled_new_reqs: the node,
        // driven under that profile, answers the step with the receive the engine scheduled
        driveAWriteConsumerOf239b5ff30("--profile", "vllm-239b5ff30");
    }

    @Test
    void driveModeWithoutProfileTakesTheOneTheEnginesHelloNames() throws Exception {
        // the same engine and node, but the node is not told the profile: the engine's hello names
        // vLLM 239b5ff30, so the node runs vllm-239b5ff30 from then on (and journals under it)
        Path journal = driveAWriteConsumerOf239b5ff30();
        assertTrue(Files.readString(nodeLog).contains("runs profile vllm-239b5ff30 (no --profile given)"),
                Files.readString(nodeLog));
        CliRun.Outcome header = CliRun.run("dump", journal.toString(), "--to", "0", "--json");
        assertTrue(header.out().contains("\"profile\":\"vllm-239b5ff30\""), header.out() + header.err());
    }

    @SuppressWarnings("unchecked")
    private Path driveAWriteConsumerOf239b5ff30(String... profile) throws Exception {
        Path journal = startNode("consumer", "drive", profile);
        List<String> cmd = List.of(PYTHON.toString(), BRIDGE.resolve("tests/drive_new_reqs.py").toString(),
                "--drive", "tcp://127.0.0.1:" + shadowPort);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("PYTHONPATH", String.join(":", BRIDGE.resolve("src").toString(),
                BRIDGE.resolve("tests/standin").toString(), BRIDGE.resolve("tests").toString()));
        pb.environment().put("PYTHONDONTWRITEBYTECODE", "1");
        Process p = pb.start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the script did not finish");
        assertEquals(0, p.exitValue(), log);
        String last = log.strip().lines().reduce((a, b) -> b).orElseThrow();
        Map<String, Object> out = (Map<String, Object>) Json.parse(last);
        assertEquals(Boolean.TRUE, out.get("driving"), log);
        assertEquals(0L, out.get("fallbacks"), log);
        Map<String, Object> meta = (Map<String, Object>) out.get("metadata");
        Map<String, Object> recv = (Map<String, Object>) meta.get("reqs_to_recv");
        assertEquals(1, recv.size(), log);
        String rid = recv.keySet().iterator().next();
        assertTrue(rid.endsWith("-0-bbbbbbbb"), rid);
        Map<String, Object> m = (Map<String, Object>) recv.get(rid);
        // list(new_req.block_ids)[0]: group 0 of the scheduled request, the remote side from its params
        assertEquals(List.of(List.of(3L, 4L)), m.get("local_block_ids"), log);
        assertEquals("tx-0001", m.get("transfer_id"), log);
        assertEquals("10.0.0.1", m.get("remote_host"), log);
        // a hello naming an install the node's profile does not model is refused, naming the one to run
        assertTrue(String.valueOf(out.get("refused")).contains("is modelled by profile newest, this node runs vllm-239b5ff30"),
                log);
        stopNode();
        // the node journaled the step with its new requests: its replay decides the same
        CliRun.Outcome v = CliRun.run("replay", "--verify", journal.toString());
        assertEquals(0, v.code(), v.out() + v.err());
        CliRun.Outcome dump = CliRun.run("dump", journal.toString(), "--type", "step_scheduled");
        assertTrue(dump.out().contains("new=") && dump.out().contains("bbbbbbbb"), dump.out() + dump.err());
        return journal;
    }

    @Test
    void shadowNodeRefusesWhatWouldMakeItAct() {
        CliRun.Outcome o = CliRun.run("node", "--engine", "shadow", "--role", "producer", "--faults", "drop=0.5",
                "--journal", tmp.resolve("j").toString());
        assertEquals(2, o.code(), o.out() + o.err());
        assertTrue(o.err().contains("a shadow node (--engine shadow) sends nothing"), o.err());
    }
}
