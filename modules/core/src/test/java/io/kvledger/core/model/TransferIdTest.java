package io.kvledger.core.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TransferIdTest {

    @Test
    void none_stands_for_a_missing_key_and_python_none() {
        assertThat(TransferId.of(null)).isSameAs(TransferId.NONE);
        assertThat(TransferId.NONE.isNone()).isTrue();
        assertThat(TransferId.NONE.asString()).isNull();
        assertThat(TransferId.NONE.text()).isNull();
        assertThat(TransferId.NONE.pythonStr()).isEqualTo("None");
        assertThat(TransferId.NONE).hasToString("null");
    }

    @Test
    void a_string_id_keys_the_tables_and_prints_as_itself() {
        TransferId t = TransferId.of("tx-1");
        assertThat(t.isNone()).isFalse();
        assertThat(t).isEqualTo(new TransferId.Str("tx-1"));
        assertThat(t.asString()).isEqualTo("tx-1");
        assertThat(t.text()).isEqualTo("tx-1");
        assertThat(t).hasToString("tx-1").isEqualTo(TransferId.of("tx-1")).hasSameHashCodeAs("tx-1");
        assertThat(TransferId.of("")).isNotEqualTo(TransferId.NONE);
    }

    @Test
    void another_python_value_is_kept_as_it_came_and_keys_nothing() {
        TransferId n = TransferId.of(17L);
        assertThat(n).isEqualTo(new TransferId.Int(17));
        assertThat(n.asString()).isNull();
        assertThat(n.text()).isEqualTo("17");
        assertThat(n).isNotEqualTo(TransferId.of("17")).isEqualTo(TransferId.of(17L));
        TransferId b = TransferId.of(Boolean.TRUE);
        assertThat(b.pythonStr()).isEqualTo("True");
        assertThat(b.text()).isEqualTo("true");
        assertThat(TransferId.of(List.of(1L, "a")))
                .isEqualTo(new TransferId.Other(new PyValue.List(List.of(new PyValue.Int(1), new PyValue.Str("a")))));
    }

    @Test
    void each_form_is_its_own_type_with_python_truth_and_text() {
        assertThat(TransferId.of("tx-1")).isInstanceOf(TransferId.Str.class);
        assertThat(TransferId.of(17L)).isInstanceOf(TransferId.Int.class);
        assertThat(TransferId.of(new byte[] {1})).isInstanceOf(TransferId.Bytes.class);
        assertThat(TransferId.of(Boolean.TRUE)).isInstanceOf(TransferId.Other.class);
        assertThat(TransferId.of(1.5)).isInstanceOf(TransferId.Other.class);
        assertThat(TransferId.of(Integer.valueOf(3))).as("a params int is a Long: another boxed type is another value")
                .isInstanceOf(TransferId.Other.class).isNotEqualTo(TransferId.of(3L));
        assertThat(List.of(TransferId.of("tx"), TransferId.of(-1L), TransferId.of(new byte[] {0}), TransferId.of(List.of(0L)),
                TransferId.of(0.5))).allMatch(TransferId::isTrue);
        assertThat(List.of(TransferId.NONE, TransferId.of(""), TransferId.of(0L), TransferId.of(new byte[0]),
                TransferId.of(List.of()), TransferId.of(Boolean.FALSE), TransferId.of(0.0))).noneMatch(TransferId::isTrue);
        assertThat(TransferId.of(17L).pythonStr()).isEqualTo("17");
        assertThat(TransferId.of(new byte[] {'a', 0}).pythonStr()).isEqualTo("b'a\\x00'");
        assertThat(TransferId.of(List.of(1L, "a")).pythonStr()).isEqualTo("[1, 'a']");
        assertThat(TransferId.of(17L)).hasSameHashCodeAs(17L);
    }

    @Test
    void bytes_compare_by_content_and_an_id_holds_the_value_it_was_read_from() {
        byte[] raw = {1, 2};
        TransferId b = TransferId.of(raw);
        assertThat(b).isEqualTo(TransferId.of(new byte[] {1, 2})).isNotEqualTo(TransferId.of(new byte[] {1}));
        assertThat(((TransferId.Bytes) b).value()).as("a copy").isEqualTo(raw).isNotSameAs(raw);
        assertThat(b.holds(raw)).isTrue();
        assertThat(b.holds(new byte[] {1, 2})).as("only the very array").isFalse();
        String s = "tx-" + 1;
        assertThat(TransferId.of(s).holds(s)).isTrue();
        assertThat(TransferId.of(s).holds(new String(s))).as("only the very string").isFalse();
        assertThat(TransferId.of(5000L).holds(5000L)).as("an int holds its value").isTrue();
        assertThat(TransferId.of(5000L).holds("5000")).isFalse();
        assertThat(TransferId.NONE.holds(null)).isTrue();
        assertThat(TransferId.NONE.holds("")).isFalse();
    }

    @Test
    void another_value_is_held_as_its_python_value_and_renders_as_the_plain_value_did() {
        Map<String, Object> dict = new LinkedHashMap<>();
        dict.put("k", 1.5);
        dict.put("n", null);
        List<Object> plain = List.of(Boolean.TRUE, 2L, BigInteger.ONE.shiftLeft(63), dict);
        TransferId.Other o = (TransferId.Other) TransferId.of(plain);
        Map<PyValue, PyValue> entries = new LinkedHashMap<>();
        entries.put(new PyValue.Str("k"), new PyValue.Float(1.5));
        entries.put(new PyValue.Str("n"), PyValue.NONE);
        assertThat(o.value()).isEqualTo(new PyValue.List(List.of(new PyValue.Bool(true), new PyValue.Int(2),
                new PyValue.BigInt(BigInteger.ONE.shiftLeft(63)), new PyValue.Map(entries))));
        assertThat(o).hasToString(String.valueOf(plain)).isEqualTo(TransferId.of(new ArrayList<>(plain)));
        assertThat(o.pythonStr()).isEqualTo("[True, 2, 9223372036854775808, {'k': 1.5, 'n': None}]");
        assertThat(o.holds(plain)).as("an Other is made anew from the params").isFalse();
        assertThat(TransferId.of(Integer.valueOf(3))).isEqualTo(new TransferId.Other(new PyValue.Int(3)));
    }

    @Test
    void a_java_value_with_no_python_form_is_unpackable_with_its_texts_and_does_not_throw() {
        BigInteger wide = BigInteger.ONE.shiftLeft(70);
        assertThat(TransferId.of(wide)).isEqualTo(new TransferId.Unpackable(
                "the integer " + wide + " does not fit msgpack's 64 bits (Python raises OverflowError)",
                wide.toString(), wide.toString(), true));
        assertThat(TransferId.of(BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE))).isInstanceOf(TransferId.Other.class);
        Object notPython = new Object() {
            @Override
            public String toString() {
                return "thing";
            }
        };
        TransferId t = TransferId.of(notPython);
        assertThat(t).isInstanceOf(TransferId.Unpackable.class).hasToString("thing");
        assertThat(t.pythonStr()).isEqualTo("thing");
        assertThat(t.isTrue()).isTrue();
        assertThat(t.text()).isEqualTo("thing");
        assertThat(((TransferId.Unpackable) t).why()).contains("is not a Python value");
    }
}
