package io.kvledger.node.loop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The loop's spin before it parks, as {@code -Dkvledger.loop.spinNs} sets it. */
class InboxSpinTest {

    @Test
    void absentOrBlankIsTheDefault() {
        assertThat(Inbox.spinNs(null)).isEqualTo(Inbox.DEFAULT_SPIN_NS);
        assertThat(Inbox.spinNs(" ")).isEqualTo(Inbox.DEFAULT_SPIN_NS);
    }

    @Test
    void aNumberOfNanosecondsIsTaken() {
        assertThat(Inbox.spinNs("0")).isZero();
        assertThat(Inbox.spinNs(" 50000 ")).isEqualTo(50_000);
    }

    @Test
    void aNegativeOrNonNumericValueIsRefusedAndNamed() {
        assertThatThrownBy(() -> Inbox.spinNs("-1")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(Inbox.SPIN_PROPERTY);
        assertThatThrownBy(() -> Inbox.spinNs("20us")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(Inbox.SPIN_PROPERTY).hasMessageContaining("20us");
    }

    @Test
    void theLoopsSpinIsThePropertysValue() {
        assertThat(Inbox.SPIN_NS).isEqualTo(Inbox.spinNs(System.getProperty(Inbox.SPIN_PROPERTY)));
    }
}
