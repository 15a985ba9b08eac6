package io.kvledger.sim;

import java.util.ArrayList;
import java.util.List;

/**
 * The faults a simulation injects, each a probability in {@code [0, 1]}:
 * <ul>
 *   <li>per notify frame ({@code remote_blocks}, {@code write_done}, {@code release}):
 *       {@code drop} (never delivered), {@code dup} (delivered twice), {@code delay} (a long extra
 *       delay), {@code reorder} (held back and delivered after the next frame to the same
 *       destination), {@code send-fail} (never leaves its sender, whose publisher reports a
 *       {@code NotifySendFailed} to its own node);</li>
 *   <li>per posted transfer (one batch read or write of one layer): {@code fail} (completes with
 *       {@code succeeded=false}), {@code stall} (never completes), {@code sq-full} (completes
 *       with {@code succeeded=false} and mori's message "SQ full", class 24);</li>
 *   <li>per handshake: {@code handshake-fail};</li>
 *   <li>per client request: {@code abort} (one leg, prefill or decode, is aborted mid-flight,
 *       possibly before its blocks are allocated), {@code dp-alias} (with a prefill of DP above 1,
 *       the proxy tells the decode leg a {@code remote_dp_rank} other than the rank it sent the
 *       prefill leg to: class 30, toy-proxy DP aliasing; drawn only when asked for), {@code siblings}
 *       (the client asked for n = 2: the prefill engine runs two child requests
 *       {@code <index>_<request id>} with the leg's one {@code kv_transfer_params}, so they share
 *       its transfer id; class 29; drawn only when asked for);</li>
 *   <li>per {@code save_kv_layer} hook of a WRITE prefill engine's step: {@code hook-skip} (the
 *       layer's hook does not fire in that forward), {@code hook-repeat} (it fires twice). The
 *       sealed writer of every preset absorbs both (its {@code wait_for_save} re-invokes every
 *       registered layer, {@code schedule_write} de-duplicates); the unsealed writer of the switch
 *       {@code write-unsealed-completion} sends write_done never or early (class 6).</li>
 * </ul>
 * Written as {@code drop=0.01,dup=0.01,delay=0.02,reorder=0.01,fail=0.005,stall=0.002,abort=0.01,handshake-fail=0,send-fail=0};
 * keys may come in any order and be left out (0).
 */
