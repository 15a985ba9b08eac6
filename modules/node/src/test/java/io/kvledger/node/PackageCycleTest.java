package io.kvledger.node;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * No two packages of the node module import each other, directly or round a longer loop: the
 * wiring ({@code io.kvledger.node}) sits on top, the loop ({@code .loop}) at the bottom, and HTTP,
 * metrics, tracing and the shadow read the loop's status snapshot instead of the node service.
 *
 * <p>Read as text from this module's main sources: a package depends on another when one of its
 * files names a type of it, by an import or a fully qualified name in the code (comments and
 * string literals are blanked first); a package's own types do not count.
 */
class PackageCycleTest {

    private static final String ROOT = "io.kvledger.node";
    private static final Pattern REF = Pattern.compile("\\b(io\\.kvledger\\.node(?:\\.[a-z]\\w*)*)\\.[A-Z]");

    @Test
    void the_node_packages_import_one_another_without_a_cycle() throws IOException {
        Path main = Path.of("src/main/java");
        assertThat(Files.isDirectory(main.resolve("io/kvledger/node"))).as("run from modules/node").isTrue();
        Map<String, String> sources = new TreeMap<>();
        try (Stream<Path> walk = Files.walk(main)) {
            for (Path f : walk.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
                sources.put(main.relativize(f).toString(), Files.readString(f, StandardCharsets.UTF_8));
            }
        }
        Map<String, Set<String>> graph = graph(sources);
        assertThat(graph).as("the packages are found").containsKeys(ROOT, ROOT + ".loop", ROOT + ".http",
                ROOT + ".metrics", ROOT + ".otlp", ROOT + ".shadow");
        assertThat(graph.get(ROOT)).as("the wiring uses the loop and the HTTP server").contains(ROOT + ".loop",
                ROOT + ".http");
        assertThat(cycles(graph)).as("package cycles in modules/node").isEmpty();
    }

    @Test
    void the_scan_finds_a_cycle_through_an_import_or_a_qualified_name_and_ignores_comments() {
        Map<String, String> sources = Map.of(
                "io/kvledger/node/A.java", "package io.kvledger.node;\nimport io.kvledger.node.b.B;\nclass A {}",
                "io/kvledger/node/b/B.java", "package io.kvledger.node.b;\nclass B { io.kvledger.node.c.C c; }",
                "io/kvledger/node/c/C.java", "package io.kvledger.node.c;\n// io.kvledger.node.A\nclass C {"
                        + " String s = \"io.kvledger.node.d.D\"; }",
                "io/kvledger/node/d/D.java", "package io.kvledger.node.d;\nclass D { io.kvledger.node.A a; }");
        Map<String, Set<String>> graph = graph(sources);
        assertThat(graph.get(ROOT + ".c")).as("comments and strings are not references").isEmpty();
        assertThat(cycles(graph)).isEmpty();
        Map<String, String> looped = new TreeMap<>(sources);
        looped.put("io/kvledger/node/c/C.java", "package io.kvledger.node.c;\nimport io.kvledger.node.A;\nclass C {}");
        assertThat(cycles(graph(looped))).containsExactly(
                "io.kvledger.node -> io.kvledger.node.b -> io.kvledger.node.c -> io.kvledger.node");
    }

    /** Package to the node packages it names, from the source texts (path to text). */
    static Map<String, Set<String>> graph(Map<String, String> sources) {
        Map<String, Set<String>> graph = new TreeMap<>();
        for (Map.Entry<String, String> e : sources.entrySet()) {
            String path = e.getKey();
            String pkg = path.substring(0, path.lastIndexOf('/')).replace('/', '.');
            Set<String> deps = graph.computeIfAbsent(pkg, k -> new TreeSet<>());
            Matcher m = REF.matcher(blank(e.getValue()));
            while (m.find()) {
                String target = m.group(1);
                if (!target.equals(pkg)) {
                    deps.add(target);
                }
            }
        }
        return graph;
    }

    /** Each elementary cycle found by a depth-first search, as "a -> b -> a", once per starting package. */
    static List<String> cycles(Map<String, Set<String>> graph) {
        List<String> out = new ArrayList<>();
        Set<String> done = new TreeSet<>();
        for (String start : graph.keySet()) {
            search(graph, start, new ArrayList<>(List.of(start)), done, out);
            done.add(start);
        }
        return out;
    }

    private static void search(Map<String, Set<String>> graph, String at, List<String> path, Set<String> done,
                               List<String> out) {
        for (String next : graph.getOrDefault(at, Set.of())) {
            if (done.contains(next)) {
                continue;
            }
            if (next.equals(path.get(0))) {
                out.add(String.join(" -> ", path) + " -> " + next);
            } else if (!path.contains(next)) {
                path.add(next);
                search(graph, next, path, done, out);
                path.removeLast();
            }
        }
    }

    /** Blanks comments and string literals, so that only code is scanned. */
    static String blank(String s) {
        StringBuilder b = new StringBuilder(s.length());
        int i = 0;
        while (i < s.length()) {
            if (s.startsWith("//", i)) {
                while (i < s.length() && s.charAt(i) != '\n') {
                    i++;
                }
            } else if (s.startsWith("/*", i)) {
                int e = s.indexOf("*/", i + 2);
                i = e < 0 ? s.length() : e + 2;
            } else if (s.charAt(i) == '"') {
                i++;
                while (i < s.length() && s.charAt(i) != '"') {
                    i += s.charAt(i) == '\\' ? 2 : 1;
                }
                i++;
            } else {
                b.append(s.charAt(i));
                i++;
            }
        }
        return b.toString();
    }
}
