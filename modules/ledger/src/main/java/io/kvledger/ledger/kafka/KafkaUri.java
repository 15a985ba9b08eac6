package io.kvledger.ledger.kafka;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A Kafka topic as a journal source or a shipping target: {@code kafka://HOST:PORT[,HOST:PORT...]/TOPIC},
 * optionally with a window, {@code ?since=10m} (seconds {@code s}, minutes {@code m}, hours
 * {@code h}, days {@code d}).
 *
 * @param bootstrap the bootstrap servers, as Kafka's clients take them ({@code HOST:PORT,...})
 * @param topic     the topic
 * @param since     the window, or null for the whole topic
 */
public record KafkaUri(String bootstrap, String topic, Duration since) {

    /** The scheme every Kafka argument starts with. */
    static final String SCHEME = "kafka://";

    private static final Pattern FORM = Pattern.compile(
            "kafka://([^/?#\\s]+:[0-9]{1,5}(?:,[^/?#\\s]+:[0-9]{1,5})*)/([A-Za-z0-9._-]{1,249})(?:\\?since=([0-9]+)([smhd]))?");

    /** Whether {@code arg} names a Kafka topic (starts with {@link #SCHEME}). */
    public static boolean isKafka(String arg) {
        return arg != null && arg.toLowerCase(Locale.ROOT).startsWith(SCHEME);
    }

    /**
     * Parses {@code kafka://HOST:PORT/TOPIC[?since=N(s|m|h|d)]}.
     *
     * @throws IllegalArgumentException naming what is wrong and the expected form
     */
    public static KafkaUri parse(String arg) {
        Matcher m = FORM.matcher(arg);
        if (!m.matches()) {
            throw new IllegalArgumentException(arg + ": not a Kafka topic; expected kafka://HOST:PORT[,HOST:PORT...]/TOPIC"
                    + " (a topic of letters, digits, '.', '_' and '-'), optionally with ?since=N followed by s, m, h or d");
        }
        Duration since = null;
        if (m.group(3) != null) {
            long n = Long.parseLong(m.group(3));
            since = switch (m.group(4)) {
                case "s" -> Duration.ofSeconds(n);
                case "m" -> Duration.ofMinutes(n);
                case "h" -> Duration.ofHours(n);
                default -> Duration.ofDays(n);
            };
        }
        return new KafkaUri(m.group(1), m.group(2), since);
    }

    @Override
    public String toString() {
        return SCHEME + bootstrap + "/" + topic + (since == null ? "" : "?since=" + since.toSeconds() + "s");
    }
}
