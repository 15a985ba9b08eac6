package io.kvledger.ledger.text;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class DurationTextTest {

    @Test
    void aNumberWithAUnitOrPlainSeconds() {
        assertThat(DurationText.parseNs("30s")).isEqualTo(30_000_000_000L);
        assertThat(DurationText.parseNs("5m")).isEqualTo(300_000_000_000L);
        assertThat(DurationText.parseNs("250ms")).isEqualTo(250_000_000L);
        assertThat(DurationText.parseNs("1.5h")).isEqualTo(5_400_000_000_000L);
        assertThat(DurationText.parseNs("394us")).isEqualTo(394_000L);
        assertThat(DurationText.parseNs("394µs")).isEqualTo(394_000L);
        assertThat(DurationText.parseNs("7ns")).isEqualTo(7L);
        assertThat(DurationText.parseNs("30")).isEqualTo(30_000_000_000L);
        assertThat(DurationText.parseNs("0.5")).isEqualTo(500_000_000L);
        assertThat(DurationText.parseNs(".25")).isEqualTo(250_000_000L);
        assertThat(DurationText.parseNs(" 2S ")).isEqualTo(2_000_000_000L);
        assertThat(DurationText.parseNs("0.0000000004")).isZero();
        assertThat(DurationText.parseNs("0.0000000005")).isEqualTo(1L);
        assertThat(DurationText.parseSeconds("1500ms")).isEqualTo(1.5);
    }

    @Test
    void aBareNumberInTheOptionsUnit() {
        assertThat(DurationText.parseMillis("200")).isEqualTo(200.0);
        assertThat(DurationText.parseMillis("2s")).isEqualTo(2000.0);
        assertThat(DurationText.parseMillis("500us")).isEqualTo(0.5);
    }

    @Test
    void anythingElseIsRefusedNamingTheForms() {
        for (String bad : new String[] {"", " ", "s", "-5", "+5", "5x", "5 m", "1e3", "5mm", "1,5", "5m30s", "NaN"}) {
            assertThatThrownBy(() -> DurationText.parseNs(bad)).as(bad).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("is not a duration").hasMessageContaining("250ms, 30s, 5m, 1h");
        }
        assertThatThrownBy(() -> DurationText.parseNs(null)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> DurationText.parseNs("300000000000h")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("too long");
        assertThatThrownBy(() -> DurationText.parseMillis("x")).hasMessageContaining("a number of ms (200)");
    }
}
