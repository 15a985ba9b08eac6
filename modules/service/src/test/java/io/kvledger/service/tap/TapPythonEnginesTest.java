package io.kvledger.service.tap;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.journal.replay.JournalInputs;
import io.kvledger.service.cluster.LoopbackPorts;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
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
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tap in front of real Python MoRIIO peers: the fake engines of modules/vllm-bridge
 * ({@code python3 -m kvledger_vllm.fake_engine}, pyzmq), one prefill and one decode in WRITE mode,
 * driven with request ids whose notify ports carry the shift, as the proxy composes them. A
 * transfer whose frames all crossed is complete in the report; after the prefill process is
 * killed, the next transfer's write_done never crosses, and the report says so from the tap's
 * journals alone.
 */
class TapPythonEnginesTest {

    private static final String PYTHON = "/usr/bin/python3";

    @TempDir
    Path dir;

    private final List<Process> processes = new ArrayList<>();

    @AfterEach
    void stop() {
        for (Process p : processes) {
            p.destroyForcibly();
        }
    }

    private static Path fakeEngineSources() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path src = p.resolve("modules/vllm-bridge/src");
            if (Files.isRegularFile(src.resolve("kvledger_vllm/fake_engine.py"))) {
                return src;
            }
        }
        throw new AssertionError("modules/vllm-bridge/src not found above " + Path.of("").toAbsolutePath());
    }

    private static void assumePython() throws Exception {
        Assumptions.assumeTrue(Files.isExecutable(Path.of(PYTHON)), PYTHON + " not found (install python3, python3-zmq, python3-msgpack)");
        Process p = new ProcessBuilder(PYTHON, "-c", "import zmq, msgpack").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        Assumptions.assumeTrue(p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0,
                PYTHON + " cannot import zmq and msgpack (install python3-zmq and python3-msgpack): " + out);
    }

    private Process engine(String role, int httpPort, int handshakePort, int notifyPort) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(PYTHON, "-m", "kvledger_vllm.fake_engine", "--role", role, "--mode", "write",
                "--host", "127.0.0.1", "--bind-host", "127.0.0.1", "--http-port", String.valueOf(httpPort),
                "--handshake-port", String.valueOf(handshakePort), "--notify-port", String.valueOf(notifyPort));
        pb.environment().put("PYTHONPATH", fakeEngineSources().toString());
        pb.redirectOutput(ProcessBuilder.Redirect.DISCARD);
        Process p = pb.start();
        processes.add(p);
        BufferedReader err = new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8));
        String line = err.readLine();
        assertThat(line).as(role + " fake engine start").isNotNull().contains("fake_engine: " + role + " WRITE ready");
        Thread drain = new Thread(() -> {
            try {
                while (err.readLine() != null) {
                    // keep the pipe flowing
                }
            } catch (IOException ignored) {
                // the process ended
            }
        }, "fake-engine-stderr-" + role);
        drain.setDaemon(true);
        drain.start();
        return p;
    }

    private static CompletableFuture<HttpResponse<String>> post(HttpClient http, int port, String requestId, String body) {
        return http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/completions"))
                .header("Content-Type", "application/json").header("X-Request-Id", requestId)
                .timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static String prefillLeg(String tid) {
        return "{\"prompt\":\"one two three\",\"max_tokens\":1,\"stream\":false,\"kv_transfer_params\":{\"remote_dp_size\":1,"
                + "\"remote_tp_size\":1,\"transfer_id\":\"" + tid + "\",\"do_remote_decode\":true,\"do_remote_prefill\":false,"
                + "\"remote_engine_id\":null,\"remote_block_ids\":null}}";
    }

    private static String decodeLeg(String tid) {
        return "{\"prompt\":\"one two three\",\"max_tokens\":2,\"kv_transfer_params\":{\"do_remote_decode\":false,"
                + "\"do_remote_prefill\":true,\"remote_engine_id\":null,\"remote_block_ids\":null,\"transfer_id\":\"" + tid
                + "\",\"remote_dp_size\":1,\"remote_tp_size\":1}}";
    }

    @Test
    void python_moriio_peers_talk_through_the_tap_and_the_report_names_the_write_done_a_dead_prefill_never_sent()
            throws Exception {
        assumePython();
        int base = LoopbackPorts.freeRange(2);
        int shift = LoopbackPorts.freeRange(2) - base;
        int[] http = LoopbackPorts.distinct(2);
        List<TapTarget> targets = List.of(new TapTarget(Role.PRODUCER, "127.0.0.1", base, shift),
                new TapTarget(Role.CONSUMER, "127.0.0.1", base + 1, shift));
        String prefillAddr = "host:127.0.0.1,handshake:6301,notify:" + (base + shift);
        String decodeAddr = "host:127.0.0.1,handshake:7301,notify:" + (base + 1 + shift);
        StringWriter err = new StringWriter();
        HttpClient client = HttpClient.newHttpClient();
        TapReport report;
        try (Tap tap = Tap.open(new Tap.Config(targets, "127.0.0.1", dir, TransferMode.WRITE, "test", System::nanoTime),
                new PrintWriter(err))) {
            Process prefill = engine("prefill", http[0], 6301, base);
            engine("decode", http[1], 7301, base + 1);
            // as the proxy: both legs at once, the same request id, the shifted notify ports in it
            String rid1 = "___prefill_addr_" + prefillAddr + "___decode_addr_" + decodeAddr + "_"
                    + UUID.randomUUID().toString().replace("-", "");
            var p1 = post(client, http[0], rid1, prefillLeg("tx-1"));
            var d1 = post(client, http[1], rid1, decodeLeg("tx-1"));
            assertThat(p1.get(60, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
            assertThat(p1.get().body()).contains("\"do_remote_prefill\": true").contains("\"transfer_id\": \"tx-1\"");
            HttpResponse<String> answer = d1.get(60, TimeUnit.SECONDS);
            assertThat(answer.statusCode()).isEqualTo(200);
            assertThat(answer.body()).contains("\"text\": \" tok1 tok2\"");

            String rid2 = "___prefill_addr_" + prefillAddr + "___decode_addr_" + decodeAddr + "_"
                    + UUID.randomUUID().toString().replace("-", "");
            assertThat(post(client, http[0], rid2, prefillLeg("tx-2")).get(60, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
            prefill.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            var d2 = post(client, http[1], rid2, decodeLeg("tx-2"));
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (tap.framesJournaled() < 3 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertThat(tap.framesJournaled()).as("remote_blocks and write_done of tx-1, remote_blocks of tx-2").isEqualTo(3);
            assertThat(d2).as("the decode waits for a write_done that never comes").isNotDone();
            d2.cancel(true);
        }
        report = TapReport.read(JournalInputs.resolve(List.of(dir)));
        assertThat(report.transfers()).extracting(TapReport.Transfer::transferId).containsExactly("tx-1", "tx-2");
        assertThat(report.transfers().get(0).complete()).isTrue();
        assertThat(report.transfers().get(0).crossed()).extracting(c -> c.type() + "->" + c.to().label())
                .containsExactly("remote_blocks->P+0 127.0.0.1:" + base, "write_done->D+0 127.0.0.1:" + (base + 1));
        assertThat(report.transfers().get(1).missing()).singleElement().asString()
                .startsWith("1 write_done never crossed to D+0 127.0.0.1:" + (base + 1) + " (decode_rank 0)");
        assertThat(err.toString()).isEmpty();
    }
}
