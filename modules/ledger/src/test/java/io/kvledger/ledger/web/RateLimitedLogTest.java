package io.kvledger.ledger.web;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class RateLimitedLogTest {

    @Test
    void aBurstIsOneLineAndTheNextIntervalCountsWhatWasHeldBack() {
        AtomicLong now = new AtomicLong(1_000);
        List<String> lines = new ArrayList<>();
        RateLimitedLog log = new RateLimitedLog(now::get, Duration.ofSeconds(60), lines::add);
        for (int i = 0; i < 500; i++) {
            log.warn("431", "refused a request with 431");
        }
        log.warn("400", "refused a request with 400");
        assertEquals(List.of("refused a request with 431", "refused a request with 400"), lines);
        now.addAndGet(Duration.ofSeconds(59).toNanos());
        log.warn("431", "refused a request with 431");
        assertEquals(2, lines.size(), "still within the interval");
        now.addAndGet(Duration.ofSeconds(1).toNanos());
        log.warn("431", "refused a request with 431");
        assertEquals("refused a request with 431 (and 500 more like it since the last such line)", lines.get(2));
        now.addAndGet(Duration.ofSeconds(600).toNanos());
        log.warn("431", "refused a request with 431");
        assertEquals("refused a request with 431", lines.get(3), "nothing held back");
    }
}
