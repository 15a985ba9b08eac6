package io.kvledger.journal.format;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.journal.json.Json;
import java.math.BigInteger;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.msgpack.core.MessagePack;

/** The journal's JSON form of Python values, and its reading of them (the codec is wire's PyValues). */
class PyJsonTest {

    @Test
    void json_tags_carry_what_json_cannot_hold() {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("nan", Double.NaN);
        m.put("inf", Double.NEGATIVE_INFINITY);
        m.put("bytes", new byte[] {1, 2});
        m.put("huge", new BigInteger("18446744073709551615"));
        String text = Json.write(PyJson.toJson(m));
        assertThat(text).isEqualTo("{\"nan\":{\"$float\":\"nan\"},\"inf\":{\"$float\":\"-inf\"},"
                + "\"bytes\":{\"$bytes\":\"AQI=\"},\"huge\":{\"$int\":\"18446744073709551615\"}}");
        Map<?, ?> back = (Map<?, ?>) PyJson.fromJson(Json.parse(text));
        assertThat((Double) back.get("nan")).isNaN();
        assertThat(back.get("inf")).isEqualTo(Double.NEGATIVE_INFINITY);
        assertThat(back.get("bytes")).isEqualTo(new byte[] {1, 2});
        assertThat(back.get("huge")).isEqualTo(new BigInteger("18446744073709551615"));
        assertThatThrownBy(() -> PyJson.fromJson(Json.parse("{\"$float\":\"x\"}")))
                .isInstanceOf(PayloadException.class).hasMessageContaining("$float must be");
        assertThatThrownBy(() -> PyJson.fromJson(Json.parse("{\"$what\":\"x\"}")))
                .isInstanceOf(PayloadException.class).hasMessageContaining("unknown tag $what");
    }

    @Test
    void what_the_codec_refuses_to_read_is_a_damaged_payload() throws Exception {
        try (var u = MessagePack.newDefaultUnpacker(HexFormat.of().parseHex("d40102"))) {
            assertThatThrownBy(() -> PyJson.unpack(u)).isInstanceOf(PayloadException.class).hasMessageContaining("extension");
        }
        try (var u = MessagePack.newDefaultUnpacker(HexFormat.of().parseHex("8101a36f6e65"))) {
            assertThatThrownBy(() -> PyJson.unpackParams(u)).isInstanceOf(PayloadException.class)
                    .hasMessageContaining("params keys must be strings");
        }
    }
}
