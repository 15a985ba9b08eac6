package io.kvledger.node;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Assumptions;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * Debian's headless Chromium driven by Selenium, for the web page's browser tests. The browser
 * and driver come from the Debian packages {@code chromium} and {@code chromium-driver}, which
 * the launcher installs ({@code ./kvledger test}, in its {@code test_packages}); a test is skipped,
 * saying so, only when they are absent. Nothing is downloaded: the driver is given by path, so
 * Selenium Manager never runs. Shared with the CLI's browser tests through the test jar.
 */
public final class Chromium {

    private Chromium() {}

    /** The first executable named {@code name} on the PATH (or in /usr/bin), or null. */
    public static Path onPath(String name) {
        String path = System.getenv().getOrDefault("PATH", "") + File.pathSeparator + "/usr/bin";
        for (String dir : path.split(File.pathSeparator)) {
            if (!dir.isEmpty()) {
                Path p = Path.of(dir, name);
                if (Files.isExecutable(p)) {
                    return p;
                }
            }
        }
        return null;
    }

    /** Starts headless Chromium; skips the calling test (with why) when chromium or its driver is absent. */
    public static ChromeDriver start() {
        Path browser = onPath("chromium");
        Path driver = onPath("chromedriver");
        Assumptions.assumeTrue(browser != null && driver != null,
                "skipped: Debian's chromium and chromium-driver are not installed (the ./kvledger launcher installs "
                        + "them for the tests: apt-get install chromium chromium-driver)");
        ChromeOptions o = new ChromeOptions();
        o.setBinary(browser.toFile());
        o.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1600,1100", "--allow-file-access-from-files");
        ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(driver.toFile()).build();
        ChromeDriver d = new ChromeDriver(service, o);
        d.manage().timeouts().scriptTimeout(Duration.ofSeconds(10));
        return d;
    }

    /** Saves a screenshot under the module's target/web-timeline/ (a test artifact). */
    public static Path screenshot(ChromeDriver d, String name) throws java.io.IOException {
        Path dir = Path.of("target", "web-timeline");
        Files.createDirectories(dir);
        Path file = dir.resolve(name + ".png");
        Files.write(file, d.getScreenshotAs(OutputType.BYTES));
        return file;
    }
}
