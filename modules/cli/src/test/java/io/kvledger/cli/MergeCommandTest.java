package io.kvledger.cli;

import static io.kvledger.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.journal.json.Json;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvledger merge}: node journals recorded apart (here: copied to two "machines") become one
 * directory in which hangs, inspect and dump see both legs of every transfer.
 */
class MergeCommandTest {

    @TempDir
    static Path tmp;
    static Path prefillHost;
    static Path decodeHost;

    @BeforeAll
    static void recordOnTwoMachines() {
        Path sim = tmp.resolve("sim");
        assertThat(CliRun.simulate(sim, "read", 2, 1, "drop=0.5").code()).isZero();
        prefillHost = tmp.resolve("prefill-host/journal");
        decodeHost = tmp.resolve("decode-host/journal");
        CliRun.copyTree(sim.resolve("P0"), prefillHost);
        CliRun.copyTree(sim.resolve("D0"), decodeHost);
    }

    @Test
    void merged_output_holds_each_node_and_a_transfer_index() throws IOException {
        Path out = tmp.resolve("merged-a");
        CliRun.Outcome o = run("merge", prefillHost.toString(), decodeHost.toString(), "--out", out.toString());
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out())
                .contains("merged 2 journals into " + out)
                .containsPattern("(?m)^  P0   kv_producer READ +\\d+ entries")
                .containsPattern("(?m)^  D0   kv_consumer READ +\\d+ entries")
                .contains("transfers: 1, 1 seen by both a prefill and a decode node");
        assertThat(JournalDirs.isJournal(out.resolve("P0"))).isTrue();
        assertThat(JournalDirs.isJournal(out.resolve("D0"))).isTrue();
        List<String> index = Files.readAllLines(out.resolve(MergeCommand.INDEX));
        assertThat(index).hasSize(2);
        Map<?, ?> head = (Map<?, ?>) Json.parse(index.get(0));
        assertThat(head.get("kind")).isEqualTo("merge");
        assertThat(head.get("transfers")).isEqualTo(1L);
        Map<?, ?> t = (Map<?, ?>) Json.parse(index.get(1));
        assertThat(t.get("kind")).isEqualTo("transfer");
        assertThat((String) t.get("transfer_id")).startsWith("tx-");
        @SuppressWarnings("unchecked")
        List<Object> legs = (List<Object>) t.get("legs");
        assertThat(legs).extracting(l -> (Object) ((Map<?, ?>) l).get("node")).containsExactly("P0", "D0");
        assertThat(legs).allSatisfy(l -> assertThat((String) ((Map<?, ?>) l).get("request_id")).startsWith("cmpl-"));
        // the copies hold the same entries as the originals
        assertThat(run("journal", "export", out.resolve("P0").toString()).lines())
                .hasSameSizeAs(run("journal", "export", prefillHost.toString()).lines());
        assertThat(run("verify", out.toString()).code()).isZero();
    }

    @Test
    void hangs_inspect_and_dump_see_both_legs_in_the_merged_output() {
        Path out = tmp.resolve("merged-b");
        assertThat(run("merge", prefillHost.toString(), decodeHost.toString(), "--out", out.toString()).code()).isZero();
        CliRun.Outcome hangs = run("hangs", out.toString());
        assertThat(hangs.code()).isEqualTo(1);
        // the diagnosis needs the decode leg: it names the release D0 sent
        assertThat(hangs.out()).contains("reaped-without-ack").contains("class 7").contains("D0 sent release");
        CliRun.Outcome alone = run("hangs", prefillHost.toString());
        assertThat(alone.out()).doesNotContain("D0 sent release");
        String tid = (String) ((Map<?, ?>) Json.parse(readIndex(out).get(1))).get("transfer_id");
        CliRun.Outcome inspect = run("inspect", out.toString(), "--transfer", tid);
        assertThat(inspect.code()).as(inspect.err()).isZero();
        assertThat(inspect.out()).containsPattern("(?m)^t\\+\\S+ s +P0 ").containsPattern("(?m)^t\\+\\S+ s +D0 ");
        CliRun.Outcome dump = run("dump", out.toString(), "--type", "request_admitted");
        assertThat(dump.lines()).extracting(l -> l.substring(0, 2)).containsExactly("P0", "D0");
    }

    @Test
    void json_summary_lists_transfers_seen_by_one_side_only() {
        Path out = tmp.resolve("merged-c");
        CliRun.Outcome o = run("merge", prefillHost.toString(), "--out", out.toString(), "--json");
        assertThat(o.code()).isZero();
        Map<?, ?> m = (Map<?, ?>) Json.parse(o.out().strip());
        assertThat(m.get("one_side")).isEqualTo(1L);
        assertThat((List<?>) m.get("one_side_only")).hasSize(1);
    }

    @Test
    void usage_errors_exit_2_and_write_nothing() throws IOException {
        CliRun.Outcome twice = run("merge", prefillHost.toString(), tmp.resolve("sim").toString(), "--out", tmp.resolve("m1").toString());
        assertThat(twice.code()).isEqualTo(2);
        assertThat(twice.err()).contains("node id P0 is used by both").contains("--node NEW");
        assertThat(tmp.resolve("m1")).doesNotExist();
        Files.createDirectories(tmp.resolve("busy"));
        Files.writeString(tmp.resolve("busy/x"), "x");
        assertThat(run("merge", prefillHost.toString(), "--out", tmp.resolve("busy").toString()).err()).contains("is not empty");
        assertThat(run("merge", prefillHost.toString()).err()).contains("Missing required option: '--out=DIR'");
        assertThat(run("merge", tmp.resolve("nothing").toString(), "--out", tmp.resolve("m2").toString()).code()).isEqualTo(2);
        assertThat(run("merge", prefillHost.toString(), "--out", prefillHost.resolve("inside").toString()).err())
                .contains("overlaps the journal");
    }

    private static List<String> readIndex(Path out) {
        try {
            return Files.readAllLines(out.resolve(MergeCommand.INDEX));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
