package io.kvledger.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.journal.json.Json;
import io.kvledger.node.http.HttpFront;
import io.kvledger.node.NodeService;
import io.kvledger.node.TestNodes;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the node's and the proxy's HTTP servers answer to requests that are not what they should
 * be, over raw sockets: a client that trickles its headers (slowloris) or sends half a request is
 * answered 408 and closed once the header timeout passed, a silent one closed; headers over
 * 16 KiB are 431, a request line over 8 KiB 414, bytes that are not HTTP 400; a served path asked
 * with another method 405 with {@code Allow}, an unknown path 404; every one with a JSON body.
 */
class HttpHardeningTest {

    private static final Duration HEADER_TIMEOUT = Duration.ofMillis(700);

    @TempDir
    Path dir;

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private int node() {
        int base = TestNodes.freePortBase(2);
        NodeService n = NodeService.start(TestNodes.options("P0", TestNodes.config(Role.PRODUCER, TransferMode.WRITE,
                base, base + 1), dir.resolve("P0")));
        open.add(n);
        HttpFront f = n.openHttp("127.0.0.1", 0, null, HEADER_TIMEOUT);
        open.add(f);
        return f.port();
    }

    private int proxy() {
        ProxyService p = ProxyService.start(ProxyOptions.loopback().withHeaderTimeout(HEADER_TIMEOUT), "test");
        open.add(p);
        return p.httpPort();
    }

