package io.kvledger.ledger.web;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.json.Json;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;

/**
 * The event stream against a real journal: a client that does not read loses events instead of
 * holding memory or the writer, the loss is counted, and a {@code dropped} event tells the
 * client how many it missed once it reads again.
 */
class EventStreamTest {

    @TempDir
    Path dir;

    private static final Pattern ID = Pattern.compile("^id: (\\d+)\n");

    @Test
    void aClientThatDoesNotReadLosesCountedEventsAndIsToldHowMany() throws Exception {
        NodeConfig cfg = NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).hostIp("127.0.0.1").build();
        try (JournalWriter w = JournalWriter.open(dir, JournalHeader.of("N0", cfg, "test"));
             EventStream es = new EventStream(dir, "N0")) {
            Flux<String> stream = es.subscribe();
            assertThat(stream).isNotNull();
            assertThat(eventually(() -> es.readyClients() == 1)).as("the hub follows the journal").isTrue();

            // Nobody reads the stream: the writer appends three buffers' worth without waiting.
            int burst = 3 * EventStream.BUFFER;
            long t = 1_000_000;
            for (int i = 0; i < burst; i++) {
                w.appendInput(new NodeEvent.Tick(t++));
            }
            assertThat(eventually(() -> es.sent() + es.dropped() == burst))
                    .as("every entry delivered or counted (sent %d, dropped %d)", es.sent(), es.dropped()).isTrue();
            long dropped = es.dropped();
            long sent = es.sent();
            assertThat(dropped).isPositive();
            assertThat(sent).isLessThanOrEqualTo(EventStream.BUFFER);

            // The client reads now: the ready event, what fit, then (after one more entry) the count.
            LinkedBlockingQueue<String> got = new LinkedBlockingQueue<>();
            Disposable sub = stream.subscribe(got::add);
            try {
                assertThat(got.poll(120, TimeUnit.SECONDS)).startsWith("event: ready\n");
                List<Long> ids = new ArrayList<>();
                for (long i = 0; i < sent; i++) {
                    String msg = got.poll(120, TimeUnit.SECONDS);
                    assertThat(msg).startsWith("id: ").contains("\nevent: entry\ndata: {").endsWith("\n\n");
                    Matcher m = ID.matcher(msg);
                    assertThat(m.find()).isTrue();
                    ids.add(Long.parseLong(m.group(1)));
                }
                assertThat(ids).isSorted().doesNotHaveDuplicates();
                w.appendInput(new NodeEvent.Tick(t));
                String marker = got.poll(120, TimeUnit.SECONDS);
                assertThat(marker).startsWith("event: dropped\ndata: ");
                @SuppressWarnings("unchecked")
                Map<String, Object> counts = (Map<String, Object>) Json.parse(
                        marker.substring("event: dropped\ndata: ".length()).strip());
                assertThat(counts.get("dropped")).isEqualTo(dropped);
                String last = got.poll(120, TimeUnit.SECONDS);
                assertThat(last).contains("\"type\":\"tick\"").contains("\"at_ns\":" + t);
                assertThat(es.dropped()).as("nothing more lost").isEqualTo(dropped);
            } finally {
                sub.dispose();
            }
            assertThat(eventually(() -> es.clients() == 0)).as("a gone client is forgotten").isTrue();
        }
    }

    @Test
    void atMostMaxClientsListenAtOnce() {
        NodeConfig cfg = NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).hostIp("127.0.0.1").build();
        try (JournalWriter w = JournalWriter.open(dir, JournalHeader.of("N0", cfg, "test"));
             EventStream es = new EventStream(dir, "N0")) {
            for (int i = 0; i < EventStream.MAX_CLIENTS; i++) {
                assertThat(es.subscribe()).isNotNull();
            }
            assertThat(es.subscribe()).isNull();
        }
    }

    private static boolean eventually(BooleanSupplier cond) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (System.nanoTime() < end) {
            if (cond.getAsBoolean()) {
                return true;
            }
            Thread.sleep(10);
        }
        return cond.getAsBoolean();
    }
}
