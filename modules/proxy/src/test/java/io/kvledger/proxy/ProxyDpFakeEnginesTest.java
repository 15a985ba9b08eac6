package io.kvledger.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.proxy.ProxyEvent;
import io.kvledger.ledger.replay.ConfigOverrides;
import io.kvledger.ledger.replay.Hangs;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.node.cluster.LoopbackPorts;
import io.kvledger.node.FakeEngineProcess;
import io.kvledger.node.NodeOptions;
import io.kvledger.node.NodeService;
import io.kvledger.node.TestNodes;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code kvledger proxy} in front of prefill and decode instances with DP 2: each instance is one
 * Python fake engine ({@code --dp-size 2}: one API server, one scheduler per DP rank, rank 0
 * registering with {@code dp_size 2}) driving two {@code kvledger node --engine bridge} ranks
 * ({@code dp 0/2} and {@code 1/2}, binding base + dp). The proxy picks each leg's DP rank and
 * sends it as {@code X-data-parallel-rank}; the MoRIIO notifies go between the chosen ranks'
 * nodes. Every request is answered with all its tokens, every node rank gets requests, each
 * request is admitted by exactly the prefill and decode ranks the proxy journaled, and hangs
 * over all journals is clean.
 */
class ProxyDpFakeEnginesTest {

    private static final int DP = 2;
    private static final Pattern UUID = Pattern.compile("_([0-9a-f]{32})(?:-|$)");

    @TempDir
    Path dir;

    private record Instance(String name, int handshake, int notifyBase, List<NodeService> ranks, FakeEngineProcess engine) {}

