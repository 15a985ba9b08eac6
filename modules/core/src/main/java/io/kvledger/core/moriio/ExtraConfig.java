package io.kvledger.core.moriio;

import java.lang.reflect.Array;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Collection;
import java.util.Locale;
import java.util.Map;

/**
 * {@code kv_connector_extra_config} semantics of the MoRIIO connector (protocol spec sections 1.3,
 * 1.4 and 1.5): defaults, Python truthiness and {@code str()}/{@code float()} conversions of
 * config values, read-mode selection and the connector-level {@code engine_id}.
 *
 * <p>Config values are modelled as the Java objects a JSON or msgpack decoder yields:
 * {@code null} (Python {@code None} or a missing key), {@link Boolean}, integral
 * {@link Number}s, {@link Double}/{@link Float}, {@link CharSequence}, {@code byte[]},
 * {@link Collection} and {@link Map}.
 */
public final class ExtraConfig {

    /** {@code MoRIIOConstants.DEFAULT_HANDSHAKE_PORT}: a <em>string</em>, and so part of {@code engine_id} as text. */
    public static final String DEFAULT_HANDSHAKE_PORT = "6301";

    /** {@code MoRIIOConstants.DEFAULT_NOTIFY_PORT}: a <em>string</em>. */
    public static final String DEFAULT_NOTIFY_PORT = "61005";

    /** {@code MoRIIOConstants.DEFAULT_DEFER_TIMEOUT}: seconds; deferred-free reap and parked-ACK deadline. */
    public static final double DEFAULT_DEFER_TIMEOUT_S = 60.0;

    /** {@code MoRIIOConstants.DEFAULT_TRANSFER_TIMEOUT}: seconds; bound of the blocking waits. */
    public static final double DEFAULT_TRANSFER_TIMEOUT_S = 30.0;

    /** Default READ receive-abort age in seconds (formerly env {@code VLLM_MORIIO_TRANSFER_TIMEOUT_S}). */
    public static final double DEFAULT_RECV_ABORT_TIMEOUT_S = 120.0;

    /** {@code MoRIIOConstants.PING_INTERVAL}: registration heartbeat period in seconds. */
    static final int PING_INTERVAL_S = 3;

    /** {@code VLLM_MORI_READ_ABORT_REQUEST_TIMEOUT}: seconds stamped on {@code reqs_to_send} (never acted on). */
    public static final int READ_ABORT_REQUEST_TIMEOUT_S = 3600;

    /** {@code _MAX_TERMINAL_TRANSFER_IDS}: size of the engine's LRU of terminal transfer ids. */
    public static final int MAX_TERMINAL_TRANSFER_IDS = 4096;

    private ExtraConfig() {}

    /**
     * Python {@code bool(v)} for a decoded config value: {@code null} is false; a {@link Boolean}
     * is itself; a number is false iff it is zero ({@code NaN} is true, as in Python); a
     * {@link CharSequence}, {@code byte[]} or other array, {@link Collection} or {@link Map} is
     * false iff empty; a {@link Character} (a one-character string) and every other object are
     * true.
     */
    public static boolean pythonTruthy(Object v) {
        if (v == null) {
            return false;
        }
        if (v instanceof Boolean b) {
            return b;
        }
        if (v instanceof String s) {
            // a non-empty string almost always has a non-zero hash, which it keeps once computed:
            // the test reads the String itself, not its characters
            return s.hashCode() != 0 || !s.isEmpty();
        }
        if (v instanceof Double d) {
            return d != 0.0;
        }
        if (v instanceof Float f) {
            return f != 0.0f;
        }
        if (v instanceof BigInteger bi) {
            return bi.signum() != 0;
        }
        if (v instanceof BigDecimal bd) {
            return bd.signum() != 0;
        }
        if (v instanceof Number n) {
            return n.longValue() != 0L;
        }
        if (v instanceof CharSequence cs) {
            return !cs.isEmpty();
        }
        if (v instanceof Collection<?> c) {
            return !c.isEmpty();
        }
        if (v instanceof Map<?, ?> m) {
            return !m.isEmpty();
        }
        if (v.getClass().isArray()) {
            return Array.getLength(v) != 0;
        }
        return true;
    }

