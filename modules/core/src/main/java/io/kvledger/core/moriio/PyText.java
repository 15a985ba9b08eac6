package io.kvledger.core.moriio;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Package-private reproductions of the few Python text built-ins the MoRIIO helpers rely on:
 * {@code str.strip()}, {@code int(str)}, {@code float(str)}, {@code repr(str)} and
 * {@code repr(float)}. Every method is pure and total on non-null input (no exceptions escape
 * for malformed text; parse failures are reported as {@code null}).
 */
final class PyText {

    /** {@code int(str)} base 10 after stripping: optional sign, ASCII digits, single underscores between digits. */
    private static final Pattern PY_INT = Pattern.compile("[+-]?[0-9](?:_?[0-9])*");

    private static final String DIGITPART = "[0-9](?:_?[0-9])*";

    /** {@code float(str)} after stripping: decimal literal (underscores as in Python), or inf/infinity/nan. */
    private static final Pattern PY_FLOAT = Pattern.compile(
            "([+-]?)(?:((?:" + DIGITPART + "(?:\\.(?:" + DIGITPART + ")?)?|\\." + DIGITPART + ")"
                    + "(?:[eE][+-]?" + DIGITPART + ")?)"
                    + "|((?i:infinity|inf))|((?i:nan)))");

    private static final BigInteger INT_MIN = BigInteger.valueOf(Integer.MIN_VALUE);
    private static final BigInteger INT_MAX = BigInteger.valueOf(Integer.MAX_VALUE);

    private PyText() {}

    /** Python {@code str.isspace()} for one code point (Unicode White_Space as CPython defines it). */
    static boolean isPySpace(int cp) {
        return Character.isWhitespace(cp) || Character.isSpaceChar(cp) || cp == 0x85;
    }

    /** Python {@code s.strip()} with no argument. */
    static String strip(String s) {
        int start = 0;
        int end = s.length();
        while (start < end) {
            int cp = s.codePointAt(start);
            if (!isPySpace(cp)) {
                break;
            }
            start += Character.charCount(cp);
        }
        while (end > start) {
            int cp = s.codePointBefore(end);
            if (!isPySpace(cp)) {
                break;
            }
            end -= Character.charCount(cp);
        }
        return s.substring(start, end);
    }

    /**
     * Python {@code int(s)} (base 10) restricted to values that fit a Java {@code int}.
     *
     * @return the value, or {@code null} when Python would raise {@code ValueError}, or when the
     *     value is outside the {@code int} range (Python would accept it; no port can take it)
     */
    static Integer parseInt(String s) {
        if (s == null) {
            return null;
        }
        String t = strip(s);
        if (!PY_INT.matcher(t).matches()) {
            return null;
        }
        BigInteger v = new BigInteger(t.replace("_", ""));
        if (v.compareTo(INT_MIN) < 0 || v.compareTo(INT_MAX) > 0) {
            return null;
        }
        return v.intValue();
    }

    /**
     * Python {@code float(s)} for a string (ASCII digits only).
     *
     * @return the value, or {@code null} when Python would raise {@code ValueError}
     */
    static Double parseFloat(String s) {
        String t = strip(s);
        var m = PY_FLOAT.matcher(t);
        if (!m.matches()) {
            return null;
        }
        boolean negative = "-".equals(m.group(1));
        if (m.group(3) != null) {
            return negative ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY;
        }
        if (m.group(4) != null) {
            return Double.NaN;
        }
        double v = Double.parseDouble(m.group(2).replace("_", ""));
        return negative ? -v : v;
    }

    /** Python {@code repr(float)} (shortest round-tripping digits, CPython's 'r' layout). */
    static String floatRepr(double x) {
        if (Double.isNaN(x)) {
            return "nan";
        }
        if (Double.isInfinite(x)) {
            return x > 0 ? "inf" : "-inf";
        }
        boolean negative = (Double.doubleToRawLongBits(x) & Long.MIN_VALUE) != 0;
        String sign = negative ? "-" : "";
        double abs = Math.abs(x);
        if (abs == 0.0) {
            return sign + "0.0";
        }
        BigDecimal shortest = shortestRoundTrip(abs).stripTrailingZeros();
        String digits = shortest.unscaledValue().toString();
        int decpt = digits.length() - shortest.scale();
        StringBuilder out = new StringBuilder(sign);
        if (decpt > -4 && decpt <= 16) {
            if (decpt <= 0) {
                out.append("0.").append("0".repeat(-decpt)).append(digits);
            } else if (decpt >= digits.length()) {
                out.append(digits).append("0".repeat(decpt - digits.length())).append(".0");
            } else {
                out.append(digits, 0, decpt).append('.').append(digits, decpt, digits.length());
            }
        } else {
            out.append(digits.charAt(0));
            if (digits.length() > 1) {
                out.append('.').append(digits, 1, digits.length());
            }
            int exp = decpt - 1;
            out.append('e').append(exp < 0 ? '-' : '+');
            int absExp = Math.abs(exp);
            if (absExp < 10) {
                out.append('0');
            }
            out.append(absExp);
        }
        return out.toString();
    }

    /**
     * The decimal with the fewest significant digits that reads back as {@code abs}; among those
     * of that length the one nearest the exact binary value (ties to an even last digit).
     */
    private static BigDecimal shortestRoundTrip(double abs) {
        BigDecimal exact = new BigDecimal(abs);
        for (int p = 1; p <= 17; p++) {
            BigDecimal down = exact.round(new MathContext(p, RoundingMode.DOWN));
            BigDecimal up = exact.round(new MathContext(p, RoundingMode.UP));
            boolean downOk = down.doubleValue() == abs;
            boolean upOk = up.doubleValue() == abs;
            if (downOk && upOk) {
                int cmp = exact.subtract(down).compareTo(up.subtract(exact));
                if (cmp != 0) {
                    return cmp < 0 ? down : up;
                }
                return down.unscaledValue().testBit(0) ? up : down;
            }
            if (downOk) {
                return down;
            }
            if (upOk) {
                return up;
            }
        }
        return exact.round(new MathContext(17, RoundingMode.HALF_EVEN));
    }

