package io.kvledger.ledger.report;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Keeps every time and duration the reports print in one form: the report, diagnosis and replay
 * sources write them through {@link io.kvledger.ledger.text.Seconds#duration} and
 * {@link io.kvledger.ledger.text.Seconds#offset}, never with an ad-hoc {@code %.3f}, a division by
 * {@code 1e9} or {@code 1_000_000}, or another number of decimals. A line that must (a JSON number,
 * vLLM's own log text quoted) says so in a comment ending it with "not text" or "not a kvledger time".
 */
class ReportTimesTidyTest {

    /** Surefire runs with the module directory as working directory. */
    private static final Path MAIN = Path.of("src/main/java/io/kvledger/ledger");

    private static final Pattern AD_HOC = Pattern.compile(
            "%[+-]?\\d*\\.\\d+f|/ ?1e[369]\\b|/ ?1_000_000(_000)?L?\\b|Seconds\\.(rounded|cut|cutValue)\\(");

    private static final Pattern EXEMPT = Pattern.compile("// .*(not text|not a kvledger time)$");

    @Test
    void report_sources_format_times_only_through_the_one_formatter() throws IOException {
        List<String> found = new ArrayList<>();
        int files = 0;
        for (String pkg : List.of("report", "diagnosis", "replay")) {
            Path dir = MAIN.resolve(pkg);
            assertThat(Files.isDirectory(dir)).as("sources not found at %s; run from modules/ledger", dir.toAbsolutePath())
                    .isTrue();
            List<Path> sources;
            try (Stream<Path> walk = Files.walk(dir)) {
                sources = walk.filter(p -> p.toString().endsWith(".java")).sorted().toList();
            }
            files += sources.size();
            for (Path f : sources) {
                List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
                for (int i = 0; i < lines.size(); i++) {
                    String l = lines.get(i).strip();
                    if (!l.startsWith("*") && !l.startsWith("//") && AD_HOC.matcher(l).find() && !EXEMPT.matcher(l).find()) {
                        found.add(MAIN.relativize(f) + ":" + (i + 1) + ": " + l);
                    }
                }
            }
        }
        assertThat(files).as("report, diagnosis and replay sources").isGreaterThan(10);
        assertThat(found).as("times formatted outside Seconds.duration/offset").isEmpty();
    }

    /** The scan itself: it catches the forms it is meant to, and lets the exempt ones by. */
    @Test
    void the_scan_catches_ad_hoc_forms() {
        assertThat(AD_HOC.matcher("String.format(\"%.3f s\", x)").find()).isTrue();
        assertThat(AD_HOC.matcher("\"%+.3f\", shift / 1e9)").find()).isTrue();
        assertThat(AD_HOC.matcher("(a / 1_000_000L) + \" ms\"").find()).isTrue();
        assertThat(AD_HOC.matcher("Seconds.rounded(ns, 3)").find()).isTrue();
        assertThat(AD_HOC.matcher("Seconds.duration(ns)").find()).isFalse();
        assertThat(AD_HOC.matcher("Math.floorDiv(atNs, 1_000_000_000L)").find()).isFalse();
        assertThat(EXEMPT.matcher("return ns / 1e9; // a JSON number, not text").find()).isTrue();
    }
}
