package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.proxy.ProxyEvent;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/**
 * A load run of {@code demo --live --clean}: a few thousand HTTP completions through the proxy
 * into one prefill and one decode (fake engine plus bridged node each). Every request is answered
 * 200 with all its tokens, the proxy journaled every one of them as completed, and both nodes'
 * journals admitted every one. It takes minutes, so it runs only with
 * {@code -Dkvledger.load=REQUESTS} (e.g. 3000); figures in benchmarks/README.md.
 */
@EnabledIfSystemProperty(named = "kvledger.load", matches = "[1-9][0-9]*")
class DemoLiveLoadTest {

    private static final Pattern UUID = Pattern.compile("_([0-9a-f]{32})(?:-|$)");

    @TempDir
    Path dir;

    @Test
    @Timeout(value = 15, unit = TimeUnit.MINUTES)
    void thousandsOfRequestsAreAllAnsweredAndAllJournaled() throws Exception {
        int n = Integer.getInteger("kvledger.load");
        Path out = dir.resolve("load");
        long t0 = System.nanoTime();
        CliRun.Outcome r = CliRun.run("demo", "--live", "--clean", "--requests", String.valueOf(n), "--concurrency", "32",
                "--out", out.toString());
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertThat(r.code()).as(r.out() + r.err()).isZero();
        assertThat(r.out()).contains("answers by status {200=" + n + "}").contains("no findings");
        Set<String> completed = new HashSet<>();
        try (JournalReader jr = JournalReader.open(out.resolve("proxy"))) {
            for (JournalEntry e : jr) {
                if (e instanceof JournalEntry.Proxy px && px.event() instanceof ProxyEvent.RequestCompleted c) {
                    assertThat(c.httpStatus()).isEqualTo(200);
                    completed.add(uuid(c.requestId()));
                }
            }
        }
        assertThat(completed).hasSize(n);
        for (String node : new String[] {"P0", "D0"}) {
            Set<String> admitted = new HashSet<>();
            try (JournalReader jr = JournalReader.open(out.resolve("nodes").resolve(node))) {
                for (JournalEntry e : jr) {
                    if (e instanceof JournalEntry.Input in && in.event() instanceof NodeEvent.RequestAdmitted a) {
                        admitted.add(uuid(a.requestId()));
                    }
                }
            }
            assertThat(admitted).as(node + " admitted every request the proxy completed").isEqualTo(completed);
        }
        String sent = r.out().lines().filter(l -> l.contains("requests sent through the proxy")).findFirst().orElse("");
        System.out.println("DemoLiveLoadTest: " + n + " requests, whole demo " + ms + " ms; " + sent.strip());
    }

    private static String uuid(String requestId) {
        Matcher m = UUID.matcher(requestId);
        String last = null;
        while (m.find()) {
            last = m.group(1);
        }
        assertThat(last).as("uuid of " + requestId).isNotNull();
        return last;
    }
}