    /** What the server sent until it closed the connection (or 60 s passed: then the test fails). */
    private static String exchange(int port, byte[] request) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(60_000);
            s.getOutputStream().write(request);
            s.getOutputStream().flush();
            return readToClose(s.getInputStream());
        }
    }

    private static String readToClose(InputStream in) throws IOException {
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        try {
            for (int n; (n = in.read(buf)) > 0; ) {
                got.write(buf, 0, n);
            }
        } catch (SocketTimeoutException e) {
            throw new AssertionError("the server neither answered nor closed; got: " + got.toString(StandardCharsets.UTF_8));
        } catch (IOException e) {
            // a reset after the answer: what was read counts
        }
        return got.toString(StandardCharsets.UTF_8);
    }

    @SuppressWarnings("unchecked")
    private static void assertJsonError(String response, int status) {
        assertThat(response).startsWith("HTTP/1.1 " + status + " ");
        String head = response.substring(0, response.indexOf("\r\n\r\n")).toLowerCase();
        assertThat(head).contains("content-type: application/json");
        Object body = Json.parse(response.substring(response.indexOf("\r\n\r\n") + 4).strip());
        Map<String, Object> error = (Map<String, Object>) ((Map<String, Object>) body).get("error");
        assertThat(error.get("code")).as(response).isEqualTo((long) status);
        assertThat((String) error.get("message")).isNotBlank();
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    private void slowAndOversized(int port, String completionsPath) throws Exception {
        // half a request, then nothing: 408 once the header timeout passed
        assertJsonError(exchange(port, ascii("POST " + completionsPath + " HTTP/1.1\r\nHost: x\r\n")), 408);

        // slowloris: a header byte every 100 ms never finishes the headers: 408 all the same
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(60_000);
            OutputStream out = s.getOutputStream();
            out.write(ascii("GET /healthz HTTP/1.1\r\nHost: x\r\n"));
            AtomicBoolean stop = new AtomicBoolean();
            Thread trickle = Thread.ofVirtual().start(() -> {
                try {
                    for (int i = 0; !stop.get() && i < 600; i++) {
                        out.write('X');
                        out.flush();
                        Thread.sleep(100);
                    }
                } catch (IOException | InterruptedException e) {
                    // closed by the server: done
                }
            });
            String got = readToClose(s.getInputStream());
            stop.set(true);
            trickle.join();
            assertJsonError(got, 408);
        }

        // a connection that sends nothing is closed without an answer
        assertThat(exchange(port, new byte[0])).isEmpty();

        // a full request on a kept-alive connection is answered, and the connection stays usable
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(60_000);
            s.getOutputStream().write(ascii("GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n"));
            byte[] buf = new byte[4096];
            int n = s.getInputStream().read(buf);
            String first = new String(buf, 0, n, StandardCharsets.UTF_8);
            assertThat(first).startsWith("HTTP/1.1 404 ");
            s.getOutputStream().write(ascii("GET /nowhere/else HTTP/1.1\r\nHost: x\r\n\r\n"));
            n = s.getInputStream().read(buf);
            assertThat(new String(buf, 0, n, StandardCharsets.UTF_8)).startsWith("HTTP/1.1 404 ");
        }

        assertJsonError(exchange(port, ascii("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + "a".repeat(20_000)
                + "\r\n\r\n")), 431);
        assertJsonError(exchange(port, ascii("GET /" + "a".repeat(9_000) + " HTTP/1.1\r\nHost: x\r\n\r\n")), 414);
        assertJsonError(exchange(port, ascii("\u0001\u0002 not http at all\r\n\r\n")), 400);
        // half a body, then nothing: 408 once the body timeout passed, and the connection closed
        String halfBody = exchange(port, ascii("POST " + completionsPath + " HTTP/1.1\r\nHost: x\r\n"
                + "Content-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"prompt\":"));
        assertThat(halfBody).startsWith("HTTP/1.1 408 ");
        assertThat(methodHead(halfBody)).contains("content-type: application/json").contains("connection: close");
        assertThat(halfBody).contains("did not arrive within");
    }

    private static String methodHead(String response) {
        return response.substring(0, response.indexOf("\r\n\r\n")).toLowerCase();
    }

    @Test
    void aBusyPortSaysAlreadyInUse() throws Exception {
        ProxyService first = ProxyService.start(ProxyOptions.loopback(), "test");
        open.add(first);
        for (ProxyOptions o : List.of(ProxyOptions.loopback().withPorts(first.httpPort(), 0),
                ProxyOptions.loopback().withPorts(0, first.pingPort()))) {
            Throwable t = org.assertj.core.api.Assertions.catchThrowable(() -> open.add(ProxyService.start(o, "test")));
            assertThat(t).isInstanceOf(IllegalStateException.class);
            assertThat(t.getMessage()).endsWith("address already in use").doesNotContain("Errno")
                    .doesNotContain("Exception");
        }
        int base = TestNodes.freePortBase(2);
        NodeService n = NodeService.start(TestNodes.options("P0", TestNodes.config(Role.PRODUCER, TransferMode.WRITE,
                base, base + 1), dir.resolve("P0")));
        open.add(n);
        HttpFront f = n.openHttp("127.0.0.1", 0, null, io.kvledger.ledger.web.HttpHardening.HEADER_TIMEOUT);
        open.add(f);
        Throwable t = org.assertj.core.api.Assertions.catchThrowable(() -> open.add(n.openHttp("127.0.0.1",
                f.port(), null, io.kvledger.ledger.web.HttpHardening.HEADER_TIMEOUT)));
        assertThat(t).hasMessageEndingWith("address already in use");
        t = org.assertj.core.api.Assertions.catchThrowable(() -> open.add(NodeService.start(TestNodes.options("P1",
                TestNodes.config(Role.PRODUCER, TransferMode.WRITE, base, base + 1), dir.resolve("P1")))));
        assertThat(t).isNotNull();
        assertThat(t.getMessage()).as("a node on a taken port").contains("address already in use")
                .doesNotContain("Errno");
    }

    @Test
    void theNodesServerRefusesSlowOversizedAndMisdirectedRequestsWithJson() throws Exception {
        int port = node();
        slowAndOversized(port, "/v1/completions");
        String r = exchange(port, ascii("GET /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
        assertJsonError(r, 405);
        assertThat(methodHead(r)).contains("allow: post");
        r = exchange(port, ascii("DELETE /v1/requests/abc HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
        assertJsonError(r, 405);
        assertThat(methodHead(r)).contains("allow: get");
        assertJsonError(exchange(port, ascii("GET /v2/nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")), 404);
    }

    @Test
    void theProxysServerRefusesSlowOversizedAndMisdirectedRequestsWithJson() throws Exception {
        int port = proxy();
        slowAndOversized(port, "/v1/completions");
        String r = exchange(port, ascii("GET /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
        assertJsonError(r, 405);
        assertThat(methodHead(r)).contains("allow: post");
        r = exchange(port, ascii("POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"));
        assertJsonError(r, 405);
        assertThat(methodHead(r)).contains("allow: get");
        assertJsonError(exchange(port, ascii("GET /v2/nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")), 404);
    }
}
