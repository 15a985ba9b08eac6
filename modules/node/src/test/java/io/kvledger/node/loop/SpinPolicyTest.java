package io.kvledger.node.loop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/**
 * The loop's spin policy, fed what its spins caught (no clock): it spins while spins catch items,
 * parks at once after {@link SpinPolicy#MISSES_TO_STOP} misses in a row but for a probe every
 * {@link SpinPolicy#PROBE_EVERY}th idle spell, and a caught probe resumes spinning.
 */
class SpinPolicyTest {

    private static final long SPIN = 20_000;

    /** Plays spells: each spins for what {@link SpinPolicy#next} says and, if it spun, reports {@code caught}. */
    private static long[] spells(SpinPolicy p, int n, boolean caught) {
        long[] spins = new long[n];
        for (int i = 0; i < n; i++) {
            spins[i] = p.next();
            if (spins[i] > 0) {
                p.spun(caught);
            }
        }
        return spins;
    }

    @Test
    void spinsWhileItsSpinsCatchItems() {
        SpinPolicy p = new SpinPolicy(SPIN, true);
        assertThat(spells(p, 100, true)).containsOnly(SPIN);
    }

    @Test
    void parksAtOnceAfterMissesInARowButProbes() {
        SpinPolicy p = new SpinPolicy(SPIN, true);
        assertThat(spells(p, SpinPolicy.MISSES_TO_STOP, false)).containsOnly(SPIN);
        long[] after = spells(p, 3 * SpinPolicy.PROBE_EVERY, false);
        for (int i = 0; i < after.length; i++) {
            // every PROBE_EVERY-th spell spins (a probe), the others park at once
            assertThat(after[i]).as("spell %d after stopping", i)
                    .isEqualTo((i + 1) % SpinPolicy.PROBE_EVERY == 0 ? SPIN : 0);
        }
    }

    @Test
    void aCatchBetweenMissesKeepsItSpinning() {
        SpinPolicy p = new SpinPolicy(SPIN, true);
        for (int round = 0; round < 10; round++) {
            assertThat(spells(p, SpinPolicy.MISSES_TO_STOP - 1, false)).containsOnly(SPIN);
            assertThat(spells(p, 1, true)).containsOnly(SPIN);
        }
    }

    @Test
    void aCaughtProbeResumesSpinning() {
        SpinPolicy p = new SpinPolicy(SPIN, true);
        spells(p, SpinPolicy.MISSES_TO_STOP, false);
        for (int i = 1; i < SpinPolicy.PROBE_EVERY; i++) {
            assertThat(p.next()).isZero();
        }
        assertThat(p.next()).as("the probe").isEqualTo(SPIN);
        p.spun(true);
        assertThat(spells(p, SpinPolicy.MISSES_TO_STOP, false)).as("spinning again, until misses in a row")
                .containsOnly(SPIN);
        assertThat(p.next()).isZero();
    }

    @Test
    void aFixedSpinSpinsWhateverItCaught() {
        SpinPolicy p = new SpinPolicy(SPIN, false);
        assertThat(spells(p, 50, false)).containsOnly(SPIN);
        assertThat(spells(p, 5, true)).containsOnly(SPIN);
    }

    @Test
    void noSpinNeverSpins() {
        assertThat(spells(new SpinPolicy(0, true), 50, false)).containsOnly(0L);
        assertThat(spells(new SpinPolicy(0, false), 50, false)).containsOnly(0L);
        assertThatThrownBy(() -> new SpinPolicy(-1, true)).isInstanceOf(IllegalArgumentException.class);
    }
}
