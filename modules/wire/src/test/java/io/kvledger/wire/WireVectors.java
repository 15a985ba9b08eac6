package io.kvledger.wire;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The wire vectors (frames Python's msgpack 1.0.3 produced): the copy in this module's test
 * resources ({@code wire-vectors/}), and the shared originals at {@code <repo>/../shared/wire-vectors}
 * when that directory exists.
 */
final class WireVectors {

    static final List<String> FILES = List.of("notify.json", "handshake.json", "registration.json");

    private WireVectors() {}

    /** A vector with a value and its msgpack bytes, or raw bytes. */
    record Vector(String file, String group, String name, Object value, byte[] bytes, String expect) {
        @Override
        public String toString() {
            return file + ":" + name;
        }
    }

    static String resourceText(String file) {
        try (InputStream in = WireVectors.class.getResourceAsStream("/wire-vectors/" + file)) {
            if (in == null) {
                throw new AssertionError("test resource wire-vectors/" + file + " is missing: copy it from ../shared/wire-vectors/");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new AssertionError("cannot read test resource wire-vectors/" + file, e);
        }
    }

    /** All vectors of the resource copy. */
    static List<Vector> all() {
        List<Vector> out = new ArrayList<>();
        for (String f : FILES) {
            out.addAll(parse(f, resourceText(f)));
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    static List<Vector> parse(String file, String text) {
        Object root = Json.parse(text);
        List<Vector> out = new ArrayList<>();
        if (root instanceof List<?> list) {
            for (Object o : list) {
                out.add(vector(file, "valid", (Map<String, Object>) o));
            }
        } else {
            for (Map.Entry<String, Object> e : ((Map<String, Object>) root).entrySet()) {
                for (Object o : (List<Object>) e.getValue()) {
                    out.add(vector(file, e.getKey(), (Map<String, Object>) o));
                }
            }
        }
        return out;
    }

    private static Vector vector(String file, String group, Map<String, Object> m) {
        String hex = (String) (m.containsKey("msgpack_hex") ? m.get("msgpack_hex") : m.get("raw_hex"));
        Object value = m.containsKey("value") ? python(m.get("value")) : null;
        return new Vector(file, group, (String) m.get("name"), value, HexFormat.of().parseHex(hex), (String) m.get("expect"));
    }

    /** JSON to Python-like Java values: {"$bin": hex} becomes byte[]. */
    @SuppressWarnings("unchecked")
    static Object python(Object json) {
        if (json instanceof Map<?, ?> m) {
            if (m.size() == 1 && m.containsKey("$bin")) {
                return HexFormat.of().parseHex((String) m.get("$bin"));
            }
            LinkedHashMap<String, Object> out = new LinkedHashMap<>();
            ((Map<String, Object>) m).forEach((k, v) -> out.put(k, python(v)));
            return out;
        }
        if (json instanceof List<?> l) {
            List<Object> out = new ArrayList<>();
            for (Object o : l) {
                out.add(python(o));
            }
            return out;
        }
        return json;
    }

    /** The repository root: the nearest ancestor of the working directory holding {@code modules/} and a pom. */
    static Path repoRoot() {
        Path p = Path.of("").toAbsolutePath();
        while (p != null) {
            if (Files.isDirectory(p.resolve("modules")) && Files.isRegularFile(p.resolve("pom.xml"))) {
                return p;
            }
            p = p.getParent();
        }
        return null;
    }

    /** {@code <repo>/../shared/wire-vectors}, or {@code null} when the repository root is not found. */
    static Path sharedDir() {
        Path root = repoRoot();
        return root == null || root.getParent() == null ? null : root.getParent().resolve("shared").resolve("wire-vectors");
    }
}
