package io.kvledger.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.kvledger.core.model.BlockGroups;
import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

class PyValuesTest {

    static LinkedHashMap<String, Object> sample() {
        LinkedHashMap<String, Object> inner = new LinkedHashMap<>();
        inner.put("k", List.of(1L, List.of(2L, 3L)));
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("none", null);
        m.put("t", true);
        m.put("f", false);
        m.put("small", 5L);
        m.put("neg", -70000L);
        m.put("big", 1L << 40);
        m.put("float", 1.5);
        m.put("whole_float", 2.0);
        m.put("str", "tx-é");
        m.put("list", new ArrayList<>(List.of(1L, "a", 0.25)));
        m.put("nested", inner);
        return m;
    }

    static byte[] pack(Object v) throws Exception {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            PyValues.pack(p, v);
            p.flush();
            return p.toByteArray();
        }
    }

    static Object unpack(byte[] b) throws Exception {
        try (var u = MessagePack.newDefaultUnpacker(b)) {
            return PyValues.unpack(u);
        }
    }

    @Test
    void python_values_round_trip_through_msgpack() throws Exception {
        LinkedHashMap<String, Object> m = sample();
        m.put("bytes", new byte[] {0, 1, (byte) 0xff});
        m.put("huge", new BigInteger("18446744073709551615"));
        m.put("nan", Double.NaN);
        Map<?, ?> back = (Map<?, ?>) unpack(pack(m));
        assertThat(new ArrayList<Object>(back.keySet())).isEqualTo(new ArrayList<Object>(m.keySet()));
        assertThat(back.get("bytes")).isEqualTo(new byte[] {0, 1, (byte) 0xff});
        assertThat(back.get("huge")).isEqualTo(new BigInteger("18446744073709551615"));
        assertThat((Double) back.get("nan")).isNaN();
        for (String k : sample().keySet()) {
            assertThat(back.get(k)).as(k).isEqualTo(m.get(k));
        }
    }

    @Test
    void integers_of_any_java_width_are_the_same_python_int() throws Exception {
        assertThat(pack(Integer.valueOf(300))).isEqualTo(pack(300L));
        assertThat(pack(List.of((short) 1, (byte) 2))).isEqualTo(pack(List.of(1L, 2L)));
        assertThat(pack(BlockGroups.single(1, 2))).isEqualTo(pack(List.of(List.of(1L, 2L))));
    }

    @Test
    void values_that_are_not_python_values_are_refused() {
        assertThatThrownBy(() -> pack(Map.of("k", new Object()))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("java.lang.Object");
    }

    /** The bytes Python's msgpack writes for the same dict are the bytes this codec writes. */
    @Test
    void msgpack_bytes_match_python_msgpack_packb() throws Exception {
        Path python = Path.of("/usr/bin/python3");
        assumeThat(Files.isExecutable(python)).as("python3 with msgpack").isTrue();
        String script = """
                import msgpack, sys
                d = {"none": None, "t": True, "f": False, "small": 5, "neg": -70000, "big": 1 << 40, "float": 1.5,
                     "whole_float": 2.0, "str": "tx-\\u00e9", "list": [1, "a", 0.25], "nested": {"k": [1, [2, 3]]}}
                sys.stdout.write(msgpack.packb(d, use_bin_type=True).hex())
                """;
        Process p = new ProcessBuilder(python.toString(), "-c", script).redirectErrorStream(true).start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        p.getInputStream().transferTo(out);
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        String hex = out.toString(StandardCharsets.UTF_8).strip();
        assumeThat(p.exitValue()).as("python3 msgpack available: %s", hex).isZero();
        assertThat(HexFormat.of().formatHex(pack(sample()))).isEqualTo(hex);
    }
    /** {@code refusal} checks without encoding what {@code pack} refuses, with the same reason. */
    @Test
    void refusal_agrees_with_pack_on_what_it_accepts_and_refuses() throws Exception {
        Object deep = List.of();
        for (int i = 0; i <= PyValues.MAX_DEPTH + 1; i++) {
            deep = List.of(deep);
        }
        List<Object> values = new ArrayList<>(List.of(sample(), new int[] {1, 2}, BlockGroups.single(new int[] {3}),
                new byte[] {1}, BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE), BigInteger.valueOf(Long.MIN_VALUE),
                BigInteger.ONE.shiftLeft(64), BigInteger.ONE.shiftLeft(63).negate().subtract(BigInteger.ONE),
                new Object(), List.of(1L, new Object()), Map.of("k", Thread.State.NEW), deep,
                new Object[] {"a", 1L}, java.util.Set.of(1L)));
        Map<String, Object> badKey = new LinkedHashMap<>();
        badKey.put("ok", 1L);
        badKey.put("bad", new StringBuilder("sb"));
        badKey.put("worse", new Object());
        values.add(badKey);
        int refused = 0;
        for (Object v : values) {
            String why = PyValues.refusal(v);
            String packError = null;
            try {
                pack(v);
            } catch (IllegalArgumentException e) {
                packError = e.getMessage();
            }
            assertThat(why == null).as("refusal(%s) is %s, pack said %s", v, why, packError).isEqualTo(packError == null);
            if (why != null) {
                refused++;
                if (!(v instanceof BigInteger)) {
                    assertThat(why).isEqualTo(packError);
                }
            }
        }
        assertThat(refused).as("the refused samples").isEqualTo(7);
    }

    @Test
    void unpack_refuses_ext_types_and_nesting_deeper_than_the_limit() throws Exception {
        assertThatThrownBy(() -> unpack(HexFormat.of().parseHex("d40102"))).isInstanceOf(PyValueException.class)
                .hasMessageContaining("extension");
        byte[] deep = new byte[PyValues.MAX_DEPTH + 2];
        java.util.Arrays.fill(deep, (byte) 0x91);
        deep[deep.length - 1] = (byte) 0xc0;
        assertThatThrownBy(() -> unpack(deep)).isInstanceOf(PyValueException.class).hasMessageContaining("nested deeper");
        byte[] limit = java.util.Arrays.copyOfRange(deep, 1, deep.length);
        assertThat(unpack(limit)).as("nesting up to the limit is read").isInstanceOf(List.class);
    }

    @Test
    void map_keys_of_any_type_pack_but_not_for_a_peer() throws Exception {
        Map<Object, Object> m = new LinkedHashMap<>();
        m.put(1L, "one");
        assertThat(HexFormat.of().formatHex(pack(m))).isEqualTo("8101a36f6e65");
        assertThat(unpack(pack(m))).isEqualTo(m);
        GrowableBytes out = new GrowableBytes(16);
        assertThatThrownBy(() -> PyValues.packStrKeys(new MsgpackWriter(out, true), m))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a str");
    }

    /** The journal refuses values nested deeper than its reader takes; for a peer, the caller decides. */
    @Test
    void the_journal_refuses_values_nested_deeper_than_it_reads_a_peer_packer_does_not() throws Exception {
        Object nested = List.of();
        for (int i = 0; i < 600; i++) {
            nested = List.of(nested);
        }
        Object v = nested; // 601 lists
        GrowableBytes out = new GrowableBytes(16);
        PyValues.packStrKeys(new MsgpackWriter(out, true), v);
        assertThat(out.length).isEqualTo(601);
        assertThatThrownBy(() -> pack(v)).as("the journal's limit").isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("nested deeper than " + PyValues.MAX_DEPTH);
    }

    /** The in-place writer writes what msgpack-java writes, strict or not, and a strict one refuses a lone surrogate. */
    @Test
    void the_in_place_writer_writes_what_msgpack_java_writes() throws Exception {
        List<Object> values = new ArrayList<>(List.of(sample(), 0L, -1L, 127L, 128L, 65535L, 65536L, Long.MIN_VALUE,
                Long.MAX_VALUE, BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE), 1.5f, -0.0,
                OpaqueBytes.of(new byte[] {9}), "é€😀 non-ASCII, long enough to be cached by the writer",
                "x".repeat(31), "x".repeat(32), "x".repeat(256), "x".repeat(65536), new byte[300],
                java.util.Collections.nCopies(16, 1), new int[] {1, 300, 70000, -1}));
        for (boolean strict : new boolean[] {false, true}) {
            GrowableBytes buf = new GrowableBytes(1);
            MsgpackWriter w = new MsgpackWriter(buf, strict);
            for (Object v : values) {
                for (int round = 0; round < 2; round++) {
                    buf.length = 0;
                    PyValues.pack(w, v);
                    assertThat(java.util.Arrays.copyOf(buf.bytes, buf.length)).as("%s strict=%s", v, strict)
                            .isEqualTo(pack(v instanceof OpaqueBytes o ? o.raw() : v));
                }
            }
        }
        String lone = "unpaired \ud800 surrogate, long enough to be cached";
        GrowableBytes buf = new GrowableBytes(1);
        PyValues.pack(new MsgpackWriter(buf, false), lone);
        assertThat(java.util.Arrays.copyOf(buf.bytes, buf.length)).as("lenient: '?' as msgpack-java").isEqualTo(pack(lone));
        assertThatThrownBy(() -> PyValues.pack(new MsgpackWriter(new GrowableBytes(1), true), lone))
                .isInstanceOf(WireEncodingException.class).hasMessageContaining("surrogate at index 9");
        assertThatThrownBy(() -> PyValues.pack(new MsgpackWriter(new GrowableBytes(1), true), "\udc00 low first"))
                .isInstanceOf(WireEncodingException.class).hasMessageContaining("surrogate at index 0");
        buf.length = 0;
        PyValues.pack(new MsgpackWriter(buf, true), "pair 😀 ok");
        assertThat(java.util.Arrays.copyOf(buf.bytes, buf.length)).isEqualTo(pack("pair 😀 ok"));
    }
}

