package io.kvledger.journal.format;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.kvledger.core.model.BlockGroups;
import io.kvledger.journal.json.Json;
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

    @Test
    void json_tags_carry_what_json_cannot_hold() {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("nan", Double.NaN);
        m.put("inf", Double.NEGATIVE_INFINITY);
        m.put("bytes", new byte[] {1, 2});
        m.put("huge", new BigInteger("18446744073709551615"));
        String text = Json.write(PyValues.toJson(m));
        assertThat(text).isEqualTo("{\"nan\":{\"$float\":\"nan\"},\"inf\":{\"$float\":\"-inf\"},"
                + "\"bytes\":{\"$bytes\":\"AQI=\"},\"huge\":{\"$int\":\"18446744073709551615\"}}");
        Map<?, ?> back = (Map<?, ?>) PyValues.fromJson(Json.parse(text));
        assertThat((Double) back.get("nan")).isNaN();
        assertThat(back.get("inf")).isEqualTo(Double.NEGATIVE_INFINITY);
        assertThat(back.get("bytes")).isEqualTo(new byte[] {1, 2});
        assertThat(back.get("huge")).isEqualTo(new BigInteger("18446744073709551615"));
        assertThatThrownBy(() -> PyValues.fromJson(Json.parse("{\"$float\":\"x\"}")))
                .isInstanceOf(PayloadException.class).hasMessageContaining("$float must be");
        assertThatThrownBy(() -> PyValues.fromJson(Json.parse("{\"$what\":\"x\"}")))
                .isInstanceOf(PayloadException.class).hasMessageContaining("unknown tag $what");
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
}

