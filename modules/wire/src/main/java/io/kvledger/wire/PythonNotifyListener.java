package io.kvledger.wire;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.msgpack.core.MessageFormat;

/**
 * A model of what the stock Python MoRIIO notify listener ({@code MoRIIOWrapper._handle_message}
 * in the newest connector, protocol spec 3.3) does with a frame, to tell whether the frame would
 * end that thread. It answers for the bytes alone; the handlers' role assertions (a producer
 * receiving {@code write_done}, ...) depend on the node and are the reducer's business.
 *
 * <p>Modelled steps, in the Python order:
 * <ol>
 *   <li>{@code msgpack.loads(frame)} (msgpack 1.0: {@code raw=False}, {@code strict_map_key=True},
 *       a stack of 1024 non-empty containers, valid timestamps). Any failure, trailing data, or a
 *       result that is not a dict goes to step 3.</li>
 *   <li>Dict dispatch: {@code type = d.get("type")}; None with {@code "req_id" in d} means
 *       remote_blocks; then remote_blocks ({@code d["transfer_id"]}, raises on a falsy
 *       {@code block_notify_list}, hashes the transfer id), write_done ({@code d["transfer_id"]}),
 *       release ({@code d["transfer_id"]}, {@code int(d.get("consumer_tp_size", 1))}, raises when
 *       that is {@code <= 0}, hashes the transfer id); any other type raises. A {@code ValueError}
 *       raised in a handler ({@code int("x")}) is caught by the same {@code except} clause as the
 *       {@code loads} errors, so such a frame goes on to step 3.</li>
 *   <li>{@code frame.decode("utf-8")}: an empty id raises ("Unhandled message format"), a
 *       non-UTF-8 frame raises in stock versions (the E-ack variant logs and drops it instead).</li>
 * </ol>
 *
 * <p>Stateless and thread-safe (each call uses its own reader).
 */
public final class PythonNotifyListener {

    /** What the Python listener does with a frame. */
    public enum Outcome {
        /** Stored as a remote allocation. */
        REMOTE_BLOCKS,
        /** Appended to {@code done_write_cache_req_ids}. */
        WRITE_DONE,
        /** Appended as a transfer ACK. */
        RELEASE,
        /** Handled as a raw completion id. */
        COMPLETION,
        /** An exception escapes the handler: the listener thread ends. */
        RAISES
    }

    /** The outcome and, for {@link Outcome#RAISES}, what Python raises. */
    public record Verdict(Outcome outcome, String detail) {
        public Verdict {
            Objects.requireNonNull(outcome, "outcome");
            Objects.requireNonNull(detail, "detail");
        }

        boolean raises() {
            return outcome == Outcome.RAISES;
        }
    }

    /** Python's msgpack unpacker stack (MSGPACK_EMBED_STACK_SIZE). */
    private static final int PY_STACK = 1024;

    private PythonNotifyListener() {}

    /** Whether the frame raises out of the Python listener's handler. */
    static boolean wouldKill(byte[] frame) {
        return verdict(frame).raises();
    }

    /** What the Python listener does with the frame. Never throws. */
    public static Verdict verdict(byte[] frame) {
        byte[] f = frame == null ? new byte[0] : frame;
        Map<Object, Object> dict = f.length > 0 && NotifyDecoder.startsWithMap(f) ? loadsDict(f) : null;
        if (dict != null) {
            Verdict v = dispatch(dict);
            if (v != VALUE_ERROR) {
                return v;
            }
            // a ValueError from the handler is caught by the same except clause as loads'
        }
        if (!validUtf8(f)) {
            return new Verdict(Outcome.RAISES, "non-UTF-8 payload: MoRIIOError('Unhandled message format')");
        }
        if (f.length == 0) {
            return new Verdict(Outcome.RAISES, "empty payload: MoRIIOError('Unhandled message format')");
        }
        return new Verdict(Outcome.COMPLETION, "completion id");
    }

    // ------------------------------------------------------------------ step 1: loads

    /** A handler raised ValueError: caught with the loads errors, so the frame goes on to the UTF-8 step. */
    private static final Verdict VALUE_ERROR = new Verdict(Outcome.RAISES, "ValueError inside the handler");

