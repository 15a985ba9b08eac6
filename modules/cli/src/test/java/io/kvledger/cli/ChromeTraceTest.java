package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.journal.json.Json;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code inspect --chrome-trace} and {@code export --chrome-trace} on fixture hangs, checked
 * against the Trace Event Format (no Debian or npm package provides Perfetto's trace processor,
 * so the file is checked by schema): required fields per phase, ts monotonic per thread, complete
 * events that nest on each thread, every flow start with its one finish bound to a slice, every
 * process and thread named; then what the fixture's hang must show.
 */
class ChromeTraceTest {

    static final Path FIXTURES = FixtureGoldenTest.fixturesDir();

    @TempDir
    Path tmp;

    @Test
    void a_lost_notify_is_a_frame_never_received_and_a_missing_marker_with_the_finding() throws Exception {
        Path file = tmp.resolve("27.json");
        CliRun.Outcome o = CliRun.run("inspect", FIXTURES.resolve("27-write-stranded").toString(), "--request",
                "6c5d8182190c404694cda0f3b0e27cc7", "--chrome-trace", file.toString());
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.err()).contains("wrote " + file).contains("0 frame flow(s), 1 frame(s) never received, 3 finding(s)");
        List<Map<String, Object>> events = valid(file);

        Map<Long, String> processes = names(events, "process_name", false);
        assertThat(processes.values()).containsExactlyInAnyOrder("D0 (decode, write, dp0 tp0)", "P0 (prefill, write, dp0 tp0)");
        long d0 = pidOf(processes, "D0");
        long p0 = pidOf(processes, "P0");
        Map<Long, String> d0Threads = threadsOf(events, d0);
        assertThat(d0Threads.values()).contains("scheduler", "notify (ZMQ frames)");

        // the decode waits for the rest of the journals: an open phase of 36.977 s
        Map<String, Object> waiting = one(events, e -> "X".equals(e.get("ph")) && "WAITING_FOR_REMOTE_KVS".equals(e.get("name"))
                && num(e.get("pid")) == d0);
        assertThat((Double) waiting.get("dur")).isBetween(36_977_000.0, 36_978_000.0);
        assertThat(args(waiting)).containsEntry("open", true);
        // the prefill's phases end in FREED_AFTER_ACK, 35.013211638 s after the first line
        Map<String, Object> deferred = one(events, e -> "X".equals(e.get("ph")) && "DEFERRED_FREE".equals(e.get("name")));
        assertThat(num(deferred.get("pid"))).isEqualTo(p0);
        assertThat((Double) deferred.get("ts") + (Double) deferred.get("dur")).isCloseTo(35_013_211.638, org.assertj.core.data.Offset.offset(0.001));

        Map<String, Object> sent = one(events, e -> "send_remote_blocks".equals(e.get("name")));
        assertThat(args(sent)).containsEntry("received", false);
        assertThat(d0Threads.get(num(sent.get("tid")))).isEqualTo("notify (ZMQ frames)");

