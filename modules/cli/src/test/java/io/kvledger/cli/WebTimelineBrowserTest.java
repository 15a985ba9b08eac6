package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.node.Chromium;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.support.ui.Select;
import org.openqa.selenium.support.ui.WebDriverWait;
import picocli.CommandLine;

/**
 * The web timeline page in a real browser (Debian's headless Chromium, through Selenium): {@code
 * kvledger serve} over the journals of fixture 27-write-stranded (D0 waits for a write_done that
 * never comes; P0's write task expired), and the file {@code kvledger inspect --html} writes.
 * Screenshots go to target/web-timeline/.
 */
class WebTimelineBrowserTest {

    static final String FIXTURE = "27-write-stranded";
    static final String UUID = "6c5d8182190c404694cda0f3b0e27cc7";

    static ChromeDriver browser;

    @BeforeAll
    static void startBrowser() {
        browser = Chromium.start();
    }

    @AfterAll
    static void stopBrowser() {
        if (browser != null) {
            browser.quit();
        }
    }

    /** Waits poll every 50 ms; the bound is generous for a loaded CI machine (each page request replays the journals). */
    private static WebDriverWait waiting() {
        return new WebDriverWait(browser, Duration.ofSeconds(60), Duration.ofMillis(50));
    }

    /** Runs {@code body}; on failure saves a screenshot of the page as it was (target/web-timeline/FAILED-name.png). */
    private static void withScreenshotOnFailure(String name, Body body) throws Exception {
        try {
            body.run();
        } catch (Exception | AssertionError e) {
            try {
                Chromium.screenshot(browser, "FAILED-" + name);
            } catch (RuntimeException | java.io.IOException ignored) {
                // the failure itself is what matters
            }
            throw e;
        }
    }

    private interface Body {
        void run() throws Exception;
    }

    @Test
    void servedPageListsTheHungRequestAndDrawsTheMissingEvent() throws Exception {
        Path fixture = FixtureGoldenTest.fixturesDir().resolve(FIXTURE);
        StringWriter out = new StringWriter();
        CommandLine cl = Main.commandLine(new PrintWriter(out, true), new PrintWriter(new StringWriter(), true));
        ServeCommand serve = (ServeCommand) cl.getSubcommands().get("serve").getCommand();
        int[] code = {-1};
        Thread t = new Thread(() -> code[0] = cl.execute("serve", fixture.toString(), "--http", "127.0.0.1:0"), "serve");
        t.start();
        try {
            assertThat(serve.started.await(120, TimeUnit.SECONDS)).as("serve started: %s", out).isTrue();
            assertThat(out.toString()).contains("over 2 journal(s) (D0, P0)");
            String base = "http://127.0.0.1:" + serve.server.port();
            withScreenshotOnFailure("serve-" + FIXTURE, () -> checkServedPage(base));
        } finally {
            t.interrupt();
            t.join(10_000);
        }
        assertThat(code[0]).as("serve's exit code once interrupted").isZero();
    }

