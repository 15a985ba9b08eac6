package io.kvledger.core.moriio;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class ExtraConfigTest {

    // --- constants -------------------------------------------------------------------------

    @Test
    void constants_match_moriio_constants() {
        assertThat(ExtraConfig.DEFAULT_HANDSHAKE_PORT).isEqualTo("6301");
        assertThat(ExtraConfig.DEFAULT_NOTIFY_PORT).isEqualTo("61005");
        assertThat(ExtraConfig.DEFAULT_DEFER_TIMEOUT_S).isEqualTo(60.0);
        assertThat(ExtraConfig.DEFAULT_TRANSFER_TIMEOUT_S).isEqualTo(30.0);
        assertThat(ExtraConfig.DEFAULT_RECV_ABORT_TIMEOUT_S).isEqualTo(120.0);
        assertThat(ExtraConfig.PING_INTERVAL_S).isEqualTo(3);
        assertThat(ExtraConfig.READ_ABORT_REQUEST_TIMEOUT_S).isEqualTo(3600);
        assertThat(ExtraConfig.MAX_TERMINAL_TRANSFER_IDS).isEqualTo(4096);
    }

    // --- truthiness ------------------------------------------------------------------------

    @Test
    void falsy_values_follow_python() {
        List<Object> falsy = new ArrayList<>(Arrays.asList(
                null, false, 0, 0L, (short) 0, (byte) 0, 0.0, -0.0, 0.0f, BigInteger.ZERO,
                new BigDecimal("0.000"), "", new StringBuilder(), List.of(), Map.of(),
                new LinkedHashSet<>(), new byte[0]));
        for (Object v : falsy) {
            assertThat(ExtraConfig.pythonTruthy(v)).as("bool(%s)", v).isFalse();
        }
    }

    @Test
    void truthy_values_follow_python() {
        List<Object> truthy = List.of(
                true, 1, -1, 7L, 0.5, Double.NaN, Double.NEGATIVE_INFINITY, BigInteger.TWO,
                "0", "False", " ", 'x', List.of(0), Map.of("k", 0), new byte[] {0}, new Object());
        for (Object v : truthy) {
            assertThat(ExtraConfig.pythonTruthy(v)).as("bool(%s)", v).isTrue();
        }
    }

    // --- _set_port_defaults ----------------------------------------------------------------

    @Test
    void port_default_replaces_missing_and_falsy_values() {
        assertThat(ExtraConfig.portDefault(null, ExtraConfig.DEFAULT_HANDSHAKE_PORT)).isEqualTo("6301");
        assertThat(ExtraConfig.portDefault(0, ExtraConfig.DEFAULT_HANDSHAKE_PORT)).isEqualTo("6301");
        assertThat(ExtraConfig.portDefault("", ExtraConfig.DEFAULT_NOTIFY_PORT)).isEqualTo("61005");
        assertThat(ExtraConfig.portDefault(false, ExtraConfig.DEFAULT_NOTIFY_PORT)).isEqualTo("61005");
    }

    @Test
    void port_default_keeps_string_zero_and_configured_values_unchanged() {
        assertThat(ExtraConfig.portDefault("0", ExtraConfig.DEFAULT_HANDSHAKE_PORT)).isEqualTo("0");
        assertThat(ExtraConfig.portDefault(7000, ExtraConfig.DEFAULT_HANDSHAKE_PORT)).isEqualTo(7000);
        assertThat(ExtraConfig.portDefault("7000", ExtraConfig.DEFAULT_HANDSHAKE_PORT)).isEqualTo("7000");
    }

    // --- get_moriio_mode -------------------------------------------------------------------

    @Test
    void read_mode_selected_by_true_or_one_in_any_form() {
        for (Object v : List.of("TRUE ", " true", "True", "1", " 1\n", true, 1, 1L, BigInteger.ONE)) {
            assertThat(ExtraConfig.parseReadMode(v)).as("read_mode=%s", v).isTrue();
        }
    }

    @Test
    void write_mode_for_everything_else() {
        List<Object> write = new ArrayList<>(Arrays.asList(
                null, "yes", "on", "false", "0", "", false, 0, 1.0, "1.0", "t", List.of(true)));
        for (Object v : write) {
            assertThat(ExtraConfig.parseReadMode(v)).as("read_mode=%s", v).isFalse();
        }
    }

    // --- engine_id and str() ---------------------------------------------------------------

    @Test
    void engine_id_uses_string_form_of_configured_port() {
        assertThat(ExtraConfig.engineId("10.0.0.1", ExtraConfig.DEFAULT_HANDSHAKE_PORT)).isEqualTo("10.0.0.1:6301");
        assertThat(ExtraConfig.engineId("10.0.0.1", 6301)).isEqualTo("10.0.0.1:6301");
        assertThat(ExtraConfig.engineId("10.0.0.1", 6301.0)).isEqualTo("10.0.0.1:6301.0");
        assertThat(ExtraConfig.engineId("10.0.0.1", ExtraConfig.portDefault(0, "6301"))).isEqualTo("10.0.0.1:6301");
        assertThat(ExtraConfig.engineId(null, null)).isEqualTo("None:None");
    }

    @Test
    void python_str_of_scalars() {
        assertThat(ExtraConfig.pythonStr(null)).isEqualTo("None");
        assertThat(ExtraConfig.pythonStr(true)).isEqualTo("True");
        assertThat(ExtraConfig.pythonStr(false)).isEqualTo("False");
        assertThat(ExtraConfig.pythonStr(-42)).isEqualTo("-42");
        assertThat(ExtraConfig.pythonStr(new BigInteger("123456789012345678901234567890")))
                .isEqualTo("123456789012345678901234567890");
        assertThat(ExtraConfig.pythonStr("6301")).isEqualTo("6301");
    }

    @ParameterizedTest(name = "str({0}) = {1}")
    @CsvSource({
        "60.0, 60.0",
        "30, 30.0",
        "0.1, 0.1",
        "-2.5, -2.5",
        "1e15, 1000000000000000.0",
        "9007199254740992, 9007199254740992.0",
        "1e16, 1e+16",
        "1e20, 1e+20",
        "1e22, 1e+22",
        "1e23, 1e+23",
        "2e23, 2e+23",
        "0.0001, 0.0001",
        "0.00001, 1e-05",
        "1.23e-5, 1.23e-05",
        "1.5e300, 1.5e+300",
        "123456789.125, 123456789.125",
        "4.35, 4.35",
        "1.7976931348623157e308, 1.7976931348623157e+308",
        "2.2250738585072014e-308, 2.2250738585072014e-308",
        "4.9e-324, 5e-324",
    })
    void python_str_of_double_is_python_float_repr(double v, String expected) {
        assertThat(ExtraConfig.pythonStr(v)).isEqualTo(expected);
    }

    @Test
    void python_str_of_special_doubles_and_floats() {
        assertThat(ExtraConfig.pythonStr(0.1 + 0.2)).isEqualTo("0.30000000000000004");
        assertThat(ExtraConfig.pythonStr(2.0 / 3)).isEqualTo("0.6666666666666666");
        assertThat(ExtraConfig.pythonStr(0.0)).isEqualTo("0.0");
        assertThat(ExtraConfig.pythonStr(-0.0)).isEqualTo("-0.0");
        assertThat(ExtraConfig.pythonStr(Double.POSITIVE_INFINITY)).isEqualTo("inf");
        assertThat(ExtraConfig.pythonStr(Double.NEGATIVE_INFINITY)).isEqualTo("-inf");
        assertThat(ExtraConfig.pythonStr(Double.NaN)).isEqualTo("nan");
        // msgpack float32 decodes to a Python float holding the widened value.
        assertThat(ExtraConfig.pythonStr(0.1f)).isEqualTo("0.10000000149011612");
        assertThat(ExtraConfig.pythonStr(60.0f)).isEqualTo("60.0");
    }

    @Test
    void python_str_of_containers_and_bytes() {
        List<Object> list = new ArrayList<>(Arrays.asList(1, "a", true, null, 1.0));
        assertThat(ExtraConfig.pythonStr(list)).isEqualTo("[1, 'a', True, None, 1.0]");
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("k", true);
        map.put("it's", List.of());
        assertThat(ExtraConfig.pythonStr(map)).isEqualTo("{'k': True, \"it's\": []}");
        assertThat(ExtraConfig.pythonStr(new LinkedHashSet<>())).isEqualTo("set()");
        assertThat(ExtraConfig.pythonStr(new LinkedHashSet<>(List.of(1)))).isEqualTo("{1}");
        assertThat(ExtraConfig.pythonStr(new byte[] {'a', '\'', 'b'})).isEqualTo("b\"a'b\"");
        assertThat(ExtraConfig.pythonStr(new byte[] {0, 'x', (byte) 0xff, '\n'})).isEqualTo("b'\\x00x\\xff\\n'");
    }

    // --- float() of timeouts ---------------------------------------------------------------

    @Test
    void parse_seconds_missing_key_gives_default() {
        assertThat(ExtraConfig.parseSeconds(null, ExtraConfig.DEFAULT_DEFER_TIMEOUT_S).value()).isEqualTo(60.0);
    }

    @Test
    void parse_seconds_numbers_and_bools() {
        assertThat(ExtraConfig.parseSeconds(300, 60.0).value()).isEqualTo(300.0);
        assertThat(ExtraConfig.parseSeconds(2.5, 60.0).value()).isEqualTo(2.5);
        assertThat(ExtraConfig.parseSeconds(7L, 60.0).value()).isEqualTo(7.0);
        assertThat(ExtraConfig.parseSeconds(true, 60.0).value()).isEqualTo(1.0);
        assertThat(ExtraConfig.parseSeconds(-1, 60.0).value()).isEqualTo(-1.0);
        assertThat(ExtraConfig.parseSeconds(BigInteger.TEN, 60.0).value()).isEqualTo(10.0);
        assertThat(ExtraConfig.parseSeconds(BigInteger.TEN.pow(400), 60.0).error())
                .isEqualTo("int too large to convert to float");
    }

    @ParameterizedTest(name = "float({0}) = {1}")
    @CsvSource(delimiter = '|', value = {
        "' 60 '|60.0",
        "120|120.0",
        "1_000.5|1000.5",
        "1.|1.0",
        ".5|0.5",
        "1e5|100000.0",
        "1e1_0|1.0E10",
        "-2.5E-1|-0.25",
        "+3|3.0",
    })
    void parse_seconds_strings_follow_python_float(String s, double expected) {
        assertThat(ExtraConfig.parseSeconds(s, 60.0).value()).isEqualTo(expected);
    }

    @Test
    void parse_seconds_strings_inf_nan_and_unicode_whitespace() {
        assertThat(ExtraConfig.parseSeconds("inf", 1.0).value()).isEqualTo(Double.POSITIVE_INFINITY);
        assertThat(ExtraConfig.parseSeconds("-Infinity", 1.0).value()).isEqualTo(Double.NEGATIVE_INFINITY);
        assertThat(ExtraConfig.parseSeconds(" +NaN ", 1.0).value()).isNaN();
        assertThat(ExtraConfig.parseSeconds("\u00a060\u2003", 1.0).value()).isEqualTo(60.0);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", ".", "abc", "1_e5", "_1", "1__0", "0x10", "1.0d", "1f", "Infinityy", "1e", "- 1"})
    void parse_seconds_rejects_what_python_float_rejects(String s) {
        Checked<Double> r = ExtraConfig.parseSeconds(s, 60.0);
        assertThat(r.isOk()).isFalse();
        assertThat(r.error()).startsWith("could not convert string to float: ");
    }

    @Test
    void parse_seconds_error_message_uses_python_repr_of_original_string() {
        assertThat(ExtraConfig.parseSeconds(" abc ", 60.0).error())
                .isEqualTo("could not convert string to float: ' abc '");
    }

    @Test
    void parse_seconds_rejects_non_numeric_types() {
        Checked<Double> r = ExtraConfig.parseSeconds(List.of(1), 60.0);
        assertThat(r.isOk()).isFalse();
        assertThat(r.error()).startsWith("could not convert list to float");
        assertThat(ExtraConfig.parseSeconds(Map.of(), 60.0).error()).startsWith("could not convert dict");
    }
}