    @ParameterizedTest(name = "{0}P{1}D DP 2, {2}")
    @CsvSource({"1, 2, WRITE", "2, 2, READ"})
    void requestsThroughTheProxyReachEveryDpRankAndAreJournaledByTheRanksItChose(int prefills, int decodes,
                                                                                TransferMode mode) throws Exception {
        FakeEngineProcess.assumePython();
        int requests = 40;
        List<Instance> instances = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        try (ProxyService proxy = ProxyService.start(ProxyOptions.loopback().withMode(mode)
                .withJournal(dir.resolve("proxy")), "test")) {
            String ping = "tcp://127.0.0.1:" + proxy.pingPort();
            try {
                Set<Integer> used = new HashSet<>();
                for (int i = 0; i < prefills + decodes; i++) {
                    boolean p = i < prefills;
                    String name = p ? "P" + i : "D" + (i - prefills);
                    int base;
                    do {
                        base = LoopbackPorts.freeRange(2 * DP);
                    } while (overlaps(used, base, 2 * DP));
                    int hs = base;
                    int nt = base + DP;
                    List<NodeService> ranks = new ArrayList<>();
                    List<String> args = new ArrayList<>(List.of("--dp-size", String.valueOf(DP), "--proxy", ping));
                    for (int r = 0; r < DP; r++) {
                        NodeConfig c = NodeConfig.builder(p ? Role.PRODUCER : Role.CONSUMER, mode).hostIp("127.0.0.1")
                                .handshakePort(hs).notifyPort(nt).dp(r, DP, DP)
                                .deferTimeoutNs(NodeConfig.seconds(20)).transferTimeoutNs(NodeConfig.seconds(10)).build();
                        NodeService n = NodeService.start(TestNodes.options(name + "-dp" + r, c,
                                dir.resolve("nodes").resolve(name + "-dp" + r)).withEngine(NodeOptions.EngineKind.BRIDGE));
                        ranks.add(n);
                        args.addAll(List.of("--bridge", n.bridge().endpoint()));
                    }
                    FakeEngineProcess fe = FakeEngineProcess.start(p ? "prefill" : "decode", mode.name().toLowerCase(),
                            LoopbackPorts.free(), hs, nt, args.toArray(String[]::new));
                    instances.add(new Instance(name, hs, nt, ranks, fe));
                }
                assertThat(TestNodes.eventually(Duration.ofSeconds(120),
                        () -> proxy.producers() == prefills && proxy.consumers() == decodes)).as("every instance registered")
                        .isTrue();

                HttpClient http = HttpClient.newHttpClient();
                List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
                List<Integer> maxTokens = new ArrayList<>();
                for (int i = 0; i < requests; i++) {
                    int tokens = 2 + i % 7;
                    maxTokens.add(tokens);
                    answers.add(http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + proxy.httpPort()
                                    + "/v1/completions")).timeout(Duration.ofSeconds(120))
                            .header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"m\",\"prompt\":\"" + "word ".repeat(5 + i)
                                    + "\",\"max_tokens\":" + tokens + ",\"stream\":" + (i % 2 == 0) + "}")).build(),
                            HttpResponse.BodyHandlers.ofString()));
                    if (i % 8 == 7) {
                        try {
                            CompletableFuture.allOf(answers.toArray(CompletableFuture[]::new)).get(120, TimeUnit.SECONDS);
                        } catch (java.util.concurrent.TimeoutException e) {
                            break;
                        }
                    }
                }
                for (int i = 0; i < answers.size(); i++) {
                    HttpResponse<String> r = answers.get(i).getNow(null);
                    if (r == null) {
                        failures.add("request " + i + ": no answer within 120 s");
                    } else if (r.statusCode() != 200) {
                        failures.add("request " + i + ": " + r.statusCode() + " " + r.body());
                    } else if (!r.body().contains(" tok" + (maxTokens.get(i) - 1) + "\"")
                            || r.body().contains(" tok" + maxTokens.get(i) + "\"")) {
                        // the proxy asks the decode for max_tokens - 1
                        failures.add("request " + i + ": not max_tokens - 1 = " + (maxTokens.get(i) - 1) + " tokens: " + r.body());
                    }
                }
                // let the prefills free what they hold before the journals are read: waited for (every
                // rank's requests in a terminal phase), not slept, so a loaded machine cannot cut it short;
                // a rank that never settles is left to the hangs check below to name
                TestNodes.eventually(Duration.ofSeconds(120), () -> instances.stream()
                        .flatMap(in -> in.ranks().stream()).allMatch(ProxyDpFakeEnginesTest::settled));
            } finally {
                for (Instance in : instances) {
                    in.engine().close();
                }
                Thread.sleep(200);
                for (Instance in : instances) {
                    for (NodeService n : in.ranks()) {
                        n.close();
                    }
                }
            }
        }

        // the DP rank the proxy chose for each leg, by uuid
        Map<String, String> wantPrefill = new HashMap<>();
        Map<String, String> wantDecode = new HashMap<>();
        try (JournalReader r = JournalReader.open(dir.resolve("proxy"))) {
            for (JournalEntry e : r) {
                if (e instanceof JournalEntry.Proxy px && px.event() instanceof ProxyEvent.RequestRouted rr) {
                    wantPrefill.put(uuid(rr.requestId()), rr.prefill() + "#" + rr.prefillDpRank());
                    wantDecode.put(uuid(rr.requestId()), rr.decode() + "#" + rr.decodeDpRank());
                }
            }
        }
        String findings;
        try (Replayer r = Replayer.open(JournalInputs.resolve(List.of(dir.resolve("nodes"), dir.resolve("proxy"))),
                ConfigOverrides.none())) {
            Hangs.Result h = Hangs.analyse(r, Bounds.defaults());
            findings = String.join("\n", h.findings().stream().map(Object::toString).toList());
            assertThat(h.nodes()).hasSize(DP * (prefills + decodes));
        }
        assertThat(failures).as("hangs findings:\n" + findings).isEmpty();
        assertThat(findings).as("no hang").isEmpty();
        assertThat(wantPrefill).hasSize(requests);
        Map<String, String> gotPrefill = new HashMap<>();
        Map<String, String> gotDecode = new HashMap<>();
        Map<String, Integer> perNode = new HashMap<>();
        for (Instance in : instances) {
            for (int rank = 0; rank < DP; rank++) {
                String node = in.name() + "-dp" + rank;
                try (JournalReader r = JournalReader.open(dir.resolve("nodes").resolve(node))) {
                    for (JournalEntry e : r) {
                        if (e instanceof JournalEntry.Input i && i.event() instanceof NodeEvent.RequestAdmitted a) {
                            String prev = (in.name().startsWith("P") ? gotPrefill : gotDecode).put(uuid(a.requestId()), node);
                            assertThat(prev).as("admitted by two ranks").isNull();
                            perNode.merge(node, 1, Integer::sum);
                        }
                    }
                }
            }
        }
        assertThat(perNode).as("every DP rank of every instance got requests").hasSize(DP * (prefills + decodes));
        assertThat(gotPrefill.keySet()).isEqualTo(wantPrefill.keySet());
        assertThat(gotDecode.keySet()).isEqualTo(wantDecode.keySet());
        // the node rank that admitted a request is the DP rank the proxy chose for it
        for (String u : wantPrefill.keySet()) {
            assertThat(gotPrefill.get(u)).endsWith("-dp" + wantPrefill.get(u).substring(wantPrefill.get(u).indexOf('#') + 1));
            assertThat(gotDecode.get(u)).endsWith("-dp" + wantDecode.get(u).substring(wantDecode.get(u).indexOf('#') + 1));
        }
    }

    /** Whether every request the node's loop knows is in a terminal phase (read on the loop's thread). */
    private static boolean settled(NodeService n) {
        try {
            return n.inbox().query(s -> s.phases().values().stream().allMatch(RequestPhase::terminal))
                    .get(120, TimeUnit.SECONDS);
        } catch (Exception e) {
            return false;
        }
    }

    private static boolean overlaps(Set<Integer> used, int base, int span) {
        for (int p = base; p < base + span; p++) {
            if (used.contains(p)) {
                return true;
            }
        }
        for (int p = base; p < base + span; p++) {
            used.add(p);
        }
        return false;
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
