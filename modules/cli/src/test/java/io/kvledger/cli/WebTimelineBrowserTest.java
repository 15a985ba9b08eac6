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

    private interface Served {
        void check(String base, String said) throws Exception;
    }

    /** Runs {@code kvledger serve DIR} on a free port while {@code check} looks at it. */
    private static void serving(Path dir, String name, Served check) throws Exception {
        StringWriter out = new StringWriter();
        CommandLine cl = Main.commandLine(new PrintWriter(out, true), new PrintWriter(new StringWriter(), true));
        ServeCommand serve = (ServeCommand) cl.getSubcommands().get("serve").getCommand();
        int[] code = {-1};
        Thread t = new Thread(() -> code[0] = cl.execute("serve", dir.toString(), "--http", "127.0.0.1:0"), "serve");
        t.start();
        try {
            assertThat(serve.started.await(120, TimeUnit.SECONDS)).as("serve started: %s", out).isTrue();
            String base = "http://127.0.0.1:" + serve.server.port();
            withScreenshotOnFailure(name, () -> check.check(base, out.toString()));
        } finally {
            t.interrupt();
            t.join(10_000);
        }
        assertThat(code[0]).as("serve's exit code once interrupted").isZero();
    }

    @Test
    void servedPageListsTheHungRequestAndDrawsTheMissingEvent() throws Exception {
        Path fixture = FixtureGoldenTest.fixturesDir().resolve(FIXTURE);
        serving(fixture, "serve-" + FIXTURE, (base, said) -> {
            assertThat(said).contains("over 2 journal(s) (D0, P0)");
            checkServedPage(base);
        });
    }

    /**
     * The list over a simulated run with faults: findings first (hung requests grouped by bug
     * class, then anomalous ones, then the rest), columns that sort, durations that differ, and
     * list and timeline side by side in the window, the timeline fitting it, zooming and panning.
     */
    @Test
    void theListPutsFindingsFirstSortsAndOpensTheTimelineBesideIt(@TempDir Path tmp) throws Exception {
        Path run = tmp.resolve("run");
        CliRun.Outcome sim = CliRun.run("simulate", "--seed", "7", "--requests", "60", "--mode", "WRITE",
                "--faults", "drop=0.08,stall=0.04,abort=0.03", "--out", run.toString());
        assertThat(sim.code()).as(sim.err()).isIn(0, 1);
        serving(run, "serve-simulated", (base, said) -> checkList(base));
    }

    @SuppressWarnings("unchecked")
    private void checkList(String base) throws Exception {
        browser.get(base + "/");
        waiting().until(d -> d.findElements(By.cssSelector("#requests tbody tr")).size() > 60);
        List<WebElement> all = rows();
        // findings first: every hung row before every other, the hung rows in bug-class order
        List<String> groups = all.stream().map(r -> r.getAttribute("data-group")).toList();
        int firstOther = groups.size();
        for (int i = 0; i < groups.size(); i++) {
            if (!groups.get(i).startsWith("hung")) {
                firstOther = Math.min(firstOther, i);
            } else {
                assertThat(i).as("a hung row after a row that is not: %s", groups).isLessThan(firstOther);
            }
        }
        assertThat(firstOther).as("the run has hung requests: %s", groups).isPositive();
        List<Integer> classes = groups.subList(0, firstOther).stream().map(g -> g.split(" ")[1])
                .map(c -> c.equals("-") ? Integer.MAX_VALUE : Integer.parseInt(c)).toList();
        assertThat(classes).isSorted();
        assertThat(all.get(0).getAttribute("class")).contains("hung");
        // the group chips: one per class and detector, then the rest; one filters the list
        List<WebElement> chips = browser.findElements(By.cssSelector("#groups button"));
        assertThat(chips.get(0).getText()).matches("(class \\d+ )?[a-z-]+ \\(\\d+\\)");
        assertThat(chips.get(chips.size() - 1).getText()).startsWith("the rest (");
        String g0 = chips.get(0).getAttribute("data-group");
        chips.get(0).click();
        assertThat(rows()).isNotEmpty().allSatisfy(r -> assertThat(r.getAttribute("data-group")).isEqualTo(g0));
        browser.findElement(By.cssSelector("#groups button.active")).click();
        assertThat(rows()).hasSize(all.size());
        // durations differ from request to request
        List<String> durations = rows().stream().map(r -> r.findElement(By.cssSelector("td.dur")).getText()).toList();
        assertThat(new java.util.HashSet<>(durations)).as("durations: %s", durations).hasSizeGreaterThan(durations.size() / 4);
        assertThat(durations).allSatisfy(t -> assertThat(t).matches("\\d+\\.\\d{6} s\\+?"));
        checkTimeFormatter();
        // sorting: by node up, then down, then back to findings first
        WebElement nodeHead = browser.findElement(By.cssSelector("#requests th[data-sort='node']"));
        nodeHead.click();
        assertThat(nodeHead.getAttribute("aria-sort")).isEqualTo("ascending");
        List<String> nodes = rows().stream().map(r -> r.getAttribute("data-node")).toList();
        assertThat(nodes).isSorted();
        browser.findElement(By.cssSelector("#requests th[data-sort='node']")).click();
        assertThat(rows().stream().map(r -> r.getAttribute("data-node")).toList())
                .isSortedAccordingTo(java.util.Comparator.reverseOrder());
        browser.findElement(By.cssSelector("#requests th[data-sort='node']")).click();
        assertThat(browser.findElement(By.cssSelector("#requests th[data-sort='node']")).getAttribute("aria-sort")).isNull();
        assertThat(rows().stream().map(r -> r.getAttribute("data-group")).toList()).isEqualTo(groups);
        // the table fits its panel: no column behind a horizontal scroll bar
        assertThat((Boolean) browser.executeScript("var w = document.querySelector('.table-wrap');"
                + " return w.scrollWidth <= w.clientWidth;")).isTrue();
        shot("list");

        // the first hung request opens beside the list, its timeline fitting the window
        rows().get(0).click();
        waiting().until(d -> !d.findElements(By.cssSelector("#chart .ev")).isEmpty());
        var list = browser.findElement(By.id("list-panel")).getRect();
        var detail = browser.findElement(By.id("timeline-panel")).getRect();
        assertThat(detail.getX()).as("side by side").isGreaterThanOrEqualTo(list.getX() + list.getWidth());
        assertThat(Math.abs(detail.getY() - list.getY())).isLessThan(5);
        assertThat((Boolean) browser.executeScript("return document.documentElement.scrollWidth <= window.innerWidth"
                + " && document.getElementById('chart').getBoundingClientRect().right"
                + " <= document.getElementById('chart-wrap').getBoundingClientRect().right + 1;")).isTrue();
        checkChartLabels();
        // zoom in: two events further apart; fit: back
        String distance = "var e = document.querySelectorAll('#chart .ev');"
                + " var a = e[0].getBoundingClientRect(), b = e[e.length - 1].getBoundingClientRect();"
                + " return b.left - a.left;";
        double fitted = ((Number) browser.executeScript(distance)).doubleValue();
        browser.findElement(By.id("zoom-in")).click();
        browser.findElement(By.id("zoom-in")).click();
        assertThat(((Number) browser.executeScript(distance)).doubleValue()).isGreaterThan(fitted * 1.5);
        assertThat(browser.findElement(By.id("zoom-level")).getText()).isEqualTo("zoom \u00d74.0");
        checkChartLabels();
        browser.findElement(By.id("zoom-fit")).click();
        assertThat(((Number) browser.executeScript(distance)).doubleValue()).isCloseTo(fitted, org.assertj.core.data.Offset.offset(1.0));
        shot("request");

        // a request that went through (a prefill leg freed after its ACK, no finding): its transfer's frames arrived
        WebElement done = rows().stream().filter(r -> r.getAttribute("data-group").equals("other")
                && r.getText().contains("FREED_AFTER_ACK")).findFirst().orElseThrow();
        String doneId = done.getAttribute("data-request-id");
        done.click();
        waiting().until(d -> !d.findElements(By.cssSelector("button.xfer-open")).isEmpty()
                && d.findElement(By.cssSelector("#timeline-head")).getText().contains(doneId));
        checkReceivedFrames();
    }

    /** The page's one time formatter writes what {@code ledger.text.Seconds} writes. */
    @SuppressWarnings("unchecked")
    private static void checkTimeFormatter() {
        long[] ns = {0, 999, 394_123, 36_978_123_456L, 177_619_000_000L, -500_000_000L, 3_600_000_000_001L};
        StringBuilder js = new StringBuilder("var f = window.kvledgerTime; return [");
        for (long n : ns) {
            js.append("f.durationNs(").append(n).append("), f.offsetNs(").append(n).append("), ");
        }
        List<String> got = (List<String>) browser.executeScript(js.append("];").toString());
        List<String> want = new java.util.ArrayList<>();
        for (long n : ns) {
            want.add(io.kvledger.ledger.text.Seconds.duration(n));
            want.add(io.kvledger.ledger.text.Seconds.offset(n));
        }
        assertThat(got).isEqualTo(want);
        assertThat(got.get(4)).isEqualTo("0.000394 s");
        assertThat(got.get(5)).isEqualTo("t+0.000394 s");
    }

    /**
     * The chart's labels: axis labels never repeat their neighbour, no two labels of findings or
     * deadlines overlap, and a lane holding a missing event does not say it has none.
     */
    @SuppressWarnings("unchecked")
    private static void checkChartLabels() {
        List<String> axis = browser.findElements(By.cssSelector("#chart text.axis")).stream().map(WebElement::getText).toList();
        // times as every report writes them (ledger.text.Seconds): t+SECONDS with six decimals and the unit
        assertThat(axis).isNotEmpty().allSatisfy(t -> assertThat(t).matches("t[+-]\\d+\\.\\d{6} s"));
        // (the text of every gap label, those zoomed out of view too)
        assertThat(browser.findElements(By.cssSelector("#chart text.gap")).stream().map(e -> e.getAttribute("textContent")))
                .allSatisfy(t -> assertThat(t).matches("\u2248\\d+\\.\\d{6} s"));
        for (int i = 1; i < axis.size(); i++) {
            assertThat(axis.get(i)).as("axis labels %s", axis).isNotEqualTo(axis.get(i - 1));
        }
        List<List<Number>> boxes = (List<List<Number>>) browser.executeScript(
                "return Array.prototype.map.call(document.querySelectorAll('#chart .missing-event text, #chart .deadline text,"
                        + " #chart text.axis, #chart text.gap'), function (t) {"
                        + " var r = t.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })"
                        + ".filter(function (r) { return r[2] - r[0] > 1; });");
        for (int i = 0; i < boxes.size(); i++) {
            for (int j = i + 1; j < boxes.size(); j++) {
                List<Number> a = boxes.get(i);
                List<Number> b = boxes.get(j);
                boolean apart = a.get(2).doubleValue() <= b.get(0).doubleValue() + 0.5
                        || b.get(2).doubleValue() <= a.get(0).doubleValue() + 0.5
                        || a.get(3).doubleValue() <= b.get(1).doubleValue() + 0.5
                        || b.get(3).doubleValue() <= a.get(1).doubleValue() + 0.5;
                assertThat(apart).as("labels %s and %s overlap", a, b).isTrue();
            }
        }
        for (WebElement m : browser.findElements(By.cssSelector("#chart .missing-event"))) {
            assertThat(browser.findElements(By.cssSelector("#chart text.lane-label.empty"))).as("a lane with a missing event")
                    .noneMatch(t -> t.getText().equals("(no events)") && Math.abs(t.getRect().getY() - m.getRect().getY()) < 30);
        }
    }

    /**
     * A screenshot under target/web-timeline/; with {@code -Dkvledger.screenshots=DIR} (the
     * README's images: {@code docs/img} of the checkout) also there, at a smaller window.
     */
    private static void shot(String name) throws Exception {
        Chromium.screenshot(browser, name);
        String dir = System.getProperty("kvledger.screenshots");
        if (dir != null && !dir.isBlank()) {
            Path out = Path.of(dir);
            Files.createDirectories(out);
            // at 1000 px wide: small enough for the README, large enough to read
            var full = javax.imageio.ImageIO.read(new java.io.ByteArrayInputStream(
                    browser.getScreenshotAs(org.openqa.selenium.OutputType.BYTES)));
            int w = 1000;
            int h = full.getHeight() * w / full.getWidth();
            var small = new java.awt.image.BufferedImage(w, h, java.awt.image.BufferedImage.TYPE_INT_RGB);
            var g = small.createGraphics();
            g.setRenderingHint(java.awt.RenderingHints.KEY_INTERPOLATION, java.awt.RenderingHints.VALUE_INTERPOLATION_BICUBIC);
            g.setRenderingHint(java.awt.RenderingHints.KEY_RENDERING, java.awt.RenderingHints.VALUE_RENDER_QUALITY);
            g.drawImage(full, 0, 0, w, h, null);
            g.dispose();
            javax.imageio.ImageIO.write(small, "png", out.resolve("web-" + name + ".png").toFile());
        }
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

        checkTransferView();
    }

    /**
     * The cross-node view of the hung request's transfer, opened from its detail: a lifeline per
     * node (P0 prefill, D0 decode), both legs' phases down them, the remote_blocks frame D0 sent
     * drawn as never received, and the missing write_done on D0's lifeline.
     */
    @SuppressWarnings("unchecked")
    private void checkTransferView() throws Exception {
        browser.findElement(By.cssSelector("button.xfer-open[data-tid^='tx-75301b59']")).click();
        waiting().until(d -> d.findElements(By.cssSelector("#xfer .lifeline")).size() == 2);
        assertThat(browser.findElement(By.id("chart-wrap")).isDisplayed()).as("the swimlanes give way").isFalse();
        WebElement p0 = browser.findElement(By.cssSelector("#xfer .lifeline[data-node='P0']"));
        WebElement d0 = browser.findElement(By.cssSelector("#xfer .lifeline[data-node='D0']"));
        assertThat(p0.getRect().getX()).as("prefill left of decode").isLessThan(d0.getRect().getX());
        // both legs' phases, in order down each lifeline
        List<String> d0Phases = browser.findElements(By.cssSelector("#xfer .phase[data-node='D0']")).stream()
                .map(e -> e.getAttribute("data-phase")).toList();
        List<String> p0Phases = browser.findElements(By.cssSelector("#xfer .phase[data-node='P0']")).stream()
                .map(e -> e.getAttribute("data-phase")).toList();
        assertThat(d0Phases).containsExactly("ADMITTED", "WAITING_FOR_REMOTE_KVS");
        assertThat(p0Phases).containsExactly("ADMITTED", "PREFILLING", "DEFERRED_FREE", "FREED_AFTER_ACK");
        assertThat(browser.findElement(By.cssSelector("#xfer .phase.open[data-node='D0']")).getText())
                .contains("WAITING_FOR_REMOTE_KVS (36.977526 s, open)");
        // the frame D0 sent toward P0, never received
        WebElement lost = browser.findElement(By.cssSelector("#xfer .frame.lost[data-type='send_remote_blocks']"));
        assertThat(lost.getAttribute("data-from")).isEqualTo("D0");
        assertThat(lost.getAttribute("data-to")).isEqualTo("P0");
        assertThat(lost.getText()).contains("remote_blocks never received");
        assertThat(browser.findElements(By.cssSelector("#xfer .frame:not(.lost)"))).as("no frame was received").isEmpty();
        // the missing write_done, on D0's side, with the finding; the anomaly on P0
        WebElement missing = browser.findElement(By.cssSelector("#xfer .missing-event[data-detector='stuck-waiting']"));
        assertThat(missing.getAttribute("data-node")).isEqualTo("D0");
        assertThat(missing.getText()).contains("missing: write_done").contains("class 27");
        assertThat(browser.findElements(By.cssSelector("#xfer .xev.anomaly[data-node='P0']"))).isNotEmpty();
        missing.click();
        assertThat(browser.findElement(By.id("entry")).getText()).contains("hang finding on D0").contains("never arrived");
        // no label covers another
        List<List<Number>> boxes = (List<List<Number>>) browser.executeScript(
                "return Array.prototype.map.call(document.querySelectorAll('#xfer text'), function (t) {"
                        + " var r = t.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })"
                        + ".filter(function (r) { return r[2] - r[0] > 1; });");
        assertThat(boxes).hasSizeGreaterThan(10);
        for (int i = 0; i < boxes.size(); i++) {
            for (int j = i + 1; j < boxes.size(); j++) {
                List<Number> a = boxes.get(i);
                List<Number> b = boxes.get(j);
                boolean apart = a.get(2).doubleValue() <= b.get(0).doubleValue() + 0.5
                        || b.get(2).doubleValue() <= a.get(0).doubleValue() + 0.5
                        || a.get(3).doubleValue() <= b.get(1).doubleValue() + 0.5
                        || b.get(3).doubleValue() <= a.get(1).doubleValue() + 0.5;
                assertThat(apart).as("labels %s and %s overlap", a, b).isTrue();
            }
        }
        shot("transfer");
        // back to the swimlanes
        browser.findElement(By.id("xfer-back")).click();
        assertThat(browser.findElement(By.id("chart-wrap")).isDisplayed()).isTrue();
        assertThat(browser.findElement(By.id("xfer-wrap")).isDisplayed()).isFalse();
    }

    /** A frame that arrived: an arrow from the lifeline of the node that sent it to the one that received it. */
    private void checkReceivedFrames() {
        browser.findElement(By.cssSelector("button.xfer-open")).click();
        waiting().until(d -> d.findElements(By.cssSelector("#xfer .lifeline")).size() >= 2);
        List<WebElement> frames = browser.findElements(By.cssSelector("#xfer .frame:not(.lost)"));
        assertThat(frames).as("the frames of a transfer that completed").isNotEmpty();
        for (WebElement f : frames) {
            String from = f.getAttribute("data-from");
            String to = f.getAttribute("data-to");
            assertThat(from).isNotEqualTo(to);
            double xFrom = browser.findElement(By.cssSelector("#xfer .lifeline[data-node='" + from + "']")).getRect().getX();
            double xTo = browser.findElement(By.cssSelector("#xfer .lifeline[data-node='" + to + "']")).getRect().getX();
            WebElement path = f.findElement(By.tagName("path"));
            String d = path.getAttribute("d");
            double startX = Double.parseDouble(d.split(" ")[1]);
            double endX = Double.parseDouble(d.split(" ")[4]);
            assertThat(Math.signum(endX - startX)).as("%s -> %s drawn toward the receiver", from, to).isEqualTo(Math.signum(xTo - xFrom));
        }
        browser.findElement(By.id("xfer-back")).click();
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
        // the saved file is the timeline alone, over the whole window
        assertThat((Boolean) browser.executeScript("return document.documentElement.scrollWidth <= window.innerWidth;")).isTrue();
        checkChartLabels();
        Chromium.screenshot(browser, "inspect-html-" + FIXTURE);
        shot("inspect-html");
    }

    private static List<WebElement> rows() {
        return browser.findElements(By.cssSelector("#requests tbody tr"));
    }

    private static WebElement row(String node) {
        return browser.findElement(By.cssSelector("#requests tbody tr[data-node='" + node + "']"));
    }
}
