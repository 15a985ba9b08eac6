package io.kvledger.cli;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** Waiting for a node process started by {@code cluster} or {@code demo --live} to answer on its HTTP port. */
final class NodeHealth {

    private NodeHealth() {}

    /**
     * Polls {@code GET /healthz} on {@code 127.0.0.1:httpPort} every 50 ms until it answers 200.
     *
     * @return true when it did within {@code timeout}; false when the time ran out or the process died
     */
    static boolean awaitHealthy(HttpClient client, Process process, int httpPort, Duration timeout)
            throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/healthz"))
                .timeout(Duration.ofSeconds(2)).GET().build();
        while (System.nanoTime() < end) {
            if (!process.isAlive()) {
                return false;
            }
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
}
