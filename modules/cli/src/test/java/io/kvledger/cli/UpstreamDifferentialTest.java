package io.kvledger.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvledger.journal.json.Json;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The upstream differential, a modest run (benchmarks/upstream_differential.py; the full run is
 * benchmarks/upstream-differential.sh): each upstream version's own MoRIIO connector (vLLM 239b5ff30
 * and 3c201bf2), loaded at run time from ../shared/upstream (never part of this repository; the
 * helper modules 3c201bf2's tree lacks are the loader's stubs) and driven through vLLM's factory and
 * the bridge's recorder in vLLM's call order, records upstream's unit-test cases (for 3c201bf2 also
 * its routing test's cases, KV-cache groups with sliding-window and mamba groups, grouped block ids
 * and multi-pod routing params) and generated scenarios; {@code journal import} and
 * {@code replay --verify} (no {@code --profile}: each recording's header names its vLLM) must agree
 * with every hook reply and send the same notify frames, in order. Skips only when the upstream
 * sources or Debian's python3 with torch are absent.
 */
class UpstreamDifferentialTest {

    static final Path PYTHON = Path.of("/usr/bin/python3");
    static final Path REPO = Path.of(System.getProperty("kvledger.repo", "../..")).toAbsolutePath().normalize();
    static final Path UPSTREAMS = REPO.resolveSibling("shared").resolve("upstream");
    static final Path UPSTREAM = UPSTREAMS.resolve("vllm-239b5ff30");
    static final Path NEWEST = UPSTREAMS.resolve("vllm-3c201bf2");
    static final int SCENARIOS = 40;

    @TempDir
    Path tmp;

    @BeforeAll
    static void prerequisites() throws Exception {
        assumeTrue(Files.isDirectory(UPSTREAM.resolve("vllm")), "skipped: no upstream vLLM sources at " + UPSTREAM
                + " (../shared/upstream beside the checkout)");
        assumeTrue(Files.isExecutable(PYTHON), "skipped: " + PYTHON + " is missing (./kvledger test installs Debian's python3)");
        Process p = new ProcessBuilder(PYTHON.toString(), "-c", "import torch, zmq, msgpack").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assumeTrue(p.waitFor(120, TimeUnit.SECONDS) && p.exitValue() == 0,
                "skipped: python3-torch, python3-zmq and python3-msgpack are needed (the launcher installs them): " + out);
    }

    @Test
    void vllm_239b5ff30_agrees_with_kvledger_call_by_call() throws Exception {
        agreesCallByCall(UPSTREAM, "vllm-239b5ff30", SCENARIOS + 3, 1000, 20);
    }

    /** 3c201bf2 (SupportsHMA): the three unit-test cases, 40 generated scenarios and the routing test's six. */
    @Test
    void vllm_3c201bf2_agrees_with_newest_call_by_call() throws Exception {
        assumeTrue(Files.isDirectory(NEWEST.resolve("vllm")), "skipped: no upstream vLLM sources at " + NEWEST);
        agreesCallByCall(NEWEST, "newest", SCENARIOS + 3 + 6, 1000, 40);
    }

    private void agreesCallByCall(Path upstreamTree, String profile, int scenarios, int minCalls, int minFrames)
            throws Exception {
        Path out = tmp.resolve("run");
        ProcessBuilder pb = new ProcessBuilder(PYTHON.toString(), REPO.resolve("benchmarks/upstream_differential.py").toString(),
                "--upstream", upstreamTree.toString(), "--scenarios", Integer.toString(SCENARIOS), "--seed", "1",
                "--out", out.toString(), "--only-record").redirectErrorStream(true);
        pb.environment().put("PYTHONHASHSEED", "0");
        pb.environment().put("PYTHONDONTWRITEBYTECODE", "1");
        Process p = pb.start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), "the recording did not finish: " + log);
        assertEquals(0, p.exitValue(), log);

        Path journals = tmp.resolve("journals");
        CliRun.Outcome imp = CliRun.run("journal", "import", out.resolve("recordings").toString(), journals.toString());
        assertEquals(0, imp.code(), imp.out() + imp.err());
        List<String> names;
        try (Stream<Path> s = Files.list(journals)) {
            names = s.filter(Files::isDirectory).map(d -> d.getFileName().toString()).sorted().toList();
        }
        assertEquals(scenarios, names.size(), "one journal per scenario (the unit-test cases and the generated ones)");
        List<String> args = new ArrayList<>(List.of("replay", "--verify", "--effects", "--json", "--full-ids"));
        names.forEach(n -> args.add(journals.resolve(n).toString()));
        CliRun.Outcome verify = CliRun.run(args.toArray(String[]::new));
        List<String> lines = verify.lines();
        Map<?, ?> summary = (Map<?, ?>) Json.parse(lines.get(lines.size() - 1));

        long compared = 0;
        List<String> problems = new ArrayList<>();
        for (Object o : (List<?>) summary.get("nodes")) {
            Map<?, ?> node = (Map<?, ?>) o;
            assertEquals(profile, node.get("profile"), "the profile the recording's header names: " + node.get("node"));
            Map<?, ?> v = (Map<?, ?>) node.get("verify");
            Map<?, ?> byInput = (Map<?, ?>) v.get("by_input");
            for (Object t : byInput.values()) {
                compared += ((Number) ((Map<?, ?>) t).get("compared")).longValue();
            }
            List<?> divergences = (List<?>) v.get("divergences");
            if (divergences != null && !divergences.isEmpty()) {
                problems.add(node.get("node") + ": " + divergences.get(0));
            }
        }
        assertTrue(compared > minCalls, "hook calls compared: " + compared);

        // the notify frames the connector sent, in order, against kvledger's sends
        Map<String, List<Object>> kv = new LinkedHashMap<>();
        for (String line : lines.subList(0, lines.size() - 1)) {
            Map<?, ?> e = (Map<?, ?>) Json.parse(line);
            Map<?, ?> f = (Map<?, ?>) e.get("fields");
            if ("send_remote_blocks".equals(e.get("type"))) {
                kv.computeIfAbsent((String) e.get("node"), k -> new ArrayList<>()).add(List.of("remote_blocks", f.get("host"),
                        f.get("port"), f.get("req_id"), String.valueOf(f.get("transfer_id")), f.get("block_notify_list"), f.get("decode_rank")));
            } else if ("send_release".equals(e.get("type")) && "SCHEDULER".equals(f.get("sender"))) {
                kv.computeIfAbsent((String) e.get("node"), k -> new ArrayList<>()).add(List.of("release", f.get("host"),
                        f.get("port"), String.valueOf(f.get("transfer_id"))));
            }
        }
        int frames = 0;
        for (String name : names) {
            List<Object> upstream = new ArrayList<>();
            for (Object o : (List<?>) Json.parse(Files.readString(out.resolve("frames").resolve(name + ".json")))) {
                Map<?, ?> f = (Map<?, ?>) o;
                upstream.add("remote_blocks".equals(f.get("type"))
                        ? List.of("remote_blocks", f.get("host"), f.get("port"), f.get("req_id"), String.valueOf(f.get("transfer_id")),
                                f.get("block_notify_list"), f.get("decode_rank"))
                        : List.of(String.valueOf(f.get("type")), f.get("host"), f.get("port"), String.valueOf(f.get("transfer_id"))));
            }
            frames += upstream.size();
            List<Object> ours = kv.getOrDefault(name, List.of());
            if (!upstream.equals(ours)) {
                problems.add(name + " frames: upstream " + upstream + ", kvledger " + ours);
            }
        }
        assertTrue(frames > minFrames, "notify frames compared: " + frames);
        assertTrue(problems.isEmpty(), () -> problems.size() + " scenario(s) diverge, first: " + problems.get(0) + "\n" + log);
    }
}