    /** Python's None as a dict value (absent keys are Java null). */
    private static final Object NONE = new Object() {
        @Override public String toString() { return "None"; }
    };

    /** A list, dict or other container read shallowly: kind and size. */
    private record Container(boolean hashable, int size, String kind) {}

    /** Keys: Java String for str, {@link OpaqueBytes} for bytes (never equal to each other, as in Python). */
    private static Map<Object, Object> loadsDict(byte[] frame) {
        MsgpackReader r = new MsgpackReader(PY_STACK);
        r.reset(frame);
        try {
            int n = r.mapHeader("dict");
            LinkedHashMap<Object, Object> d = new LinkedHashMap<>();
            for (int i = 0; i < n; i++) {
                MessageFormat kf = r.peek("key");
                Object key = switch (MsgpackReader.typeOf(kf)) {
                    case STRING -> r.string("key");
                    case BINARY -> OpaqueBytes.wrap(r.binary("key"));
                    default -> throw new WireReject(RejectReason.NON_STRING_KEY, "strict_map_key");
                };
                d.put(key, shallow(r));
            }
            return r.remaining() == 0 ? d : null;
        } catch (Exception | StackOverflowError e) {
            return null;
        }
    }

    private static Object shallow(MsgpackReader r) throws IOException {
        MessageFormat f = r.peek("value");
        return switch (MsgpackReader.typeOf(f)) {
            case NIL -> {
                r.nil("value");
                yield NONE;
            }
            case BOOLEAN -> r.bool("value");
            case INTEGER -> r.bigInteger("value");
            case FLOAT -> r.float64("value");
            case STRING -> r.string("value");
            case BINARY -> OpaqueBytes.wrap(r.binary("value"));
            case ARRAY -> new Container(false, r.skipCounted(1, "value"), "list");
            case MAP -> new Container(false, r.skipCounted(1, "value"), "dict");
            case EXTENSION -> {
                r.skip(1, "value");
                yield new Container(true, 1, "ext");
            }
        };
    }

    // ------------------------------------------------------------------ step 2: dispatch

    private static Verdict dispatch(Map<Object, Object> d) {
        Object type = d.get("type");
        if ((type == null || type == NONE) && d.containsKey("req_id")) {
            type = "remote_blocks";
        }
        if ("remote_blocks".equals(type)) {
            if (!d.containsKey("transfer_id")) {
                return raises("KeyError: 'transfer_id' (remote_blocks)");
            }
            Object blocks = d.containsKey("block_notify_list") ? d.get("block_notify_list") : new Container(false, 0, "list");
            if (!truthy(blocks)) {
                return raises("MoRIIOError: block_notify_list cannot be empty");
            }
            if (!hashable(d.get("transfer_id"))) {
                return raises("TypeError: unhashable transfer_id");
            }
            return new Verdict(Outcome.REMOTE_BLOCKS, "remote_blocks");
        }
        if ("write_done".equals(type)) {
            if (!d.containsKey("transfer_id")) {
                return raises("KeyError: 'transfer_id' (write_done)");
            }
            return new Verdict(Outcome.WRITE_DONE, "write_done");
        }
        if ("release".equals(type)) {
            if (!d.containsKey("transfer_id")) {
                return raises("KeyError: 'transfer_id' (release)");
            }
            Object tp = d.containsKey("consumer_tp_size") ? d.get("consumer_tp_size") : BigInteger.ONE;
            BigInteger v = pyInt(tp);
            if (v == null) {
                return intRaisesValueError(tp) ? VALUE_ERROR : raises("TypeError/OverflowError: int(consumer_tp_size) of " + describe(tp));
            }
            if (v.signum() <= 0) {
                return raises("MoRIIOError: Invalid consumer_tp_size in release message: " + v);
            }
            if (!hashable(d.get("transfer_id"))) {
                return raises("TypeError: unhashable transfer_id");
            }
            return new Verdict(Outcome.RELEASE, "release");
        }
        return raises("MoRIIOError: Unhandled structured message type: " + describe(type == null ? NONE : type));
    }

