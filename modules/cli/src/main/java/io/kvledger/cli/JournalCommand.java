package io.kvledger.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger journal export|import}: journals to and from JSON lines (the format of
 * {@code io.kvledger.journal.JsonLines}, documented in journal/FORMAT.md).
 */
@Command(name = "journal", mixinStandardHelpOptions = true,
        description = "Converts journals to and from JSON lines (one JSON object per entry; see journal/FORMAT.md).",
        subcommands = {JournalExportCommand.class, JournalImportCommand.class})
final class JournalCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    /** Without a subcommand there is nothing to do: a usage error. */
    @Override
    public Integer call() {
        throw new ParameterException(spec.commandLine(), "Missing subcommand: choose export or import");
    }
}
