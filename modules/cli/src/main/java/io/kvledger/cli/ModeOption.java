package io.kvledger.cli;

import io.kvledger.core.config.TransferMode;
import java.util.Locale;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

/** The {@code --mode read|write} option shared by the commands that start or simulate nodes. */
final class ModeOption {

    private ModeOption() {}

    /** {@code read} or {@code write} (any case); anything else is a usage error naming the value. */
    static TransferMode parse(CommandSpec spec, String value) {
        return switch (value.toLowerCase(Locale.ROOT)) {
            case "read" -> TransferMode.READ;
            case "write" -> TransferMode.WRITE;
            default -> throw new ParameterException(spec.commandLine(), "--mode takes read or write, got " + value);
        };
    }
}
