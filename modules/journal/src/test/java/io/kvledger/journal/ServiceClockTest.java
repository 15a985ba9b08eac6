package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Issue 34: two nodes of one JVM stamped a write_done's receipt 10 ms before its send, because each
 * anchored its own clock with a wall read and a monotonic read a preemption apart. The anchor is
 * now chosen from brackets (checked here on given readings, no timing), and shared by the process.
 */
class ServiceClockTest {

    /** Readings in order: monotonic, wall, monotonic per bracket. */
    private static ServiceClock.Readings readings(long... values) {
        ArrayDeque<Long> q = new ArrayDeque<>();
        for (long v : values) {
            q.add(v);
        }
        return new ServiceClock.Readings() {
            @Override
            public long nanoTime() {
                return q.removeFirst();
            }

            @Override
            public long epochNs() {
                return q.removeFirst();
            }
        };
    }

    @Test
    void the_anchor_is_the_narrowest_brackets_wall_reading_at_its_midpoint() {
        // a preempted bracket (8 ms wide), a tight one (200 ns), a middling one (2 us)
        ServiceClock.Anchor a = ServiceClock.anchor(readings(
                1_000, 5_000_000_000L, 8_001_000,
                9_000_000, 5_008_100_000L, 9_000_200,
                9_100_000, 5_008_200_500L, 9_102_000), 3);
        assertThat(a).isEqualTo(new ServiceClock.Anchor(5_008_100_000L, 9_000_100, 200));
        // what the first, preempted bracket alone would give: 4 ms off the tight one
        ServiceClock.Anchor first = ServiceClock.anchor(readings(1_000, 5_000_000_000L, 8_001_000), 1);
        assertThat(first.epochNs() - first.nanoTime()).isEqualTo(5_000_000_000L - 4_001_000);
        assertThat(a.epochNs() - a.nanoTime()).isEqualTo(5_008_100_000L - 9_000_100);
    }

    @Test
    void of_equally_narrow_brackets_the_first_is_kept_and_every_try_is_read() {
        ServiceClock.Readings r = readings(10, 100, 20, 30, 999, 40, 50, 500, 90);
        assertThat(ServiceClock.anchor(r, 3)).isEqualTo(new ServiceClock.Anchor(100, 15, 10));
    }

    @Test
    void a_clock_reads_the_anchor_plus_the_monotonic_time_since_and_never_goes_back() {
        AtomicLong mono = new AtomicLong(1_000);
        ServiceClock c = new ServiceClock(new ServiceClock.Anchor(7_000_000, 500, 0), mono::get);
        assertThat(c.getAsLong()).isEqualTo(7_000_500);
        mono.set(2_000);
        assertThat(c.getAsLong()).isEqualTo(7_001_500);
        c.notBefore(9_000_000);
        assertThat(c.getAsLong()).isEqualTo(9_000_000);
        mono.set(2_500);
        assertThat(c.getAsLong()).as("notBefore holds until the clock passes it").isEqualTo(9_000_000);
        mono.set(2_002_000);
        assertThat(c.getAsLong()).isEqualTo(9_001_500);
        c.notBefore(5);
        assertThat(c.getAsLong()).isEqualTo(9_001_500);
    }

    @Test
    void the_clocks_of_one_process_share_one_anchor_so_readings_taken_in_order_never_invert() {
        List<ServiceClock> clocks = List.of(ServiceClock.system(), ServiceClock.system(), ServiceClock.system());
        assertThat(clocks).extracting(ServiceClock::anchor).containsOnly(clocks.get(0).anchor());
        long prev = Long.MIN_VALUE;
        for (int i = 0; i < 30_000; i++) {
            long t = clocks.get(i % 3).getAsLong();
            assertThat(t).isGreaterThanOrEqualTo(prev);
            prev = t;
        }
        ServiceClock.Anchor a = clocks.get(0).anchor();
        assertThat(a.widthNs()).isNotNegative();
        assertThat(a.epochNs()).as("an epoch time after 2020").isGreaterThan(1_577_836_800_000_000_000L);
    }
}
