package io.kvledger.cli;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;

/**
 * {@code kvledger help [COMMAND]}: the usage of the CLI or of one command, as picocli's own help
 * command prints it, and also of the launcher's own command ({@code test}, {@link #launcherCommands}),
 * which the launcher runs without the CLI. An unknown command is a usage error that suggests the
 * nearest command ({@link Suggestions}), or none.
 */
@Command(name = "help", helpCommand = true, mixinStandardHelpOptions = true,
        description = "Displays the help of the CLI, or of one command (the launcher's 'test' too).")
final class HelpCommand implements CommandLine.IHelpCommandInitializable2, Runnable {

    @Parameters(paramLabel = "COMMAND", arity = "0..1", description = "the command to show the help of")
    String command;

    private CommandLine self;
    private PrintWriter out;
    private CommandLine.Help.ColorScheme colors;

    /** A command name nobody knows: a usage error of the command line above, naming the word. */
    static final class UnknownCommand extends CommandLine.ParameterException {
        final String word;

        UnknownCommand(CommandLine cl, String word) {
            super(cl, "Unknown command '" + word + "'", null, word);
            this.word = word;
        }
    }

    /**
     * The commands of the {@code kvledger} launcher script itself (it handles them before the CLI
     * starts): their usage, for {@code help} and the completion script.
     */
    static List<CommandSpec> launcherCommands() {
        CommandSpec test = CommandSpec.create().name("test");
        test.addPositional(CommandLine.Model.PositionalParamSpec.builder().paramLabel("MAVEN_ARG").arity("0..*")
                .type(String[].class).description("passed on to mvn verify (-Dtest=Class, -pl modules/core ...)")
                .build());
        test.usageMessage().description(
                "Runs the whole test suite (a command of the ./kvledger launcher, not of the CLI): the vLLM bridge's "
                        + "pytest suite, then mvn verify on JDK 25. Run as root, it first installs the Debian packages "
                        + "the tests need (the launcher's test_packages).",
                "Exit status: Maven's when it fails, else 1 when pytest failed (or collected no tests), else 0.");
        return List.of(test);
    }

    @Override
    public void init(CommandLine helpCommandLine, CommandLine.Help.ColorScheme colorScheme, PrintWriter out,
                     PrintWriter err) {
        this.self = helpCommandLine;
        this.colors = colorScheme;
        this.out = out;
    }

    @Override
    public void run() {
        CommandLine parent = self.getParent();
        if (parent == null) {
            return;
        }
        if (command == null) {
            parent.usage(out, colors);
            return;
        }
        CommandLine sub = parent.getSubcommands().get(command);
        if (sub != null) {
            sub.usage(out, colors);
            return;
        }
        for (CommandSpec l : launcherCommands()) {
            if (l.name().equals(command)) {
                CommandLine cl = new CommandLine(l);
                cl.setCommandName(parent.getCommandName() + " " + l.name());
                cl.usage(out, colors);
                return;
            }
        }
        throw new UnknownCommand(parent, command);
    }

    /** The names {@code help} knows: the command line's commands and the launcher's. */
    static List<String> names(CommandLine top) {
        List<String> out = new ArrayList<>(top.getSubcommands().keySet());
        for (CommandSpec l : launcherCommands()) {
            out.add(l.name());
        }
        return out;
    }
}
