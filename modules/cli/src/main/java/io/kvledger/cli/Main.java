package io.kvledger.cli;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The {@code kvledger} command: a table of named subcommands ({@link #COMMANDS}). Exit codes:
 * 0 when the command succeeded, 2 for a usage error (the message and the command's usage go to
 * standard error), 1 when a command failed.
 */
@Command(name = "kvledger", mixinStandardHelpOptions = true, version = "kvledger " + Main.VERSION,
        description = "Event-sourced control plane for MoRIIO KV-cache transfer: simulate, replay and inspect "
                + "prefill/decode request lifecycles.",
        subcommands = CommandLine.HelpCommand.class)
public final class Main implements Callable<Integer> {

    static final String VERSION = "0.1.0-SNAPSHOT";

    /** One entry of the command table. */
    record NamedCommand(String name, Supplier<Object> factory) {}

    /** Every subcommand, in the order {@code kvledger --help} lists them. */
    static final List<NamedCommand> COMMANDS = List.of(
            new NamedCommand("demo", DemoCommand::new),
            new NamedCommand("replay", ReplayCommand::new),
            new NamedCommand("inspect", InspectCommand::new),
            new NamedCommand("hangs", HangsCommand::new),
            new NamedCommand("stats", StatsCommand::new),
            new NamedCommand("dump", DumpCommand::new),
            new NamedCommand("tail", TailCommand::new),
            new NamedCommand("verify", VerifyCommand::new),
            new NamedCommand("merge", MergeCommand::new),
            new NamedCommand("simulate", SimulateCommand::new),
            new NamedCommand("journal", JournalCommand::new),
            new NamedCommand("listen", ListenCommand::new),
            new NamedCommand("node", NodeCommand::new),
            new NamedCommand("cluster", ClusterCommand::new));

    @Spec
    CommandSpec spec;

    /** Without a subcommand there is nothing to do: a usage error. */
    @Override
    public Integer call() {
        List<String> names = new ArrayList<>();
        for (NamedCommand c : COMMANDS) {
            names.add(c.name());
        }
        throw new ParameterException(spec.commandLine(), "Missing command: choose one of " + String.join(", ", names));
    }

    /** The command line with every command of the table registered, writing to the given streams. */
    public static CommandLine commandLine(PrintWriter out, PrintWriter err) {
        CommandLine cl = new CommandLine(new Main());
        for (NamedCommand c : COMMANDS) {
            cl.addSubcommand(c.name(), c.factory().get());
        }
        cl.setOut(out);
        cl.setErr(err);
        return cl;
    }

    /** Runs one command line and returns its exit code. */
    public static int run(PrintWriter out, PrintWriter err, String... args) {
        int code = commandLine(out, err).execute(args);
        out.flush();
        err.flush();
        return code;
    }

    public static void main(String[] args) {
        PrintWriter out = new PrintWriter(new java.io.OutputStreamWriter(System.out, StandardCharsets.UTF_8), true);
        PrintWriter err = new PrintWriter(new java.io.OutputStreamWriter(System.err, StandardCharsets.UTF_8), true);
        System.exit(run(out, err, args));
    }
}
