package io.kvledger.node;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
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
import org.junit.jupiter.api.Assumptions;

/**
 * A Python fake engine ({@code python3 -m kvledger_vllm.fake_engine}, modules/vllm-bridge) run
 * with Debian's {@code /usr/bin/python3}, and the requests a MoRIIO proxy would send it. Tests
 * that need one skip, with the reason, when that interpreter cannot import zmq and msgpack.
 */
public final class FakeEngineProcess implements AutoCloseable {

    static final String PYTHON = "/usr/bin/python3";

    private final Process process;

    private FakeEngineProcess(Process process) {
        this.process = process;
    }

    public static void assumePython() throws IOException, InterruptedException {
        Assumptions.assumeTrue(Files.isExecutable(Path.of(PYTHON)), PYTHON + " not found (install python3, python3-zmq, python3-msgpack)");
        Process p = new ProcessBuilder(PYTHON, "-c", "import zmq, msgpack").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        Assumptions.assumeTrue(p.waitFor(120, TimeUnit.SECONDS) && p.exitValue() == 0,
                PYTHON + " cannot import zmq and msgpack (install python3-zmq and python3-msgpack): " + out);
    }

    static Path sources() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path src = p.resolve("modules/vllm-bridge/src");
            if (Files.isRegularFile(src.resolve("kvledger_vllm/fake_engine.py"))) {
                return src;
            }
        }
        throw new AssertionError("modules/vllm-bridge/src not found above " + Path.of("").toAbsolutePath());
    }

    /**
     * Starts a fake engine and returns once it said it is ready.
     *
     * @param role  {@code prefill} or {@code decode}
     * @param extra more options, e.g. {@code --bridge tcp://127.0.0.1:PORT}
     */
    public static FakeEngineProcess start(String role, String mode, int httpPort, int handshakePort, int notifyPort,
                                          String... extra) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(PYTHON, "-m", "kvledger_vllm.fake_engine", "--role", role, "--mode", mode,
                "--host", "127.0.0.1", "--bind-host", "127.0.0.1", "--http-port", String.valueOf(httpPort),
                "--handshake-port", String.valueOf(handshakePort), "--notify-port", String.valueOf(notifyPort)));
        cmd.addAll(List.of(extra));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().put("PYTHONPATH", sources().toString());
        pb.redirectOutput(ProcessBuilder.Redirect.DISCARD);
        Process p = pb.start();
        FakeEngineProcess fe = new FakeEngineProcess(p);
        BufferedReader err = new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8));
        String line = err.readLine();
        if (line == null || !line.contains("fake_engine: " + role + " " + mode.toUpperCase(java.util.Locale.ROOT) + " ready")) {
            fe.close();
            throw new AssertionError(role + " fake engine did not start: " + line);
        }
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
        return fe;
    }

    /** Kills the process (SIGKILL) and waits for it. */
    public void kill() throws InterruptedException {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }

    @Override
    public void close() {
        process.destroyForcibly();
    }

    /** A request id as the proxy composes it (protocol 2.3). */
    public static String requestId(String prefillZmqAddress, String decodeZmqAddress) {
        return "___prefill_addr_" + prefillZmqAddress + "___decode_addr_" + decodeZmqAddress + "_"
                + UUID.randomUUID().toString().replace("-", "");
    }

    public static CompletableFuture<HttpResponse<String>> post(HttpClient http, int port, String requestId, String body) {
        return http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/completions"))
                .header("Content-Type", "application/json").header("X-Request-Id", requestId)
                .timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** The prefill leg's body (protocol 4.2). */
    public static String prefillLeg(String tid) {
        return "{\"prompt\":\"one two three\",\"max_tokens\":1,\"stream\":false,\"kv_transfer_params\":{\"remote_dp_size\":1,"
                + "\"remote_tp_size\":1,\"transfer_id\":\"" + tid + "\",\"do_remote_decode\":true,\"do_remote_prefill\":false,"
                + "\"remote_engine_id\":null,\"remote_block_ids\":null}}";
    }

    /** The decode leg's body (protocol 4.2, WRITE: dispatched with the prefill leg). */
    public static String decodeLeg(String tid) {
        return "{\"prompt\":\"one two three\",\"max_tokens\":2,\"kv_transfer_params\":{\"do_remote_decode\":false,"
                + "\"do_remote_prefill\":true,\"remote_engine_id\":null,\"remote_block_ids\":null,\"transfer_id\":\"" + tid
                + "\",\"remote_dp_size\":1,\"remote_tp_size\":1}}";
    }

    static void assertOk(HttpResponse<String> r) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    }
}