    private static Verdict raises(String what) {
        return new Verdict(Outcome.RAISES, what);
    }

    private static boolean truthy(Object v) {
        if (v == NONE) {
            return false;
        }
        if (v instanceof Boolean b) {
            return b;
        }
        if (v instanceof BigInteger i) {
            return i.signum() != 0;
        }
        if (v instanceof Double x) {
            return x != 0.0;
        }
        if (v instanceof String s) {
            return !s.isEmpty();
        }
        if (v instanceof OpaqueBytes b) {
            return b.length() > 0;
        }
        if (v instanceof Container c) {
            return c.size() > 0;
        }
        return true;
    }

    private static boolean hashable(Object v) {
        return !(v instanceof Container c) || c.hashable();
    }

    /** Whether {@code int(v)} raises ValueError (unparsable str or bytes, NaN) rather than TypeError or OverflowError. */
    private static boolean intRaisesValueError(Object v) {
        return v instanceof String || v instanceof OpaqueBytes || (v instanceof Double x && x.isNaN());
    }

    /** Python's {@code int(x)}, or {@code null} where it raises. */
    static BigInteger pyInt(Object v) {
        if (v instanceof BigInteger i) {
            return i;
        }
        if (v instanceof Boolean b) {
            return b ? BigInteger.ONE : BigInteger.ZERO;
        }
        if (v instanceof Double x) {
            if (x.isNaN() || x.isInfinite()) {
                return null;
            }
            return new java.math.BigDecimal(x).toBigInteger();
        }
        if (v instanceof String s) {
            return parseIntLiteral(s, true);
        }
        if (v instanceof OpaqueBytes b) {
            byte[] a = b.toByteArray();
            for (byte x : a) {
                if (x < 0) {
                    return null;
                }
            }
            return parseIntLiteral(new String(a, StandardCharsets.US_ASCII), false);
        }
        return null;
    }

    /** {@code int(str)}: surrounding whitespace, a sign, decimal digits with single underscores between them. */
    private static BigInteger parseIntLiteral(String s, boolean unicodeDigits) {
        String t = s.strip();
        int i = 0;
        boolean negative = false;
        if (!t.isEmpty() && (t.charAt(0) == '+' || t.charAt(0) == '-')) {
            negative = t.charAt(0) == '-';
            i = 1;
        }
        StringBuilder digits = new StringBuilder();
        boolean lastUnderscore = true;
        for (; i < t.length(); ) {
            int cp = t.codePointAt(i);
            i += Character.charCount(cp);
            if (cp == '_') {
                if (lastUnderscore) {
                    return null;
                }
                lastUnderscore = true;
                continue;
            }
            int dv = unicodeDigits ? Character.digit(cp, 10) : (cp >= '0' && cp <= '9' ? cp - '0' : -1);
            if (dv < 0 || (unicodeDigits && Character.getType(cp) != Character.DECIMAL_DIGIT_NUMBER)) {
                return null;
            }
            digits.append((char) ('0' + dv));
            lastUnderscore = false;
        }
        if (digits.isEmpty() || lastUnderscore) {
            return null;
        }
        BigInteger v = new BigInteger(digits.toString());
        return negative ? v.negate() : v;
    }

    private static String describe(Object v) {
        if (v == NONE) {
            return "None";
        }
        if (v instanceof String s) {
            return "'" + NotifyDecoder.clip(s) + "'";
        }
        if (v instanceof OpaqueBytes b) {
            return "b'" + b + "'";
        }
        if (v instanceof Container c) {
            return c.kind();
        }
        return String.valueOf(v);
    }

    // ------------------------------------------------------------------ step 3: UTF-8

    static boolean validUtf8(byte[] f) {
        for (byte b : f) {
            if (b < 0) {
                try {
                    StandardCharsets.UTF_8.newDecoder()
                            .onMalformedInput(CodingErrorAction.REPORT)
                            .onUnmappableCharacter(CodingErrorAction.REPORT)
                            .decode(ByteBuffer.wrap(f));
                    return true;
                } catch (CharacterCodingException e) {
                    return false;
                }
            }
        }
        return true;
    }
}
