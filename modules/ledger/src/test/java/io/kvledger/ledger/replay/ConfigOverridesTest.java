package io.kvledger.ledger.replay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import java.util.List;
import org.junit.jupiter.api.Test;

/** --profile and --set: parsing, application on top of a journal's configuration, description. */
class ConfigOverridesTest {

    private final NodeConfig recorded = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).build();

    @Test
    void no_overrides_keep_the_journal_configuration() {
        ConfigOverrides o = ConfigOverrides.parse(null, List.of());
        assertThat(o.isEmpty()).isTrue();
        assertThat(o.apply(recorded)).isSameAs(recorded);
        assertThat(ConfigOverrides.describe(recorded, recorded))
                .isEqualTo("profile newest, defer_timeout 60 s, transfer_timeout 30 s, recv_abort_timeout 120 s");
    }

    @Test
    void the_profile_applies_first_then_switches_and_values() {
        ConfigOverrides o = ConfigOverrides.parse("seed", List.of("defer_timeout=300", "map-first-owner-wins=true",
                "transfer_timeout=0.5", "recv_abort_timeout=10", "unmapped_ack_cap=7"));
        NodeConfig c = o.apply(recorded);
        assertThat(c.behaviour()).isEqualTo(Behaviour.seed().with(Switch.MAP_FIRST_OWNER_WINS, true));
        assertThat(c.deferTimeoutNs()).isEqualTo(300 * NodeConfig.NS_PER_S);
        assertThat(c.transferTimeoutNs()).isEqualTo(NodeConfig.NS_PER_S / 2);
        assertThat(c.recvAbortTimeoutNs()).isEqualTo(10 * NodeConfig.NS_PER_S);
        assertThat(c.unmappedAckCap()).isEqualTo(7);
        assertThat(c.role()).isEqualTo(recorded.role());
        assertThat(c.hostIp()).isEqualTo(recorded.hostIp());
        assertThat(ConfigOverrides.describe(recorded, c))
                .startsWith("profile seed+custom (journal: newest), switches map-first-owner-wins=true, ")
                .contains("defer_timeout 300 s (journal: 60 s)")
                .contains("transfer_timeout 0.5 s (journal: 30 s)")
                .contains("unmapped_ack_cap 7 (journal: 1024)");
    }

    @Test
    void a_switch_can_be_turned_off_and_the_last_value_of_a_key_wins() {
        NodeConfig c = ConfigOverrides.parse(null, List.of("read-batch-verdict=on", "read-batch-verdict=off",
                "defer_timeout=5", "defer_timeout=7")).apply(recorded);
        assertThat(c.on(Switch.READ_BATCH_VERDICT)).isFalse();
        assertThat(c.deferTimeoutNs()).isEqualTo(7 * NodeConfig.NS_PER_S);
        assertThat(c.behaviour().profile()).isEqualTo("newest+custom");
    }

    @Test
    void unknown_keys_list_every_valid_key() {
        assertThatThrownBy(() -> ConfigOverrides.parse(null, List.of("defer-timeout=3")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown --set key 'defer-timeout'")
                .hasMessageContaining("defer_timeout (seconds)")
                .hasMessageContaining("recv_abort_timeout (seconds)")
                .hasMessageContaining("map-first-owner-wins");
        for (Switch s : Switch.values()) {
            assertThat(ConfigOverrides.validKeys()).contains(s.key());
        }
    }

    @Test
    void bad_values_and_profiles_are_refused_with_the_reason() {
        assertThatThrownBy(() -> ConfigOverrides.parse(null, List.of("defer_timeout=abc")))
                .hasMessageContaining("defer_timeout takes a positive number of seconds, got 'abc'");
        assertThatThrownBy(() -> ConfigOverrides.parse(null, List.of("defer_timeout=-1")))
                .hasMessageContaining("positive number");
        assertThatThrownBy(() -> ConfigOverrides.parse(null, List.of("map-first-owner-wins=maybe")))
                .hasMessageContaining("switch map-first-owner-wins takes true or false, got 'maybe'");
        assertThatThrownBy(() -> ConfigOverrides.parse(null, List.of("novalue")))
                .hasMessageContaining("--set takes KEY=VALUE, got 'novalue'");
        assertThatThrownBy(() -> ConfigOverrides.parse("oldest", List.of()))
                .hasMessageContaining("unknown profile 'oldest': use one of vllm-239b5ff30, seed, newest");
        assertThatThrownBy(() -> ConfigOverrides.parse(null, List.of("unmapped_ack_cap=1.5")))
                .hasMessageContaining("non-negative whole number");
    }
}