public record FaultSpec(double drop, double dup, double delay, double reorder, double fail, double stall,
                        double abort, double handshakeFail, double sendFail, double sqFull, double dpAlias,
                        double siblings, double hookSkip, double hookRepeat) {

    /** No faults at all. */
    public static final FaultSpec NONE = new FaultSpec(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);

    /** The keys {@link #parse} accepts, in canonical order. */
    static final List<String> KEYS =
            List.of("drop", "dup", "delay", "reorder", "fail", "stall", "abort", "handshake-fail", "send-fail", "sq-full",
                    "dp-alias", "siblings", "hook-skip", "hook-repeat");

    /** Every fault but the save hooks'. */
    FaultSpec(double drop, double dup, double delay, double reorder, double fail, double stall,
                     double abort, double handshakeFail, double sendFail, double sqFull, double dpAlias, double siblings) {
        this(drop, dup, delay, reorder, fail, stall, abort, handshakeFail, sendFail, sqFull, dpAlias, siblings, 0, 0);
    }

    /** Every fault but {@code sq-full}, {@code dp-alias}, {@code siblings} and the save hooks'. */
    FaultSpec(double drop, double dup, double delay, double reorder, double fail, double stall,
                     double abort, double handshakeFail, double sendFail) {
        this(drop, dup, delay, reorder, fail, stall, abort, handshakeFail, sendFail, 0, 0, 0, 0, 0);
    }

    /** Every fault but {@code dp-alias} and {@code siblings}. */
    FaultSpec(double drop, double dup, double delay, double reorder, double fail, double stall,
                     double abort, double handshakeFail, double sendFail, double sqFull) {
        this(drop, dup, delay, reorder, fail, stall, abort, handshakeFail, sendFail, sqFull, 0, 0, 0, 0);
    }

    public FaultSpec {
        double[] all = {drop, dup, delay, reorder, fail, stall, abort, handshakeFail, sendFail, sqFull, dpAlias, siblings,
                hookSkip, hookRepeat};
        for (int i = 0; i < all.length; i++) {
            if (!(all[i] >= 0 && all[i] <= 1)) {
                throw new IllegalArgumentException(
                        "fault " + KEYS.get(i) + " must be a probability between 0 and 1, got " + all[i]);
            }
        }
    }

    /** Thrown by {@link #parse} for a malformed spec; {@link #token()} is the offending token. */
    static final class ParseException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;
        private final String token;

        ParseException(String token, String message) {
            super(message);
            this.token = token;
        }

        /** The token of the spec that could not be read, exactly as given. */
        public String token() {
            return token;
        }
    }

    /**
     * Reads a spec such as {@code drop=0.01,abort=0.005}. {@code null}, blank and {@code none} give
     * {@link #NONE}. Tokens are separated by commas; whitespace around tokens, keys and values is
     * ignored.
     *
     * @throws ParseException naming the bad token: an empty token, a token without {@code =}, an
     *     unknown key, a key given twice, a value that is not a number or not in {@code [0, 1]}
     */
    public static FaultSpec parse(String spec) {
        if (spec == null || spec.isBlank() || spec.strip().equalsIgnoreCase("none")) {
            return NONE;
        }
        double[] v = new double[KEYS.size()];
        boolean[] seen = new boolean[KEYS.size()];
        String[] tokens = spec.split(",", -1);
        for (int i = 0; i < tokens.length; i++) {
            String token = tokens[i].strip();
            if (token.isEmpty()) {
                throw new ParseException(tokens[i], "bad fault spec '" + spec + "': empty token at position "
                        + (i + 1) + " (tokens are key=probability separated by commas)");
            }
            int eq = token.indexOf('=');
            if (eq < 0) {
                throw new ParseException(token, "bad fault token '" + token + "': expected key=probability, e.g. drop=0.01");
            }
            String key = token.substring(0, eq).strip();
            String value = token.substring(eq + 1).strip();
            int k = KEYS.indexOf(key);
            if (k < 0) {
                throw new ParseException(token, "bad fault token '" + token + "': unknown fault '" + key
                        + "' (known: " + String.join(", ", KEYS) + ")");
            }
            if (seen[k]) {
                throw new ParseException(token, "bad fault token '" + token + "': fault '" + key + "' is given twice");
            }
            seen[k] = true;
            double p;
            try {
                p = Double.parseDouble(value);
            } catch (NumberFormatException e) {
                throw new ParseException(token, "bad fault token '" + token + "': '" + value + "' is not a number");
            }
            if (!(p >= 0 && p <= 1)) {
                throw new ParseException(token, "bad fault token '" + token + "': probability " + value
                        + " is not between 0 and 1");
            }
            v[k] = p;
        }
        return new FaultSpec(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13]);
    }

    /** Whether every probability is 0. */
    public boolean isNone() {
        return equals(NONE);
    }

    /** The canonical text: the non-zero faults in {@link #KEYS} order, or {@code none}. */
    public String format() {
        double[] all = {drop, dup, delay, reorder, fail, stall, abort, handshakeFail, sendFail, sqFull, dpAlias, siblings,
                hookSkip, hookRepeat};
        List<String> parts = new ArrayList<>();
        for (int i = 0; i < all.length; i++) {
            if (all[i] != 0) {
                parts.add(KEYS.get(i) + "=" + stripZeros(all[i]));
            }
        }
        return parts.isEmpty() ? "none" : String.join(",", parts);
    }

    private static String stripZeros(double d) {
        String s = Double.toString(d);
        return s.endsWith(".0") ? s.substring(0, s.length() - 2) : s;
    }

    @Override
    public String toString() {
        return format();
    }
}
