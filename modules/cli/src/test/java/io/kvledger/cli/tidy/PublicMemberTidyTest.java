package io.kvledger.cli.tidy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
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
 * A public or protected member of a main-code type that other packages can reach (a method, a
 * constructor, a field or a nested type of a public top-level type, or of a public or protected
 * nested type of one) is API: some file of another package (any module's main or test code, the
 * benchmarks) must use it, or it becomes package-private or private (issue 30, item 4: public only
 * what is used from elsewhere; {@link PublicTypeTidyTest} does the same for top-level types).
 *
 * <p>How it decides, as text, comments and the insides of string literals left out. The search is
 * by name, so it errs towards "used": a name said elsewhere counts even when it belongs to some
 * other type.
 * <ul>
 * <li>a static method or field {@code m} of {@code T} is used where another package's file says
 *     {@code T.m} or {@code T::m}, or imports it statically ({@code import static ...T.m;} or
 *     {@code ...T.*;} and then says {@code m});</li>
 * <li>an instance method or field {@code m} is used where another package's file says {@code .m}
 *     or {@code ::m}, or says {@code m} at all when that file extends a class (an inherited member
 *     is named bare);</li>
 * <li>a constructor of {@code T} is used where another package's file says {@code new T},
 *     {@code T::new} or {@code extends T}, or a build or resource file names the type (a
 *     {@code META-INF/services} provider is made by its public no-argument constructor);</li>
 * <li>a nested type {@code N} is used where another package's file says {@code N}, or where the
 *     declaration of a member of the same file that is used names {@code N} (a caller of
 *     {@code List<N> all()} uses {@code N} without saying it).</li>
 * </ul>
 * Not checked, because the language or a tool needs them public whatever uses them: a method
 * marked {@code @Override} (an override cannot narrow), {@code toString}/{@code equals}/{@code
 * hashCode}, {@code public static void main}, the members of interfaces and annotation types
 * (public by rule), a record's accessor of one of its components, members of enum constants'
 * bodies, of anonymous and of local classes (not reachable by name), and members annotated for
 * picocli ({@code @Option}, {@code @Parameters}, {@code @Spec}, {@code @Mixin}, {@code
 * @ParentCommand}), which it sets by reflection. The benchmarks are read but not checked: JMH
 * needs its members public. Anything else that must stay public is in {@link #ALLOWED}, with the
 * reason.
 */
class PublicMemberTidyTest {

    /** Members kept public although no other package names them, each with the reason. */
    static final Map<String, String> ALLOWED = Map.ofEntries();

    private static final Pattern PACKAGE = Pattern.compile("(?m)^\\s*package\\s+([\\w.]+)\\s*;");
    private static final Pattern TYPE_DECL = Pattern.compile("(?<![\\w@.])(class|interface|enum|record|@interface)\\s+(\\w+)");
    private static final Pattern ACCESS = Pattern.compile("(?<![\\w.@])(public|protected)(?!\\w)");
    private static final Pattern ANNOTATION = Pattern.compile("@\\s*([\\w.]+)(\\s*\\([^()]*(?:\\([^()]*\\)[^()]*)*\\))?");
    private static final Pattern WORD = Pattern.compile("[\\w$]+");
    private static final Set<String> REFLECTED = Set.of("Option", "Parameters", "Spec", "Mixin", "ParentCommand", "ArgGroup");
    private static final Set<String> OBJECT_METHODS = Set.of("toString", "equals", "hashCode");

    /** A public or protected member: where it is declared and what it is. */
    record Member(String pkg, String type, String name, String kind, boolean isStatic, String file, int line, String decl) {
        String key() {
            return pkg + "." + type + "#" + (kind.equals("constructor") ? "<init>" : name);
        }

        String describe() {
            return key() + " (" + kind + (isStatic ? ", static" : "") + ", " + file + ":" + line + ")";
        }
    }

    @Test
    void every_reachable_public_member_is_used_from_another_package() throws IOException {
        ProjectSources sources = ProjectSources.read();
        Map<String, String> java = sources.java();
        Map<String, String> other = sources.other();
        List<String> checked = sources.checked();

        List<Member> members = new ArrayList<>();
        for (String f : checked) {
            members.addAll(members(f, java.get(f)));
        }
        assertThat(members).as("public members found").hasSizeGreaterThan(200);
        List<String> lonely = unused(members, java, other);
        assertThat(lonely)
                .as("public or protected members that no file of another package uses; make each package-private or "
                        + "private, or add it to ALLOWED with the reason it must stay public")
                .isEmpty();
        Set<String> keys = new HashSet<>();
        members.forEach(m -> keys.add(m.key()));
        assertThat(ALLOWED.keySet()).as("ALLOWED entries naming no public member (stale)").allMatch(keys::contains);
    }

    @Test
    void a_member_used_only_in_its_own_package_is_reported() {
        Map<String, String> java = new LinkedHashMap<>();
        java.put("a/T.java", """
                package p.a;
                import java.util.List;
                public final class T implements Runnable {
                    public static final int USED_CONST = 1;
                    public static final int LONELY_CONST = 2;
                    public static int[] ARR = {1, 2};
                    public final String used;
                    public int lonelyField;
                    public T(String s) { used = s; }
                    T() { this("x"); }
                    public static T usedStatic() { return new T(); }
                    public static void lonelyStatic(List<String> l) { Runnable r = new Runnable() { public void run() {} }; }
                    public void usedMethod() {}
                    public <X> X lonelyMethod(Class<X> c) { return null; }
                    @Override
                    public void run() {}
                    public String toString() { return "lonely"; }
                    public static void main(String[] args) {}
                    @picocli.CommandLine.Option(names = {"--x"}) public int option;
                    public enum Used { A }
                    public record Lonely(int x) {
                        public Lonely {}
                        public Lonely(String s) { this(s.length()); }
                        public int x() { return x; }
                        public int lonelyAccessor() { return x; }
                    }
                    record Hidden(int y) { public int z() { return y; } }
                    public enum Shown { S }
                    public Shown shown() { return Shown.S; }
                }
                """);
        java.put("a/Same.java", """
                package p.a;
                class Same { void f() { T.lonelyStatic(null); new T("s").lonelyMethod(null); int i = T.LONELY_CONST; } }
                """);
        java.put("b/User.java", """
                package p.b;
                import p.a.T;
                class User {
                    // T.LONELY_CONST lonelyField in a comment
                    String s = "T.lonelyStatic() .lonelyField";
                    void f() { T t = T.usedStatic(); t.usedMethod(); int c = T.USED_CONST; T.Used u = null; String x = t.used; t.shown(); }
                }
                """);
        java.put("c/Maker.java", "package p.c;\nclass Maker { Object o = new p.a.T(\"x\"); int[] a = p.a.T.ARR; }\n");

        List<Member> members = members("a/T.java", java.get("a/T.java"));
        List<String> lonely = unused(members, java, Map.of());

        assertThat(lonely).containsExactly(
                "p.a.T#LONELY_CONST (field, static, a/T.java:5)",
                "p.a.T#Lonely (nested type, static, a/T.java:21)",
                "p.a.T#lonelyField (field, a/T.java:8)",
                "p.a.T#lonelyMethod (method, a/T.java:14)",
                "p.a.T#lonelyStatic (method, static, a/T.java:12)",
                "p.a.T.Lonely#<init> (constructor, a/T.java:23)",
                "p.a.T.Lonely#lonelyAccessor (method, a/T.java:25)");
    }

    /**
     * The members of {@code members} that no file of another package uses, as {@link
     * Member#describe()}, sorted, leaving out those in {@link #ALLOWED}.
     */
    static List<String> unused(List<Member> members, Map<String, String> java, Map<String, String> other) {
        Map<String, String> pkg = new LinkedHashMap<>();
        Map<String, String> code = new LinkedHashMap<>();
        Map<String, List<String>> byWord = new HashMap<>(); // the files saying each word, so that a member's few are searched
        for (Map.Entry<String, String> e : java.entrySet()) {
            String c = blankStrings(PublicTypeTidyTest.stripComments(e.getValue()));
            Matcher m = PACKAGE.matcher(c);
            pkg.put(e.getKey(), m.find() ? m.group(1) : "");
            code.put(e.getKey(), c);
            Set<String> words = new HashSet<>();
            Matcher w = WORD.matcher(c);
            while (w.find()) {
                words.add(w.group());
            }
            words.forEach(x -> byWord.computeIfAbsent(x, k -> new ArrayList<>()).add(e.getKey()));
        }
        String otherText = String.join("\n", other.values());
        TreeSet<String> lonely = new TreeSet<>();
        List<Member> usedMembers = new ArrayList<>();
        List<Member> ordered = new ArrayList<>(members.stream().filter(m -> !m.kind().equals("nested type")).toList());
        ordered.addAll(members.stream().filter(m -> m.kind().equals("nested type")).toList());
        for (Member m : ordered) {
            if (ALLOWED.containsKey(m.key())) {
                usedMembers.add(m);
                continue;
            }
            String simpleType = m.type().substring(m.type().lastIndexOf('.') + 1);
            Pattern use = usePattern(m, simpleType);
            Pattern staticImport = Pattern.compile("import\\s+static\\s+[\\w.]*\\b" + Pattern.quote(simpleType) + "\\s*\\.\\s*(?:"
                    + Pattern.quote(m.name()) + "|\\*)\\s*;");
            Pattern word = Pattern.compile("(?<![\\w$])" + Pattern.quote(m.name()) + "(?![\\w$])");
            boolean used = m.kind().equals("constructor") && otherText.contains(m.pkg() + "." + m.type())
                    && Pattern.compile("(?<![\\w$])" + Pattern.quote(m.pkg() + "." + m.type()) + "(?![\\w$])").matcher(otherText).find();
            String said = m.kind().equals("constructor") ? simpleType : m.name();
            for (String f : byWord.getOrDefault(said, List.of())) {
                if (used) {
                    break;
                }
                if (pkg.get(f).equals(m.pkg())) {
                    continue;
                }
                String c = code.get(f);
                used = use.matcher(c).find()
                        || (m.isStatic() && !m.kind().equals("nested type") && staticImport.matcher(c).find() && word.matcher(c).find())
                        || (!m.isStatic() && !m.kind().equals("constructor") && c.contains("extends") && word.matcher(c).find());
            }
            if (!used && m.kind().equals("nested type")) {
                Pattern named = Pattern.compile("(?<![\\w$])" + Pattern.quote(m.name()) + "(?![\\w$])");
                used = usedMembers.stream().anyMatch(u -> u.file().equals(m.file()) && named.matcher(u.decl()).find());
            }
            if (used) {
                usedMembers.add(m);
            } else {
                lonely.add(m.describe());
            }
        }
        return List.copyOf(lonely);
    }

    private static Pattern usePattern(Member m, String simpleType) {
        String n = Pattern.quote(m.name());
        String t = Pattern.quote(simpleType);
        return switch (m.kind()) {
            case "constructor" -> Pattern.compile("\\bnew\\s+(?:[\\w.]+\\.)?" + t + "\\s*[(<]|(?<![\\w$])" + t
                    + "\\s*::\\s*new\\b|\\bextends\\s+(?:[\\w.]+\\.)?" + t + "(?![\\w$])");
            case "nested type" -> Pattern.compile("(?<![\\w$])" + n + "(?![\\w$])");
            default -> m.isStatic()
                    ? Pattern.compile("(?<![\\w$])" + t + "\\s*(?:\\.|::)\\s*(?:<[^>]*>\\s*)?" + n + "(?![\\w$])")
                    : Pattern.compile("(?:\\.|::)\\s*(?:<[^>]*>\\s*)?" + n + "(?![\\w$])");
        };
    }

    /** A type being read: its name as reached from the package ({@code Outer.Inner}), whether other packages reach it. */
    private record Frame(String name, String kind, boolean reachable, Set<String> components) {}

    /**
     * The public and protected members of the reachable types declared in one file, read with a
     * brace scanner: a declaration is the text since the last {@code ;}, <code>{</code> or
     * <code>}</code> of a type's body.
     */
    static List<Member> members(String file, String source) {
        String c = blankStrings(PublicTypeTidyTest.stripComments(source));
        Matcher pm = PACKAGE.matcher(c);
        String pkg = pm.find() ? pm.group(1) : "";
        List<Member> out = new ArrayList<>();
        Deque<Frame> stack = new ArrayDeque<>(); // a null-named frame is a block that is not a type body
        int start = 0;
        boolean consumed = false; // the declaration since start was read already (a field's initializer goes on)
        int paren = 0;
        for (int i = 0; i < c.length(); i++) {
            char ch = c.charAt(i);
            if (ch == '(') {
                paren++;
            } else if (ch == ')') {
                paren--;
            }
            if (paren > 0 || (ch != '{' && ch != '}' && ch != ';')) {
                continue;
            }
            Frame top = stack.peek();
            boolean inTypeBody = stack.isEmpty() || top.name() != null;
            String decl = c.substring(start, i);
            if (ch == '{') {
                Frame pushed = new Frame(null, "block", false, Set.of());
                if (inTypeBody && !consumed) {
                    String da = withoutAnnotations(decl);
                    Matcher td = TYPE_DECL.matcher(da);
                    boolean enumConstants = top != null && top.kind().equals("enum") && !decl.contains(";") && !stack.isEmpty()
                            && !ACCESS.matcher(decl).find() && !td.find();
                    td.reset();
                    if (!enumConstants && td.find() && !decl.contains("=") && !decl.contains("new ")) {
                        String kind = td.group(1);
                        boolean access = ACCESS.matcher(da.substring(0, td.start())).find();
                        boolean reachable = stack.isEmpty() ? access
                                : top.reachable() && (access || top.kind().equals("interface") || top.kind().equals("@interface"));
                        String name = stack.isEmpty() ? td.group(2) : top.name() + "." + td.group(2);
                        Set<String> components = new HashSet<>();
                        if (kind.equals("record")) {
                            Matcher h = Pattern.compile("\\(([^)]*)\\)").matcher(da.substring(td.end()));
                            if (h.find()) {
                                for (String comp : h.group(1).split(",")) {
                                    Matcher id = Pattern.compile("(\\w+)\\s*$").matcher(withoutAnnotations(comp).strip());
                                    if (id.find()) {
                                        components.add(id.group(1));
                                    }
                                }
                            }
                        }
                        if (!stack.isEmpty() && access) {
                            record(out, pkg, top, decl, file, c, start);
                        }
                        pushed = new Frame(name, kind, reachable, components);
                    } else if (!stack.isEmpty() && !enumConstants) {
                        record(out, pkg, top, decl, file, c, start);
                    }
                }
                stack.push(pushed);
                start = i + 1;
                consumed = false;
            } else if (ch == '}') {
                if (!stack.isEmpty()) {
                    Frame closed = stack.pop();
                    // a block inside a field's initializer (an array, a lambda, an anonymous class) ends; the field goes on
                    consumed = closed.name() == null && !stack.isEmpty() && stack.peek().name() != null && isOpenInitializer(c, i);
                }
                start = i + 1;
            } else {
                if (inTypeBody && !consumed && !stack.isEmpty()) {
                    record(out, pkg, top, decl, file, c, start);
                }
                start = i + 1;
                consumed = false;
            }
        }
        return out;
    }

    /** Whether the text after a closing brace at {@code i} goes on with the same declaration (not a new one). */
    private static boolean isOpenInitializer(String c, int i) {
        int j = i + 1;
        while (j < c.length() && Character.isWhitespace(c.charAt(j))) {
            j++;
        }
        return j < c.length() && (c.charAt(j) == ';' || c.charAt(j) == ',' || c.charAt(j) == ')' || c.charAt(j) == '.');
    }

    /** Reads one declaration of a type body, adding it when it is public or protected and checked. */
    private static void record(List<Member> out, String pkg, Frame type, String decl, String file, String c, int start) {
        if (type == null || type.name() == null || !type.reachable() || type.kind().equals("interface")
                || type.kind().equals("@interface")) {
            return;
        }
        Matcher a = ANNOTATION.matcher(decl);
        boolean override = false;
        boolean reflected = false;
        while (a.find()) {
            String n = a.group(1).substring(a.group(1).lastIndexOf('.') + 1);
            override |= n.equals("Override");
            reflected |= REFLECTED.contains(n);
        }
        String d = withoutAnnotations(decl);
        Matcher acc = ACCESS.matcher(d);
        if (!acc.find() || override || reflected) {
            return;
        }
        String head = d.substring(acc.start());
        boolean isStatic = Pattern.compile("(?<!\\w)static(?!\\w)").matcher(head).find();
        int line = 1 + (int) c.substring(0, start + leadingBlank(decl)).chars().filter(x -> x == '\n').count();
        String simple = type.name().substring(type.name().lastIndexOf('.') + 1);
        Matcher td = TYPE_DECL.matcher(head);
        if (td.find() && (head.indexOf('(') < 0 || td.start() < head.indexOf('('))) {
            out.add(new Member(pkg, type.name(), td.group(2), "nested type", true, file, line, head));
            return;
        }
        int paren = head.indexOf('(');
        int eq = head.indexOf('=');
        if (paren >= 0 && (eq < 0 || paren < eq)) {
            Matcher id = Pattern.compile("(\\w+)\\s*$").matcher(head.substring(0, paren));
            if (!id.find()) {
                return;
            }
            String name = id.group(1);
            String params = head.substring(paren + 1, Math.max(paren + 1, head.indexOf(')', paren)));
            if (name.equals(simple) && type.kind().equals("record") && canonical(params, type.components())) {
                return; // a record's canonical constructor is as accessible as the record, by rule
            } else if (name.equals(simple)) {
                out.add(new Member(pkg, type.name(), name, "constructor", false, file, line, head));
            } else if (OBJECT_METHODS.contains(name)
                    || (name.equals("main") && isStatic && params.contains("String"))
                    || (type.kind().equals("record") && type.components().contains(name) && params.isBlank())) {
                return;
            } else {
                out.add(new Member(pkg, type.name(), name, "method", isStatic, file, line, head));
            }
            return;
        }
        String beforeInit = eq >= 0 ? head.substring(0, eq) : head;
        Matcher id = Pattern.compile("(\\w+)\\s*(?:\\[\\s*\\])*\\s*$").matcher(beforeInit.strip());
        if (!id.find()) {
            return;
        }
        if (id.group(1).equals(simple) && eq < 0) {
            return; // a record's compact constructor: canonical, as accessible as the record by rule
        }
        out.add(new Member(pkg, type.name(), id.group(1), "field", isStatic, file, line, head));
    }

    /** Whether the parameters are the record's components (by name), which makes the constructor canonical. */
    private static boolean canonical(String params, Set<String> components) {
        Set<String> names = new HashSet<>();
        for (String p : params.split(",")) {
            Matcher id = Pattern.compile("(\\w+)\\s*$").matcher(withoutAnnotations(p).strip());
            if (id.find()) {
                names.add(id.group(1));
            }
        }
        return names.equals(components);
    }

    private static int leadingBlank(String s) {
        int i = 0;
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
            i++;
        }
        return i;
    }

    private static String withoutAnnotations(String s) {
        return ANNOTATION.matcher(s).replaceAll(" ");
    }

    /** The code with the insides of string and character literals blanked, so a word in a message is not a use. */
    private static String blankStrings(String code) {
        Matcher m = LITERAL.matcher(code);
        StringBuilder out = new StringBuilder(code.length());
        while (m.find()) {
            m.appendReplacement(out, "");
            out.append(m.group().replaceAll("[^\\n]", " "));
        }
        m.appendTail(out);
        return out.toString();
    }

    /** A text block, a string or a character literal. */
    private static final Pattern LITERAL = Pattern.compile("\"\"\"[\\s\\S]*?\"\"\"|\"[^\"\\\\\\n]*(?:\\\\.[^\"\\\\\\n]*)*\"|'(?:\\\\.|[^'\\\\\\n])+'");
}
