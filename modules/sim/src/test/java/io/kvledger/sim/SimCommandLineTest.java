package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.moriio.Checked;
import java.util.List;
import org.junit.jupiter.api.Test;

class SimCommandLineTest {

    private static SimCommandLine line(int requests, String mode, String profile, boolean multiPod, List<String> sets,
                                       Double deferTimeoutS) {
        return new SimCommandLine(7, requests, FaultSpec.NONE, mode, profile, 1, 2, 1, 1, 1, 1, multiPod, false, sets, deferTimeoutS,
                null, null, null);
    }

    @Test
    void accepted_options_become_the_simulators_and_the_rerun_line_names_what_differs_from_the_defaults() {
        SimCommandLine l = line(30, "READ", "seed", false, List.of(Switch.values()[0].key() + "=true"), 2.5);
        Checked<SimOptions> c = l.options();
        assertThat(c.isOk()).as(String.valueOf(c.error())).isTrue();
        SimOptions o = c.value();
        assertThat(o.mode()).isEqualTo(TransferMode.READ);
        assertThat(o.requests()).isEqualTo(30);
        assertThat(o.deferTimeoutNs()).isEqualTo(2_500_000_000L);
        assertThat(l.rerun()).isEqualTo("kvledger simulate --seed 7 --requests 30 --faults none --mode read --profile seed"
                + " --prefill 1 --decode 2 --set " + Switch.values()[0].key() + "=true --defer-timeout-s 2.5");
    }

    @Test
    void each_refused_option_is_named_in_the_usage_error() {
        assertThat(line(0, "write", "newest", false, List.of(), null).options().error())
                .isEqualTo("--requests must be at least 1, got 0");
        assertThat(line(1, "both", "newest", false, List.of(), null).options().error())
                .isEqualTo("--mode must be read or write, got 'both'");
        assertThat(line(1, "write", "nope", false, List.of(), null).options().error())
                .startsWith("--profile must be one of ").endsWith(", got 'nope'");
        assertThat(line(1, "read", "newest", true, List.of(), null).options().isOk())
                .as("a multi-pod READ deployment: each prefill DP rank a pod of its own").isTrue();
        assertThat(line(1, "write", "newest", false, List.of("no-such-switch=true"), null).options().error())
                .isEqualTo("--set takes SWITCH=true|false with a reducer switch's key, got 'no-such-switch=true'");
        assertThat(line(1, "write", "newest", false, List.of(Switch.values()[0].key() + "=yes"), null).options().error())
                .isEqualTo("--set " + Switch.values()[0].key() + "=yes: the value must be true or false");
        assertThat(line(1, "write", "newest", false, List.of(), -1.0).options().error())
                .isEqualTo("--defer-timeout-s must be positive, got -1.0");
    }
}
