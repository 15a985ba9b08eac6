package io.kvledger.zmq;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A Python peer process: one of the scripts in {@code src/test/resources/python/}, run with
 * Debian's {@code /usr/bin/python3} (the interpreter that sees python3-zmq and python3-msgpack).
 * Tests that need one skip, with the reason, only when that interpreter or its modules are missing.
 */
final class PythonPeer implements AutoCloseable {

    static final String PYTHON = "/usr/bin/python3";
    private static final List<String> SCRIPTS = List.of("common.py", "notify_sender.py", "notify_receiver.py",
            "handshake_client.py", "listener_verdict.py", "python_ok.py");
    private static volatile String availability;

    private final Process process;
    private final BufferedReader out;
    private final Path stderr;

    private PythonPeer(Process process, Path stderr) {
        this.process = process;
        this.out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        this.stderr = stderr;
    }

    /** Skips the calling test unless {@code /usr/bin/python3} imports zmq and msgpack. */
    static void assumeAvailable(Path dir) {
        if (availability == null) {
            availability = probe(dir);
        }
        Assumptions.assumeTrue(availability.isEmpty(), availability);
    }

    private static String probe(Path dir) {
        if (!Files.isExecutable(Path.of(PYTHON))) {
            return PYTHON + " not found: install Debian's python3, python3-zmq and python3-msgpack to run the Python interop tests";
        }
        try {
            Path scripts = scripts(dir);
            Process p = new ProcessBuilder(PYTHON, scripts.resolve("python_ok.py").toString()).redirectErrorStream(true).start();
            String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
                return PYTHON + " cannot import zmq and msgpack (install python3-zmq and python3-msgpack): " + text;
            }
            return "";
        } catch (IOException e) {
            return "cannot run " + PYTHON + ": " + e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted probing " + PYTHON;
        }
    }

    /** Copies the scripts from the test classpath into {@code dir} (once) and returns it. */
    static Path scripts(Path dir) throws IOException {
        Path d = dir.resolve("python");
        if (Files.isDirectory(d)) {
            return d;
        }
        Files.createDirectories(d);
        for (String s : SCRIPTS) {
            try (InputStream in = PythonPeer.class.getResourceAsStream("/python/" + s)) {
                if (in == null) {
                    throw new IOException("test resource python/" + s + " is missing");
                }
                Files.copy(in, d.resolve(s));
            }
        }
        return d;
    }

    /** Copies one more script from the test classpath into the scripts' directory under {@code dir}. */
    static void copyScript(Path dir, String name) throws IOException {
        Path scripts = scripts(dir);
        try (InputStream in = PythonPeer.class.getResourceAsStream("/python/" + name)) {
            if (in == null) {
                throw new IOException("test resource python/" + name + " is missing");
            }
            Files.copy(in, scripts.resolve(name), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
    }

    static PythonPeer start(Path dir, String script, String... args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(PYTHON);
        cmd.add(scripts(dir).resolve(script).toString());
        cmd.addAll(List.of(args));
        Path err = Files.createTempFile(dir, script, ".stderr");
        Process p = new ProcessBuilder(cmd).redirectError(err.toFile()).start();
        return new PythonPeer(p, err);
    }

    /** The next stdout line; fails (with the process's stderr) when it ends first. */
    String line() throws IOException {
        String l = out.readLine();
        if (l == null) {
            throw new AssertionError("python peer ended without output; stderr:\n" + stderrText());
        }
        return l;
    }

    OutputStream stdin() {
        return process.getOutputStream();
    }

    /** Waits for the process to exit 0 (60 s at most). */
    void awaitSuccess() throws InterruptedException {
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("python peer did not finish within 60 s; stderr:\n" + stderrText());
        }
        if (process.exitValue() != 0) {
            throw new AssertionError("python peer exited " + process.exitValue() + "; stderr:\n" + stderrText());
        }
    }

    String stderrText() {
        try {
            return Files.readString(stderr);
        } catch (IOException e) {
            return "(stderr unreadable: " + e + ")";
        }
    }

    @Override
    public void close() {
        process.destroyForcibly();
    }
}
