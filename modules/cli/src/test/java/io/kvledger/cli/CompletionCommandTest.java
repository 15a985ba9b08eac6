package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.node.Chromium;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvledger completion bash|zsh} (the script completes in a real bash, and loads in a real
 * zsh when one is installed), the suggestions for a mistyped command or option, and
 * {@code help test}.
 */
class CompletionCommandTest {

    @TempDir
    Path dir;

    /**
     * Sources the bash script and completes {@code line} (the word under the cursor last): the
     * candidates (compopt's complaint that no completion is running is left out).
     */
    private List<String> bashComplete(Path script, String line) throws Exception {
        String[] words = line.split(" ", -1);
        StringBuilder arr = new StringBuilder();
        for (String w : words) {
            arr.append("'").append(w).append("' ");
        }
        String cmd = "source '" + script + "'; COMP_WORDS=(" + arr + "); COMP_CWORD=" + (words.length - 1)
                + "; COMP_LINE='" + line + "'; COMP_POINT=${#COMP_LINE}; _complete_kvledger kvledger 2>/dev/null; "
                + "printf '%s\\n' \"${COMPREPLY[@]}\"";
        return shell("bash", "--norc", "--noprofile", "-c", cmd);
    }

    private List<String> shell(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(5, TimeUnit.MINUTES)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        return out.lines().map(String::strip).filter(s -> !s.isEmpty()).toList();
    }

    @Test
    void theBashScriptCompletesCommandsOptionsAndValues() throws Exception {
        CliRun.Outcome o = CliRun.run("completion", "bash");
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.err()).isEmpty();
        assertThat(o.out()).startsWith("# bash completion for kvledger").contains("complete -F _complete_kvledger");
        Path script = dir.resolve("kvledger.bash");
        Files.writeString(script, o.out());
        assertThat(bashComplete(script, "kvledger han")).containsExactly("hangs");
        assertThat(bashComplete(script, "kvledger te")).as("the launcher's test").containsExactly("test");
        assertThat(bashComplete(script, "kvledger comp")).containsExactly("completion");
        assertThat(bashComplete(script, "kvledger completion ")).containsExactlyInAnyOrder("bash", "zsh");
        assertThat(bashComplete(script, "kvledger hangs --js")).containsExactly("--json");
        assertThat(bashComplete(script, "kvledger journal ")).contains("import", "export");
        assertThat(bashComplete(script, "kvledger ")).contains("hangs", "inspect", "serve", "proxy", "test", "help",
                "completion");
    }

    @Test
    void theZshScriptIsTheSameScriptAndRegistersUnderZsh() throws Exception {
        CliRun.Outcome o = CliRun.run("completion", "zsh");
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out()).startsWith("# zsh completion for kvledger");
        String bash = CliRun.run("completion", "bash").out();
        assertThat(o.out().substring(o.out().indexOf("\n#!") + 1)).isEqualTo(bash.substring(bash.indexOf("\n#!") + 1));
        Path zsh = Chromium.onPath("zsh");
        Assumptions.assumeTrue(zsh != null, "skipped: zsh is not installed (the ./kvledger launcher installs it for "
                + "the tests: apt-get install zsh)");
        Path script = dir.resolve("kvledger.zsh");
        Files.writeString(script, o.out());
        // bashcompinit turns `complete -F f kvledger` into a zsh completion of kvledger calling f
        List<String> got = shell(zsh.toString(), "-f", "-c", "autoload -U +X compinit && compinit -u -D; source '"
                + script + "'; print -r -- \"${_comps[kvledger]}\"; whence -w _complete_kvledger");
        assertThat(got).hasSize(2);
        assertThat(got.get(0)).contains("_complete_kvledger");
        assertThat(got.get(1)).isEqualTo("_complete_kvledger: function");
    }

    @Test
    void aMistypedCommandSuggestsTheNearestOrNone() {
        record Case(String[] args, String suggestion) {}
        for (Case c : List.of(
                new Case(new String[] {"hnags"}, "kvledger hangs"),
                new Case(new String[] {"insepct"}, "kvledger inspect"),
                new Case(new String[] {"rpelay"}, "kvledger replay"),
                new Case(new String[] {"stat"}, "kvledger stats"),
                new Case(new String[] {"proxi"}, "kvledger proxy"),
                new Case(new String[] {"insp"}, "kvledger inspect"),
                new Case(new String[] {"tset"}, "kvledger test"),
                new Case(new String[] {"completoin"}, "kvledger completion"),
                new Case(new String[] {"journal", "imprt"}, "kvledger journal import"),
                new Case(new String[] {"hangs", "--jsn", "DIR"}, "--json"),
                new Case(new String[] {"help", "tset"}, "kvledger test"),
                new Case(new String[] {"xyz"}, null),
                new Case(new String[] {"qqqq"}, null),
                new Case(new String[] {"frobnicate"}, null),
                new Case(new String[] {"help", "zzz"}, null))) {
            CliRun.Outcome o = CliRun.run(c.args());
            String what = String.join(" ", c.args());
            assertThat(o.code()).as(what).isEqualTo(2);
            List<String> lines = o.err().lines().toList();
            if (c.suggestion() == null) {
                assertThat(o.err()).as(what).doesNotContain("Did you mean");
                assertThat(lines).as(what).hasSize(2);
            } else {
                assertThat(lines).as(what).hasSize(3);
                assertThat(lines.get(1)).as(what).isEqualTo("Did you mean: " + c.suggestion() + "?");
            }
        }
        assertThat(CliRun.run("help", "zzz").err().lines().toList())
                .containsExactly("kvledger: Unknown command 'zzz'", "see 'kvledger --help'");
    }

    @Test
    void suggestionsAreByEditDistanceWithinReach() {
        assertThat(Suggestions.distance("hnags", "hangs")).isEqualTo(1);
        assertThat(Suggestions.distance("sever", "serve")).isEqualTo(2);
        assertThat(Suggestions.distance("", "tap")).isEqualTo(3);
        assertThat(Suggestions.nearest("tal", List.of("tap", "tail", "test"))).containsExactly("tap", "tail");
        assertThat(Suggestions.nearest("sever", List.of("serve", "verify", "merge"))).containsExactly("serve");
        assertThat(Suggestions.nearest("xyz", List.of("tap", "tail", "test"))).isEmpty();
        assertThat(Suggestions.nearest("ta", List.of("tap", "tail"))).as("two start with it: the nearest").containsExactly("tap");
        assertThat(Suggestions.nearest("insp", List.of("inspect", "serve"))).containsExactly("inspect");
    }

    @Test
    void helpKnowsTheLaunchersTest() {
        CliRun.Outcome o = CliRun.run("help", "test");
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out()).startsWith("Usage: kvledger test [MAVEN_ARG...]").contains("pytest").contains("mvn verify")
                .contains("test_packages");
        CliRun.Outcome top = CliRun.run("--help");
        assertThat(top.out()).contains("see 'kvledger help test'").contains("completion");
        assertThat(CliRun.run("help", "hangs").out()).startsWith("Usage: kvledger hangs");
    }
}
