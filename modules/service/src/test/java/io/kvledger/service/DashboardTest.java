package io.kvledger.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.json.Json;
import io.kvledger.service.cluster.LocalLeg;
import io.kvledger.service.cluster.ToyRouter;
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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Grafana dashboard in {@code dashboards/kvledger-grafana.json} graphs only what a node exports:
 * two live nodes serve requests (and record one anomaly, so that the anomaly series exists), their
 * {@code /metrics} is scraped over HTTP, and every metric name in every PromQL expression of the
 * dashboard (panel targets and template queries) must be a series of the scrape. The proxy's
 * panels use names the proxy does not export yet: they must be exactly {@link #PENDING_PROXY}
 * and their panels say PENDING.
 */
class DashboardTest {

    /** The proxy metric names the dashboard expects (io.kvledger.service.proxy is being built). */
    static final Set<String> PENDING_PROXY = Set.of("kvledger:proxy_requests_total",
            "kvledger:proxy_leg_duration_seconds_bucket", "kvledger:proxy_instances",
            "kvledger:proxy_handoffs_rejected_total");

    @TempDir
    Path dir;

    @Test
    void everyMetricTheDashboardUsesIsOneTheNodeExports() throws Exception {
        Map<String, Object> dash = dashboard();
        Map<String, List<String>> exprs = expressions(dash);
        assertThat(exprs.size()).as("panels with PromQL (and template queries) in the dashboard").isGreaterThanOrEqualTo(18);

        Set<String> exported = new TreeSet<>();
        int base = TestNodes.freePortBase(4);
        NodeService p = NodeService.start(TestNodes.options("P0",
                TestNodes.config(Role.PRODUCER, TransferMode.WRITE, base, base + 1), dir.resolve("P0"))
                .withHttp("127.0.0.1", 0, null));
        NodeService d = NodeService.start(TestNodes.options("D0",
                TestNodes.config(Role.CONSUMER, TransferMode.WRITE, base + 2, base + 3), dir.resolve("D0"))
                .withHttp("127.0.0.1", 0, null));
        try {
            ToyRouter router = new ToyRouter(List.of(new LocalLeg(p)), List.of(new LocalLeg(d)), TransferMode.WRITE, 3);
            for (int i = 0; i < 2; i++) {
                assertThat(router.send(48, 2).get(60, TimeUnit.SECONDS).ok()).isTrue();
            }
            // A hook naming a request the node never admitted: one REQUEST_UNKNOWN anomaly.
            d.hookPort().call(new NodeEvent.MatchedTokensQueried(d.clock().getAsLong(), "cmpl-never-admitted", 0));
            HttpClient http = HttpClient.newHttpClient();
            for (NodeService n : List.of(p, d)) {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + n.http().port()
                        + "/metrics")).timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
                assertThat(r.statusCode()).isEqualTo(200);
                exported.addAll(sampleNames(r.body()));
            }
        } finally {
            p.close();
            d.close();
        }
        assertThat(exported).contains("kvledger:anomalies_total", "kvledger:nixl_xfer_time_seconds_bucket");

        Set<String> used = new TreeSet<>();
        Set<String> unknown = new TreeSet<>();
        for (Map.Entry<String, List<String>> e : exprs.entrySet()) {
            for (String expr : e.getValue()) {
                List<String> names = metricNames(expr);
                assertThat(names).as("metrics of %s: %s", e.getKey(), expr).isNotEmpty();
                for (String n : names) {
                    used.add(n);
                    if (!exported.contains(n)) {
                        unknown.add(n);
                        assertThat(PENDING_PROXY).as("%s in %s is neither exported by a node nor a pending proxy name "
                                + "(exported: %s)", n, e.getKey(), exported).contains(n);
                        assertThat(e.getKey()).as("a panel with pending names says so").contains("PENDING");
                    }
                }
            }
        }
        assertThat(unknown).as("the pending proxy names are all used").isEqualTo(PENDING_PROXY);
        // The panels the dashboard is for: requests by phase, hangs, transfer time and bytes, inbox, journal lag.
        assertThat(used).contains("kvledger:requests", "kvledger:anomalies_total", "kvledger:nixl_xfer_time_seconds_bucket",
                "kvledger:nixl_bytes_transferred_sum", "kvledger:inbox_depth", "kvledger:journal_lag_seconds",
                "kvledger:nixl_num_kv_expired_reqs_total");
    }

    @Test
    void thePromqlReaderFindsMetricNamesOnly() {
        assertThat(metricNames("sum by (phase) (kvledger:requests{node=~\"$node\", phase!~\"A|B\"})"))
                .containsExactly("kvledger:requests");
        assertThat(metricNames("histogram_quantile(0.99, sum by (le, leg) (rate(x_bucket{a=\"rate(y)\"}[$__rate_interval])))"))
                .containsExactly("x_bucket");
        assertThat(metricNames("sum(rate(a_sum[5m])) / on (node) group_left (role) sum(rate(a_count[5m])) offset 1m"))
                .containsExactly("a_sum", "a_count");
        assertThat(metricNames("label_values(kvledger:events_applied_total, node)"))
                .containsExactly("kvledger:events_applied_total");
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
