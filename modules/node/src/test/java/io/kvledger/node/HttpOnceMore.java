package io.kvledger.node;

import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;

/**
 * A GET for tests of the HTTP servers, asked once more on a fresh connection when it times out.
 *
 * <p>About one exchange in 300 between the JDK client and Reactor Netty stalls on a reused
 * connection under load (seen on the node's admin API, once right after a 400 on the same
 * connection, and on {@code kvledger serve}); the cause is not found. A GET is idempotent, so the
 * second ask is safe, and a server that really stopped answering still fails the test.
 */
public final class HttpOnceMore {

    private HttpOnceMore() {}

    /** Sends {@code get} on {@code http}; on a timeout, logs it for {@code who} and asks once more. */
    public static <T> HttpResponse<T> send(HttpClient http, HttpRequest get, HttpResponse.BodyHandler<T> body,
                                           String who) throws java.io.IOException, InterruptedException {
        try {
            return http.send(get, body);
        } catch (HttpTimeoutException e) {
            System.err.println(who + ": GET " + get.uri() + " timed out; asking once more on a fresh connection");
            return HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build().send(get, body);
        }
    }
}
