package io.kvledger.rdma.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** The parent's handle on a {@link PeerProcess}: one command, one answer, every wait bounded. */
public final class Peer implements AutoCloseable {

    private final Process process;
    private final PrintStream in;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final Path stderr;

    private Peer(Process process, Path stderr) {
        this.process = process;
        this.stderr = stderr;
        this.in = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
        Thread reader = Thread.ofPlatform().daemon(true).name("peer-stdout-" + process.pid()).start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8))) {
                for (String l; (l = r.readLine()) != null; ) {
                    lines.add(l);
                }
            } catch (IOException e) {
                lines.add("EOF " + e);
            }
            lines.add("EOF");
        });
        reader.setUncaughtExceptionHandler((t, e) -> lines.add("EOF " + e));
    }

    /** Starts a peer process with UCX error handling {@code mode} ("peer" or "none"). */
    public static Peer start(Path dir, String mode, Duration transferTimeout) throws IOException {
        Path err = dir.resolve("peer-" + System.nanoTime() + ".stderr");
        List<String> cmd = ChildJvm.command(List.of("-XX:ErrorFile=" + dir.resolve("hs_err_%p.log")),
                PeerProcess.class, mode, Long.toString(transferTimeout.toMillis()));
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectError(err.toFile()).start();
        Peer peer = new Peer(p, err);
        String ready = peer.next(Duration.ofSeconds(60));
        if (!ready.startsWith("READY")) {
            peer.kill();
            throw new IllegalStateException("peer did not start: " + ready + "\n" + peer.stderr());
        }
        return peer;
    }

    /** Sends one command and returns its answer line. */
    public String call(String command, Duration within) {
        in.println(command);
        return next(within);
    }

    /** Sends without waiting; the answer is taken later with {@link #next}. */
    public void send(String command) {
        in.println(command);
    }

    public String next(Duration within) {
        try {
            String l = lines.poll(within.toMillis(), TimeUnit.MILLISECONDS);
            if (l == null) {
                throw new AssertionError("peer did not answer within " + within + "\n" + stderr());
            }
            return l;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    public long pid() {
        return process.pid();
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    /** SIGKILL, and wait for the process to be gone. */
    public void kill() {
        process.destroyForcibly();
        try {
            process.waitFor(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    public String stderr() {
        try {
            return Files.exists(stderr) ? "peer stderr:\n" + Files.readString(stderr) : "(no peer stderr)";
        } catch (IOException e) {
            return "(peer stderr unreadable: " + e + ")";
        }
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            in.println("EXIT");
            try {
                if (!process.waitFor(20, TimeUnit.SECONDS)) {
                    kill();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                kill();
            }
        }
    }
}
