package io.kvledger.node;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.node.cluster.LocalLeg;
import io.kvledger.node.cluster.LiveRouter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The web page a live node serves, in a real browser (Debian's headless Chromium through
 * Selenium): two nodes in one JVM (real ZMQ on loopback, in-JVM transfer engine, real journals),
 * the decode node's page behind its bearer token; a request sent after the page loaded appears
 * in its list through the node's event stream, without a reload. Screenshot:
 * target/web-timeline/live-D0.png.
 */
class LiveWebPageBrowserTest {

    private static final String TOKEN = "web-t0ken";

    @TempDir
    Path dir;

    @Test
    void livePageShowsANewRequestWhenItIsJournaled() throws Exception {
        ChromeDriver browser = Chromium.start();
        int base = TestNodes.freePortBase(4);
        NodeService p = null;
        NodeService d = null;
        try {
            p = NodeService.start(TestNodes.options("P0",
                    TestNodes.config(Role.PRODUCER, TransferMode.READ, base, base + 1), dir.resolve("P0")));
            d = NodeService.start(TestNodes.options("D0",
                    TestNodes.config(Role.CONSUMER, TransferMode.READ, base + 2, base + 3), dir.resolve("D0"))
                    .withHttp("127.0.0.1", 0, TOKEN));
            String page = "http://127.0.0.1:" + d.http().port() + "/ui/";
            // Polls every 50 ms; the bound is generous for a loaded CI machine.
            WebDriverWait wait = new WebDriverWait(browser, Duration.ofSeconds(60), Duration.ofMillis(50));
            // The list is drawn again on every refresh: elements found before one go stale.
            wait.ignoring(StaleElementReferenceException.class);

            // Without the token the page loads but its data does not: it says how to give the token.
            browser.get(page);
            wait.until(b -> b.findElement(By.id("error")).getText().contains("needs a token"));

            browser.get(page + "#token=" + TOKEN);
            wait.until(b -> b.findElement(By.id("live-status")).getText().startsWith("live"));
            assertThat(browser.getCurrentUrl()).as("the token is taken out of the address").doesNotContain(TOKEN);
            wait.until(b -> b.findElement(By.id("source")).getText().contains("node D0"));
            assertThat(browser.findElement(By.id("source")).getText()).contains("0 request(s)");
            assertThat(browser.findElement(By.id("error")).getText()).isEmpty();
            assertThat(rows(browser)).isEmpty();

            // A request journaled after the page loaded appears without a reload.
            LiveRouter router = new LiveRouter(List.of(new LocalLeg(p)), List.of(new LocalLeg(d)), TransferMode.READ, 7);
            LiveRouter.Outcome o = router.send(64, 2).get(120, TimeUnit.SECONDS);
            assertThat(o.ok()).as("%s", o).isTrue();
            wait.until(b -> rows(b).size() == 1 && rows(b).get(0).getText().contains("FINISHED"));
            String rid = wait.<String>until(b -> rows(b).get(0).getAttribute("data-request-id"));
            assertThat(rid).contains(o.xRequestId());
            String node = wait.<String>until(b -> rows(b).get(0).getAttribute("data-node"));
            assertThat(node).isEqualTo("D0");
            assertThat(browser.findElement(By.id("live-status")).getText()).matches("live · [1-9][0-9]* event\\(s\\)");

            // Its timeline: the decode node's lanes, the read posted and completed on the wire.
            wait.until(b -> {
                rows(b).get(0).click();
                return true;
            });
            wait.until(b -> !b.findElements(By.cssSelector("#chart .transfer")).isEmpty());
            assertThat(browser.findElements(By.cssSelector("#chart .ev[data-type='request_admitted']"))).hasSize(1);
            assertThat(browser.findElements(By.cssSelector("#chart .ev[data-type='send_release']"))).isNotEmpty();
            assertThat(browser.findElements(By.cssSelector("#chart .missing-event"))).isEmpty();
            assertThat(browser.findElements(By.cssSelector("#chart .deadline[data-deadline='receive-abort']"))).hasSize(1);
            Chromium.screenshot(browser, "live-D0");
        } finally {
            browser.quit();
            if (d != null) {
                d.close();
            }
            if (p != null) {
                p.close();
            }
        }
    }

    private static List<WebElement> rows(org.openqa.selenium.WebDriver b) {
        return b.findElements(By.cssSelector("#requests tbody tr"));
    }
}