        Map<String, Object> missing = one(events, e -> "missing: stuck-waiting".equals(e.get("name")));
        assertThat(missing.get("ph")).isEqualTo("i");
        assertThat(num(missing.get("pid"))).isEqualTo(d0);
        assertThat(d0Threads.get(num(missing.get("tid")))).isEqualTo("notify (ZMQ frames)");
        assertThat((String) args(missing).get("message")).contains("never arrived (lost notify)");
        assertThat(args(missing)).containsEntry("bug_class", 27L);
        // and the other two findings of hangs (the anomaly, the reaped warning) on the prefill
        assertThat(events.stream().filter(e -> ((String) e.get("name")).startsWith("missing: ")).map(e -> e.get("name")))
                .containsExactlyInAnyOrder("missing: stuck-waiting", "missing: anomaly", "missing: reaped-warning");
    }

    @Test
    void frames_between_nodes_are_flow_arrows_from_sender_to_receiver() throws Exception {
        Path file = tmp.resolve("11.json");
        CliRun.Outcome o = CliRun.run("inspect", FIXTURES.resolve("11-early-ack").toString(), "--request",
                "0123456789abcdef0123456789abcdef", "--chrome-trace", file.toString());
        assertThat(o.code()).as(o.err()).isZero();
        List<Map<String, Object>> events = valid(file);
        Map<Long, String> processes = names(events, "process_name", false);
        long d0 = pidOf(processes, "D0");
        long p0 = pidOf(processes, "P0");
        List<Map<String, Object>> starts = events.stream().filter(e -> "s".equals(e.get("ph"))).toList();
        List<Map<String, Object>> ends = events.stream().filter(e -> "f".equals(e.get("ph"))).toList();
        // remote_blocks D0 -> P0 and write_done P0 -> D0
        assertThat(starts).hasSize(2);
        Map<Object, Map<String, Object>> endById = new HashMap<>();
        ends.forEach(e -> endById.put(e.get("id"), e));
        Set<String> directions = new HashSet<>();
        for (Map<String, Object> s : starts) {
            Map<String, Object> f = endById.get(s.get("id"));
            directions.add(s.get("name") + " " + num(s.get("pid")) + "->" + num(f.get("pid")));
            assertThat((Double) f.get("ts")).isGreaterThan((Double) s.get("ts"));
        }
        assertThat(directions).containsExactlyInAnyOrder(
                "send_remote_blocks \u2192 remote_blocks_received " + d0 + "->" + p0,
                "send_write_done \u2192 write_done_received " + p0 + "->" + d0);
        // the 200 us the remote_blocks frame took
        Map<String, Object> s = starts.stream().filter(e -> ((String) e.get("name")).startsWith("send_remote")).findFirst().orElseThrow();
        assertThat((Double) endById.get(s.get("id")).get("ts") - (Double) s.get("ts")).isEqualTo(200.0);
    }

    @Test
    void export_writes_every_request_of_a_run_with_concurrent_requests_on_rows_that_nest() throws Exception {
        Path sim = tmp.resolve("sim");
        assertThat(CliRun.simulate(sim, "write", 1, 12, "drop=0.2").code()).isIn(0, 1);
        Path file = tmp.resolve("run.json");
        CliRun.Outcome o = CliRun.run("export", "--chrome-trace", file.toString(), sim.toString());
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out()).contains("export: wrote " + file).contains("request leg(s) on 2 node(s)");
        List<Map<String, Object>> events = valid(file);
        Map<Long, String> processes = names(events, "process_name", false);
        assertThat(processes).hasSize(2);
        // every request's first phase on each node: 12 on each (admitted), on rows of the scheduler
        assertThat(events.stream().filter(e -> "ADMITTED".equals(e.get("name")) && "phase".equals(e.get("cat"))))
                .hasSize(24);
        assertThat(events.stream().filter(e -> "s".equals(e.get("ph")))).isNotEmpty();
        // the 20% of frames dropped: sent, never received, and their hangs found
        assertThat(o.out()).containsPattern("[1-9]\\d* frame\\(s\\) never received, [1-9]\\d* finding\\(s\\)");

        CliRun.Outcome both = CliRun.run("export", "--chrome-trace", file.toString(), "--otlp", "http://127.0.0.1:1", sim.toString());
        assertThat(both.code()).isEqualTo(2);
        assertThat(both.err()).contains("give one of --otlp URL");
        CliRun.Outcome tooMany = CliRun.run("export", "--chrome-trace", file.toString(), "--max-lines", "10", sim.toString());
        assertThat(tooMany.code()).isEqualTo(1);
        assertThat(tooMany.err()).contains("more than 10 lines");
    }

    // ------------------------------------------------------------------ the format

    /** Parses the file and checks it against the Trace Event Format; returns its events. */
    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> valid(Path file) throws Exception {
        Object parsed = Json.parse(Files.readString(file));
        assertThat(parsed).isInstanceOf(Map.class);
        Map<String, Object> root = (Map<String, Object>) parsed;
        assertThat(root).containsKey("traceEvents");
        assertThat(root.get("displayTimeUnit")).isIn("ms", "ns");
        List<Map<String, Object>> events = new ArrayList<>();
        for (Object o : (List<Object>) root.get("traceEvents")) {
            events.add((Map<String, Object>) o);
        }
        assertThat(events).isNotEmpty();
        Map<String, Double> lastTs = new HashMap<>();
        Map<String, List<long[]>> slices = new HashMap<>();
        Set<Long> namedPids = names(events, "process_name", false).keySet();
        Set<String> namedThreads = new HashSet<>();
        for (Map<String, Object> e : events) {
            if ("thread_name".equals(e.get("name")) && "M".equals(e.get("ph"))) {
                namedThreads.add(num(e.get("pid")) + "/" + num(e.get("tid")));
            }
        }
        Map<Object, Integer> flowStarts = new HashMap<>();
        Map<Object, Integer> flowEnds = new HashMap<>();
        for (Map<String, Object> e : events) {
            String ph = (String) e.get("ph");
            assertThat(ph).as("ph of %s", e).isIn("X", "i", "s", "f", "M");
            assertThat(e.get("name")).as("name of %s", e).isInstanceOf(String.class);
            assertThat(e.get("pid")).as("pid of %s", e).isInstanceOf(Long.class);
            assertThat(e.get("tid")).as("tid of %s", e).isInstanceOf(Long.class);
            if (ph.equals("M")) {
                assertThat(e.get("args")).isInstanceOf(Map.class);
                continue;
            }
            assertThat(e.get("cat")).as("cat of %s", e).isInstanceOf(String.class);
            assertThat(e.get("ts")).as("ts of %s", e).isInstanceOf(Double.class);
            double ts = (Double) e.get("ts");
            assertThat(ts).isGreaterThanOrEqualTo(0.0);
            String track = num(e.get("pid")) + "/" + num(e.get("tid"));
            assertThat(namedPids).as("process of %s is named", e).contains(num(e.get("pid")));
            assertThat(namedThreads).as("thread of %s is named", e).contains(track);
            assertThat(ts).as("ts monotonic on %s at %s", track, e).isGreaterThanOrEqualTo(lastTs.getOrDefault(track, 0.0));
            lastTs.put(track, ts);
            switch (ph) {
                case "X" -> {
                    assertThat(e.get("dur")).isInstanceOf(Double.class);
                    double dur = (Double) e.get("dur");
                    assertThat(dur).isGreaterThanOrEqualTo(0.0);
                    // complete events on one thread nest: each starts after, and ends within or after, the
                    // others (compared in whole nanoseconds, as a reader rounds the microseconds it parses)
                    long from = Math.round(ts * 1000);
                    long to = from + Math.round(dur * 1000);
                    for (long[] other : slices.getOrDefault(track, List.of())) {
                        boolean inside = from >= other[0] && to <= other[1];
                        boolean after = from >= other[1];
                        assertThat(inside || after).as("%s nests on %s", e, track).isTrue();
                    }
                    slices.computeIfAbsent(track, k -> new ArrayList<>()).add(new long[] {from, to});
                }
                case "i" -> assertThat(e.get("s")).isIn("t", "p", "g");
                case "s", "f" -> {
                    assertThat(e.get("id")).isNotNull();
                    (ph.equals("s") ? flowStarts : flowEnds).merge(e.get("id"), 1, Integer::sum);
                    if (ph.equals("f")) {
                        assertThat(e.get("bp")).isEqualTo("e");
                    }
                    // bound to a slice open on its thread at its time
                    assertThat(slices.getOrDefault(track, List.of()))
                            .as("a slice encloses the flow event %s", e)
                            .anyMatch(sl -> sl[0] <= Math.round(ts * 1000) && Math.round(ts * 1000) <= sl[1]);
                }
                default -> {}
            }
        }
        assertThat(flowStarts).as("every flow start has one finish").isEqualTo(flowEnds);
        assertThat(flowStarts.values()).allMatch(n -> n == 1);
        return events;
    }

    static Map<Long, String> names(List<Map<String, Object>> events, String meta, boolean threads) {
        Map<Long, String> out = new HashMap<>();
        for (Map<String, Object> e : events) {
            if ("M".equals(e.get("ph")) && meta.equals(e.get("name"))) {
                out.put(num(threads ? e.get("tid") : e.get("pid")), (String) args(e).get("name"));
            }
        }
        return out;
    }

    static Map<Long, String> threadsOf(List<Map<String, Object>> events, long pid) {
        Map<Long, String> out = new HashMap<>();
        for (Map<String, Object> e : events) {
            if ("M".equals(e.get("ph")) && "thread_name".equals(e.get("name")) && num(e.get("pid")) == pid) {
                out.put(num(e.get("tid")), (String) args(e).get("name"));
            }
        }
        return out;
    }

    static long pidOf(Map<Long, String> processes, String node) {
        return processes.entrySet().stream().filter(p -> p.getValue().startsWith(node + " ")).findFirst().orElseThrow().getKey();
    }

    static Map<String, Object> one(List<Map<String, Object>> events, java.util.function.Predicate<Map<String, Object>> p) {
        List<Map<String, Object>> hits = events.stream().filter(p).toList();
        assertThat(hits).hasSize(1);
        return hits.get(0);
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> args(Map<String, Object> e) {
        return (Map<String, Object>) e.get("args");
    }

    static long num(Object o) {
        return ((Number) o).longValue();
    }
}
