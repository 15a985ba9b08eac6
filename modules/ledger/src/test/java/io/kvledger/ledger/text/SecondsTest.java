package io.kvledger.ledger.text;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.Locale;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class SecondsTest {

    @Test
    void rounded_rounds_like_format() {
        assertThat(Seconds.rounded(1_234_567_890L, 3)).isEqualTo("1.235 s");
        assertThat(Seconds.rounded(1_250_000_000L, 1)).isEqualTo("1.3 s");
        assertThat(Seconds.rounded(-40_000_000L, 1)).isEqualTo("-0.0 s");
        assertThat(Seconds.rounded(2_000_000_000L, 6)).isEqualTo("2.000000 s");
        assertThat(Seconds.rounded(7_600_000_000L, 0)).isEqualTo("8 s");
    }

    /** The one text form of measured durations and relative times in every report: pinned here. */
    @Test
    void duration_and_offset_are_seconds_with_six_decimals_and_the_unit() {
        assertThat(Seconds.duration(394_999L)).isEqualTo("0.000394 s");
        assertThat(Seconds.duration(177_619_000_000L)).isEqualTo("177.619000 s");
        assertThat(Seconds.duration(0L)).isEqualTo("0.000000 s");
        assertThat(Seconds.duration(12_345_678_901L)).isEqualTo("12.345678 s");
        assertThat(Seconds.offset(394_000L)).isEqualTo("t+0.000394 s");
        assertThat(Seconds.offset(61_000_000_000L)).isEqualTo("t+61.000000 s");
        assertThat(Seconds.offset(-500_000_000L)).isEqualTo("t-0.500000 s");
        assertThat(Seconds.offset(-2_000_001_000L)).isEqualTo("t-2.000001 s");
    }

    @Test
    void cut_truncates_in_integer_arithmetic() {
        assertThat(Seconds.cut(1_234_999_999L, 3)).isEqualTo("1.234 s");
        assertThat(Seconds.cut(-500_000_000L, 3)).isEqualTo("-0.500 s");
        assertThat(Seconds.cut(-1L, 3)).isEqualTo("-0.000 s");
        assertThat(Seconds.cutValue(12_000_042_000L, 6)).isEqualTo("12.000042");
        assertThat(Seconds.cutValue(12_000_000_042L, 9)).isEqualTo("12.000000042");
        assertThat(Seconds.cutValue(3_999_999_999L, 0)).isEqualTo("3");
        assertThat(Seconds.cutValue(Long.MIN_VALUE, 3)).isEqualTo("-9223372036.854");
        assertThatThrownBy(() -> Seconds.cutValue(1, 10)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Seconds.rounded(1, -1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void exact_strips_trailing_zeros_down_to_the_minimum() {
        assertThat(Seconds.exact(60_000_000_000L, 0)).isEqualTo("60 s");
        assertThat(Seconds.exact(500_000_000L, 0)).isEqualTo("0.5 s");
        assertThat(Seconds.exact(0L, 0)).isEqualTo("0 s");
        assertThat(Seconds.exact(1L, 0)).isEqualTo("0.000000001 s");
        assertThat(Seconds.exact(5_000_000_000L, 1)).isEqualTo("5.0 s");
        assertThat(Seconds.exact(Duration.ofMillis(250), 1)).isEqualTo("0.25 s");
        assertThat(Seconds.exact(Duration.ofSeconds(Long.MAX_VALUE / 2), 0)).isEqualTo((Long.MAX_VALUE / 2) + " s");
    }

    /** The forms the callers printed before they shared this class, over many values. */
    @Test
    void each_form_matches_the_formula_it_replaced() {
        SplittableRandom r = new SplittableRandom(30);
        for (int i = 0; i < 20_000; i++) {
            long ns = switch (i % 4) {
                case 0 -> r.nextLong(-5_000_000_000L, 5_000_000_000L);
                case 1 -> r.nextLong(0, 1_000_000_000_000_000L);
                case 2 -> r.nextLong(0, 100_000) * 1_000_000_000L;
                default -> r.nextLong(-1_000_000, 1_000_000);
            };
            long a = Math.abs(ns);
            String sign = ns < 0 ? "-" : "";
            assertThat(Seconds.cut(ns, 3)).isEqualTo(sign + (a / 1_000_000_000L) + "."
                    + String.format(Locale.ROOT, "%03d", (a % 1_000_000_000L) / 1_000_000L) + " s");
            assertThat(Seconds.cutValue(ns, 6)).isEqualTo(sign + (a / 1_000_000_000L) + "."
                    + String.format(Locale.ROOT, "%06d", (a % 1_000_000_000L) / 1_000L));
            assertThat(Seconds.rounded(ns, 3)).isEqualTo(String.format(Locale.ROOT, "%.3f s", ns / 1e9));
            assertThat(Seconds.exact(ns, 0))
                    .isEqualTo(BigDecimal.valueOf(ns, 9).stripTrailingZeros().toPlainString() + " s");
            if (ns % 1_000_000_000L == 0) {
                assertThat(Seconds.exact(ns, 0)).isEqualTo((ns / 1_000_000_000L) + " s");
            }
            long ms = Math.floorMod(ns, 10_000_000_000L);
            assertThat(Seconds.exact(Duration.ofMillis(ms), 1)).isEqualTo((ms / 1000.0) + " s");
        }
    }
}
