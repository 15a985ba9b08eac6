package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.format.EntryKind;
import io.kvledger.journal.format.EntryType;
import io.kvledger.journal.proxy.ProxyEvent;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.RecordComponent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * {@link FastPayloads} writes byte for byte what the generic {@code EntryType.write} writes: over
 * every sample record of every entry type, the same records with each reference field null in
 * turn, and every input of the bug-class fixtures ({@code journal/fixtures}) with the effects the
 * reducer derives from it.
 */
class FastPayloadsTest {

    private static EntryType typeOf(Object r) {
        return switch (r) {
            case NodeEvent e -> EntryType.of(e);
            case Effect e -> EntryType.of(e);
            case ProxyEvent e -> EntryType.of(e);
            default -> throw new IllegalArgumentException(r.getClass().getName());
        };
    }

    private final Set<String> specialized = new TreeSet<>();
    private int compared;

    private void same(Object r) throws IOException {
        assertThat(EntryType.ofClass(r.getClass())).as("the per-class cache agrees with the switch").isEqualTo(typeOf(r));
        MessageBufferPacker generic = MessagePack.newDefaultBufferPacker();
        typeOf(r).write(generic, r);
        generic.flush();
        MessageBufferPacker fast = MessagePack.newDefaultBufferPacker();
        if (!FastPayloads.write(fast, r)) {
            return;
        }
        fast.flush();
        specialized.add(typeOf(r).typeName());
        compared++;
        String expected = HexFormat.of().formatHex(generic.toByteArray());
        assertThat(HexFormat.of().formatHex(fast.toByteArray())).as("%s", r).isEqualTo(expected);
        // the journal writer's own packer, twice: the second time its strings come from its cache
        for (int round = 0; round < 2; round++) {
            own.reset();
            int from = own.length;
            assertThat(FastPayloads.write(ownPacker, r)).isTrue();
            assertThat(HexFormat.of().formatHex(own.bytes, from, own.length)).as("%s, MsgpackWriter round %d", r, round)
                    .isEqualTo(expected);
        }
    }

    private final GroupBuffer own = new GroupBuffer();
    private final io.kvledger.wire.MsgpackWriter ownPacker = new io.kvledger.wire.MsgpackWriter(own, false);

    /** Python values at every boundary of msgpack's forms: MsgpackWriter writes what msgpack-java writes. */
    @Test
    void theWritersOwnPackerWritesWhatMsgpackJavaWritesForEveryForm() throws Exception {
        List<Object> values = new ArrayList<>();
        long[] ints = {0, 1, 127, 128, 255, 256, 65535, 65536, (1L << 32) - 1, 1L << 32, Long.MAX_VALUE, -1, -32, -33,
                -128, -129, -32768, -32769, Integer.MIN_VALUE, Integer.MIN_VALUE - 1L, Long.MIN_VALUE};
        for (long v : ints) {
            values.add(v);
        }
        values.add(java.math.BigInteger.ONE.shiftLeft(64).subtract(java.math.BigInteger.ONE));
        values.add(java.math.BigInteger.valueOf(-5));
        values.add(1.5);
        values.add(Double.NaN);
        values.add(-0.0);
        values.add(true);
        values.add(false);
        values.add(null);
        for (int n : new int[] {0, 1, 23, 24, 31, 32, 255, 256, 65535, 65536}) {
            values.add("x".repeat(n));
            values.add(new byte[n]);
        }
        values.add("é€😀 non-ASCII, long enough to be cached by the packer");
        values.add("unpaired \ud800 surrogate, long enough to be cached");
        for (int n : new int[] {15, 16, 65535, 65536}) {
            values.add(java.util.Collections.nCopies(n, 1));
            java.util.Map<String, Object> m = new java.util.LinkedHashMap<>();
            for (int i = 0; i < n; i++) {
                m.put("k" + i, i);
            }
            values.add(m);
        }
        for (Object v : values) {
            MessageBufferPacker generic = MessagePack.newDefaultBufferPacker();
            io.kvledger.wire.PyValues.pack(generic, v);
            generic.flush();
            for (int round = 0; round < 2; round++) {
                own.reset();
                int from = own.length;
                io.kvledger.wire.PyValues.pack(ownPacker, v);
                assertThat(java.util.Arrays.copyOfRange(own.bytes, from, own.length)).as("%s", String.valueOf(v).length() > 80
                        ? v.getClass().getSimpleName() : v).isEqualTo(generic.toByteArray());
            }
        }
    }

    /** {@code r} with its reference component {@code i} null (or null when it has none there). */
    private static Object withNull(Object r, int i) throws ReflectiveOperationException {
        RecordComponent[] c = r.getClass().getRecordComponents();
        if (c[i].getType().isPrimitive()) {
            return null;
        }
        Object[] args = new Object[c.length];
        Class<?>[] types = new Class<?>[c.length];
        for (int k = 0; k < c.length; k++) {
            types[k] = c[k].getType();
            args[k] = k == i ? null : c[k].getAccessor().invoke(r);
        }
        Constructor<?> ctor = r.getClass().getDeclaredConstructor(types);
        return ctor.newInstance(args);
    }

    @Test
    void everySampleAndItsNullVariantsEncodeToTheSameBytes() throws Exception {
        for (Object r : Samples.all()) {
            same(r);
            for (int i = 0; i < r.getClass().getRecordComponents().length; i++) {
                Object v = withNull(r, i);
                if (v != null) {
                    same(v);
                }
            }
        }
        assertThat(specialized).as("the types with an encoder of their own").hasSizeGreaterThanOrEqualTo(20);
    }

    @Test
    void everyFixtureInputAndItsDerivedEffectsEncodeToTheSameBytes() throws Exception {
        Path fixtures = Path.of("..", "..", "journal", "fixtures");
        List<Path> files;
        try (Stream<Path> s = Files.walk(fixtures)) {
            files = s.filter(p -> p.getFileName().toString().endsWith(".jsonl")).sorted().toList();
        }
        assertThat(files).as("fixture journals under %s", fixtures.toAbsolutePath()).isNotEmpty();
        for (Path f : files) {
            NodeState state = null;
            List<Effect> effects = new ArrayList<>();
            for (String line : Files.readAllLines(f)) {
                if (line.isBlank()) {
                    continue;
                }
                JsonLines.Line l = JsonLines.parseLine(line);
                if (l.kind() == EntryKind.HEADER && l.record() instanceof JournalHeader h) {
                    state = NodeState.initial(h.config());
                } else if (l.record() instanceof NodeEvent e) {
                    same(e);
                    if (state != null) {
                        effects.clear();
                        NodeReducer.applyInto(state, e, effects);
                        for (Effect x : effects) {
                            same(x);
                        }
                    }
                } else if (l.record() != null) {
                    same(l.record());
                }
            }
        }
        assertThat(compared).isGreaterThan(100);
    }

    @Test
    void aValueThatCannotBeJournaledIsRefusedWithTheGenericEncodersMessage() {
        NodeEvent bad = new NodeEvent.RequestAdmitted(1, "r", 1, -1,
                io.kvledger.core.model.KvParams.of("x", new Object()));
        Throwable generic = org.assertj.core.api.Assertions.catchThrowable(
                () -> EntryType.of(bad).write(MessagePack.newDefaultBufferPacker(), bad));
        Throwable fast = org.assertj.core.api.Assertions.catchThrowable(
                () -> FastPayloads.write(MessagePack.newDefaultBufferPacker(), bad));
        assertThat(fast).isInstanceOf(IllegalArgumentException.class).hasMessage(generic.getMessage());
    }
}
