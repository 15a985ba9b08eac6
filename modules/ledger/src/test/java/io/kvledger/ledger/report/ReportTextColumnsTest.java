package io.kvledger.ledger.report;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class ReportTextColumnsTest {

    private static final List<String[]> ROWS = List.of(
            new String[] {"leg", "n", "p50"},
            new String[] {"prefill", "12", "1.5"},
            new String[] {"d", "3", ""});

    @Test
    void numbers_align_right_after_the_first_column() {
        assertThat(ReportText.columns(ROWS, true)).containsExactly(
                "  leg       n  p50",
                "  prefill  12  1.5",
                "  d         3");
    }

    @Test
    void text_aligns_left_and_lines_end_without_blanks() {
        assertThat(ReportText.columns(ROWS, false)).containsExactly(
                "  leg      n   p50",
                "  prefill  12  1.5",
                "  d        3");
    }
}
