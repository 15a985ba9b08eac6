package io.kvledger.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JsonLines;
import io.kvledger.journal.json.Json;
import java.io.IOException;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The vLLM bridge's recordings (modules/vllm-bridge) through the real CLI: the Python driver plays
 * vLLM's scheduler loop over {@code KvledgerRecorderConnector} wrapping a scripted MoRIIO-like
 * connector and writes the scheduler's and the worker's JSON lines; {@code journal import} takes
 * them, and {@code replay --verify} compares the scripted connector's replies with kvledger's.
 * Needs Debian's python3 with python3-zmq and python3-msgpack (the launcher installs them).
 */
class VllmBridgeRecordingTest {

    static final Path PYTHON = Path.of("/usr/bin/python3");
    static final Path BRIDGE = Path.of(System.getProperty("kvledger.vllmBridge", "../vllm-bridge")).toAbsolutePath().normalize();

    @TempDir
    Path tmp;

    @BeforeAll
    static void python() throws Exception {
        assumeTrue(Files.isExecutable(PYTHON), "skipped: " + PYTHON + " is missing (./kvledger test installs Debian's python3)");
        Process p = new ProcessBuilder(PYTHON.toString(), "-c", "import zmq, msgpack").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assumeTrue(p.waitFor(120, TimeUnit.SECONDS) && p.exitValue() == 0,
                "skipped: python3-zmq and python3-msgpack are needed (apt-get install python3-zmq python3-msgpack): " + out);
        assumeTrue(Files.isRegularFile(BRIDGE.resolve("tests/driver.py")), "skipped: no modules/vllm-bridge at " + BRIDGE);
    }

