package io.kvledger.wire;

import io.kvledger.core.model.PyValue;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.msgpack.core.MessageFormat;

/**
 * Whole msgpack frames as Python values, for protocols whose messages are generic dicts (the
 * engine bridge, {@code io.kvledger.wire.bridge}) rather than the fixed MoRIIO messages the
 * dedicated codecs of this package read field by field.
 *
 * <p>{@link #decode} reads one frame strictly and boundedly with the package's
 * {@link MsgpackReader}: the frame size is checked first, every header's claim is checked against
 * the bytes left, containers nest at most {@link WireLimits#maxNestingDepth()} deep, map keys must
 * be msgpack {@code str} (no {@code bin}, no other types) and appear once, strings must be UTF-8,
 * ext values are refused, and nothing may follow the value. Values come back as Python's
 * {@code msgpack.loads(raw=False)} gives them: {@code null}, {@link Boolean}, {@link Long} (a
 * {@link java.math.BigInteger} from 2^63 to 2^64 - 1), {@link Double}, {@link String},
 * {@code byte[]}, {@link ArrayList} and {@link LinkedHashMap} with {@code String} keys in frame
 * order. Never throws.
 *
 * <p>{@link #encode} packs such values (and {@code Integer}, {@code List}, {@code Map} views)
 * exactly as Python's {@code msgpack.packb} does ({@link PyPacker}).
 *
 * <p>Stateless static methods; safe from any thread.
 */
public final class PyMsgpack {

    private PyMsgpack() {}

    /** Decodes one frame into a Python value (see the class comment); never throws. */
    public static DecodeResult<Object> decode(byte[] frame, WireLimits limits) {
        return DecodeResult.of(() -> {
            Frames.checkSize(frame, limits);
            MsgpackReader r = new MsgpackReader(limits.maxNestingDepth());
            r.reset(frame);
            Object v = value(r, 0, limits.maxNestingDepth(), "value");
            if (r.remaining() > 0) {
                throw new WireReject(RejectReason.TRAILING_BYTES, r.remaining() + " bytes follow the value at offset " + r.position());
            }
            return v == null ? NONE : v;
        });
    }

    /**
     * {@link #decode} as a {@link PyValue} (None is {@link PyValue#NONE}: no marker to undo). The
     * same checks and rejections as {@link #decode}; never throws.
     */
    static DecodeResult<PyValue> decodeValue(byte[] frame, WireLimits limits) {
        return switch (decode(frame, limits)) {
            case DecodeResult.Ok<Object> ok -> new DecodeResult.Ok<>(PyValues.value(orNull(ok.value())));
            case DecodeResult.Rejected<Object> r -> new DecodeResult.Rejected<>(r.rejection());
        };
    }

    /** Packs a {@link PyValue} as {@code msgpack.packb(v, use_bin_type=True)} would (see {@link #encode(Object)}). */
    static byte[] encode(PyValue value) {
        return new PyPacker().value(value).toByteArray();
    }

    /**
     * {@link DecodeResult.Ok} cannot hold {@code null}: a frame that is msgpack nil decodes to this
     * marker. {@link #orNull(Object)} turns it back.
     */
    static final Object NONE = new Object() {
        @Override
        public String toString() {
            return "None";
        }
    };

    /** {@code v}, or {@code null} for {@link #NONE}. */
    public static Object orNull(Object v) {
        return v == NONE ? null : v;
    }

    /**
     * Packs a Python value as {@code msgpack.packb(v, use_bin_type=True)} would.
     *
     * @throws WireEncodingException when the value (or a part of it) has no Python msgpack form
     */
    public static byte[] encode(Object value) {
        return new PyPacker().value(value).toByteArray();
    }

    private static Object value(MsgpackReader r, int depth, int maxDepth, String what) throws IOException {
        MessageFormat f = r.peek(what);
        switch (f.getValueType()) {
            case NIL -> {
                r.nil(what);
                return null;
            }
            case BOOLEAN -> {
                return r.bool(what);
            }
            case INTEGER -> {
                if (f == MessageFormat.UINT64) {
                    java.math.BigInteger big = r.bigInteger(what);
                    return big.bitLength() <= 63 ? (Object) big.longValue() : big;
                }
                return r.integer(what);
            }
            case FLOAT -> {
                return r.float64(what);
            }
            case STRING -> {
                return r.string(what);
            }
            case BINARY -> {
                return r.binary(what);
            }
            case ARRAY -> {
                int n = r.arrayHeader(what);
                nest(r, depth, maxDepth, n, what);
                List<Object> out = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    out.add(value(r, depth + 1, maxDepth, what));
                }
                return out;
            }
            case MAP -> {
                int n = r.mapHeader(what);
                nest(r, depth, maxDepth, n, what);
                Map<String, Object> out = new LinkedHashMap<>(Math.max(4, n * 2));
                for (int i = 0; i < n; i++) {
                    int at = r.position();
                    String k = r.keyString(what);
                    if (out.containsKey(k)) {
                        throw new WireReject(RejectReason.DUPLICATE_KEY, what + ": key \"" + NotifyDecoder.clip(k)
                                + "\" appears twice (second at offset " + at + ")");
                    }
                    out.put(k, value(r, depth + 1, maxDepth, k));
                }
                return out;
            }
            case EXTENSION -> throw new WireReject(RejectReason.INVALID_FORMAT, what + ": msgpack ext value at offset "
                    + r.position() + " (ext types are not accepted here)");
        }
        throw new WireReject(RejectReason.INVALID_FORMAT, what + ": unknown msgpack format " + f);
    }

    private static void nest(MsgpackReader r, int depth, int maxDepth, int items, String what) {
        if (items > 0 && depth + 1 > maxDepth) {
            throw new WireReject(RejectReason.NESTING_TOO_DEEP, what + ": containers nested deeper than " + maxDepth
                    + " at offset " + r.position());
        }
    }
}
