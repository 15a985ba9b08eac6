package io.kvledger.core.model;

import io.kvledger.core.moriio.ExtraConfig;
import java.util.Objects;

/**
 * A {@code transfer_id} as the request's {@code kv_transfer_params} carry it, for the places that
 * must send it on exactly as it came ({@code remote_blocks}, {@code release}, a ReqMeta): normally
 * a {@code str} ({@code tx-<uuid4>} from the proxy), but a sidecar or a test may send an int or any
 * other Python value, and peers match on the value, so it is re-encoded as that value
 * ({@link #raw()}), never as its text.
 *
 * <p>{@link #NONE} stands for a missing key or {@code None} (Python's {@code params.get(...)}
 * gives {@code None} for both); effects and metadata never hold {@code null} instead.
 * {@link #equals} and {@link #hashCode} are those of the raw value, and {@link #toString} is
 * {@code String.valueOf(raw)}, so a record holding one renders as it did when it held the raw
 * value.
 */
public final class TransferId {

    /** No {@code transfer_id}: the key is absent or its value is {@code None}. */
    public static final TransferId NONE = new TransferId(null);

    private final Object raw;

    private TransferId(Object raw) {
        this.raw = raw;
    }

    /**
     * The transfer id holding this Python value (a {@code String}, {@code Long}, {@code Boolean},
     * {@code Double}, list or map as the params decode them); {@link #NONE} for {@code null}.
     */
    public static TransferId of(Object raw) {
        return raw == null ? NONE : new TransferId(raw);
    }

    /** The Python value to encode, or {@code null} for {@link #NONE}. */
    public Object raw() {
        return raw;
    }

    /** Whether there is no transfer id (absent or {@code None}). */
    public boolean isNone() {
        return raw == null;
    }

    /**
     * The id when it is a {@code str}, else {@code null}: the connector keys its tables by string
     * transfer ids, so an id of another type keys nothing.
     */
    public String asString() {
        return raw instanceof String s ? s : null;
    }

    /** Python's {@code str()} of the value ({@code "None"} for {@link #NONE}): for messages. */
    public String pythonStr() {
        return ExtraConfig.pythonStr(raw);
    }

    /**
     * The text a string-keyed reader files the id under: the string itself, the value's
     * {@code toString} for another type, {@code null} for {@link #NONE}.
     */
    public String text() {
        return raw == null ? null : raw instanceof String s ? s : String.valueOf(raw);
    }

    @Override
    public boolean equals(Object o) {
        return this == o || o instanceof TransferId t && Objects.equals(raw, t.raw);
    }

    @Override
    public int hashCode() {
        return Objects.hashCode(raw);
    }

    @Override
    public String toString() {
        return String.valueOf(raw);
    }
}