    /** Runs the stand-in driver ({@code tests/driver.py ARGS}) to its end; returns its output. */
    static String runDriver(String... args) throws IOException, InterruptedException {
        List<String> cmd = new java.util.ArrayList<>(List.of(PYTHON.toString(), BRIDGE.resolve("tests/driver.py").toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("PYTHONPATH", String.join(":", BRIDGE.resolve("src").toString(),
                BRIDGE.resolve("tests/standin").toString(), BRIDGE.resolve("tests").toString()));
        pb.environment().put("PYTHONDONTWRITEBYTECODE", "1");
        Process p = pb.start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the driver did not finish");
        assertEquals(0, p.exitValue(), log);
        return log;
    }

    /** Runs the driver; returns the scheduler and worker recordings. */
    private List<Path> record(String scenario, String role) throws IOException, InterruptedException {
        Path out = tmp.resolve("rec-" + scenario + "-" + role);
        String log = runDriver("--scenario", scenario, "--role", role, "--out", out.toString());
        Path sched = out.resolve("scheduler-dp0-tp0.jsonl");
        Path worker = out.resolve("worker-dp0-tp0.jsonl");
        assertTrue(Files.size(sched) > 0 && Files.size(worker) > 0, log);
        return List.of(sched, worker);
    }

    private Path importInto(Path file, String node) {
        Path dir = tmp.resolve("journals-" + file.getParent().getFileName()).resolve(node);
        CliRun.Outcome o = CliRun.run("journal", "import", file.toString(), dir.toString());
        assertEquals(0, o.code(), o.out() + o.err());
        assertTrue(o.out().contains("origin=\"vllm-bridge "), o.out());
        return dir;
    }

    /** The metadata_built entries of an imported journal (a recording may fold steps that repeat the one before). */
    static long metadataBuiltIn(Path journal) throws IOException {
        StringWriter exported = new StringWriter();
        try (JournalReader r = JournalReader.open(journal)) {
            JsonLines.export(r, exported);
        }
        return exported.toString().lines().filter(l -> l.contains("\"type\":\"metadata_built\"")).count();
    }

    @Test
    void healthyProducerRecordingReplaysWithoutDivergence() throws Exception {
        List<Path> rec = record("healthy", "producer");
        Path p0 = importInto(rec.get(0), "P0");
        CliRun.Outcome o = CliRun.run("replay", "--verify", p0.toString());
        assertEquals(0, o.code(), o.out() + o.err());
        assertTrue(o.out().contains("verify: no divergence"), o.out());
        // 3 get_num_new_matched_tokens, 3 request_finished, 6 update_connector_output replies and
        // the connector metadata of the 6 steps
        assertTrue(o.out().contains("P0-10.0.0.1-6301: the same 18 hook replies for 25 inputs"), o.out());
        assertEquals(6, metadataBuiltIn(p0));
        assertTrue(o.out().contains("phases at the end: FINISHED 1, FREED_AFTER_ACK 2"), o.out());
    }

    @Test
    void divergingConnectorIsCaughtAtItsRequestFinished() throws Exception {
        List<Path> rec = record("diverge", "producer");
        Path p0 = importInto(rec.get(0), "P0");
        CliRun.Outcome o = CliRun.run("replay", "--verify", "--full-ids", p0.toString());
        assertEquals(1, o.code(), o.out() + o.err());
        String rid = "cmpl-___prefill_addr_host:10.0.0.1,handshake:6301,notify:61005___decode_addr_host:10.0.1.1,"
                + "handshake:6301,notify:61005_00000000000000000000000000000001-0-aaaaaaaa";
        // the finish decision, then the next step's metadata: kvledger ships the deferred request
        // in reqs_to_send, the connector (which freed it) does not
        assertTrue(o.out().contains("P0-10.0.0.1-6301: 2 of 25 inputs diverge"), o.out());
        assertTrue(o.out().contains("(request_finished), effect 1 of 1"), o.out());
        assertTrue(o.out().contains("journal: finish_decision rid=" + rid + " delay_free=false"), o.out());
        assertTrue(o.out().contains("replay:  finish_decision rid=" + rid + " delay_free=true"), o.out());
        // kvledger still holds the request's blocks: the real connector freed them at once
        assertTrue(o.out().contains("DEFERRED_FREE 1"), o.out());
    }

    @Test
    void droppedHookCallsAreCountedInTheImportedJournal() throws Exception {
        // The driver's disk stalls for the whole run: 8 entries fit the queue, the rest is dropped.
        List<Path> rec = record("overflow", "producer");
        for (Path file : rec) {
            Path dir = importInto(file, file.getFileName().toString().startsWith("scheduler") ? "P0" : "P0-tp0");
            CliRun.Outcome dump = CliRun.run("dump", dir.toString(), "--type", "frame_rejected");
            assertEquals(0, dump.code(), dump.out() + dump.err());
            Matcher m = Pattern.compile("reason=kvledger-vllm recorder: (\\d+) hook call\\(s\\) dropped \\(queue full\\)").matcher(dump.out());
            assertTrue(m.find(), dump.out());
            assertTrue(Integer.parseInt(m.group(1)) > 0, dump.out());
            // 8 captured inputs and the drop line (the stream says where it is incomplete); the
            // shutdown is captured like any hook: written when the queue had room again, else
            // counted among the drops
            List<String> inputLines = Files.readAllLines(file).stream().filter(l -> l.startsWith("{\"kind\":\"input\"")).toList();
            assertEquals(9, inputLines.stream().filter(l -> !l.contains("\"type\":\"shut_down\"")).count(), file.toString());
            assertTrue(inputLines.size() == 9 || inputLines.get(9).contains("\"type\":\"shut_down\""), file.toString());
        }
    }

    @Test
    void workerAndConsumerRecordingsImportAndHangsReadsThem() throws Exception {
        List<Path> prod = record("healthy", "producer");
        List<Path> cons = record("healthy", "consumer");
        Path w = importInto(prod.get(1), "P0-tp0");
        Path d0 = importInto(cons.get(0), "D0");
        importInto(cons.get(1), "D0-tp0");
        CliRun.Outcome dump = CliRun.run("dump", w.toString());
        assertEquals(0, dump.code(), dump.out() + dump.err());
        assertTrue(dump.out().contains("layer_saved"), dump.out());
        CliRun.Outcome hangs = CliRun.run("hangs", d0.toString());
        assertTrue(hangs.code() == 0 || hangs.code() == 1, hangs.out() + hangs.err());
        assertTrue(hangs.out().startsWith("hangs: 1 journal(s) (D0-10.0.1.1-6301 (D0))"), hangs.out());
    }

    @Test
    void theRecordersDirectoryReadsAsItIs() throws Exception {
        // what a user has after a run: the recorder's directory, no import step
        List<Path> rec = record("healthy", "producer");
        Path dir = rec.get(0).getParent();
        CliRun.Outcome hangs = CliRun.run("hangs", dir.toString());
        assertTrue(hangs.code() == 0 || hangs.code() == 1, hangs.out() + hangs.err());
        assertTrue(hangs.out().startsWith("hangs: 2 journal(s) (P0-10.0.0.1-6301 (scheduler-dp0-tp0), P0-tp0-10.0.0.1-6301 (worker-dp0-tp0))"), hangs.out());
        CliRun.Outcome verify = CliRun.run("replay", "--verify", rec.get(0).toString());
        assertEquals(0, verify.code(), verify.out() + verify.err());
        assertTrue(verify.out().contains("P0-10.0.0.1-6301: the same 18 hook replies for 25 inputs"), verify.out());
        // both processes shut down cleanly: the recordings end with their shutdown
        assertFalse(hangs.out().contains("no shutdown"), hangs.out());
    }

    @Test
    void aRecordingWithoutItsShutdownIsSaidToEndOpen() throws Exception {
        // the engine killed (or still running): the scheduler's recording ends before its shutdown
        List<Path> rec = record("healthy", "producer");
        List<String> lines = Files.readAllLines(rec.get(0));
        assertTrue(lines.getLast().contains("\"type\":\"shut_down\""), lines.getLast());
        Files.write(rec.get(0), lines.subList(0, lines.size() - 1));
        CliRun.Outcome hangs = CliRun.run("hangs", rec.get(0).getParent().toString());
        assertTrue(hangs.code() == 0 || hangs.code() == 1, hangs.out() + hangs.err());
        assertTrue(hangs.out().contains("no shutdown at the end of P0-10.0.0.1-6301 (last event at t+"), hangs.out());
        assertTrue(hangs.out().contains(": its process was killed, or is still running; what happened after is not in "
                + "the journal\n"), hangs.out());
        CliRun.Outcome json = CliRun.run("hangs", "--json", rec.get(0).getParent().toString());
        Map<?, ?> report = (Map<?, ?>) Json.parse(json.out().strip());
        List<?> open = (List<?>) report.get("without_shutdown");
        assertEquals(1, open.size(), json.out());
        assertEquals("P0-10.0.0.1-6301", ((Map<?, ?>) open.get(0)).get("node"));
    }

    static final String RID1 = "cmpl-___prefill_addr_host:10.0.0.1,handshake:6301,notify:61005___decode_addr_host:10.0.1.1,"
            + "handshake:6301,notify:61005_00000000000000000000000000000001-0-aaaaaaaa";

    @Test
    void aWrongBlockIdInTheConnectorMetadataIsOneDivergence() throws Exception {
        List<Path> rec = record("meta-diverge", "producer");
        Path p0 = importInto(rec.get(0), "P0");
        CliRun.Outcome o = CliRun.run("replay", "--verify", "--full-ids", p0.toString());
        assertEquals(1, o.code(), o.out() + o.err());
        assertTrue(o.out().contains("P0-10.0.0.1-6301: 1 of 25 inputs diverge"), o.out());
        assertTrue(o.out().contains("(step_scheduled), effect 1 of 1"), o.out());
        assertTrue(o.out().contains("differs: reqs_to_save[" + RID1 + "].local_block_ids: the connector [[1, 4, 106]], "
                + "kvledger [[1, 4, 6]]"), o.out());
        CliRun.Outcome j = CliRun.run("replay", "--verify", "--json", p0.toString());
        assertEquals(1, j.code(), j.out() + j.err());
        assertTrue(j.out().contains("\"differs\":\"reqs_to_save["), j.out());
        // every divergence is listed, and the inputs compared are tallied per input type
        String[] lines = j.out().strip().split("\n");
        Map<?, ?> verify = (Map<?, ?>) ((Map<?, ?>) ((List<?>) ((Map<?, ?>) Json.parse(lines[lines.length - 1]))
                .get("nodes")).get(0)).get("verify");
        List<?> divergences = (List<?>) verify.get("divergences");
        assertEquals(1, divergences.size(), j.out());
        assertEquals("step_scheduled", ((Map<?, ?>) divergences.get(0)).get("cause"));
        Map<?, ?> byInput = (Map<?, ?>) verify.get("by_input");
        Map<?, ?> steps = (Map<?, ?>) byInput.get("step_scheduled");
        assertEquals(1L, ((Number) steps.get("diverging")).longValue(), j.out());
        assertTrue(((Number) steps.get("compared")).longValue() >= 5, j.out());
        assertEquals(0L, ((Number) ((Map<?, ?>) byInput.get("request_finished")).get("diverging")).longValue(), j.out());
        long compared = byInput.values().stream().mapToLong(t -> ((Number) ((Map<?, ?>) t).get("compared")).longValue()).sum();
        assertEquals(25 + 1, compared, j.out()); // every input, and the start-up checks
    }

    @Test
    void consumerRecordingWithItsMetadataReplaysWithoutDivergence() throws Exception {
        List<Path> rec = record("healthy", "consumer");
        Path d0 = importInto(rec.get(0), "D0");
        CliRun.Outcome o = CliRun.run("replay", "--verify", d0.toString());
        assertEquals(0, o.code(), o.out() + o.err());
        assertTrue(o.out().contains("verify: no divergence"), o.out());
        // 3 get_num_new_matched_tokens, 3 request_finished and the metadata of the 6 steps (whose
        // transfer map grows with each allocation and shrinks with each finish)
        assertTrue(o.out().contains("D0-10.0.1.1-6301: the same 12 hook replies for "), o.out());
        assertEquals(6, metadataBuiltIn(d0));
        // the steps carry what the scheduler scheduled new and preempted, through import and export
        StringWriter exported = new StringWriter();
        try (JournalReader r = JournalReader.open(d0)) {
            assertEquals("fakes.ScriptedConnector", r.header().innerConnector());
            JsonLines.export(r, exported);
        }
        assertTrue(exported.toString().contains("\"preempted_req_ids\":[]"), exported.toString());
        assertTrue(exported.toString().contains("\"scheduled_new_reqs\":[{\"request_id\":\"cmpl-"), exported.toString());
    }

    /**
     * An engine stepping while nothing is scheduled (vLLM's loop while a request waits for its KV
     * cache) is recorded as repeat lines: a fraction of the bytes, and the import has every step
     * with its own time, the connector's metadata compared at each.
     */
    @Test
    void idleStepsAreFoldedInTheRecordingAndEveryOneIsInTheJournal() throws Exception {
        Path out = tmp.resolve("rec-idle");
        runDriver("--scenario", "healthy", "--role", "consumer", "--out", out.toString(), "--idle-steps", "2000");
        Path sched = out.resolve("scheduler-dp0-tp0.jsonl");
        List<String> lines = Files.readAllLines(sched);
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("{\"kind\":\"repeat\"")), lines.toString());
        assertTrue(lines.size() < 200, lines.size() + " lines");
        Path d0 = importInto(sched, "D0");
        CliRun.Outcome o = CliRun.run("replay", "--verify", d0.toString());
        assertEquals(0, o.code(), o.out() + o.err());
        assertTrue(o.out().contains("verify: no divergence"), o.out());
        assertEquals(6 + 2000, metadataBuiltIn(d0));
        List<JournalEntry> entries = new ArrayList<>();
        try (JournalReader r = JournalReader.open(d0)) {
            r.forEach(entries::add);
        }
        long last = Long.MIN_VALUE;
        long step = 0;
        for (JournalEntry e : entries) {
            if (e instanceof JournalEntry.Input in) {
                assertTrue(in.atNs() >= last, "time goes back at seq " + in.seq());
                last = in.atNs();
                if (in.event() instanceof NodeEvent.StepScheduled s) {
                    assertEquals(++step, s.step());
                }
            }
        }
        assertEquals(6 + 2000, step);
    }

