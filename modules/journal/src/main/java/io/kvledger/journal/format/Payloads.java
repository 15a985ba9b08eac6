package io.kvledger.journal.format;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;

/**
 * Convenience over {@link EntryType} for whole payloads as byte arrays, and the content equality
 * that replay verification needs: records holding arrays ({@code PostWrite}, {@code FrameRejected})
 * compare by identity with {@code equals}, and an {@code Integer} and a {@code Long} in params are
 * different objects with the same journal bytes, so two records are "the same" here when they
 * have the same type and the same encoded payload (and, for inputs, the same {@code atNs}).
 */
public final class Payloads {

    private Payloads() {}

    /** The type of a {@link NodeEvent} or {@link Effect}. */
    static EntryType typeOf(Object record) {
        // the argument is an Object, so this is a type test with a rejection, not a sealed switch
        if (record instanceof NodeEvent e) {
            return EntryType.of(e);
        }
        if (record instanceof Effect e) {
            return EntryType.of(e);
        }
        if (record instanceof io.kvledger.journal.proxy.ProxyEvent e) {
            return EntryType.of(e);
        }
        throw new IllegalArgumentException("not an event, effect or proxy record: " + record);
    }

    /** The msgpack payload of a {@link NodeEvent} or {@link Effect}. */
    public static byte[] encode(Object record) {
        EntryType t = typeOf(record);
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            t.write(p, record);
            p.flush();
            return p.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Decodes a payload.
     *
     * @throws PayloadException when it does not match the type's schema
     */
    static Object decode(EntryType type, long atNs, byte[] payload) {
        try (MessageUnpacker u = MessagePack.newDefaultUnpacker(payload)) {
            return type.read(u, atNs);
        } catch (IOException | org.msgpack.core.MessagePackException e) {
            throw new PayloadException("truncated or malformed msgpack: " + e.getMessage(), e);
        }
    }

    /** Whether two events or effects have the same type and content (see the class comment). */
    public static boolean same(Object a, Object b) {
        if (a == null || b == null) {
            return a == b;
        }
        if (typeOf(a) != typeOf(b)) {
            return false;
        }
        if (a instanceof NodeEvent x && b instanceof NodeEvent y && x.atNs() != y.atNs()) {
            return false;
        }
        if (a instanceof io.kvledger.journal.proxy.ProxyEvent x && b instanceof io.kvledger.journal.proxy.ProxyEvent y
                && x.atNs() != y.atNs()) {
            return false;
        }
        return Arrays.equals(encode(a), encode(b));
    }

    /** The one-line dissection of an event or effect (type name, then fields). */
    public static String dissect(Object record) {
        return typeOf(record).dissect(record);
    }
}
