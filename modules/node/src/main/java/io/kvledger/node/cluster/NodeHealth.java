package io.kvledger.node.cluster;

import io.kvledger.ledger.text.Seconds;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** Waiting for a node process started by {@code cluster} or {@code demo --live} to answer on its HTTP port. */
public final class NodeHealth {

    /**
     * The start deadline's default, in seconds. A node process is a JVM that opens its journal, its
     * sockets and its transfer engine: a second or two on a quiet machine, but well over a minute
     * on a shared runner at a load average of 20 or more, where a 60 s deadline failed nodes whose
     * logs showed a normal start.
     */
    public static final String DEFAULT_START_TIMEOUT_S = "300";

    private NodeHealth() {}

    /** How a wait for a node ended: up, exited, or still not answering when the deadline passed. */
    public enum Outcome { UP, EXITED, DEADLINE_PASSED }

    /** The outcome and how long the wait took since the process was started. */
    public record Started(Outcome outcome, long elapsedNs) {
        public boolean up() {
            return outcome == Outcome.UP;
        }

        /**
         * One clause saying why node {@code name} is not up, for a command's error line: its
         * process exited (with its status), or the start deadline passed while it was still running.
         */
        public String whyNot(String name, Process process, String option, double deadlineS) {
            String took = Seconds.rounded(elapsedNs, 1);
            return switch (outcome) {
                case UP -> "node " + name + " is up after " + took;
                case EXITED -> "node " + name + " exited with status " + exitValue(process) + " while starting, "
                        + took + " after it was started";
                case DEADLINE_PASSED -> "node " + name + " did not answer /healthz within the start deadline ("
                        + option + " " + trim(deadlineS) + "): the deadline passed " + took
                        + " after it was started, its process still running (a loaded machine starts slowly: give a longer "
                        + option + ")";
            };
        }
    }

    /**
     * Polls {@code GET /healthz} on {@code 127.0.0.1:httpPort} every 50 ms until it answers 200,
     * the process exits, or {@code startedNs + timeout} (a {@link System#nanoTime()} instant) passes.
     */
    public static Started awaitHealthy(HttpClient client, Process process, int httpPort, long startedNs, Duration timeout)
            throws InterruptedException {
        long end = startedNs + timeout.toNanos();
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/healthz"))
                .timeout(Duration.ofSeconds(2)).GET().build();
        while (true) {
            if (!process.isAlive()) {
                return new Started(Outcome.EXITED, System.nanoTime() - startedNs);
            }
            try {
                if (client.send(req, HttpResponse.BodyHandlers.ofString()).statusCode() == 200) {
                    return new Started(Outcome.UP, System.nanoTime() - startedNs);
                }
            } catch (IOException e) {
                // not up yet
            }
            if (System.nanoTime() - end >= 0) {
                return new Started(Outcome.DEADLINE_PASSED, System.nanoTime() - startedNs);
            }
            Thread.sleep(50);
        }
    }

    /** A deadline option's value as a duration; refused when not positive. */
    public static Duration deadline(double seconds) {
        if (!(seconds > 0) || Double.isInfinite(seconds)) {
            throw new IllegalArgumentException("must be a positive number of seconds, got " + trim(seconds));
        }
        return Duration.ofNanos((long) Math.min(seconds * 1e9, Long.MAX_VALUE / 4.0));
    }


    private static String trim(double s) {
        return s == Math.rint(s) && Math.abs(s) < 1e15 ? String.valueOf((long) s) : String.valueOf(s);
    }

    private static String exitValue(Process p) {
        try {
            return String.valueOf(p.exitValue());
        } catch (IllegalThreadStateException e) {
            return "(unknown)";
        }
    }
}
