package io.kvledger.core.config;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class UpstreamVersionsTest {

    static final String MORIIO = "vllm.distributed.kv_transfer.kv_connector.v1.moriio.moriio_connector.MoRIIOConnector";

    @Test
    void a_commit_or_a_dev_version_naming_it_picks_its_row() {
        assertThat(UpstreamVersions.profileFor(null, "239b5ff30", MORIIO)).isEqualTo("vllm-239b5ff30");
        assertThat(UpstreamVersions.profileFor(null, "239b5ff30cf46f9196149c888a20be2096fdff03", null)).isEqualTo("vllm-239b5ff30");
        assertThat(UpstreamVersions.profileFor("0.0.0.dev0+g239b5ff30", null, MORIIO)).isEqualTo("vllm-239b5ff30");
        assertThat(UpstreamVersions.profileFor("0.11.1.dev12+g3c201bf24.d20260901", null, MORIIO)).isEqualTo("newest");
        // the commit wins over the version's local part
        assertThat(UpstreamVersions.profileFor("0.0.0.dev0+g239b5ff30", "3c201bf2", MORIIO)).isEqualTo("newest");
    }

    @Test
    void an_unknown_install_or_another_connector_has_no_row() {
        assertThat(UpstreamVersions.profileFor("0.9.0", null, MORIIO)).isNull();
        assertThat(UpstreamVersions.profileFor(null, "deadbeef", MORIIO)).isNull();
        assertThat(UpstreamVersions.profileFor(null, "239b5f", MORIIO)).as("six digits are too few").isNull();
        assertThat(UpstreamVersions.profileFor(null, "239b5ff30", "vllm.distributed.kv_transfer.kv_connector.v1.nixl.NixlConnector")).isNull();
        assertThat(UpstreamVersions.commitOf("0.10.2")).isNull();
        assertThat(UpstreamVersions.commitOf("0.10.2+cu128")).isNull();
    }

    @Test
    void every_row_names_a_preset() {
        for (UpstreamVersions.Row row : UpstreamVersions.ROWS) {
            assertThat(Behaviour.preset(row.profile())).as(row.toString()).isNotNull();
        }
    }
}
