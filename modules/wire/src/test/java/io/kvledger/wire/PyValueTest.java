package io.kvledger.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.PyValue;
import java.math.BigInteger;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The sealed Python value: the same bytes as its plain-Java form, and back. */
class PyValueTest {

    @Test
    void a_value_packs_as_its_plain_java_form_and_converts_back() throws Exception {
        LinkedHashMap<String, Object> m = PyValuesTest.sample();
        m.put("bytes", new byte[] {0, 1, (byte) 0xff});
        m.put("huge", new BigInteger("18446744073709551615"));
        m.put("int_key_map", new LinkedHashMap<>(Map.of(7L, "seven")));
        PyValue v = PyValues.value(m);
        assertThat(v).isInstanceOf(PyValue.Map.class);
        assertThat(PyValuesTest.pack(v)).isEqualTo(PyValuesTest.pack(m));
        Map<?, ?> back = (Map<?, ?>) v.toObject();
        assertThat(back.get("bytes")).isEqualTo(new byte[] {0, 1, (byte) 0xff});
        assertThat(back.get("huge")).isEqualTo(new BigInteger("18446744073709551615"));
        for (String k : PyValuesTest.sample().keySet()) {
            assertThat(back.get(k)).as(k).isEqualTo(m.get(k));
        }
        assertThat(PyValues.value(PyValuesTest.unpack(PyValuesTest.pack(m)))).as("what unpack reads is the same value").isEqualTo(v);
        assertThat(((PyValue.Map) v).get("small")).isEqualTo(new PyValue.Int(5));
        assertThat(((PyValue.Map) v).get("absent")).isNull();
    }

    @Test
    void every_java_int_width_is_one_int_and_only_uint64_is_a_big_int() {
        assertThat(PyValues.value(300)).isEqualTo(new PyValue.Int(300));
        assertThat(PyValues.value((short) 3)).isEqualTo(PyValues.value(3L));
        assertThat(PyValues.value(BigInteger.valueOf(-5))).isEqualTo(new PyValue.Int(-5));
        assertThat(PyValues.value(BigInteger.ONE.shiftLeft(63))).isInstanceOf(PyValue.BigInt.class);
        assertThatThrownBy(() -> new PyValue.BigInt(BigInteger.TEN)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> PyValues.value(BigInteger.ONE.shiftLeft(64))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("64 bits");
        assertThat(PyValues.value(BlockGroups.single(1, 2))).isEqualTo(PyValues.value(List.of(List.of(1L, 2L))));
        assertThat(PyValues.value(KvParams.of("k", 1L))).isEqualTo(PyValues.value(Map.of("k", 1L)));
        assertThat(PyValues.value(null)).isSameAs(PyValue.NONE);
        assertThatThrownBy(() -> PyValues.value(List.of(new Object()))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("java.lang.Object");
    }

    @Test
    void bytes_are_values_compared_by_content_and_never_shared() {
        byte[] raw = {1, 2};
        PyValue.Bytes b = new PyValue.Bytes(raw);
        raw[0] = 9;
        assertThat(b).isEqualTo(new PyValue.Bytes(new byte[] {1, 2})).hasSameHashCodeAs(new PyValue.Bytes(new byte[] {1, 2}));
        b.value()[1] = 9;
        assertThat(b.value()).containsExactly(1, 2);
        assertThat(b).hasToString("b'0102'");
    }

    @Test
    void a_peer_frame_decodes_to_a_value_and_a_value_encodes_as_python_does() {
        byte[] frame = PyMsgpack.encode(Map.of("transfer_id", 17L));
        DecodeResult<PyValue> d = PyMsgpack.decodeValue(frame, WireLimits.DEFAULT);
        assertThat(d).isEqualTo(new DecodeResult.Ok<>(PyValues.value(Map.of("transfer_id", 17L))));
        assertThat(PyMsgpack.encode(d.valueOrNull())).isEqualTo(frame);
        assertThat(PyMsgpack.decodeValue(HexFormat.of().parseHex("c0"), WireLimits.DEFAULT).valueOrNull()).isSameAs(PyValue.NONE);
        DecodeResult<PyValue> bad = PyMsgpack.decodeValue(HexFormat.of().parseHex("8101a1"), WireLimits.DEFAULT);
        assertThat(bad).isInstanceOf(DecodeResult.Rejected.class);
        assertThat(bad.rejectionOrNull().reason()).isEqualTo(RejectReason.NON_STRING_KEY);
        PyValue intKey = PyValues.value(new LinkedHashMap<>(Map.of(1L, 2L)));
        assertThatThrownBy(() -> PyMsgpack.encode(intKey)).isInstanceOf(WireEncodingException.class).hasMessageContaining("not a str");
    }
}
