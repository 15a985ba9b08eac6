package io.kvledger.cli.tidy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * No {@code default ->} branch may swallow a new event or effect type: every switch in the
 * project's main sources (every module's and the benchmarks') whose case labels name a sealed type (or one of its subtypes) must be
 * exhaustive without a {@code default}, so adding a variant fails to compile until every router
 * handles it.
 *
 * <p>How it decides, as text (this module's tests see every module's sources on disk):
 * <ol>
 *   <li>the sealed names are every {@code sealed interface|class X} declared in
 *       {@code modules/&#42;/src/main/java} and {@code benchmarks/src/main/java}, plus every type declared as implementing or extending
 *       one of them (found by a fixed point over the declarations);</li>
 *   <li>a switch is "over a sealed type" when one of its own case labels starts with such a name
 *       ({@code case Effect.PostWrite w}, {@code case NodeEvent.Tick _}, {@code case Decision d}) and
 *       none names a type outside them (a switch with {@code case String s} or
 *       {@code case Collection<?> c} next to them is over a wider type, such as Object);</li>
 *   <li>such a switch fails the test when its own body (nested switches excluded) holds
 *       {@code default ->} or {@code default:}.</li>
 * </ol>
 * Switches over strings, numbers, characters and enums may keep a default (they must then
 * reject or be total, which review checks, not this test). Comments and string literals are
 * blanked before scanning.
 */
class SealedSwitchTidyTest {

    private static final Pattern SEALED = Pattern.compile("\\bsealed\\s+(?:interface|class)\\s+(\\w+)");
    private static final Pattern DECL = Pattern.compile(
            "\\b(?:record|class|interface|enum)\\s+(\\w+)[^{;]*?\\b(?:implements|extends)\\s+([^{]*)\\{");
    private static final Pattern SWITCH = Pattern.compile("\\bswitch\\s*\\(");
    private static final Pattern CASE = Pattern.compile("\\bcase\\s+([A-Z]\\w*)");
    private static final Pattern DEFAULT = Pattern.compile("\\bdefault\\s*(?:->|:)");
    private static final Pattern JDK_IMPORT = Pattern.compile("\\bimport\\s+javax?\\.[\\w.]*\\.([A-Z]\\w*)\\s*;");
    /** A type-pattern label ({@code case Name<..>[] binding}): group 1 is the type's first name. */
    private static final Pattern TYPE_CASE = Pattern.compile(
            "\\bcase\\s+([A-Z]\\w*)(?:\\.\\w+)*\\s*(?:<[^>]*>)?\\s*(?:\\[\\s*\\])?\\s+[a-z_]\\w*\\s*(?:->|:|\\bwhen\\b)");

    @Test
    void no_switch_over_a_sealed_type_has_a_default_branch() throws IOException {
        List<Path> files = new ArrayList<>();
        List<Path> roots = new ArrayList<>();
        try (Stream<Path> modules = Files.list(ProjectRoot.find().resolve("modules"))) {
            roots.addAll(modules.sorted().toList());
        }
        roots.add(ProjectRoot.find().resolve("benchmarks"));
        for (Path m : roots) {
            Path main = m.resolve("src/main/java");
            if (Files.isDirectory(main)) {
                try (Stream<Path> walk = Files.walk(main)) {
                    walk.filter(p -> p.toString().endsWith(".java")).sorted().forEach(files::add);
                }
            }
        }
        List<String> names = new ArrayList<>();
        List<String> texts = new ArrayList<>();
        for (Path f : files) {
            names.add(ProjectRoot.find().relativize(f).toString());
            texts.add(blank(Files.readString(f, StandardCharsets.UTF_8)));
        }
        Set<String> sealed = sealedNames(texts);
        assertThat(sealed).as("the sealed event and effect types are found")
                .contains("NodeEvent", "Effect", "HookReply", "IoCommand", "Decision", "JournalEntry", "AdapterEvent",
                        "TransferEvent", "PhaseChanged", "RequestAdmitted");
        List<String> violations = new ArrayList<>();
        for (int i = 0; i < texts.size(); i++) {
            violations.addAll(scan(names.get(i), texts.get(i), sealed));
        }
        assertThat(violations).as("switches over sealed types with a default branch").isEmpty();
    }

    @Test
    void the_scanner_flags_a_default_over_a_sealed_type_and_nothing_else() {
        String src = blank("""
                sealed interface Ev permits A, B {}
                record A() implements Ev {}
                record B() implements Ev {}
                class R {
                    int f(Ev e, String s) {
                        int x = switch (s) { case "a" -> 1; default -> 2; };
                        switch (e) {
                            case A a -> { int y = switch (s) { case "b" -> 3; default -> 4; }; }
                            default -> { } // swallowed
                        }
                        return switch (e) { case A a -> 1; case B b -> 2; };
                    }
                    String g() { return "default -> switch (e) { case A a -> 1; }"; }
                    int h(Object o) { return switch (o) { case A a -> 1; case String t -> 2; default -> 3; }; }
                    int k(Object o) { return switch (o) { case B b -> 1; default -> 2; }; }
                }
                """);
        Set<String> sealed = sealedNames(List.of(src));
        assertThat(sealed).containsExactlyInAnyOrder("Ev", "A", "B");
        assertThat(scan("R.java", src, sealed)).containsExactly("R.java:9: default in a switch over A",
                "R.java:15: default in a switch over B");
        // a JDK type imported under a sealed member's simple name (java.util.Map beside PyValue.Map)
        String jdk = blank("""
                import java.util.Map;
                class J {
                    Object f(Object o) { return switch (o) { case Map<?, ?> m -> m; default -> o; }; }
                }
                """);
        assertThat(scan("J.java", jdk, Set.of("Map"))).isEmpty();
    }

    /** Sealed names and, to a fixed point, the types declared as their subtypes. */
    static Set<String> sealedNames(List<String> texts) {
        Set<String> out = new LinkedHashSet<>();
        for (String t : texts) {
            Matcher m = SEALED.matcher(t);
            while (m.find()) {
                out.add(m.group(1));
            }
        }
        boolean grew = true;
        while (grew) {
            grew = false;
            for (String t : texts) {
                Matcher m = DECL.matcher(t);
                while (m.find()) {
                    if (out.contains(m.group(1))) {
                        continue;
                    }
                    for (String sup : m.group(2).split("[^\\w]+")) {
                        if (out.contains(sup)) {
                            out.add(m.group(1));
                            grew = true;
                            break;
                        }
                    }
                }
            }
        }
        return out;
    }

    /** Violations in one blanked source text, as {@code "file:line: default in a switch over ..."}. */
    static List<String> scan(String file, String text, Set<String> sealed) {
        List<String> out = new ArrayList<>();
        // a name the file imports from the JDK (import java.util.Map;) is the JDK's type there,
        // not a sealed type's member of the same simple name (PyValue.Map)
        Set<String> jdk = new LinkedHashSet<>();
        Matcher im = JDK_IMPORT.matcher(text);
        while (im.find()) {
            jdk.add(im.group(1));
        }
        Matcher sw = SWITCH.matcher(text);
        while (sw.find()) {
            int open = text.indexOf('{', closeParen(text, sw.end() - 1) + 1);
            if (open < 0) {
                continue;
            }
            // the switch's own body; blocks nested deeper (case bodies, nested switches) are blanked
            StringBuilder own = new StringBuilder();
            int depth = 0;
            int end = open;
            for (int i = open; i < text.length(); i++) {
                char c = text.charAt(i);
                if (c == '{') {
                    depth++;
                } else if (c == '}') {
                    depth--;
                    if (depth == 0) {
                        end = i;
                        break;
                    }
                }
                own.append(depth == 1 || c == '\n' ? c : ' ');
            }
            String body = own.toString();
            Set<String> named = new LinkedHashSet<>();
            Matcher cm = CASE.matcher(body);
            while (cm.find()) {
                if (sealed.contains(cm.group(1)) && !jdk.contains(cm.group(1))) {
                    named.add(cm.group(1));
                }
            }
            // a label of a type outside the sealed ones (case String s, case Collection<?> c,
            // case Object[] a): the switch is over a wider type (Object), whose default is needed
            boolean wider = false;
            Matcher tm = TYPE_CASE.matcher(body);
            while (tm.find()) {
                if (!sealed.contains(tm.group(1)) || jdk.contains(tm.group(1))) {
                    wider = true;
                }
            }
            Matcher dm = DEFAULT.matcher(body);
            if (!named.isEmpty() && !wider && dm.find()) {
                int line = 1;
                int at = open + dm.start();
                for (int i = 0; i < at; i++) {
                    if (text.charAt(i) == '\n') {
                        line++;
                    }
                }
                out.add(file + ":" + line + ": default in a switch over " + String.join("/", named));
            }
            if (end <= open) {
                break;
            }
        }
        return out;
    }

    private static int closeParen(String text, int openParen) {
        int depth = 0;
        for (int i = openParen; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '(') {
                depth++;
            } else if (c == ')' && --depth == 0) {
                return i;
            }
        }
        return text.length();
    }

    /** Blanks comments, string and char literals (keeping newlines), so only code is scanned. */
    static String blank(String s) {
        StringBuilder b = new StringBuilder(s.length());
        int i = 0;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (s.startsWith("//", i)) {
                while (i < s.length() && s.charAt(i) != '\n') {
                    b.append(' ');
                    i++;
                }
            } else if (s.startsWith("/*", i)) {
                int e = s.indexOf("*/", i + 2);
                e = e < 0 ? s.length() : e + 2;
                for (; i < e; i++) {
                    b.append(s.charAt(i) == '\n' ? '\n' : ' ');
                }
            } else if (s.startsWith("\"\"\"", i)) {
                int e = s.indexOf("\"\"\"", i + 3);
                e = e < 0 ? s.length() : e + 3;
                for (; i < e; i++) {
                    b.append(s.charAt(i) == '\n' ? '\n' : ' ');
                }
            } else if (c == '"' || c == '\'') {
                b.append(' ');
                i++;
                while (i < s.length() && s.charAt(i) != c && s.charAt(i) != '\n') {
                    if (s.charAt(i) == '\\') {
                        b.append(' ');
                        i++;
                    }
                    b.append(' ');
                    i++;
                }
                b.append(' ');
                i++;
            } else {
                b.append(c);
                i++;
            }
        }
        return b.toString();
    }
}
