package io.kvledger.journal.json;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Strict RFC 8259 JSON: {@link #parse} accepts exactly one value surrounded by optional
 * whitespace and rejects everything the RFC does not allow (leading zeros, {@code +1}, {@code .5},
 * trailing commas, comments, single quotes, unescaped control characters, {@code NaN}), plus
 * duplicate object keys, which the RFC only discourages.
 *
 * <p>Parsed values: {@code null}, {@link Boolean}, {@link Long} for numbers without fraction or
 * exponent (a larger integer is an error rather than a silent rounding), {@link Double} for the
 * others, {@link String}, {@link ArrayList} and {@link LinkedHashMap} (key order kept).
 *
 * <p>{@link #write} prints compact JSON (no spaces) with non-ASCII characters as is (the caller
 * writes UTF-8). A {@link Double} is always printed with a fraction or an exponent, so it parses
 * back as a {@code Double}; non-finite doubles cannot be written. Stateless and thread-safe.
 */
public final class Json {

    /** Nesting deeper than this is refused, so that hostile input cannot overflow the stack. */
    static final int MAX_DEPTH = 256;

    private Json() {}

    // ------------------------------------------------------------------ parsing

    /** Parses one JSON text. */
    public static Object parse(String text) {
        Parser p = new Parser(text);
        p.skipWs();
        Object v = p.value(0);
        p.skipWs();
        if (p.pos < text.length()) {
            throw new JsonException("unexpected " + p.describe() + " after the value", p.pos);
        }
        return v;
    }

    private static final class Parser {
        private final String s;
        private int pos;

        Parser(String s) {
            this.s = s;
        }

        String describe() {
            if (pos >= s.length()) {
                return "end of input";
            }
            char c = s.charAt(pos);
            return c < 0x20 ? String.format("control character U+%04X", (int) c) : "'" + c + "'";
        }

        void skipWs() {
            while (pos < s.length()) {
                char c = s.charAt(pos);
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                    pos++;
                } else {
                    break;
                }
            }
        }

        Object value(int depth) {
            if (pos >= s.length()) {
                throw new JsonException("expected a value but found end of input", pos);
            }
            char c = s.charAt(pos);
            return switch (c) {
                case '{' -> object(depth + 1);
                case '[' -> array(depth + 1);
                case '"' -> string();
                case 't' -> literal("true", Boolean.TRUE);
                case 'f' -> literal("false", Boolean.FALSE);
                case 'n' -> literal("null", null);
                default -> {
                    if (c == '-' || (c >= '0' && c <= '9')) {
                        yield number();
                    }
                    throw new JsonException("expected a value but found " + describe(), pos);
                }
            };
        }

        Object literal(String word, Object v) {
            if (!s.startsWith(word, pos)) {
                throw new JsonException("invalid literal (expected " + word + ")", pos);
            }
            pos += word.length();
            return v;
        }

        Map<String, Object> object(int depth) {
            checkDepth(depth);
            pos++; // '{'
            LinkedHashMap<String, Object> m = new LinkedHashMap<>();
            skipWs();
            if (peek() == '}') {
                pos++;
                return m;
            }
            while (true) {
                skipWs();
                if (peek() != '"') {
                    throw new JsonException("expected a string key but found " + describe(), pos);
                }
                int keyPos = pos;
                String key = string();
                skipWs();
                expect(':');
                skipWs();
                Object v = value(depth);
                if (m.containsKey(key)) {
                    throw new JsonException("duplicate key \"" + key + "\"", keyPos);
                }
                m.put(key, v);
                skipWs();
                char c = peek();
                if (c == ',') {
                    pos++;
                } else if (c == '}') {
                    pos++;
                    return m;
                } else {
                    throw new JsonException("expected ',' or '}' but found " + describe(), pos);
                }
            }
        }

        List<Object> array(int depth) {
            checkDepth(depth);
            pos++; // '['
            ArrayList<Object> l = new ArrayList<>();
            skipWs();
            if (peek() == ']') {
                pos++;
                return l;
            }
            while (true) {
                skipWs();
                l.add(value(depth));
                skipWs();
                char c = peek();
                if (c == ',') {
                    pos++;
                } else if (c == ']') {
                    pos++;
                    return l;
                } else {
                    throw new JsonException("expected ',' or ']' but found " + describe(), pos);
                }
            }
        }

        void checkDepth(int depth) {
            if (depth > MAX_DEPTH) {
                throw new JsonException("nesting deeper than " + MAX_DEPTH, pos);
            }
        }

        char peek() {
            return pos < s.length() ? s.charAt(pos) : '\0';
        }

        void expect(char c) {
            if (pos >= s.length() || s.charAt(pos) != c) {
                throw new JsonException("expected '" + c + "' but found " + describe(), pos);
            }
            pos++;
        }

        String string() {
            int start = pos;
            pos++; // opening quote
            StringBuilder b = null;
            int runStart = pos;
            while (true) {
                if (pos >= s.length()) {
                    throw new JsonException("unterminated string", start);
                }
                char c = s.charAt(pos);
                if (c == '"') {
                    String out = b == null ? s.substring(runStart, pos) : b.append(s, runStart, pos).toString();
                    pos++;
                    return out;
                }
                if (c < 0x20) {
                    throw new JsonException("unescaped control character in string", pos);
                }
                if (Character.isSurrogate(c)) {
                    if (Character.isHighSurrogate(c) && pos + 1 < s.length() && Character.isLowSurrogate(s.charAt(pos + 1))) {
                        pos += 2;
                        continue;
                    }
                    throw new JsonException("unpaired surrogate in string", pos);
                }
                if (c != '\\') {
                    pos++;
                    continue;
                }
                if (b == null) {
                    b = new StringBuilder();
                }
                b.append(s, runStart, pos);
                pos++;
                if (pos >= s.length()) {
                    throw new JsonException("unterminated escape", pos);
                }
                char e = s.charAt(pos++);
                switch (e) {
                    case '"' -> b.append('"');
                    case '\\' -> b.append('\\');
                    case '/' -> b.append('/');
                    case 'b' -> b.append('\b');
                    case 'f' -> b.append('\f');
                    case 'n' -> b.append('\n');
                    case 'r' -> b.append('\r');
                    case 't' -> b.append('\t');
                    case 'u' -> {
                        // An escaped lone surrogate is valid RFC 8259 syntax and is kept as is, so
                        // that any Java string survives a write/parse round trip.
                        b.append(hex4());
                    }
                    default -> throw new JsonException("invalid escape '\\" + e + "'", pos - 2);
                }
                runStart = pos;
            }
        }

        char hex4() {
            if (pos + 4 > s.length()) {
                throw new JsonException("truncated \\u escape", pos);
            }
            int v = 0;
            for (int i = 0; i < 4; i++) {
                int d = Character.digit(s.charAt(pos + i), 16);
                if (d < 0) {
                    throw new JsonException("invalid hex digit in \\u escape", pos + i);
                }
                v = v * 16 + d;
            }
            pos += 4;
            return (char) v;
        }

        Object number() {
            int start = pos;
            if (peek() == '-') {
                pos++;
            }
            if (peek() == '0') {
                pos++;
                if (isDigit(peek())) {
                    throw new JsonException("leading zero in number", start);
                }
            } else if (isDigit(peek())) {
                while (isDigit(peek())) {
                    pos++;
                }
            } else {
                throw new JsonException("expected a digit but found " + describe(), pos);
            }
            boolean integral = true;
            if (peek() == '.') {
                integral = false;
                pos++;
                if (!isDigit(peek())) {
                    throw new JsonException("expected a digit after '.' but found " + describe(), pos);
                }
                while (isDigit(peek())) {
                    pos++;
                }
            }
            if (peek() == 'e' || peek() == 'E') {
                integral = false;
                pos++;
                if (peek() == '+' || peek() == '-') {
                    pos++;
                }
                if (!isDigit(peek())) {
                    throw new JsonException("expected a digit in the exponent but found " + describe(), pos);
                }
                while (isDigit(peek())) {
                    pos++;
                }
            }
            String text = s.substring(start, pos);
            if (integral) {
                try {
                    return Long.parseLong(text);
                } catch (NumberFormatException e) {
                    throw new JsonException("integer " + text + " does not fit in 64 bits", start);
                }
            }
            double d = Double.parseDouble(text);
            if (Double.isInfinite(d)) {
                throw new JsonException("number " + text + " is out of the double range", start);
            }
            return d;
        }

        static boolean isDigit(char c) {
            return c >= '0' && c <= '9';
        }
    }

    // ------------------------------------------------------------------ printing

    /** The compact JSON text of {@code value}. */
    public static String write(Object value) {
        StringBuilder b = new StringBuilder(64);
        write(value, b);
        return b.toString();
    }

    /**
     * Appends the compact JSON text of {@code value}: {@code null}, {@link Boolean}, an integral
     * {@link Number} ({@code Long}, {@code Integer}, {@code Short}, {@code Byte},
     * {@link java.math.BigInteger}), a finite {@link Double} or {@link Float}, a
     * {@link CharSequence}, a {@link List} or a {@link Map} (keys printed with
     * {@link String#valueOf}).
     *
     * @throws JsonException for non-finite numbers and other value types
     */
    static void write(Object value, StringBuilder b) {
        write(value, b, 0);
    }

    private static void write(Object v, StringBuilder b, int depth) {
        if (depth > MAX_DEPTH) {
            throw new JsonException("value nested deeper than " + MAX_DEPTH, -1);
        }
        switch (v) {
            case null -> b.append("null");
            case Boolean bool -> b.append(bool.booleanValue());
            case Long l -> b.append(l.longValue());
            case Integer i -> b.append(i.intValue());
            case Short sh -> b.append(sh.shortValue());
            case Byte by -> b.append(by.byteValue());
            case java.math.BigInteger bi -> b.append(bi);
            case Double d -> appendDouble(d, b);
            case Float f -> appendDouble(f.doubleValue(), b);
            case CharSequence cs -> quote(cs, b);
            case List<?> list -> {
                b.append('[');
                for (int i = 0; i < list.size(); i++) {
                    if (i > 0) {
                        b.append(',');
                    }
                    write(list.get(i), b, depth + 1);
                }
                b.append(']');
            }
            case Map<?, ?> map -> {
                b.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : map.entrySet()) {
                    if (!first) {
                        b.append(',');
                    }
                    first = false;
                    quote(String.valueOf(e.getKey()), b);
                    b.append(':');
                    write(e.getValue(), b, depth + 1);
                }
                b.append('}');
            }
            default -> throw new JsonException("cannot write a " + v.getClass().getName() + " as JSON", -1);
        }
    }

    private static void appendDouble(double d, StringBuilder b) {
        if (Double.isNaN(d) || Double.isInfinite(d)) {
            throw new JsonException("JSON has no representation for " + d, -1);
        }
        // Double.toString always has a '.' or an 'E' ("1.0", "1.0E10"), and its exponent form
        // ("1.0E-5") is valid JSON; it is the shortest text that parses back to the same double.
        b.append(Double.toString(d));
    }

    /** Appends {@code s} as a JSON string literal. */
    static void quote(CharSequence s, StringBuilder b) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                case '\b' -> b.append("\\b");
                case '\f' -> b.append("\\f");
                default -> {
                    if (c < 0x20 || c == 0x2028 || c == 0x2029
                            || (Character.isSurrogate(c) && !pairedAt(s, i))) {
                        // Unpaired surrogates cannot be encoded as UTF-8: escaping them keeps the
                        // text valid UTF-8, and the parser reads the escapes back unchanged.
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        b.append('"');
    }

    private static boolean pairedAt(CharSequence s, int i) {
        char c = s.charAt(i);
        if (Character.isHighSurrogate(c)) {
            return i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1));
        }
        return i > 0 && Character.isHighSurrogate(s.charAt(i - 1));
    }
}