    /**
     * {@code _set_port_defaults} for one key: {@code defaultValue} when the key is missing
     * ({@code configured == null}) or its value is falsy per {@link #pythonTruthy(Object)} (so
     * int {@code 0} and {@code ""} are replaced, while the string {@code "0"} is kept); otherwise
     * {@code configured}, unchanged (not converted to a string or an int).
     */
    public static Object portDefault(Object configured, String defaultValue) {
        return pythonTruthy(configured) ? configured : defaultValue;
    }

    /**
     * {@code get_moriio_mode}: {@code str(read_mode).lower().strip()} in {@code {"true", "1"}}
     * selects READ ({@code true}); anything else selects WRITE ({@code false}). So {@code true}
     * ({@code "True"}), {@code 1}, {@code "1"} and {@code " TRUE "} select READ, while
     * {@code null} ({@code "none"}), {@code "yes"} and {@code 1.0} ({@code "1.0"}) select WRITE.
     */
    public static boolean parseReadMode(Object readMode) {
        String s = PyText.strip(pythonStr(readMode).toLowerCase(Locale.ROOT));
        return s.equals("true") || s.equals("1");
    }

    /**
     * The connector-level {@code engine_id}: {@code str(host_ip) + ":" + str(handshake_port)},
     * e.g. {@code "10.0.0.1:6301"}. Uses the configured port value as Python renders it (the
     * string default {@code "6301"} stays {@code "6301"}); identical for every DP and TP rank.
     */
    public static String engineId(String hostIp, Object handshakePort) {
        return pythonStr(hostIp) + ":" + pythonStr(handshakePort);
    }

    /**
     * Python {@code str(v)} for a decoded config value.
     *
     * <ul>
     *   <li>{@code null}: {@code "None"}; {@link Boolean}: {@code "True"}/{@code "False"}.
     *   <li>Integral numbers: decimal digits.
     *   <li>{@link Double} and {@link Float} (widened to double, as msgpack float32 decodes in
     *       Python): Python {@code repr(float)}, i.e. the shortest digits that read back to the
     *       same double, fixed notation for decimal exponents -4 to 15 with at least one
     *       fractional digit ({@code 60.0}, {@code 1e15 -> "1000000000000000.0"}), scientific
     *       otherwise ({@code "1e+16"}, {@code "1e-05"}); {@code "inf"}, {@code "-inf"},
     *       {@code "nan"}.
     *   <li>Strings as-is; {@code byte[]}, lists, sets and maps as Python renders them
     *       ({@code b'..'}, {@code ['a', 1]}, {@code {'k': True}}); other objects via
     *       {@code toString()}.
     * </ul>
     */
    public static String pythonStr(Object v) {
        return v instanceof String s ? s : PyText.str(v);
    }

    /**
     * {@code float(extra_config.get(key, default))} for the timeout keys ({@code defer_timeout},
     * {@code transfer_timeout}, {@code recv_abort_timeout}).
     *
     * <ul>
     *   <li>{@code null} (key absent) gives {@code defaultValue}.
     *   <li>{@link Boolean}: 1.0 or 0.0. Numbers: their double value; an integer too large for a
     *       double fails with {@code "int too large to convert to float"}.
     *   <li>Strings: Python {@code float(str)} syntax after stripping whitespace: a decimal
     *       literal (underscores between digits allowed) or a signed
     *       {@code inf}/{@code infinity}/{@code nan} in any case; otherwise fails with
     *       {@code "could not convert string to float: '<v>'"}.
     *   <li>Anything else fails with {@code "could not convert <type> to float: ..."}.
     * </ul>
     *
     * <p>No range check is made: negative, zero, infinite and NaN values are returned as Python
     * would return them.
     */
    public static Checked<Double> parseSeconds(Object v, double defaultValue) {
        if (v == null) {
            return Checked.ok(defaultValue);
        }
        if (v instanceof Boolean b) {
            return Checked.ok(b ? 1.0 : 0.0);
        }
        if (v instanceof BigInteger bi) {
            double d = bi.doubleValue();
            return Double.isInfinite(d)
                    ? Checked.fail("int too large to convert to float")
                    : Checked.ok(d);
        }
        if (v instanceof Number n) {
            return Checked.ok(n.doubleValue());
        }
        if (v instanceof CharSequence || v instanceof Character) {
            String s = v.toString();
            Double d = PyText.parseFloat(s);
            return d != null
                    ? Checked.ok(d)
                    : Checked.fail("could not convert string to float: " + PyText.repr(s));
        }
        String type = PyText.typeName(v);
        return Checked.fail("could not convert " + type + " to float: float() argument must be a "
                + "string or a real number, not '" + type + "'");
    }
}
