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
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The {@code kvledger} command: a table of named subcommands ({@link #COMMANDS}). Exit codes:
 * 0 when the command succeeded, 2 for a usage error or a journal, file or socket the command
 * cannot use, 1 when a command failed otherwise.
 *
 * <p>Errors are one line on standard error naming the command ({@code kvledger listen: ...}); a
 * usage error adds a hint where the help is ({@code see 'kvledger help listen'}) instead of
 * printing the whole help. No stack trace is printed unless {@code --log-level debug} is given,
 * or {@code KVLEDGER_DEBUG} is set in the environment (or {@code -Dkvledger.debug=true}).
 */
@Command(name = "kvledger", mixinStandardHelpOptions = true, version = "kvledger " + Main.VERSION,
        description = "Event-sourced control plane for MoRIIO KV-cache transfer: simulate, replay and inspect "
                + "prefill/decode request lifecycles.",
        subcommands = HelpCommand.class,
        footer = {"", "The ./kvledger launcher adds the command test: see 'kvledger help test'.",
            "Shell completion: source <(kvledger completion bash)   (or zsh)"})
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
            new NamedCommand("serve", ServeCommand::new),
            new NamedCommand("stats", StatsCommand::new),
            new NamedCommand("dump", DumpCommand::new),
            new NamedCommand("tail", TailCommand::new),
            new NamedCommand("verify", VerifyCommand::new),
            new NamedCommand("merge", MergeCommand::new),
            new NamedCommand("ship", ShipCommand::new),
            new NamedCommand("export", ExportCommand::new),
            new NamedCommand("simulate", SimulateCommand::new),
            new NamedCommand("journal", JournalCommand::new),
            new NamedCommand("listen", ListenCommand::new),
            new NamedCommand("tap", TapCommand::new),
            new NamedCommand("tap-report", TapReportCommand::new),
            new NamedCommand("node", NodeCommand::new),
            new NamedCommand("cluster", ClusterCommand::new),
            new NamedCommand("proxy", ProxyCommand::new),
            new NamedCommand("completion", CompletionCommand::new));

    @Spec
    CommandSpec spec;

    /**
     * {@code --log-level}, before or after the command's name: kvledger's own log lines at this
     * level and above ({@link Logs}); default info, debug with {@code KVLEDGER_DEBUG}.
     */
    @Option(names = "--log-level", paramLabel = "error|warn|info|debug", scope = CommandLine.ScopeType.INHERIT,
            converter = Logs.LevelOption.class,
            description = "log lines at this level and above, one line each on standard error (default: info); "
                    + "stack traces at debug only")
    void logLevel(Logs.Level value) {
        Logs.apply(value);
    }

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
    static CommandLine commandLine(PrintWriter out, PrintWriter err) {
        CommandLine cl = new CommandLine(new Main());
        for (NamedCommand c : COMMANDS) {
            cl.addSubcommand(c.name(), c.factory().get());
        }
        return configure(cl, out, err);
    }

    /**
     * The command line that runs {@code args}: when the first argument names a command of the
     * table, only that command is registered (picocli builds a command's model from its
     * annotations, classes and all, and building all of them is most of a journal command's
     * start); anything else (no command, {@code help}, an option, a misspelt name that picocli
     * suggests a command for) gets the whole table. The chosen command parses, runs and reports
     * errors exactly as it does in the whole table: its qualified name, its help and its exit codes
     * do not depend on its siblings.
     */
    static CommandLine commandLine(PrintWriter out, PrintWriter err, String... args) {
        if (args.length > 0) {
            for (NamedCommand c : COMMANDS) {
                if (c.name().equals(args[0])) {
                    CommandLine cl = new CommandLine(new Main());
                    cl.addSubcommand(c.name(), c.factory().get());
                    return configure(cl, out, err);
                }
            }
        }
        return commandLine(out, err);
    }

    /**
     * Sets the streams and the error handlers on {@code cl} and every subcommand it has now
     * (picocli does not pass them on to subcommands added later).
     */
    static CommandLine configure(CommandLine cl, PrintWriter out, PrintWriter err) {
        cl.setOut(out);
        cl.setErr(err);
        cl.setParameterExceptionHandler(Main::usageError);
        cl.setExecutionExceptionHandler(Main::failure);
        return cl;
    }

    /**
     * A usage error: one line naming the command, the nearest command or option to a mistyped one
     * if any is near ({@link Suggestions}), and where the help is.
     */
    private static int usageError(ParameterException ex, String[] args) {
        CommandLine cl = ex.getCommandLine();
        PrintWriter err = cl.getErr();
        err.println(cl.getCommandSpec().qualifiedName() + ": " + trimmed(ex.getMessage()));
        List<String> near = suggestions(ex);
        if (!near.isEmpty()) {
            err.println("Did you mean: " + String.join(" or ", near) + "?");
        }
        err.println("see '" + helpHint(cl) + "'");
        err.flush();
        return cl.getCommandSpec().exitCodeOnInvalidInput();
    }

    /**
     * What a mistyped command or option was probably meant to be, as the user would type it
     * ({@code kvledger hangs}, {@code --json}): a word in a command's place is compared with its
     * subcommands (with the launcher's {@code test} at the top), an option with its options.
     */
    static List<String> suggestions(ParameterException ex) {
        CommandLine cl = ex.getCommandLine();
        String word;
        if (ex instanceof HelpCommand.UnknownCommand u) {
            word = u.word;
        } else if (ex instanceof CommandLine.UnmatchedArgumentException u && !u.getUnmatched().isEmpty()) {
            word = u.getUnmatched().getFirst();
        } else {
            return List.of();
        }
        List<String> candidates = new ArrayList<>();
        String prefix = "";
        if (word.startsWith("-")) {
            word = word.contains("=") ? word.substring(0, word.indexOf('=')) : word;
            for (CommandLine.Model.OptionSpec o : cl.getCommandSpec().options()) {
                if (!o.hidden()) {
                    candidates.addAll(List.of(o.names()));
                }
            }
        } else if (!cl.getSubcommands().isEmpty()) {
            candidates.addAll(cl.getParent() == null ? HelpCommand.names(cl) : cl.getSubcommands().keySet());
            prefix = cl.getCommandSpec().qualifiedName() + " ";
        } else {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        for (String s : Suggestions.nearest(word, candidates)) {
            out.add(prefix + s);
        }
        return out;
    }

    /** Where the help of a command is: {@code kvledger help NAME} for a top-level command. */
    static String helpHint(CommandLine cl) {
        CommandLine parent = cl.getParent();
        if (parent == null) {
            return cl.getCommandName() + " --help";
        }
        if (parent.getParent() == null) {
            return parent.getCommandName() + " help " + cl.getCommandName();
        }
        return cl.getCommandSpec().qualifiedName() + " --help";
    }

    /**
     * An exception out of a command: one line naming the command. Exit status 2 for the project's
     * own exceptions and I/O errors (a journal, file or socket the command cannot use: their
     * messages name it), 1 for anything else (an internal error, named by its class).
     */
    private static int failure(Exception ex, CommandLine cl, CommandLine.ParseResult parsed) {
        PrintWriter err = cl.getErr();
        boolean ours = ex.getClass().getName().startsWith("io.kvledger.") || ex instanceof java.io.IOException
                || ex instanceof java.io.UncheckedIOException;
        String m = ex.getMessage();
        String text = ours && m != null ? m : "internal error: " + ex.getClass().getName() + (m == null ? "" : ": " + m);
        err.println(cl.getCommandSpec().qualifiedName() + ": " + trimmed(text));
        if (debug()) {
            ex.printStackTrace(err);
        }
        err.flush();
        return ours ? 2 : 1;
    }

    private static boolean debug() {
        return Logs.level() == Logs.Level.debug;
    }

    /** Whether {@code KVLEDGER_DEBUG} (or {@code -Dkvledger.debug=true}) asks for debug output. */
    static boolean debugFromEnvironment() {
        String env = System.getenv("KVLEDGER_DEBUG");
        return (env != null && !env.isEmpty() && !env.equals("0")) || Boolean.getBoolean("kvledger.debug");
    }

    /** The message without surrounding blanks (a JSON-lines error lists its bad lines below the first). */
    private static String trimmed(String message) {
        return message == null ? "" : message.strip();
    }

    /** Runs one command line and returns its exit code. */
    public static int run(PrintWriter out, PrintWriter err, String... args) {
        Logs.apply(Logs.defaultLevel());
        int code = commandLine(out, err, args).execute(args);
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
