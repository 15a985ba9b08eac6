package io.kvledger.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.json.Json;
import io.kvledger.node.cluster.LocalLeg;
import io.kvledger.node.cluster.LiveRouter;
import io.kvledger.node.NodeService;
import io.kvledger.node.TestNodes;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import io.kvledger.node.Promtool;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Grafana dashboard in {@code dashboards/kvledger-grafana.json} graphs only what kvledger
 * exports: two live nodes registered with a running {@code kvledger proxy} serve requests (one of
 * them through the proxy; and one anomaly is recorded, so that the anomaly series exists), the
 * nodes' and the proxy's {@code /metrics} are scraped over HTTP, and every metric name in every
 * PromQL expression of the dashboard (panel targets and template queries) must be a series of
 * one of those scrapes. The same scrapes pass Prometheus's {@code promtool check metrics} with
 * no warning.
 */
class DashboardTest {

    @TempDir
    static Path dir;

    /** The live scrapes: the prefill node's, the decode node's and the proxy's {@code /metrics}. */
    private static final Map<String, String> SCRAPES = new LinkedHashMap<>();

    @BeforeAll
    static void scrapeLiveNodesAndProxy() throws Exception {
        int base = TestNodes.freePortBase(4);
        ProxyService proxy = ProxyService.start(ProxyOptions.loopback().withMode(TransferMode.WRITE), "test");
        String ping = "tcp://127.0.0.1:" + proxy.pingPort();
        NodeService p = NodeService.start(TestNodes.options("P0",
                TestNodes.config(Role.PRODUCER, TransferMode.WRITE, base, base + 1), dir.resolve("P0"))
                .withHttp("127.0.0.1", 0, null).withProxy(ping, null));
        NodeService d = NodeService.start(TestNodes.options("D0",
                TestNodes.config(Role.CONSUMER, TransferMode.WRITE, base + 2, base + 3), dir.resolve("D0"))
                .withHttp("127.0.0.1", 0, null).withProxy(ping, null));
        try {
            LiveRouter router = new LiveRouter(List.of(new LocalLeg(p)), List.of(new LocalLeg(d)), TransferMode.WRITE, 3);
            for (int i = 0; i < 2; i++) {
                assertThat(router.send(48, 2).get(120, TimeUnit.SECONDS).ok()).isTrue();
            }
            // A hook naming a request the node never admitted: one REQUEST_UNKNOWN anomaly.
            d.hookPort().call(new NodeEvent.MatchedTokensQueried(d.clock().getAsLong(), "cmpl-never-admitted", 0));
            HttpClient http = HttpClient.newHttpClient();
            // One request through the proxy: its request and leg series.
            assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> proxy.producers() == 1 && proxy.consumers() == 1))
                    .as("both nodes registered with the proxy").isTrue();
            HttpResponse<String> c = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + proxy.httpPort()
                            + "/v1/completions")).timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"m\",\"prompt\":\"" + "word ".repeat(40)
                            + "\",\"max_tokens\":3}")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(c.statusCode()).as(c.body()).isEqualTo(200);
            Map<String, Integer> ports = new LinkedHashMap<>();
            ports.put("node P0", p.http().port());
            ports.put("node D0", d.http().port());
            ports.put("proxy", proxy.httpPort());
            for (Map.Entry<String, Integer> e : ports.entrySet()) {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + e.getValue()
                        + "/metrics")).timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
                assertThat(r.statusCode()).isEqualTo(200);
                SCRAPES.put(e.getKey(), r.body());
            }
        } finally {
            p.close();
            d.close();
            proxy.close();
        }
    }

    @Test
    void everyScrapePassesPromtoolWithNoWarning() throws Exception {
        Path promtool = Promtool.require();
        assertThat(SCRAPES).hasSize(3);
        for (Map.Entry<String, String> e : SCRAPES.entrySet()) {
            Promtool.Verdict v = Promtool.check(promtool, e.getValue());
            assertThat(v.output()).as("promtool check metrics on the %s's /metrics", e.getKey()).isBlank();
            assertThat(v.exit()).as("promtool's exit status on the %s's /metrics", e.getKey()).isZero();
        }
    }

    @Test
    void theNodesAndTheProxyHaveTheShipSeriesAtZeroWithoutShipping() {
        // ship --metrics's names (ShipSeries), there from the first scrape although nothing ships
        List<String> ship = List.of("kvledger_ship_backlog_entries", "kvledger_ship_acknowledged_total",
                "kvledger_ship_backlog_bytes", "kvledger_ship_sent_total", "kvledger_ship_skipped_total",
                "kvledger_ship_buffer_full", "kvledger_ship_journals_stopped_total");
        for (Map.Entry<String, String> e : SCRAPES.entrySet()) {
            for (String name : ship) {
                java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^" + name + "\\{[^}]*} (\\S+)$")
                        .matcher(e.getValue());
                assertThat(m.find()).as("%s on the %s's /metrics", name, e.getKey()).isTrue();
                assertThat(Double.parseDouble(m.group(1))).as("%s on the %s's /metrics", name, e.getKey()).isZero();
                assertThat(m.find()).as("%s once on the %s's /metrics", name, e.getKey()).isFalse();
            }
        }
    }

    @Test
    void theScrapesCarryProcessAndJvmMetrics() {
        for (Map.Entry<String, String> e : SCRAPES.entrySet()) {
            assertThat(sampleNames(e.getValue())).as("the %s's /metrics", e.getKey()).contains(
                    "process_cpu_seconds_total", "process_resident_memory_bytes", "process_start_time_seconds",
                    "process_open_fds", "process_max_fds", "jvm_memory_used_bytes", "jvm_threads_live_threads",
                    "jvm_gc_collections_total", "jvm_gc_collection_seconds_total");
        }
    }

    @Test
    void everyMetricTheDashboardUsesIsOneANodeOrTheProxyExports() throws Exception {
        Map<String, Object> dash = dashboard();
        Map<String, List<String>> exprs = expressions(dash);
        assertThat(exprs.size()).as("panels with PromQL (and template queries) in the dashboard").isGreaterThanOrEqualTo(18);

        Set<String> exported = new TreeSet<>();
        for (String scrape : SCRAPES.values()) {
            exported.addAll(sampleNames(scrape));
        }
        assertThat(exported).contains("kvledger_anomalies_total", "kvledger_nixl_xfer_time_seconds_bucket",
                "kvledger_proxy_requests_total", "kvledger_proxy_leg_duration_seconds_bucket");

        Set<String> used = new TreeSet<>();
        for (Map.Entry<String, List<String>> e : exprs.entrySet()) {
            assertThat(e.getKey()).as("no panel is left pending").doesNotContain("PENDING");
            for (String expr : e.getValue()) {
                List<String> names = metricNames(expr);
                assertThat(names).as("metrics of %s: %s", e.getKey(), expr).isNotEmpty();
                for (String n : names) {
                    used.add(n);
                    assertThat(exported).as("%s in %s is exported by a node or the proxy", n, e.getKey()).contains(n);
                }
            }
        }
        // The panels the dashboard is for: requests by phase, hangs, transfer time and bytes, inbox, journal lag.
        assertThat(used).contains("kvledger_requests", "kvledger_requests_ended_total", "kvledger_anomalies_total", "kvledger_nixl_xfer_time_seconds_bucket",
                "kvledger_nixl_transfer_size_bytes_sum", "kvledger_inbox_depth", "kvledger_journal_lag_seconds",
                "kvledger_nixl_num_kv_expired_reqs_total", "kvledger_proxy_requests_total",
                "kvledger_proxy_leg_duration_seconds_bucket", "kvledger_proxy_instances",
                "kvledger_proxy_handoffs_rejected_total", "process_cpu_seconds_total", "process_resident_memory_bytes",
                "jvm_gc_collection_seconds_total");
    }

    @Test
    void thePromqlReaderFindsMetricNamesOnly() {
        assertThat(metricNames("sum by (phase) (kvledger_requests{node=~\"$node\", phase!~\"A|B\"})"))
                .containsExactly("kvledger_requests");
        assertThat(metricNames("histogram_quantile(0.99, sum by (le, leg) (rate(x_bucket{a=\"rate(y)\"}[$__rate_interval])))"))
                .containsExactly("x_bucket");
        assertThat(metricNames("sum(rate(a_sum[5m])) / on (node) group_left (role) sum(rate(a_count[5m])) offset 1m"))
                .containsExactly("a_sum", "a_count");
        assertThat(metricNames("label_values(kvledger_events_applied_total, node)"))
                .containsExactly("kvledger_events_applied_total");
        assertThat(metricNames("max(up) > bool 0 and absent(nope)")).containsExactly("up", "nope");
    }

    // ------------------------------------------------------------------ the dashboard

    private static Map<String, Object> dashboard() throws Exception {
        String d = System.getProperty("kvledger.dashboards");
        assertThat(d).as("the kvledger.dashboards property (set by the pom)").isNotNull();
        Path f = Path.of(d).resolve("kvledger-grafana.json");
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) Json.parse(Files.readString(f));
        return m;
    }

    /** Per panel ("title: description"), its targets' expressions; the template queries under "templating". */
    @SuppressWarnings("unchecked")
    private static Map<String, List<String>> expressions(Map<String, Object> dash) {
        Map<String, List<String>> out = new LinkedHashMap<>();
        List<Object> panels = new ArrayList<>((List<Object>) dash.get("panels"));
        for (int i = 0; i < panels.size(); i++) {
            Map<String, Object> p = (Map<String, Object>) panels.get(i);
            if (p.get("panels") instanceof List<?> nested) {
                panels.addAll(nested);
            }
            if (!(p.get("targets") instanceof List<?> targets)) {
                continue;
            }
            String key = p.get("title") + ": " + p.get("description");
            for (Object t : targets) {
                Object expr = ((Map<String, Object>) t).get("expr");
                assertThat(expr).as("target of %s", key).isInstanceOf(String.class);
                out.computeIfAbsent(key, k -> new ArrayList<>()).add((String) expr);
            }
        }
        Map<String, Object> templating = (Map<String, Object>) dash.get("templating");
        for (Object v : (List<Object>) templating.get("list")) {
            Map<String, Object> var = (Map<String, Object>) v;
            if ("query".equals(var.get("type"))) {
                Object q = var.get("query");
                String text = q instanceof Map<?, ?> qm ? (String) qm.get("query") : (String) q;
                out.computeIfAbsent("templating " + var.get("name"), k -> new ArrayList<>()).add(text);
            }
        }
        return out;
    }

    // ------------------------------------------------------------------ PromQL

    private static final Set<String> AGGREGATIONS = Set.of("sum", "min", "max", "avg", "count", "stddev", "stdvar",
            "topk", "bottomk", "quantile", "count_values", "group", "limitk", "limit_ratio");
    private static final Set<String> LABEL_LISTS = Set.of("by", "without", "on", "ignoring", "group_left", "group_right");
    private static final Set<String> KEYWORDS = Set.of("bool", "and", "or", "unless", "offset", "atan2", "inf", "nan");
    private static final Pattern IDENT = Pattern.compile("[a-zA-Z_:][a-zA-Z0-9_:]*");

    /**
     * The metric names of a PromQL expression (or a Grafana {@code label_values(metric, label)}):
     * string literals, label matchers, range selectors, durations, numbers, functions,
     * aggregation operators with their label lists, keywords and {@code $variables} are left out.
     */
    static List<String> metricNames(String expr) {
        String s = expr.replaceAll("\"(\\\\.|[^\"\\\\])*\"", "\"\"").replaceAll("'(\\\\.|[^'\\\\])*'", "''")
                .replaceAll("\\{[^}]*}", " ").replaceAll("\\[[^\\]]*]", " ");
        if (s.strip().startsWith("label_values(")) {
            // label_values(metric, label): the label is not a metric
            s = s.replaceAll(",\\s*[a-zA-Z_][a-zA-Z0-9_]*\\s*\\)\\s*$", ")");
        }
        List<String> out = new ArrayList<>();
        Matcher m = IDENT.matcher(s);
        int skipUntil = -1;
        while (m.find()) {
            int start = m.start();
            if (start < skipUntil) {
                continue;
            }
            char before = start > 0 ? s.charAt(start - 1) : ' ';
            if (before == '$' || Character.isDigit(before) || before == '.') {
                continue; // a variable, or the exponent/unit of a number or duration (1e9, 5m)
            }
            String id = m.group();
            int next = m.end();
            while (next < s.length() && Character.isWhitespace(s.charAt(next))) {
                next++;
            }
            boolean call = next < s.length() && s.charAt(next) == '(';
            if (LABEL_LISTS.contains(id)) {
                if (call) {
                    skipUntil = s.indexOf(')', next) + 1;
                }
                continue;
            }
            if (call || AGGREGATIONS.contains(id) || KEYWORDS.contains(id)) {
                continue;
            }
            if (!out.contains(id)) {
                out.add(id);
            }
        }
        return out;
    }

    /** The series names of a Prometheus text scrape. */
    private static Set<String> sampleNames(String scrape) {
        Set<String> names = new TreeSet<>();
        for (String line : scrape.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            int end = 0;
            while (end < line.length() && line.charAt(end) != '{' && line.charAt(end) != ' ') {
                end++;
            }
            names.add(line.substring(0, end));
        }
        return names;
    }
}
