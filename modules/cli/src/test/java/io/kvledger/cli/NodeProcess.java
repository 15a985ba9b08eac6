package io.kvledger.cli;

import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.node.cluster.HttpLeg;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** A {@code kvledger node} child process for live tests, with fixed ports so it can be restarted. */
final class NodeProcess {

    final String name;
    final boolean prefill;
    final String mode;
    final Path journal;
    /** The process's stdout, then its stderr appended to {@link #errLog} (across restarts). */
    final Path log;
    final Path errLog;
    final int handshake;
    final int notify;
    final int http;
    private final List<String> extra;
    /** The directory the process runs in ({@code null}: this JVM's). */
    Path workDir;
    private Process process;
    private int starts;

    NodeProcess(String name, boolean prefill, String mode, Path dir, String... extra) {
        this.name = name;
        this.prefill = prefill;
        this.mode = mode;
        this.journal = dir.resolve(name);
        this.log = dir.resolve(name + ".log");
        this.errLog = dir.resolve(name + ".err.log");
        int[] ports = io.kvledger.node.cluster.LoopbackPorts.distinct(3);
        this.handshake = ports[0];
        this.notify = ports[1];
        this.http = ports[2];
        this.extra = List.of(extra);
    }

    static int freePort() {
        return io.kvledger.node.cluster.LoopbackPorts.free();
    }

    Path statusFile() {
        return journal.resolveSibling(name + ".status.json");
    }

    void start() {
        start(extra);
    }

    /** Starts the process with {@code args} instead of the extra arguments given at construction. */
    void start(List<String> args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (a.startsWith("--") || a.startsWith("-Dchronicle")) {
                cmd.add(a);
            }
        }
        cmd.addAll(List.of("-XX:+UseParallelGC", "-cp", System.getProperty("java.class.path"), Main.class.getName(), "node",
                "--role", prefill ? "producer" : "consumer", "--mode", mode, "--host", "127.0.0.1",
                "--handshake-port", String.valueOf(handshake), "--notify-port", String.valueOf(notify),
                "--http", "127.0.0.1:" + http, "--journal", journal.toString(), "--node-id", name,
                "--status-file", statusFile().toString()));
        cmd.addAll(args);
        starts++;
        try {
            process = new ProcessBuilder(cmd).directory(workDir == null ? null : workDir.toFile()).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                    .redirectError(ProcessBuilder.Redirect.appendTo(errLog.toFile())).start();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    boolean awaitHealthy(HttpClient client, Duration timeout) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + http + "/healthz"))
                .timeout(Duration.ofSeconds(2)).GET().build();
        while (System.nanoTime() < end && process.isAlive()) {
            try {
                if (client.send(req, HttpResponse.BodyHandlers.ofString()).statusCode() == 200) {
                    return true;
                }
            } catch (IOException e) {
                // not up yet
            }
            Thread.sleep(50);
        }
        return false;
    }

    HttpLeg leg(HttpClient client) {
        return new HttpLeg(name, new ZmqAddress("127.0.0.1", handshake, notify), 1, 1, URI.create("http://127.0.0.1:" + http),
                client, Duration.ofSeconds(30));
    }

    /** Waits for the process to end by itself; its exit status, or -1 when it still runs after {@code timeout}. */
    int awaitExit(Duration timeout) throws InterruptedException {
        return process.waitFor(timeout.toNanos(), TimeUnit.NANOSECONDS) ? process.exitValue() : -1;
    }

    /** kill -9. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    /** SIGTERM, and the exit code. */
    int stop() throws InterruptedException {
        if (process == null) {
            return -1;
        }
        process.destroy();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(5, TimeUnit.SECONDS);
            return -1;
        }
        return process.exitValue();
    }

    /** What the process wrote to stdout, then what it wrote to stderr. */
    String logText() {
        return read(log) + read(errLog);
    }

    /** What the process wrote to stderr. */
    String errText() {
        return read(errLog);
    }

    private static String read(Path p) {
        try {
            return Files.exists(p) ? Files.readString(p) : "";
        } catch (IOException e) {
            return e.toString();
        }
    }
}
