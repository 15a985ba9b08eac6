package io.kvledger.core.moriio;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Optional;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@link RequestIds#peerZmqFromRequestId} scans ids without a line break instead of running the
 * regular expressions; this checks the scan against the upstream patterns on many generated ids
 * built from the pieces that matter (markers, underscores, hex runs, dashes, line breaks).
 */
class RequestIdsScanTest {

    private static final Pattern PREFILL = Pattern.compile("___prefill_addr_(.+?)___decode_addr_", Pattern.UNIX_LINES);
    private static final Pattern DECODE =
            Pattern.compile("___decode_addr_(.+)_[0-9a-f]{32}(?:-.*)?$", Pattern.UNIX_LINES);

    private static final String[] PIECES = {
        "___prefill_addr_", "___decode_addr_", "_", "-", "host:10.0.0.1,handshake:6301,notify:61005",
        "0123456789abcdef0123456789abcdef", "0123456789ABCDEF0123456789abcdef", "abc", "0123456789abcdef",
        "\n", "\r", "cmpl-", "-0-b8ee174a", "x", "", "__", "f"};

    private static Optional<String> regex(String id, boolean isProducer) {
        Matcher m = (isProducer ? DECODE : PREFILL).matcher(id);
        return m.find() ? Optional.of(m.group(1)) : Optional.empty();
    }

    @Test
    void the_scan_finds_what_the_patterns_find() {
        Random rnd = new Random(42);
        int matched = 0;
        for (int n = 0; n < 200_000; n++) {
            StringBuilder b = new StringBuilder();
            int parts = 1 + rnd.nextInt(9);
            for (int i = 0; i < parts; i++) {
                b.append(PIECES[rnd.nextInt(PIECES.length)]);
            }
            String id = b.toString();
            for (boolean producer : new boolean[] {false, true}) {
                Optional<String> want = regex(id, producer);
                assertThat(RequestIds.peerZmqFromRequestId(id, producer)).as("%s (producer=%s)", id, producer).isEqualTo(want);
                if (want.isPresent()) {
                    matched++;
                }
            }
        }
        assertThat(matched).isGreaterThan(3_000);
    }

    @Test
    void the_span_points_at_the_address() {
        String id = "cmpl-___prefill_addr_host:a,handshake:1,notify:2___decode_addr_host:b,handshake:3,notify:4_"
                + "0123456789abcdef0123456789abcdef-0-b8ee174a";
        long p = RequestIds.peerZmqSpan(id, false);
        long d = RequestIds.peerZmqSpan(id, true);
        assertThat(id.substring(RequestIds.spanStart(p), RequestIds.spanEnd(p))).isEqualTo("host:a,handshake:1,notify:2");
        assertThat(id.substring(RequestIds.spanStart(d), RequestIds.spanEnd(d))).isEqualTo("host:b,handshake:3,notify:4");
        assertThat(RequestIds.peerZmqSpan("plain-id", true)).isEqualTo(-1);
    }
}
