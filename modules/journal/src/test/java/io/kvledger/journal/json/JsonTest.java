package io.kvledger.journal.json;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class JsonTest {

    @Test
    void parses_every_value_kind_keeping_key_order() {
        Object v = Json.parse(" {\"b\":1,\"a\":[true,false,null,-0.5,1e3,\"x\"],\"c\":{}}\r\n");
        assertThat(v).isInstanceOf(LinkedHashMap.class);
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) v;
        assertThat(m.keySet()).containsExactly("b", "a", "c");
        assertThat(m.get("b")).isEqualTo(1L);
        assertThat(m.get("a")).isEqualTo(java.util.Arrays.asList(true, false, null, -0.5, 1000.0, "x"));
        assertThat(m.get("c")).isEqualTo(Map.of());
    }

    @Test
    void integers_are_longs_and_numbers_with_fraction_or_exponent_are_doubles() {
        assertThat(Json.parse("9223372036854775807")).isEqualTo(Long.MAX_VALUE);
        assertThat(Json.parse("-9223372036854775808")).isEqualTo(Long.MIN_VALUE);
        assertThat(Json.parse("1.0")).isEqualTo(1.0);
        assertThat(Json.parse("2E-3")).isEqualTo(0.002);
        assertThat(Json.parse("-0")).isEqualTo(0L);
    }

    @Test
    void decodes_escapes_and_surrogate_pairs() {
        assertThat(Json.parse("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\""))
                .isEqualTo("a\"b\\c/d\b\f\n\r\té\uD83D\uDE00");
        assertThat(Json.parse("\"\\ud800\"")).isEqualTo("\uD800");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "01|leading zero",
            "+1|expected a value",
            ".5|expected a value",
            "1.|expected a digit after '.'",
            "1e|expected a digit in the exponent",
            "[1,]|expected a value",
            "{\"a\":1,}|expected a string key",
            "{'a':1}|expected a string key",
            "{\"a\" 1}|expected ':'",
            "[1 2]|expected ',' or ']'",
            "NaN|expected a value",
            "Infinity|expected a value",
            "tru|invalid literal",
            "\"abc|unterminated string",
            "\"\\x\"|invalid escape",
            "\"\\u12g4\"|invalid hex digit",
            "{\"a\":1,\"a\":2}|duplicate key",
            "1 2|after the value",
            "// comment|expected a value",
            "99999999999999999999|does not fit in 64 bits",
            "1e999|out of the double range",
            "''|expected a value"})
    void rejects_what_rfc_8259_does_not_allow(String text, String message) {
        assertThatThrownBy(() -> Json.parse(text)).isInstanceOf(JsonException.class).hasMessageContaining(message);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "   ", "\t"})
    void rejects_empty_input(String text) {
        assertThatThrownBy(() -> Json.parse(text)).isInstanceOf(JsonException.class)
                .hasMessageContaining("end of input");
    }

    @Test
    void rejects_unescaped_control_characters_and_reports_the_column() {
        assertThatThrownBy(() -> Json.parse("[\"a\u0001\"]")).isInstanceOf(JsonException.class)
                .hasMessage("unescaped control character in string at column 4")
                .extracting(e -> ((JsonException) e).offset()).isEqualTo(3);
    }

    @Test
    void refuses_hostile_nesting_instead_of_overflowing_the_stack() {
        String deep = "[".repeat(100_000) + "]".repeat(100_000);
        assertThatThrownBy(() -> Json.parse(deep)).isInstanceOf(JsonException.class).hasMessageContaining("nesting");
        char[] ok = new char[Json.MAX_DEPTH * 2];
        Arrays.fill(ok, 0, Json.MAX_DEPTH, '[');
        Arrays.fill(ok, Json.MAX_DEPTH, ok.length, ']');
        assertThat(Json.parse(new String(ok))).isInstanceOf(List.class);
    }

    @Test
    void writes_compact_text_that_parses_back_to_the_same_value() {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("s", "q\"\\\n\u0001é\uD83D\uDE00\u2028");
        m.put("i", -42L);
        m.put("d", 1.0);
        m.put("e", 1.0E-7);
        m.put("big", 1.0E300);
        m.put("n", null);
        m.put("l", List.of(true, List.of(), Map.of()));
        String text = Json.write(m);
        assertThat(text).startsWith("{\"s\":\"q\\\"\\\\\\n\\u0001é\uD83D\uDE00\\u2028\",\"i\":-42,\"d\":1.0,");
        assertThat(Json.parse(text)).isEqualTo(m);
    }

    @Test
    void doubles_always_keep_a_fraction_or_exponent_so_they_stay_doubles() {
        for (double d : new double[] {0.0, -0.0, 1.0, 100.0, 1e21, 1e-7, 123456789.125, Double.MIN_VALUE, Double.MAX_VALUE}) {
            Object back = Json.parse(Json.write(d));
            assertThat(back).as("%s", d).isInstanceOf(Double.class).isEqualTo(d);
        }
    }

    @Test
    void an_unpaired_surrogate_is_escaped_and_read_back_unchanged() {
        String s = "a\uD800b\uDC00";
        String text = Json.write(s);
        assertThat(text).isEqualTo("\"a\\ud800b\\udc00\"");
        assertThat(Json.parse(text)).isEqualTo(s);
    }

    @Test
    void refuses_values_json_cannot_hold() {
        assertThatThrownBy(() -> Json.write(Double.NaN)).isInstanceOf(JsonException.class);
        assertThatThrownBy(() -> Json.write(Double.POSITIVE_INFINITY)).isInstanceOf(JsonException.class);
        assertThatThrownBy(() -> Json.write(new Object())).isInstanceOf(JsonException.class)
                .hasMessageContaining("java.lang.Object");
    }
}
