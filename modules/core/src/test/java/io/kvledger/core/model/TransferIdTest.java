package io.kvledger.core.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class TransferIdTest {

    @Test
    void none_stands_for_a_missing_key_and_python_none() {
        assertThat(TransferId.of(null)).isSameAs(TransferId.NONE);
        assertThat(TransferId.NONE.isNone()).isTrue();
        assertThat(TransferId.NONE.raw()).isNull();
        assertThat(TransferId.NONE.asString()).isNull();
        assertThat(TransferId.NONE.text()).isNull();
        assertThat(TransferId.NONE.pythonStr()).isEqualTo("None");
        assertThat(TransferId.NONE).hasToString("null");
    }

    @Test
    void a_string_id_keys_the_tables_and_prints_as_itself() {
        TransferId t = TransferId.of("tx-1");
        assertThat(t.isNone()).isFalse();
        assertThat(t.raw()).isEqualTo("tx-1");
        assertThat(t.asString()).isEqualTo("tx-1");
        assertThat(t.text()).isEqualTo("tx-1");
        assertThat(t).hasToString("tx-1").isEqualTo(TransferId.of("tx-1")).hasSameHashCodeAs("tx-1");
        assertThat(TransferId.of("")).isNotEqualTo(TransferId.NONE);
    }

    @Test
    void another_python_value_is_kept_as_it_came_and_keys_nothing() {
        TransferId n = TransferId.of(17L);
        assertThat(n.raw()).isEqualTo(17L);
        assertThat(n.asString()).isNull();
        assertThat(n.text()).isEqualTo("17");
        assertThat(n).isNotEqualTo(TransferId.of("17")).isEqualTo(TransferId.of(17L));
        TransferId b = TransferId.of(Boolean.TRUE);
        assertThat(b.pythonStr()).isEqualTo("True");
        assertThat(b.text()).isEqualTo("true");
        assertThat(TransferId.of(List.of(1L, "a")).raw()).isEqualTo(List.of(1L, "a"));
    }
}