    private void checkServedPage(String base) throws Exception {
        // The list: both legs of the request, the decode leg marked hung with its finding.
        browser.get(base + "/");
        waiting().until(d -> d.findElements(By.cssSelector("#requests tbody tr")).size() == 2);
        // Without --follow the server has no event stream: the page says it shows journals, not a live node.
        waiting().until(d -> d.findElement(By.id("live-status")).getText().equals("journals (not live)"));
        WebElement d0 = row("D0");
        assertThat(d0.getAttribute("class")).contains("hung");
        assertThat(d0.getText()).contains("WAITING_FOR_REMOTE_KVS").contains("stuck-waiting (class 27)");
        assertThat(row("P0").getAttribute("class")).doesNotContain("hung");
        assertThat(row("P0").getText()).contains("WRITE_TASK_EXPIRED").contains("FREED_AFTER_ACK");

        // Filters: hung only, by node, by phase, by bug class, and the search box.
        browser.findElement(By.id("hung-only")).click();
        assertThat(rows()).extracting(r -> r.getAttribute("data-node")).containsExactly("D0");
        browser.findElement(By.id("hung-only")).click();
        new Select(browser.findElement(By.id("node-filter"))).selectByValue("P0");
        assertThat(rows()).extracting(r -> r.getAttribute("data-node")).containsExactly("P0");
        new Select(browser.findElement(By.id("node-filter"))).selectByValue("");
        new Select(browser.findElement(By.id("phase-filter"))).selectByValue("WAITING_FOR_REMOTE_KVS");
        assertThat(rows()).extracting(r -> r.getAttribute("data-node")).containsExactly("D0");
        new Select(browser.findElement(By.id("phase-filter"))).selectByValue("");
        new Select(browser.findElement(By.id("class-filter"))).selectByValue("27");
        assertThat(rows()).hasSize(2);
        new Select(browser.findElement(By.id("class-filter"))).selectByValue("");
        browser.findElement(By.id("search")).sendKeys("no-such-request");
        assertThat(rows()).isEmpty();
        browser.findElement(By.id("search")).clear();
        browser.findElement(By.id("search")).sendKeys("x");
        browser.findElement(By.id("search")).clear();
        // The transfer id links the legs on both nodes.
        waiting().until(d -> rows().size() == 2);
        row("D0").findElement(By.cssSelector("a.tid")).click();
        assertThat(browser.findElement(By.id("search")).getAttribute("value")).startsWith("tx-75301b59");
        assertThat(rows()).hasSize(2);

        // The hung request's timeline: merged across both nodes, the missing event drawn in the wire lane.
        row("D0").click();
        waiting().until(d -> !d.findElements(By.cssSelector("#chart .missing-event[data-detector='stuck-waiting']")).isEmpty());
        assertThat(browser.getCurrentUrl()).contains("#request=");
        WebElement missing = browser.findElement(By.cssSelector("#chart .missing-event[data-detector='stuck-waiting']"));
        assertThat(missing.getAttribute("data-node")).isEqualTo("D0");
        assertThat(missing.getText()).contains("missing: write_done");
        WebElement wire = browser.findElement(By.cssSelector("#chart rect.lane-bg[data-lane='wire']"));
        int y = missing.getRect().getY();
        assertThat(y).as("the missing event is in the wire lane").isBetween(wire.getRect().getY(),
                wire.getRect().getY() + wire.getRect().getHeight());
        // Events of both nodes, the frame D0 sent, the anomaly on P0, the deferral deadline.
        assertThat(browser.findElements(By.cssSelector("#chart .ev[data-node='D0']"))).isNotEmpty();
        assertThat(browser.findElements(By.cssSelector("#chart .ev[data-node='P0']"))).isNotEmpty();
        assertThat(browser.findElements(By.cssSelector("#chart .ev[data-type='send_remote_blocks']"))).hasSize(1);
        assertThat(browser.findElements(By.cssSelector("#chart .finding-anomaly"))).hasSize(1);
        assertThat(browser.findElements(By.cssSelector("#chart .deadline[data-deadline='deferral'][data-node='P0']"))).hasSize(1);
        assertThat(browser.findElement(By.id("findings")).getText()).contains("stuck-waiting (class 27)")
                .contains("never arrived");

        // Clicking an event shows its journal entry.
        browser.findElement(By.cssSelector("#chart .ev[data-type='send_remote_blocks']")).click();
        String entry = browser.findElement(By.id("entry")).getText();
        assertThat(entry).contains("journal entry:").contains("\"type\": \"send_remote_blocks\"")
                .contains("\"node\": \"D0\"").contains("\"transfer_id\": \"tx-75301b59");
        Path shot = Chromium.screenshot(browser, "serve-" + FIXTURE);
        assertThat(Files.size(shot)).isPositive();
    }

    @Test
    void inspectHtmlWritesOneSelfContainedPage(@TempDir Path tmp) throws Exception {
        Path fixture = FixtureGoldenTest.fixturesDir().resolve(FIXTURE);
        Path file = tmp.resolve("bug.html");
        CliRun.Outcome o = CliRun.run("inspect", fixture.toString(), "--request", UUID, "--html", file.toString());
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.err()).contains("wrote " + file).contains("3 finding(s)");
        assertThat(o.out()).as("the text timeline is still printed").contains("inspect: 27 line(s)");
        String html = Files.readString(file);
        assertThat(html.replace("http://www.w3.org/2000/svg", "")).as("no external asset (the SVG namespace aside)")
                .doesNotContain("src=\"").doesNotContain("href=\"").doesNotContain("http://").doesNotContain("https://");

        withScreenshotOnFailure("inspect-html-" + FIXTURE, () -> checkSavedFile(file));
    }

    private void checkSavedFile(Path file) throws Exception {
        browser.get(file.toUri().toString());
        waiting().until(d -> !d.findElements(By.cssSelector("#chart .missing-event")).isEmpty());
        assertThat(browser.findElement(By.id("list-panel")).isDisplayed()).isFalse();
        assertThat(browser.findElement(By.id("live-status")).getText()).isEqualTo("saved file");
        assertThat(browser.findElements(By.cssSelector("#chart .ev"))).hasSize(27);
        browser.findElement(By.cssSelector("#chart .missing-event")).click();
        assertThat(browser.findElement(By.id("entry")).getText()).contains("hang finding on D0").contains("stuck-waiting");
        Chromium.screenshot(browser, "inspect-html-" + FIXTURE);
    }

    private static List<WebElement> rows() {
        return browser.findElements(By.cssSelector("#requests tbody tr"));
    }

    private static WebElement row(String node) {
        return browser.findElement(By.cssSelector("#requests tbody tr[data-node='" + node + "']"));
    }
}
