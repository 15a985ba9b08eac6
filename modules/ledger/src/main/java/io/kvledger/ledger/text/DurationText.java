package io.kvledger.ledger.text;

import java.math.BigDecimal;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Durations as people type them: a number with an optional unit, {@code ns}, {@code us} (or
 * {@code µs}), {@code ms}, {@code s}, {@code m}, {@code h}; a plain number is seconds. {@code 30s},
 * {@code 5m}, {@code 250ms}, {@code 1.5h} and {@code 30} all parse; a sign, an empty number, an
 * unknown unit, a space between number and unit or more than 2<sup>63</sup> ns do not. Every
 * command option that takes a duration reads it here.
 */
public final class DurationText {

    private static final Pattern FORM = Pattern.compile("(\\d+(?:\\.\\d*)?|\\.\\d+)(ns|us|µs|ms|s|m|h)?");

    private DurationText() {}

    /** The duration {@code text} names, in nanoseconds (rounded to the nearest); a plain number is seconds. */
    static long parseNs(String text) {
        return parseNs(text, "s");
    }

    /**
     * {@link #parseNs(String)} where a plain number is in {@code bareUnit} ({@code "ms"} for an
     * option named {@code --...-ms}).
     */
    static long parseNs(String text, String bareUnit) {
        String t = text == null ? "" : text.strip();
        Matcher m = FORM.matcher(t.toLowerCase(Locale.ROOT));
        if (!m.matches()) {
            throw new IllegalArgumentException("'" + text + "' is not a duration: write a number of "
                    + ("s".equals(bareUnit) ? "seconds (30, 0.5)" : bareUnit + " (" + "200)")
                    + " or a number with a unit: 250ms, 30s, 5m, 1h (also ns, us)");
        }
        String unit = m.group(2) == null ? bareUnit : m.group(2);
        long nsPerUnit = switch (unit) {
            case "ns" -> 1L;
            case "us", "µs" -> 1_000L;
            case "ms" -> 1_000_000L;
            case "s" -> 1_000_000_000L;
            case "m" -> 60_000_000_000L;
            case "h" -> 3_600_000_000_000L;
            default -> throw new IllegalStateException(unit);
        };
        BigDecimal ns = new BigDecimal(m.group(1)).multiply(BigDecimal.valueOf(nsPerUnit))
                .setScale(0, java.math.RoundingMode.HALF_UP);
        if (ns.compareTo(BigDecimal.valueOf(Long.MAX_VALUE)) > 0) {
            throw new IllegalArgumentException("'" + text + "' is too long a duration (at most 292 years)");
        }
        return ns.longValueExact();
    }

    /** {@link #parseNs(String)} in seconds. */
    public static double parseSeconds(String text) {
        return parseNs(text) / 1e9;
    }

    /** {@link #parseNs(String, String)} with plain numbers in milliseconds, in milliseconds. */
    public static double parseMillis(String text) {
        return parseNs(text, "ms") / 1e6;
    }
}
