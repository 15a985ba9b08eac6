package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class FaultSpecTest {

    @Test
    void parses_every_key_in_any_order_with_whitespace() {
        FaultSpec f = FaultSpec.parse(" handshake-fail=0.5 , drop=0.01,dup=0.02,delay=0.03,reorder=0.04,"
                + "fail=0.005,stall=0.002,abort = 0.1");
        assertThat(f).isEqualTo(new FaultSpec(0.01, 0.02, 0.03, 0.04, 0.005, 0.002, 0.1, 0.5, 0));
    }

    @Test
    void sq_full_is_a_key_of_its_own_and_formats_back() {
        FaultSpec f = FaultSpec.parse("sq-full=0.01,fail=0.002");
        assertThat(f.sqFull()).isEqualTo(0.01);
        assertThat(f.fail()).isEqualTo(0.002);
        assertThat(f.format()).isEqualTo("fail=0.002,sq-full=0.01");
        assertThat(FaultSpec.parse(f.format())).isEqualTo(f);
    }

    @Test
    void dp_alias_and_siblings_are_keys_of_their_own_and_format_back() {
        FaultSpec f = FaultSpec.parse("siblings=0.05,dp-alias=0.1,drop=0.01");
        assertThat(f.dpAlias()).isEqualTo(0.1);
        assertThat(f.siblings()).isEqualTo(0.05);
        assertThat(f.format()).isEqualTo("drop=0.01,dp-alias=0.1,siblings=0.05");
        assertThat(FaultSpec.parse(f.format())).isEqualTo(f);
        assertThat(new FaultSpec(0.01, 0, 0, 0, 0, 0, 0, 0, 0, 0)).isEqualTo(FaultSpec.parse("drop=0.01"));
    }

    @Test
    void missing_keys_are_zero_and_none_or_blank_mean_no_faults() {
        assertThat(FaultSpec.parse("drop=0.2")).isEqualTo(new FaultSpec(0.2, 0, 0, 0, 0, 0, 0, 0, 0));
        assertThat(FaultSpec.parse("none")).isEqualTo(FaultSpec.NONE);
        assertThat(FaultSpec.parse("  ")).isEqualTo(FaultSpec.NONE);
        assertThat(FaultSpec.parse(null)).isEqualTo(FaultSpec.NONE);
        assertThat(FaultSpec.NONE.isNone()).isTrue();
    }

    @Test
    void format_is_canonical_and_parses_back() {
        FaultSpec f = FaultSpec.parse("abort=0.01,drop=0.01,fail=0.005,dup=0,delay=1");
        assertThat(f.format()).isEqualTo("drop=0.01,delay=1,fail=0.005,abort=0.01");
        assertThat(FaultSpec.parse(f.format())).isEqualTo(f);
        assertThat(FaultSpec.NONE.format()).isEqualTo("none");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "drop=0.1,lose=0.2        | lose=0.2  | unknown fault 'lose'",
        "drop=abc                 | drop=abc  | 'abc' is not a number",
        "drop=1.5                 | drop=1.5  | not between 0 and 1",
        "dup=-0.1                 | dup=-0.1  | not between 0 and 1",
        "delay=NaN                | delay=NaN | not between 0 and 1",
        "drop                     | drop      | expected key=probability",
        "drop=0.1,drop=0.2        | drop=0.2  | given twice",
    })
    void rejects_bad_tokens_naming_them(String spec, String token, String why) {
        assertThatThrownBy(() -> FaultSpec.parse(spec))
                .isInstanceOf(FaultSpec.ParseException.class)
                .hasMessageContaining("'" + token + "'")
                .hasMessageContaining(why)
                .satisfies(e -> assertThat(((FaultSpec.ParseException) e).token()).isEqualTo(token));
    }

    @Test
    void rejects_empty_tokens_with_their_position() {
        assertThatThrownBy(() -> FaultSpec.parse("drop=0.1,,dup=0.2"))
                .isInstanceOf(FaultSpec.ParseException.class)
                .hasMessageContaining("empty token at position 2");
        assertThatThrownBy(() -> FaultSpec.parse("drop=0.1,"))
                .hasMessageContaining("empty token at position 2");
    }

    @Test
    void unknown_key_message_lists_the_known_ones() {
        assertThatThrownBy(() -> FaultSpec.parse("handshake_fail=0.1"))
                .hasMessageContaining("known: drop, dup, delay, reorder, fail, stall, abort, handshake-fail");
    }
}
