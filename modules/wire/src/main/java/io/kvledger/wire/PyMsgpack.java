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
 * <p>{@link #decodeValue} reads one frame strictly and boundedly with the package's
 * {@link MsgpackReader}: the frame size is checked first, every header's claim is checked against
 * the bytes left, containers nest at most {@link WireLimits#maxNestingDepth()} deep, map keys must
 * be msgpack {@code str} (no {@code bin}, no other types) and appear once, strings must be UTF-8,
 * ext values are refused, and nothing may follow the value. The value comes back as the sealed
 * {@link PyValue} (dicts in frame order, an int from 2^63 to 2^64 - 1 as a
 * {@link PyValue.BigInt}, a float32 widened), as Python's {@code msgpack.loads(raw=False)} gives
 * it. Never throws.
 *
 * <p>{@link #encode(PyValue)} packs such a value, and {@link #encode(Object)} a plain-Java form
 * ({@code Integer}, {@code List}, {@code Map} views and the rest {@link PyValues} takes: tests'
 * frames and the generic packing the typed encoders are compared with), exactly as Python's
 * {@code msgpack.packb} does. The node's own frames (notify messages, the bridge's replies) are not built as values
 * first: they are written field by field through {@link PyPacker}.
 *
 * <p>Stateless static methods; safe from any thread.
 */
public final class PyMsgpack {

    private PyMsgpack() {}

    /**
     * Decodes one frame into a {@link PyValue} (see the class comment; None is
     * {@link PyValue#NONE}); never throws.
     */
    public static DecodeResult<PyValue> decodeValue(byte[] frame, WireLimits limits) {
        return DecodeResult.of(() -> {
            Frames.checkSize(frame, limits);
            MsgpackReader r = new MsgpackReader(limits.maxNestingDepth());
            r.reset(frame);
            PyValue v = value(r, 0, limits.maxNestingDepth(), "value");
            if (r.remaining() > 0) {
                throw new WireReject(RejectReason.TRAILING_BYTES, r.remaining() + " bytes follow the value at offset " + r.position());
            }
            return v;
        });
    }

    /** Packs a {@link PyValue} as {@code msgpack.packb(v, use_bin_type=True)} would (see {@link #encode(Object)}). */
    public static byte[] encode(PyValue value) {
        return new PyPacker().value(value).toByteArray();
    }

    /**
     * Packs a Python value as {@code msgpack.packb(v, use_bin_type=True)} would.
     *
     * @throws WireEncodingException when the value (or a part of it) has no Python msgpack form
     */
    public static byte[] encode(Object value) {
        return new PyPacker().value(value).toByteArray();
    }

    private static PyValue value(MsgpackReader r, int depth, int maxDepth, String what) throws IOException {
        MessageFormat f = r.peek(what);
        switch (f.getValueType()) {
            case NIL -> {
                r.nil(what);
                return PyValue.NONE;
            }
            case BOOLEAN -> {
                return new PyValue.Bool(r.bool(what));
            }
            case INTEGER -> {
                if (f == MessageFormat.UINT64) {
                    java.math.BigInteger big = r.bigInteger(what);
                    return big.bitLength() <= 63 ? new PyValue.Int(big.longValue()) : new PyValue.BigInt(big);
                }
                return new PyValue.Int(r.integer(what));
            }
            case FLOAT -> {
                return new PyValue.Float(r.float64(what));
            }
            case STRING -> {
                return new PyValue.Str(r.string(what));
            }
            case BINARY -> {
                return new PyValue.Bytes(r.binary(what));
            }
            case ARRAY -> {
                int n = r.arrayHeader(what);
                nest(r, depth, maxDepth, n, what);
                List<PyValue> out = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    out.add(value(r, depth + 1, maxDepth, what));
                }
                return new PyValue.List(out);
            }
            case MAP -> {
                int n = r.mapHeader(what);
                nest(r, depth, maxDepth, n, what);
                Map<PyValue, PyValue> out = new LinkedHashMap<>(Math.max(4, n * 2));
                for (int i = 0; i < n; i++) {
                    int at = r.position();
                    String k = r.keyString(what);
                    PyValue key = new PyValue.Str(k);
                    if (out.containsKey(key)) {
                        throw new WireReject(RejectReason.DUPLICATE_KEY, what + ": key \"" + NotifyDecoder.clip(k)
                                + "\" appears twice (second at offset " + at + ")");
                    }
                    out.put(key, value(r, depth + 1, maxDepth, k));
                }
                return new PyValue.Map(out);
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
