package io.kvledger.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.concurrent.Callable;
import picocli.AutoComplete;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger completion bash|zsh}: prints the shell completion script (picocli's
 * {@link AutoComplete}) of the whole command table, the launcher's {@code test} included: command
 * names, each command's options and their enumerated values, files for paths. One script serves
 * both shells: under zsh it loads zsh's bash-completion emulation ({@code bashcompinit}).
 */
@Command(name = "completion", mixinStandardHelpOptions = true, sortOptions = false,
        description = {
            "Prints the shell completion script for bash or zsh: command names, options and their values.",
            "bash: source <(kvledger completion bash)   (or save it as "
                    + "~/.local/share/bash-completion/completions/kvledger)",
            "zsh:  source <(kvledger completion zsh)    (in ~/.zshrc, after compinit)",
            "Exit status: 0; 2 usage error."})
final class CompletionCommand implements Callable<Integer> {

    /** The shells the script is for. */
    enum Shell { bash, zsh }

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "SHELL", description = "bash or zsh")
    Shell shell;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        out.print(script(shell));
        out.flush();
        return 0;
    }

    /** The completion script for {@code shell}. */
    static String script(Shell shell) {
        CommandLine all = Main.commandLine(new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()));
        for (CommandSpec l : HelpCommand.launcherCommands()) {
            all.addSubcommand(l.name(), new CommandLine(l));
        }
        String script = AutoComplete.bash("kvledger", all);
        String use = shell == Shell.zsh
                ? "# zsh completion for kvledger: add `source <(kvledger completion zsh)` to ~/.zshrc\n"
                : "# bash completion for kvledger: `source <(kvledger completion bash)`, or save this as\n"
                        + "# ~/.local/share/bash-completion/completions/kvledger\n";
        return use + script;
    }
}