    /** Python {@code repr(str)}. */
    static String repr(String s) {
        char quote = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
        StringBuilder out = new StringBuilder(s.length() + 2).append(quote);
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            if (cp == quote || cp == '\\') {
                out.append('\\').appendCodePoint(cp);
            } else if (cp == '\t') {
                out.append("\\t");
            } else if (cp == '\n') {
                out.append("\\n");
            } else if (cp == '\r') {
                out.append("\\r");
            } else if (isPrintable(cp)) {
                out.appendCodePoint(cp);
            } else if (cp <= 0xff) {
                out.append("\\x").append(hex(cp, 2));
            } else if (cp <= 0xffff) {
                out.append("\\u").append(hex(cp, 4));
            } else {
                out.append("\\U").append(hex(cp, 8));
            }
        }
        return out.append(quote).toString();
    }

    /** Python {@code bytes.__repr__}. */
    static String repr(byte[] b) {
        boolean hasSingle = false;
        boolean hasDouble = false;
        for (byte x : b) {
            hasSingle |= x == '\'';
            hasDouble |= x == '"';
        }
        char quote = hasSingle && !hasDouble ? '"' : '\'';
        StringBuilder out = new StringBuilder("b").append(quote);
        for (byte x : b) {
            int c = x & 0xff;
            if (c == quote || c == '\\') {
                out.append('\\').append((char) c);
            } else if (c == '\t') {
                out.append("\\t");
            } else if (c == '\n') {
                out.append("\\n");
            } else if (c == '\r') {
                out.append("\\r");
            } else if (c < 0x20 || c >= 0x7f) {
                out.append("\\x").append(hex(c, 2));
            } else {
                out.append((char) c);
            }
        }
        return out.append(quote).toString();
    }

    /** Lower-case hexadecimal of {@code v}, left-padded with zeros to {@code width} digits. */
    private static String hex(int v, int width) {
        String h = Integer.toHexString(v);
        return h.length() >= width ? h : "0".repeat(width - h.length()) + h;
    }

    /** Python {@code str.isprintable()} for one code point. */
    private static boolean isPrintable(int cp) {
        if (cp == ' ') {
            return true;
        }
        return switch (Character.getType(cp)) {
            case Character.CONTROL, Character.FORMAT, Character.SURROGATE, Character.PRIVATE_USE,
                    Character.UNASSIGNED, Character.LINE_SEPARATOR, Character.PARAGRAPH_SEPARATOR,
                    Character.SPACE_SEPARATOR -> false;
            default -> true;
        };
    }

    /** Python {@code repr(v)} for values decoded from JSON or msgpack. */
    static String reprObject(Object v) {
        if (v instanceof CharSequence cs) {
            return repr(cs.toString());
        }
        if (v instanceof Character c) {
            return repr(String.valueOf(c));
        }
        return str(v);
    }

    /** Python {@code str(v)} for values decoded from JSON or msgpack. */
    static String str(Object v) {
        if (v == null) {
            return "None";
        }
        if (v instanceof Boolean b) {
            return b ? "True" : "False";
        }
        if (v instanceof Double d) {
            return floatRepr(d);
        }
        if (v instanceof Float f) {
            return floatRepr(f.doubleValue());
        }
        if (v instanceof CharSequence || v instanceof Character || v instanceof Number) {
            return v.toString();
        }
        if (v instanceof byte[] b) {
            return repr(b);
        }
        if (v instanceof List<?> list) {
            return join("[", list, "]");
        }
        if (v instanceof Set<?> set) {
            return set.isEmpty() ? "set()" : join("{", set, "}");
        }
        if (v instanceof Collection<?> c) {
            return join("[", c, "]");
        }
        if (v instanceof Map<?, ?> map) {
            StringBuilder out = new StringBuilder("{");
            Iterator<? extends Map.Entry<?, ?>> it = map.entrySet().iterator();
            while (it.hasNext()) {
                Map.Entry<?, ?> e = it.next();
                out.append(reprObject(e.getKey())).append(": ").append(reprObject(e.getValue()));
                if (it.hasNext()) {
                    out.append(", ");
                }
            }
            return out.append('}').toString();
        }
        return v.toString();
    }

    private static String join(String open, Collection<?> items, String close) {
        StringBuilder out = new StringBuilder(open);
        Iterator<?> it = items.iterator();
        while (it.hasNext()) {
            out.append(reprObject(it.next()));
            if (it.hasNext()) {
                out.append(", ");
            }
        }
        return out.append(close).toString();
    }

    /** Python {@code type(v).__name__} for values decoded from JSON or msgpack. */
    static String typeName(Object v) {
        if (v == null) {
            return "NoneType";
        }
        if (v instanceof Boolean) {
            return "bool";
        }
        if (v instanceof Double || v instanceof Float) {
            return "float";
        }
        if (v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long
                || v instanceof BigInteger) {
            return "int";
        }
        if (v instanceof CharSequence || v instanceof Character) {
            return "str";
        }
        if (v instanceof byte[]) {
            return "bytes";
        }
        if (v instanceof Set<?>) {
            return "set";
        }
        if (v instanceof Collection<?>) {
            return "list";
        }
        if (v instanceof Map<?, ?>) {
            return "dict";
        }
        return v.getClass().getSimpleName();
    }
}
