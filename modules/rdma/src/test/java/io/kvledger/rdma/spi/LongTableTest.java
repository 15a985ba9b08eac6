package io.kvledger.rdma.spi;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class LongTableTest {

    @Test
    void agreesWithAHashMapOverRandomPutsAndRemovesIncludingCollidingAndExtremeKeys() {
        SplittableRandom rnd = new SplittableRandom(14_5);
        for (int trial = 0; trial < 20; trial++) {
            LongTable<Long> t = new LongTable<>(4);
            Map<Long, Long> m = new HashMap<>();
            // a small key space makes long probe runs, wrap-around and backward shifts common
            long span = 8 + rnd.nextInt(200);
            for (int op = 0; op < 20_000; op++) {
                long k = rnd.nextInt(5) == 0 ? (rnd.nextBoolean() ? Long.MIN_VALUE : Long.MAX_VALUE) - rnd.nextLong(3)
                        : rnd.nextLong(span) * (rnd.nextBoolean() ? 1 : 1L << 32);
                switch (rnd.nextInt(3)) {
                    case 0 -> assertThat(t.putIfAbsent(k, op + 0L)).isEqualTo(m.putIfAbsent(k, op + 0L) == null);
                    case 1 -> assertThat(t.remove(k)).isEqualTo(m.remove(k));
                    default -> assertThat(t.get(k)).isEqualTo(m.get(k));
                }
                assertThat(t.size()).isEqualTo(m.size());
            }
            for (Map.Entry<Long, Long> e : m.entrySet()) {
                assertThat(t.get(e.getKey())).isEqualTo(e.getValue());
            }
        }
    }

    @Test
    void keyZeroAndNegativeKeysAreOrdinaryKeys() {
        LongTable<String> t = new LongTable<>(2);
        assertThat(t.get(0)).isNull();
        assertThat(t.putIfAbsent(0, "zero")).isTrue();
        assertThat(t.putIfAbsent(0, "again")).isFalse();
        assertThat(t.putIfAbsent(-1, "minus one")).isTrue();
        assertThat(t.get(0)).isEqualTo("zero");
        assertThat(t.remove(0)).isEqualTo("zero");
        assertThat(t.get(-1)).isEqualTo("minus one");
        assertThat(t.size()).isEqualTo(1);
    }
}