    /**
     * The hang a recording is made for: a decode engine whose KV caches never arrive steps on
     * (here 4,000 steps, 10 ms apart on the recorder's clock). The recording folds the waiting
     * steps into a few lines, and hangs, reading the recorder's directory, names every stranded
     * request with the 40 s it waited and the 4,000 steps its engine took meanwhile.
     */
    @Test
    void aDecodeEngineWaitingForeverIsAFewLinesAndHangsNamesItsRequests() throws Exception {
        Path out = tmp.resolve("rec-stuck");
        runDriver("--scenario", "stuck", "--role", "consumer", "--out", out.toString(), "--idle-steps", "4000",
                "--step-ms", "10");
        assertTrue(Files.readAllLines(out.resolve("scheduler-dp0-tp0.jsonl")).size() < 50);
        assertTrue(Files.readAllLines(out.resolve("worker-dp0-tp0.jsonl")).size() < 50);
        CliRun.Outcome o = CliRun.run("hangs", out.toString());
        assertEquals(1, o.code(), o.out() + o.err());
        assertTrue(o.out().contains("stuck-waiting: 3 findings"), o.out());
        // each waited 40 s while its engine stepped on (the last step at the shutdown): a transfer that
        // never came, not an engine stuck inside a hook
        Matcher waited = Pattern.compile("in WAITING_FOR_REMOTE_KVS for (\\d+\\.\\d+) s until the journal ends.*; "
                + "D0-10\\.0\\.1\\.1-6301 scheduled (\\d+) steps meanwhile, the last at t\\+40\\.0\\d{5} s").matcher(o.out());
        int found = 0;
        while (waited.find()) {
            double s = Double.parseDouble(waited.group(1));
            assertTrue(s > 40.0 && s < 40.2, o.out());
            assertTrue(Long.parseLong(waited.group(2)) >= 4000, o.out());
            found++;
        }
        assertEquals(3, found, o.out());
    }

    @Test
    void aWorkerStreamIsImportedAndSaidNotComparable() throws Exception {
        List<Path> rec = record("healthy", "producer");
        Path w = importInto(rec.get(1), "P0-tp0");
        CliRun.Outcome o = CliRun.run("replay", "--verify", w.toString());
        assertEquals(0, o.code(), o.out() + o.err());
        assertTrue(o.out().contains("verify: no divergence"), o.out());
        assertTrue(o.out().contains("P0-tp0-10.0.0.1-6301: not compared: a vllm-bridge worker stream is not compared"), o.out());
        CliRun.Outcome j = CliRun.run("replay", "--verify", "--json", w.toString());
        assertEquals(0, j.code(), j.out() + j.err());
        assertTrue(j.out().contains("\"comparable\":false"), j.out());
        // its get_finished answers are in the journal, as the connector gave them
        CliRun.Outcome dump = CliRun.run("dump", w.toString(), "--type", "finished_reported");
        assertEquals(0, dump.code(), dump.out() + dump.err());
        assertTrue(dump.out().contains("done_sending=[" + RID1 + "]"), dump.out());
    }
}
