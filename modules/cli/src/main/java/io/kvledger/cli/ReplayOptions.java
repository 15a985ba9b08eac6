package io.kvledger.cli;

import io.kvledger.ledger.replay.ConfigOverrides;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * {@code --profile} and {@code --set}, shared by the commands that re-run the reducer
 * ({@code replay}, {@code hangs}, {@code stats}): replay under another behaviour preset, switch or
 * configuration value instead of what each journal header recorded.
 */
final class ReplayOptions {

    @Option(names = "--profile", paramLabel = "NAME",
            description = "replay every node with this behaviour preset (vllm-239b5ff30, seed or newest) instead of the one its "
                    + "journal header recorded")
    String profile;

    @Option(names = "--set", paramLabel = "KEY=VALUE",
            description = {"override one switch (true/false, e.g. map-first-owner-wins=true) or configuration value "
                    + "(defer_timeout, transfer_timeout, recv_abort_timeout, unmapped_ack_ttl in seconds; "
                    + "unmapped_ack_cap); repeatable, applied after --profile"})
    List<String> sets = new ArrayList<>();

    /** The overrides, or a usage error listing the valid keys. */
    ConfigOverrides overrides(CommandSpec spec) {
        try {
            return ConfigOverrides.parse(profile, sets);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }
}
