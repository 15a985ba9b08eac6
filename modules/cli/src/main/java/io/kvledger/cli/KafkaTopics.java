package io.kvledger.cli;

import io.kvledger.ledger.kafka.KafkaSource;
import io.kvledger.ledger.kafka.KafkaUri;
import io.kvledger.ledger.replay.JournalInputs.InputException;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.ledger.replay.JsonLinesInputs;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * Lets the reading commands take a Kafka topic ({@code kafka://HOST:PORT/TOPIC[?since=10m]}) where
 * they take a directory: the topic's node journals are read into temporary journals
 * ({@link KafkaSource}, removed when the JVM exits), entry bytes as shipped, duplicates dropped by
 * (node, seq), and read from there as any journal; {@code serve --follow} keeps them growing as
 * the topic does ({@link KafkaSource#follow}).
 */
final class KafkaTopics {

    private KafkaTopics() {}

    /**
     * Reads the topic {@code arg} names.
     *
     * @throws InputException for an argument that is no Kafka topic, a topic that cannot be read,
     *                        or records that are no shipped entries (a usage error for the commands)
     */
    static List<NodeJournal> read(String arg, PrintWriter err, String command) {
        return read(arg, err, command, (uri, root) -> KafkaSource.read(uri, arg, root, System.currentTimeMillis(),
                KafkaSource.DEFAULT_TIMEOUT));
    }

    /**
     * Reads the topic {@code arg} names as {@link #read} does, then follows it: the journals grow
     * with what is appended to the topic until the returned follower is closed ({@code serve --follow}).
     */
    static KafkaSource.Live follow(String arg, PrintWriter err, String command) {
        KafkaSource.Live[] live = new KafkaSource.Live[1];
        read(arg, err, command, (uri, root) -> {
            live[0] = KafkaSource.follow(uri, arg, root, System.currentTimeMillis(), KafkaSource.DEFAULT_TIMEOUT, note -> {
                err.println(command + ": note: " + note);
                err.flush();
            });
            return live[0].result();
        });
        return live[0];
    }

    private static List<NodeJournal> read(String arg, PrintWriter err, String command,
                                          java.util.function.BiFunction<KafkaUri, Path, KafkaSource.Result> reader) {
        KafkaUri uri;
        try {
            uri = KafkaUri.parse(arg);
        } catch (IllegalArgumentException e) {
            throw new InputException(e.getMessage());
        }
        Path root = JsonLinesInputs.temporaryRoot(arg);
        Progress progress = new Progress(err, command);
        KafkaSource.Result res;
        try (AutoCloseable ticking = progress.ticking(() -> String.format(Locale.ROOT, "reading %s (%s)", arg,
                progress.elapsed()))) {
            res = reader.apply(uri, root);
        } catch (RuntimeException e) {
            progress.done("stopped");
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e); // closing the ticker throws no checked exception
        }
        progress.done(String.format(Locale.ROOT, "read %s (%s)", arg, progress.elapsed()));
        err.println(command + ": note: " + res.describe(arg));
        err.flush();
        return res.journals();
    }
}
