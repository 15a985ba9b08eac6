package io.kvledger.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.journal.json.Json;
import io.kvledger.node.NodeService;
import io.kvledger.node.Chromium;
import io.kvledger.node.TestNodes;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The web page on {@code kvledger proxy}'s own HTTP server, over the proxy's journal and the two
 * live nodes' (given as {@code --serve-journals}): the nodes register with the proxy, a request
 * goes through it, and the page's JSON, its event stream and (in Debian's headless Chromium) the
 * page itself show the request with the proxy's legs in the proxy lane next to the nodes' lanes.
 * Screenshot: target/web-timeline/proxy-page.png.
 */
class ProxyWebPageTest {

    @TempDir
    Path dir;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private ProxyService proxy;
    private NodeService p;
    private NodeService d;

    /** The proxy (journal in dir/proxy, serving dir) and a WRITE producer and consumer registered with it. */
    private void deployment() {
        int base = TestNodes.freePortBase(4);
        proxy = ProxyService.start(ProxyOptions.loopback().withMode(TransferMode.WRITE)
                .withJournal(dir.resolve("proxy")).withServeJournals(List.of(dir)), "test");
        String ping = "tcp://127.0.0.1:" + proxy.pingPort();
        p = NodeService.start(TestNodes.options("P0", TestNodes.config(Role.PRODUCER, TransferMode.WRITE, base, base + 1),
                dir.resolve("P0")).withHttp("127.0.0.1", 0, null).withProxy(ping, null));
        d = NodeService.start(TestNodes.options("D0", TestNodes.config(Role.CONSUMER, TransferMode.WRITE, base + 2,
                base + 3), dir.resolve("D0")).withHttp("127.0.0.1", 0, null).withProxy(ping, null));
        assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> proxy.producers() == 1 && proxy.consumers() == 1))
                .as("both nodes registered").isTrue();
    }

    @AfterEach
    void stop() {
        for (AutoCloseable c : new AutoCloseable[] {d, p, proxy}) {
            if (c != null) {
                try {
                    c.close();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }
        }
    }

    private String url(String path) {
        return "http://127.0.0.1:" + proxy.httpPort() + path;
    }

    private HttpResponse<String> get(String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(url(path))).timeout(Duration.ofSeconds(30)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** One completion through the proxy; its proxy request id (as the nodes' X-Request-Id). */
    @SuppressWarnings("unchecked")
    private String complete() throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url("/v1/completions")))
                .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"m\",\"prompt\":\"" + "word ".repeat(40)
                        + "\",\"max_tokens\":4}")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        String nodeRid = (String) ((Map<String, Object>) ((Map<String, Object>) Json.parse(r.body())).get("kvledger"))
                .get("request_id");
        // the node's id wraps the proxy's: cmpl-<proxy id>-0-<8 hex>
        return nodeRid.substring("cmpl-".length(), nodeRid.length() - "-0-12345678".length());
    }

    @Test
    @SuppressWarnings("unchecked")
    void theProxyServesThePageItsJsonAndALiveEventStreamOverTheDeployment() throws Exception {
        deployment();
        HttpResponse<String> page = get("/ui/");
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.body()).contains("<script src=\"app.js\"></script>");
        assertThat(get("/ui/app.js").statusCode()).isEqualTo(200);

        // The event stream: a ready event from each journal (the proxy's and both nodes'), then entries.
        BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        CompletableFuture<HttpResponse<Stream<String>>> sse = http.sendAsync(HttpRequest.newBuilder(
                URI.create(url("/v1/events"))).build(), HttpResponse.BodyHandlers.ofLines());
        HttpResponse<Stream<String>> events = sse.get(120, TimeUnit.SECONDS);
        assertThat(events.statusCode()).isEqualTo(200);
        assertThat(events.headers().firstValue("Content-Type").orElse("")).startsWith("text/event-stream");
        Thread reader = Thread.ofVirtual().start(() -> {
            try {
                events.body().forEach(lines::add);
            } catch (RuntimeException e) {
                // the stream ends when the proxy stops
            }
        });
        int ready = 0;
        while (ready < 3) {
            String l = lines.poll(120, TimeUnit.SECONDS);
            assertThat(l).as("three ready events").isNotNull();
            if (l.equals("event: ready")) {
                ready++;
            }
        }

        String rid = complete();
        assertThat(rid).matches(".*___decode_addr_.*_[0-9a-f]{32}");
        String uuid = rid.substring(rid.length() - 32);
        boolean routed = false;
        boolean admitted = false;
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (!(routed && admitted) && System.nanoTime() < end) {
            String l = lines.poll(1, TimeUnit.SECONDS);
            if (l != null && l.startsWith("data: ")) {
                Map<String, Object> e = (Map<String, Object>) Json.parse(l.substring(6));
                routed |= "request_routed".equals(e.get("type")) && rid.equals(e.get("request_id"));
                admitted |= "request_admitted".equals(e.get("type")) && String.valueOf(e.get("request_id")).contains(uuid);
            }
        }
        assertThat(routed).as("the proxy's request_routed of the new request came through /v1/events").isTrue();
        assertThat(admitted).as("a node's request_admitted of it came through the same stream").isTrue();

        // The list: the proxy's row (answered) and the nodes' legs, one entry per journal.
        Map<String, Object> list = (Map<String, Object>) Json.parse(get("/v1/requests").body());
        List<Map<String, Object>> nodes = (List<Map<String, Object>>) list.get("nodes");
        assertThat(nodes).extracting(n -> n.get("node")).containsExactlyInAnyOrder("proxy", "P0", "D0");
        assertThat(nodes).filteredOn(n -> "proxy".equals(n.get("node"))).singleElement()
                .satisfies(n -> assertThat(n.get("kind")).isEqualTo("proxy"));
        List<Map<String, Object>> rows = (List<Map<String, Object>>) list.get("requests");
        assertThat(rows).filteredOn(r -> "proxy".equals(r.get("node"))).singleElement().satisfies(r -> {
            assertThat(r.get("request_id")).isEqualTo(rid);
            assertThat(r.get("phase")).isEqualTo("PROXY_ANSWERED");
            assertThat(r.get("terminal")).isEqualTo(true);
            assertThat((String) r.get("transfer_id")).startsWith("tx-");
        });
        assertThat(rows).filteredOn(r -> !"proxy".equals(r.get("node"))).extracting(r -> r.get("node"))
                .containsExactlyInAnyOrder("P0", "D0");

        // The timeline of the proxy's request id: the proxy's legs among the nodes' lines.
        HttpResponse<String> one = get("/v1/requests/" + URLEncoder.encode(rid, StandardCharsets.UTF_8));
        assertThat(one.statusCode()).as(one.body()).isEqualTo(200);
        Map<String, Object> tl = (Map<String, Object>) Json.parse(one.body());
        List<Map<String, Object>> tlLines = (List<Map<String, Object>>) tl.get("lines");
        assertThat(tlLines).filteredOn(l -> "proxy".equals(l.get("node"))).extracting(l -> l.get("type"))
                .containsExactly("request_routed", "leg_sent", "leg_sent", "leg_answered", "leg_answered",
                        "request_completed");
        assertThat(tlLines).extracting(l -> l.get("node")).contains("P0", "D0");
        Map<String, Object> hangs = (Map<String, Object>) Json.parse(get("/v1/hangs").body());
        assertThat((List<Object>) hangs.get("findings")).as("a clean run").isEmpty();
        reader.interrupt();
    }

    @Test
    void inABrowserTheProxysPageShowsANewRequestLiveWithItsLegsInTheProxyLane() throws Exception {
        ChromeDriver browser = Chromium.start();
        try {
            deployment();
            WebDriverWait wait = new WebDriverWait(browser, Duration.ofSeconds(60), Duration.ofMillis(50));
            wait.ignoring(StaleElementReferenceException.class);
            browser.get(url("/ui/"));
            wait.until(b -> b.findElement(By.id("live-status")).getText().startsWith("live"));
            wait.until(b -> b.findElement(By.id("source")).getText().contains("proxy"));
            assertThat(browser.findElement(By.id("error")).getText()).isEmpty();
            assertThat(rows(browser)).isEmpty();

            // A request through the proxy after the page loaded: its rows appear without a reload.
            String rid = complete();
            wait.until(b -> rows(b).stream().anyMatch(r -> rid.equals(r.getAttribute("data-request-id"))
                    && "proxy".equals(r.getAttribute("data-node")) && r.getText().contains("PROXY_ANSWERED")));
            wait.until(b -> rows(b).size() == 3);

            wait.until(b -> {
                rows(b).stream().filter(r -> "proxy".equals(r.getAttribute("data-node"))).findFirst().orElseThrow()
                        .click();
                return true;
            });
            wait.until(b -> !b.findElements(By.cssSelector("#chart .ev[data-lane='proxy']")).isEmpty());
            // the live page may draw the chart again between a look-up and a read of what it found
            // (a stale element): each check is read again until it holds
            wait.ignoring(org.openqa.selenium.StaleElementReferenceException.class).until(b -> {
                List<WebElement> legs = b.findElements(By.cssSelector("#chart .ev[data-type='leg_sent']"));
                return legs.size() == 2 && legs.stream().allMatch(e -> "proxy".equals(e.getAttribute("data-lane")))
                        && b.findElements(By.cssSelector("#chart .ev[data-type='leg_answered'][data-lane='proxy']"))
                                .size() == 2
                        && b.findElements(By.cssSelector("#chart .ev[data-type='request_admitted']")).stream()
                                .map(e -> e.getAttribute("data-lane")).sorted().toList()
                                .equals(List.of("d-sched", "p-sched"));
            });
            assertThat(browser.findElements(By.cssSelector("#chart .missing-event"))).isEmpty();
            Chromium.screenshot(browser, "proxy-page");
        } finally {
            browser.quit();
        }
    }

    private static List<WebElement> rows(WebDriver b) {
        return b.findElements(By.cssSelector("#requests tbody tr"));
    }
}
