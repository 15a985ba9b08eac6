package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.Switch;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A vLLM bridge recording names its vLLM and no profile: the header takes the preset kvledger's
 * table of upstream versions gives that vLLM; an explicit profile wins; an unknown vLLM is newest
 * with a warning; a journal written before the vllm-239b5ff30 switches existed keeps its behaviour.
 */
class UpstreamProfileHeaderTest {

    static final String MORIIO = "vllm.distributed.kv_transfer.kv_connector.v1.moriio.moriio_connector.MoRIIOConnector";

    @TempDir
    Path tmp;

    static Map<String, Object> header(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("node_id", "P0-10.0.0.7-6301");
        m.put("kv_role", "kv_producer");
        m.put("transfer_mode", "WRITE");
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    @Test
    void the_recorded_vllm_picks_the_profile_unless_the_header_names_one() {
        assertThat(JournalHeader.fromMap(header("vllm_version", "0.0.0.dev0+g239b5ff30", "vllm_commit", "239b5ff30",
                "inner_connector", MORIIO), false, null).profile()).isEqualTo("vllm-239b5ff30");
        assertThat(JournalHeader.fromMap(header("vllm_version", "0.11.1.dev3+g239b5ff30"), true, null).profile())
                .isEqualTo("vllm-239b5ff30");
        assertThat(JournalHeader.fromMap(header("vllm_commit", "239b5ff30", "profile", "seed"), true, null).profile())
                .isEqualTo("seed");
        assertThat(JournalHeader.fromMap(header(), true, null).profile()).isEqualTo("newest");
        List<String> warnings = new ArrayList<>();
        assertThat(JournalHeader.fromMap(header("vllm_version", "0.9.0", "inner_connector", MORIIO), false, warnings)
                .profile()).isEqualTo("newest");
        assertThat(warnings).singleElement().asString().contains("no behaviour profile for vLLM 0.9.0").contains("--profile");
    }

    @Test
    void a_recording_imports_with_its_vllms_profile_written_into_the_journal() throws Exception {
        Path file = tmp.resolve("rec.jsonl");
        Files.writeString(file, "{\"kind\":\"header\",\"type\":\"header\",\"node_id\":\"D0-10.0.1.1-6301\",\"kv_role\":\"kv_consumer\","
                + "\"transfer_mode\":\"WRITE\",\"vllm_version\":\"0.0.0.dev0+g239b5ff30\",\"vllm_commit\":\"239b5ff30\","
                + "\"inner_connector\":\"" + MORIIO + "\"}\n{\"type\":\"tick\",\"at_ns\":9}\n", StandardCharsets.UTF_8);
        Path dir = tmp.resolve("D0");
        JsonLines.importFile(file, dir, null);
        try (JournalReader r = JournalReader.open(dir)) {
            assertThat(r.header().profile()).isEqualTo("vllm-239b5ff30");
            assertThat(r.header().config().behaviour()).isEqualTo(Behaviour.vllm239b5ff30());
            assertThat(r.header().toMap().get("profile")).isEqualTo("vllm-239b5ff30");
        }
    }

    @Test
    void a_header_listing_the_switches_of_before_keeps_the_behaviour_of_before() {
        // a newest journal written before section E: its switches list names none of them
        List<String> keys = new ArrayList<>();
        for (Switch s : Behaviour.newest().enabled()) {
            keys.add(s.key());
        }
        JournalHeader h = JournalHeader.fromMap(header("profile", "newest", "switches", keys), true, null);
        assertThat(h.config().behaviour()).isEqualTo(Behaviour.newest());
        assertThat(h.profile()).isEqualTo("newest");
    }
}
