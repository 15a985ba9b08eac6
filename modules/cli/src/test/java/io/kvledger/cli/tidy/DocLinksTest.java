package io.kvledger.cli.tidy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every relative link of the project's Markdown (README.md, docs/, each module's README,
 * benchmarks/README.md, journal/*.md and the fixtures' index) names a file that exists and, with a
 * {@code #fragment} into a Markdown file, a heading of that file (GitHub's anchors: lower case,
 * punctuation dropped, spaces as hyphens, {@code -1}, {@code -2} for repeats). Links inside code
 * blocks and links with a scheme ({@code https:}, {@code mailto:}) are not checked.
 */
class DocLinksTest {

    private static final Pattern LINK = Pattern.compile("\\[[^\\]\\n]*\\]\\(([^)\\s]+)\\)");
    private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.*?)\\s*#*\\s*$");
    private static final Pattern FENCE = Pattern.compile("(?ms)^```.*?^```[^\\n]*$");

    @Test
    void every_relative_link_of_the_docs_resolves() throws IOException {
        Path root = Path.of("").toAbsolutePath().getParent().getParent();
        assertThat(Files.isRegularFile(root.resolve("README.md"))).as("project root from %s", Path.of("").toAbsolutePath()).isTrue();
        List<Path> docs = new ArrayList<>();
        docs.add(root.resolve("README.md"));
        docs.add(root.resolve("benchmarks/README.md"));
        docs.add(root.resolve("journal/fixtures/README.md"));
        for (String dir : List.of("docs", "journal")) {
            try (Stream<Path> s = Files.list(root.resolve(dir))) {
                s.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
            }
        }
        try (Stream<Path> s = Files.list(root.resolve("modules"))) {
            s.map(m -> m.resolve("README.md")).filter(Files::isRegularFile).sorted().forEach(docs::add);
        }
        Map<Path, String> texts = new HashMap<>();
        Function<Path, String> read = p -> texts.computeIfAbsent(p, q -> {
            try {
                return Files.readString(q, StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new IllegalStateException(q.toString(), e);
            }
        });
        List<String> broken = new ArrayList<>();
        int checked = 0;
        for (Path doc : docs) {
            if (!Files.isRegularFile(doc)) {
                continue;
            }
            for (String target : links(read.apply(doc))) {
                checked++;
                String problem = problem(doc, target, p -> Files.exists(p) ? (p.toString().endsWith(".md") ? read.apply(p) : "") : null);
                if (problem != null) {
                    broken.add(root.relativize(doc) + ": " + target + ": " + problem);
                }
            }
        }
        assertThat(checked).as("links found").isGreaterThan(50);
        assertThat(broken).as("links that do not resolve (of %d checked)", checked).isEmpty();
    }

    @Test
    void a_missing_file_or_heading_is_reported() {
        Path doc = Path.of("/r/docs/a.md");
        Map<Path, String> files = Map.of(
                Path.of("/r/docs/b.md"), "# Title\n\n## Running live\n```\n# not a heading\n```\n## Running live\n",
                Path.of("/r/README.md"), "# kvledger\n");
        Function<Path, String> read = p -> files.get(p.normalize());
        assertThat(problem(doc, "b.md", read)).isNull();
        assertThat(problem(doc, "b.md#running-live", read)).isNull();
        assertThat(problem(doc, "b.md#running-live-1", read)).isNull();
        assertThat(problem(doc, "../README.md#kvledger", read)).isNull();
        assertThat(problem(doc, "c.md", read)).isEqualTo("no such file");
        assertThat(problem(doc, "b.md#not-a-heading", read)).isEqualTo("no heading #not-a-heading");
        assertThat(problem(doc, "b.md#running-live-2", read)).isEqualTo("no heading #running-live-2");
        assertThat(links("see [b](b.md) and [x](https://x.org)\n```\n[c](c.md)\n```\n")).containsExactly("b.md");
    }

    /** The relative link targets of a Markdown text, code blocks left out. */
    static List<String> links(String markdown) {
        List<String> out = new ArrayList<>();
        Matcher m = LINK.matcher(FENCE.matcher(markdown).replaceAll(""));
        while (m.find()) {
            String t = m.group(1);
            if (!t.matches("[a-z]+:.*")) {
                out.add(t);
            }
        }
        return out;
    }

    /**
     * Why a link from {@code doc} does not resolve, or null when it does.
     *
     * @param read a file's text ("" for a file that is not Markdown), null when there is no file
     */
    static String problem(Path doc, String target, Function<Path, String> read) {
        int hash = target.indexOf('#');
        String path = hash < 0 ? target : target.substring(0, hash);
        Path file = path.isEmpty() ? doc : doc.getParent().resolve(path).normalize();
        String text = read.apply(file);
        if (text == null) {
            return "no such file";
        }
        if (hash < 0 || !file.toString().endsWith(".md")) {
            return null;
        }
        String anchor = target.substring(hash + 1);
        return anchors(text).contains(anchor) ? null : "no heading #" + anchor;
    }

    /** GitHub's anchors of a Markdown text's headings (outside code blocks). */
    static Set<String> anchors(String markdown) {
        Set<String> out = new HashSet<>();
        Map<String, Integer> seen = new HashMap<>();
        for (String line : FENCE.matcher(markdown).replaceAll("").split("\n")) {
            Matcher m = HEADING.matcher(line);
            if (m.matches()) {
                String a = m.group(1).toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N}_\\- ]", "").replace(' ', '-');
                int n = seen.merge(a, 1, Integer::sum) - 1;
                out.add(n == 0 ? a : a + "-" + n);
            }
        }
        return out;
    }
}
