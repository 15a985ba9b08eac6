package io.kvledger.cli.tidy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * A public top-level type in a module's main code is API: some file in another package (any
 * module's main or test code, the benchmarks) must name it, or it becomes package-private
 * (issue 30, item 4: public only what is used from elsewhere).
 *
 * <p>How it decides, as text (this module's tests see every module's sources on disk): a type
 * {@code p.T} declared {@code public} at the top of a file under {@code modules/&#42;/src/main/java}
 * is used from elsewhere when a Java file of another package names {@code p.T} (an import, a
 * static import, a qualified name) or imports {@code p.*} and says {@code T}, comments left out;
 * or when a build or resource file (a {@code pom.xml}, the {@code kvledger} launcher, anything
 * under {@code src/&#42;/resources}) names {@code p.T}, as a main class, an AOT training class or a
 * {@code META-INF/services} entry does. Benchmarks are read but not checked: JMH needs its
 * classes public.
 */
class PublicTypeTidyTest {

    private static final Pattern PACKAGE = Pattern.compile("(?m)^\\s*package\\s+([\\w.]+)\\s*;");
    private static final Pattern PUBLIC_TOP = Pattern.compile(
            "(?m)^public\\s+(?:(?:final|abstract|sealed|non-sealed|static|strictfp)\\s+)*(?:class|interface|enum|record|@interface)\\s+(\\w+)");
    private static final Pattern DOTTED = Pattern.compile("(?<![\\w.])[A-Za-z_]\\w*(?:\\.[A-Za-z_]\\w*)+");
    private static final Pattern WILDCARD = Pattern.compile("(?m)^\\s*import\\s+([\\w.]+)\\.\\*\\s*;");

    @Test
    void every_public_top_level_type_is_named_from_another_package() throws IOException {
        ProjectSources sources = ProjectSources.read();
        Map<String, String> java = sources.java();
        Map<String, String> other = sources.other();
        List<String> checked = sources.checked();

        List<String> lonely = unreferenced(java, checked, other);

        assertThat(lonely)
                .as("public top-level types that no file of another package names; make each package-private "
                        + "(drop `public`), or say where it is used from if this test missed it")
                .isEmpty();
    }

    @Test
    void a_type_named_only_in_its_own_package_or_in_a_comment_is_reported() {
        Map<String, String> java = new LinkedHashMap<>();
        java.put("a/Lonely.java", "package p.a;\npublic final class Lonely {}\n");
        java.put("a/Sibling.java", "package p.a;\nclass Sibling { Lonely l; }\n");
        java.put("a/Imported.java", "package p.a;\npublic record Imported(int x) {}\n");
        java.put("a/Qualified.java", "package p.a;\npublic sealed interface Qualified permits Q1 {}\n");
        java.put("a/Wild.java", "package p.a;\npublic enum Wild { X }\n");
        java.put("a/Listed.java", "package p.a;\npublic class Listed {}\n");
        java.put("a/Private.java", "package p.a;\nfinal class Private {}\n");
        java.put("b/User.java", """
                package p.b;
                import p.a.Imported;
                // p.a.Lonely is mentioned here only in a comment
                /* and p.a.Lonely here */
                class User { p.a.Qualified q; String s = "Lonely"; }
                """);
        java.put("c/Star.java", "package p.c;\nimport p.a.*;\nclass Star { Wild w; }\n");
        Map<String, String> other = Map.of("META-INF/services/x", "p.a.Listed\n");

        List<String> lonely = unreferenced(java, List.copyOf(java.keySet()), other);

        assertThat(lonely).containsExactly("p.a.Lonely (a/Lonely.java)");
    }

    /**
     * The public top-level types declared in {@code checked} that no file of another package
     * names, as {@code "p.T (file)"}, sorted.
     *
     * @param java    every Java file's text by path
     * @param checked the paths (keys of {@code java}) whose public types must be named elsewhere
     * @param other   build and resource files by path, where a fully qualified name counts
     */
    static List<String> unreferenced(Map<String, String> java, List<String> checked, Map<String, String> other) {
        // one pass over every file: the dotted names it says (and their prefixes), by the packages saying them
        Map<String, String> pkg = new LinkedHashMap<>();
        Map<String, String> code = new LinkedHashMap<>();
        Map<String, Set<String>> saidFrom = new HashMap<>();
        Map<String, Set<String>> wildcardUsers = new HashMap<>();
        for (Map.Entry<String, String> e : java.entrySet()) {
            String c = stripComments(e.getValue());
            code.put(e.getKey(), c);
            Matcher m = PACKAGE.matcher(c);
            String p = m.find() ? m.group(1) : "";
            pkg.put(e.getKey(), p);
            for (String name : dottedNames(c)) {
                saidFrom.computeIfAbsent(name, k -> new HashSet<>()).add(p);
            }
            Matcher w = WILDCARD.matcher(c);
            while (w.find()) {
                wildcardUsers.computeIfAbsent(w.group(1), k -> new HashSet<>()).add(e.getKey());
            }
        }
        Set<String> saidElsewhere = new HashSet<>();
        for (String t : other.values()) {
            saidElsewhere.addAll(dottedNames(t));
        }
        TreeSet<String> lonely = new TreeSet<>();
        for (String f : checked) {
            String p = pkg.get(f);
            Matcher m = PUBLIC_TOP.matcher(code.get(f));
            if (!m.find()) {
                continue;
            }
            String name = m.group(1);
            String qualified = p + "." + name;
            boolean used = saidElsewhere.contains(qualified)
                    || saidFrom.getOrDefault(qualified, Set.of()).stream().anyMatch(q -> !q.equals(p));
            Pattern simple = Pattern.compile("(?<![\\w.])" + Pattern.quote(name) + "(?!\\w)");
            for (String user : wildcardUsers.getOrDefault(p, Set.of())) {
                used |= !pkg.get(user).equals(p) && simple.matcher(blankStrings(code.get(user))).find();
            }
            if (!used) {
                lonely.add(qualified + " (" + f + ")");
            }
        }
        return List.copyOf(lonely);
    }

    /** Every dotted name in the text ({@code a.b.C.d}) and each of its prefixes ({@code a.b}, {@code a.b.C}). */
    private static Set<String> dottedNames(String text) {
        Set<String> out = new HashSet<>();
        Matcher m = DOTTED.matcher(text);
        while (m.find()) {
            String chain = m.group();
            for (int i = chain.indexOf('.'); i >= 0; i = chain.indexOf('.', i + 1)) {
                out.add(chain.substring(0, i));
            }
            out.add(chain);
        }
        return out;
    }

    /** The text with comments replaced by spaces; string and character literals are kept. */
    static String stripComments(String s) {
        StringBuilder out = new StringBuilder(s.length());
        int i = 0;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (s.startsWith("\"\"\"", i)) {
                int end = s.indexOf("\"\"\"", i + 3);
                end = end < 0 ? s.length() : end + 3;
                out.append(s, i, end);
                i = end;
            } else if (c == '"' || c == '\'') {
                int j = i + 1;
                while (j < s.length() && s.charAt(j) != c && s.charAt(j) != '\n') {
                    j += s.charAt(j) == '\\' ? 2 : 1;
                }
                j = Math.min(j + 1, s.length());
                out.append(s, i, j);
                i = j;
            } else if (s.startsWith("//", i)) {
                while (i < s.length() && s.charAt(i) != '\n') {
                    out.append(' ');
                    i++;
                }
            } else if (s.startsWith("/*", i)) {
                int end = s.indexOf("*/", i + 2);
                end = end < 0 ? s.length() : end + 2;
                for (; i < end; i++) {
                    out.append(s.charAt(i) == '\n' ? '\n' : ' ');
                }
            } else {
                out.append(c);
                i++;
            }
        }
        return out.toString();
    }

    /** The code with the insides of string literals blanked, so a word in a message is not a use. */
    private static String blankStrings(String code) {
        return code.replaceAll("\"\"\"[\\s\\S]*?\"\"\"|\"(?:\\\\.|[^\"\\\\\\n])*\"", "\"\"");
    }
}
