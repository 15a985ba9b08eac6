package io.kvledger.ledger.text;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.Locale;

/**
 * Nanoseconds written as seconds, in the few forms kvledger prints. Each form is fixed: reports,
 * golden outputs and journaled reasons depend on its bytes.
 *
 * <p>Every measured time and duration a report prints as text ({@code hangs}, {@code inspect},
 * {@code stats}, {@code dump}, {@code replay}) is {@link #duration} or, relative to the start of
 * the journals, {@link #offset}: seconds with six decimals (microseconds) and the unit. Settings
 * echoed back (a {@code --stuck-after} bound) are {@link #exact}, as the user wrote them.
 */
public final class Seconds {

    private static final long NS_PER_S = 1_000_000_000L;

    private Seconds() {}

    /** The one text form of a measured duration: {@code duration(394_123)} is "0.000394 s" (cut, not rounded). */
    public static String duration(long ns) {
        return cut(ns, 6);
    }

    /**
     * The one text form of a time relative to an origin (the first entry of the journals):
     * {@code offset(177_619_000_000L)} is "t+177.619000 s", {@code offset(-500_000_000)} "t-0.500000 s".
     */
    public static String offset(long ns) {
        return ns < 0 ? "t-" + cut(ns, 6).substring(1) : "t+" + cut(ns, 6);
    }

    /**
     * Rounded to {@code decimals} places the way {@code String.format("%.Nf")} rounds the double
     * {@code ns / 1e9}: {@code rounded(1_234_567_890, 3)} is "1.235 s".
     */
    public static String rounded(long ns, int decimals) {
        return String.format(Locale.ROOT, "%." + places(decimals) + "f s", ns / 1e9);
    }

    /**
     * Cut (not rounded) to {@code decimals} places in integer arithmetic, without a unit:
     * {@code cutValue(1_234_567_890, 6)} is "1.234567", {@code cutValue(-500_000_000, 3)} "-0.500".
     */
    static String cutValue(long ns, int decimals) {
        int d = places(decimals);
        if (d > 9) {
            throw new IllegalArgumentException("at most 9 decimals, got " + decimals);
        }
        String sign = ns < 0 ? "-" : "";
        long whole = Math.abs(ns / NS_PER_S);
        long frac = Math.abs(ns % NS_PER_S);
        if (d == 0) {
            return sign + whole;
        }
        long div = 1;
        for (int i = d; i < 9; i++) {
            div *= 10;
        }
        String digits = Long.toString(frac / div);
        return sign + whole + "." + "0".repeat(d - digits.length()) + digits;
    }

    /** {@link #cutValue} with the unit: {@code cut(1_234_567_890, 3)} is "1.234 s". */
    static String cut(long ns, int decimals) {
        return cutValue(ns, decimals) + " s";
    }

    /**
     * Exact, without trailing zeros beyond {@code minDecimals} places: {@code exact(60_000_000_000L,
     * 0)} is "60 s", {@code exact(500_000_000, 0)} "0.5 s", {@code exact(5_000_000_000L, 1)} "5.0 s".
     */
    public static String exact(long ns, int minDecimals) {
        return exact(BigDecimal.valueOf(ns, 9), minDecimals);
    }

    /** {@link #exact(long, int)} of a duration of any length. */
    public static String exact(Duration d, int minDecimals) {
        return exact(BigDecimal.valueOf(d.getSeconds()).add(BigDecimal.valueOf(d.getNano(), 9)), minDecimals);
    }

    private static String exact(BigDecimal seconds, int minDecimals) {
        BigDecimal s = seconds.stripTrailingZeros();
        int min = places(minDecimals);
        if (s.scale() < min) {
            s = s.setScale(min);
        }
        return s.toPlainString() + " s";
    }

    private static int places(int decimals) {
        if (decimals < 0) {
            throw new IllegalArgumentException("decimals must not be negative, got " + decimals);
        }
        return decimals;
    }
}
