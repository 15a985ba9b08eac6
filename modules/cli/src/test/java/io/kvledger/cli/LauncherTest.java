package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code kvledger} launcher script run from another directory: relative paths mean the
 * caller's directory, not the checkout. The script is copied into a scratch checkout whose CLI jar
 * is a pathing jar over the test classpath (so the launcher finds it up to date and builds
 * nothing), and run with bash from a third directory.
 */
class LauncherTest {

    @TempDir
    Path tmp;

    private Path checkout;
    private Path caller;

    @BeforeEach
    void scratchCheckout() throws IOException {
        Path script = Path.of(System.getProperty("kvledger.launcher", "../../kvledger"));
        assertThat(script).as("the launcher script (system property kvledger.launcher)").isRegularFile();
        checkout = tmp.resolve("checkout");
        Files.createDirectories(checkout.resolve("modules/cli/target"));
        Files.copy(script, checkout.resolve("kvledger"));
        Files.writeString(checkout.resolve("pom.xml"), "<project/>\n");
        Files.setLastModifiedTime(checkout.resolve("pom.xml"), FileTime.fromMillis(System.currentTimeMillis() - 3_600_000));
        Manifest m = new Manifest();
        m.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        m.getMainAttributes().put(Attributes.Name.MAIN_CLASS, Main.class.getName());
        List<String> urls = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (!entry.isBlank()) {
                urls.add(Path.of(entry).toAbsolutePath().toUri().toString());
            }
        }
        m.getMainAttributes().put(Attributes.Name.CLASS_PATH, String.join(" ", urls));
        try (OutputStream o = Files.newOutputStream(checkout.resolve("modules/cli/target/kvledger.jar"));
             JarOutputStream j = new JarOutputStream(o, m)) {
            j.flush();
        }
        caller = tmp.resolve("elsewhere");
        Files.createDirectories(caller);
    }

    private record Ran(int code, String out, String err) {}

    /** Runs {@code bash <script> args...} in {@code cwd} with JAVA_HOME set to this JVM's. */
    private Ran launch(Path cwd, String script, String... args) throws Exception {
        return launch(NO_AOT, cwd, script, args);
    }

    /** Without the AOT cache: each scratch checkout would train one (seconds); one test is about it. */
    private static final java.util.Map<String, String> NO_AOT = java.util.Map.of("KVLEDGER_AOT", "0");

    /** The same with more environment variables. */
    private Ran launch(java.util.Map<String, String> env, Path cwd, String script, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("bash", script));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(cwd.toFile());
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        pb.environment().putAll(env);
        Path out = tmp.resolve("launch.out");
        Path err = tmp.resolve("launch.err");
        pb.redirectOutput(out.toFile()).redirectError(err.toFile());
        Process p = pb.start();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("the launcher ends").isTrue();
        return new Ran(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
    }

    @Test
    void relative_paths_resolve_from_the_callers_directory() throws Exception {
        String script = caller.relativize(checkout.resolve("kvledger")).toString(); // ../checkout/kvledger
        Ran sim = launch(caller, script, "simulate", "--seed", "2", "--requests", "2", "--faults", "drop=0", "--out", "out",
                "--time-limit-s", "5", "--idle-step-ms", "5000", "--tick-ms", "5000");
        assertThat(sim.code()).as(sim.err()).isZero();
        assertThat(sim.err()).doesNotContain("building the CLI jar");
        assertThat(caller.resolve("out/P0")).as("output lands where the user ran it").isDirectory();
        assertThat(caller.resolve("out/D0")).isDirectory();
        assertThat(checkout.resolve("out")).as("not in the checkout").doesNotExist();

        Ran stats = launch(caller, script, "stats", "out");
        assertThat(stats.code()).as(stats.err()).isZero();
        assertThat(stats.err()).doesNotContain("no such directory");

        Path sub = caller.resolve("sub");
        Files.createDirectories(sub);
        Ran dump = launch(sub, checkout.resolve("kvledger").toString(), "dump", "../out/P0", "--type", "header");
        assertThat(dump.code()).as(dump.err()).isZero();
        assertThat(dump.out()).contains("header");
    }

    /**
     * The JVM's AOT cache next to the jar never shows: the first command trains it (or, where the
     * JVM cannot make one, leaves a marker so that it is not tried on every command) and says
     * nothing, and neither the cache nor a cache the JVM cannot use (here garbage) changes a byte
     * of a command's output against a run without it ({@code KVLEDGER_AOT=0}).
     */
    @Test
    void the_aot_cache_changes_no_output() throws Exception {
        String script = checkout.resolve("kvledger").toString();
        Ran sim = launch(java.util.Map.of(), caller, script, "simulate", "--seed", "3", "--requests", "2",
                "--faults", "drop=0", "--out", "out", "--time-limit-s", "5", "--idle-step-ms", "5000", "--tick-ms", "5000");
        assertThat(sim.code()).as(sim.err()).isZero();
        assertThat(sim.err()).isEmpty();
        Path aot = checkout.resolve("modules/cli/target/kvledger.aot");
        Path failed = checkout.resolve("modules/cli/target/kvledger.aot.failed");
        assertThat(Files.exists(aot) || Files.exists(failed)).as("a cache or the marker of a failed training").isTrue();
        Ran plain = launch(NO_AOT, caller, script, "replay", "out");
        assertThat(plain.code()).as(plain.err()).isZero();
        assertThat(plain.out()).startsWith("replay: 2 journal(s)");
        assertThat(plain.err()).isEmpty();
        Ran cached = launch(java.util.Map.of(), caller, script, "replay", "out");
        assertThat(cached).isEqualTo(plain);
        Files.writeString(aot, "not an AOT cache\n");
        Ran garbage = launch(java.util.Map.of(), caller, script, "replay", "out");
        assertThat(garbage).isEqualTo(plain);
        assertThat(aot).as("a cache newer than the jar is not made again").hasContent("not an AOT cache");
    }

    @Test
    void a_missing_relative_directory_is_named_as_the_user_gave_it() throws Exception {
        Ran r = launch(caller, checkout.resolve("kvledger").toString(), "stats", "nowhere");
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err()).startsWith("kvledger stats: ").contains("nowhere");
    }

    /**
     * The launcher's count of free memory in blocks of at least one transparent huge page, over
     * a made-up /proc/buddyinfo (4 KiB pages, 2 MiB huge pages: orders 9 and up count): the
     * function is taken out of the script and run by bash on its own.
     */
    @Test
    void free_huge_page_memory_is_summed_from_the_orders_of_a_huge_page_and_up() throws Exception {
        Path pmd = Path.of("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isReadable(pmd)
                && Files.readString(pmd).strip().equals("2097152"), "a kernel with 2 MiB transparent huge pages");
        Path buddy = tmp.resolve("buddyinfo");
        Files.writeString(buddy, String.join("\n",
                "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 ",
                "Node 0, zone    DMA32     67      8      3      6      5      6      4      4      5      3    750 ",
                "Node 0, zone   Normal 335193  10053   5188   3784   2400   1536   1023    705    466    385   3809 ",
                ""));
        Path empty = tmp.resolve("empty");
        Files.writeString(empty, "");
        // DMA 1x2 + 3x4, DMA32 3x2 + 750x4, Normal 385x2 + 3809x4 MiB; order 8 and below not counted
        assertThat(freeHugePageMib(buddy)).isEqualTo(2 + 12 + 6 + 3000 + 770 + 15236);
        assertThat(freeHugePageMib(empty)).isZero();
        assertThat(freeHugePageMib(tmp.resolve("missing"))).as("unreadable: none").isZero();
    }

    private long freeHugePageMib(Path buddyinfo) throws Exception {
        return Long.parseLong(launcherFunction("free_hugepage_mib", buddyinfo.toString()));
    }

    /** Runs one function of the launcher script alone in bash, with one argument: what it printed. */
    private String launcherFunction(String name, String arg) throws Exception {
        return launcherFunction(name, arg, "").strip();
    }

    /** The same with INPUT on its standard input: all it printed, as it printed it. */
    private String launcherFunction(String name, String arg, String input) throws Exception {
        String script = Files.readString(checkout.resolve("kvledger"), StandardCharsets.UTF_8);
        int from = script.indexOf("\n" + name + "() {");
        assertThat(from).as("the launcher defines " + name).isNotNegative();
        int to = script.indexOf("\n}\n", from);
        String fn = script.substring(from + 1, to + 2);
        Process p = new ProcessBuilder("bash", "-c", fn + "\n" + name + " \"$1\"", "bash", arg)
                .redirectErrorStream(true).start();
        try (OutputStream in = p.getOutputStream()) {
            in.write(input.getBytes(StandardCharsets.UTF_8));
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        return out;
    }

    /**
     * Maven's output as it comes from {@code mvn -B} (recorded from a build of the CLI, cut short;
     * one plugin line in Maven 3.9's short form, the colour resets Maven 3.8 writes in batch mode,
     * a plugin's own output line and Windows line ends).
     */
    private static final String MAVEN_OUTPUT = String.join("\n",
            "\u001b[0m\u001b[0mWARNING: A terminally deprecated method in sun.misc.Unsafe has been called",
            "[INFO] Scanning for projects...",
            "[INFO] Reactor Build Order:",
            "[INFO] kvledger-core                                                      [jar]",
            "[INFO] ---------------------< io.kvledger:kvledger-core >----------------------",
            "[INFO] Building kvledger-core 0.1.0-SNAPSHOT                             [2/12]",
            "[INFO] --------------------------------[ jar ]---------------------------------",
            "[INFO] --- maven-enforcer-plugin:3.6.2:enforce (require-jdk-25) @ kvledger-core ---",
            "[INFO] --- maven-compiler-plugin:3.14.1:compile (default-compile) @ kvledger-core ---",
            "[INFO] Compiling 43 source files with javac [debug release 25] to target/classes",
            "[INFO] --- maven-compiler-plugin:3.14.1:compile (default-compile) @ kvledger-core ---",
            "[INFO] ",
            "[INFO] Building kvledger-rdma 0.1.0-SNAPSHOT                             [6/12]\r",
            "[INFO] --- exec-maven-plugin:3.5.1:exec (build-native) @ kvledger-rdma ---\r",
            "[native] built abi_probe into target/native",
            "[INFO] --- surefire:3.5.4:test (default-test) @ kvledger-rdma ---",
            "[INFO] --- frobnicate-maven-plugin:1.0:frob (x) @ kvledger-rdma ---",
            "\u001b[1m[INFO] Building kvledger-cli 0.1.0-SNAPSHOT                             [12/12]\u001b[m",
            "[INFO] --- maven-shade-plugin:3.6.0:shade (default) @ kvledger-cli ---",
            "[INFO] BUILD SUCCESS");

    /**
     * On a terminal, the build's progress is one line rewritten in place (carriage return, erase
     * to the end of line) each time Maven starts a module or a step, and ended by a newline; a
     * step repeated is not written again, lines that are no module or step change nothing.
     */
    @Test
    void maven_progress_on_a_terminal_is_one_line_naming_the_module_and_its_step() throws Exception {
        String erase = "\r\u001b[K";
        assertThat(launcherFunction("maven_progress", "tty", MAVEN_OUTPUT)).isEqualTo(String.join("",
                erase, "kvledger: building [2/12] kvledger-core (starting)",
                erase, "kvledger: building [2/12] kvledger-core (checking the JDK)",
                erase, "kvledger: building [2/12] kvledger-core (compiling)",
                erase, "kvledger: building [6/12] kvledger-rdma (starting)",
                erase, "kvledger: building [6/12] kvledger-rdma (building native code)",
                erase, "kvledger: building [6/12] kvledger-rdma (tests skipped)",
                erase, "kvledger: building [6/12] kvledger-rdma (frobnicate:frob)",
                erase, "kvledger: building [12/12] kvledger-cli (starting)",
                erase, "kvledger: building [12/12] kvledger-cli (making kvledger.jar)",
                "\n"));
        assertThat(launcherFunction("maven_progress", "tty", "[INFO] Scanning for projects...\n"))
                .as("no module: nothing, not even the newline").isEmpty();
    }

    /**
     * Ctrl-C during the build (SIGINT to the whole foreground group: Maven, tee, the progress
     * reader and the launcher) ends the progress line with a newline, and the reader dies of the
     * SIGINT, so that bash, waiting for the pipeline, stops too instead of carrying on. Run in a
     * session of its own with SIGINT at its default (python3 resets it: a runner may start the
     * tests with SIGINT ignored, and bash cannot trap a signal ignored on entry).
     */
    @Test
    void ctrl_c_during_the_build_ends_the_progress_line() throws Exception {
        String script = Files.readString(checkout.resolve("kvledger"), StandardCharsets.UTF_8);
        int from = script.indexOf("\nmaven_progress() {");
        String fn = script.substring(from + 1, script.indexOf("\n}\n", from) + 2);
        String body = fn + "\n( printf '%s\\n' '[INFO] Building kvledger-core 0.1.0-SNAPSHOT   [2/12]'; exec sleep 600 )"
                + " | maven_progress tty\necho 'the launcher carried on'\n";
        Process p = new ProcessBuilder("python3", "-c", "import os, signal, sys\n"
                + "signal.signal(signal.SIGINT, signal.SIG_DFL)\nos.setsid()\n"
                + "os.execvp('bash', ['bash', '-c', sys.argv[1]])", body).redirectErrorStream(true).start();
        p.getOutputStream().close();
        java.io.InputStream in = p.getInputStream();
        StringBuilder seen = new StringBuilder();
        byte[] buf = new byte[256];
        while (!seen.toString().contains("(starting)")) {
            int n = in.read(buf);
            assertThat(n).as("the progress line before the end, got %s", seen).isPositive();
            seen.append(new String(buf, 0, n, StandardCharsets.UTF_8));
        }
        Process kill = new ProcessBuilder("kill", "-INT", "--", "-" + p.pid()).inheritIO().start();
        assertThat(kill.waitFor()).as("kill -INT the group").isZero();
        seen.append(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        assertThat(seen.toString()).isEqualTo("\r\u001b[Kkvledger: building [2/12] kvledger-core (starting)\n");
        assertThat(p.exitValue()).as("bash died of SIGINT").isEqualTo(128 + 2);
    }

    /** Not on a terminal: a plain line per module, no escapes. */
    @Test
    void maven_progress_elsewhere_is_a_plain_line_per_module() throws Exception {
        assertThat(launcherFunction("maven_progress", "plain", MAVEN_OUTPUT)).isEqualTo(String.join("\n",
                "kvledger: building [2/12] kvledger-core",
                "kvledger: building [6/12] kvledger-rdma",
                "kvledger: building [12/12] kvledger-cli",
                ""));
    }

    /**
     * A build that fails keeps Maven's whole output in target/kvledger-build.log of the checkout,
     * prints Maven's errors and that file's path, and exits 2; a build run with standard error
     * not a terminal shows a line per module. The jar is made stale (pom.xml newer) and {@code mvn}
     * is a script that prints recorded output: no real build runs.
     */
    @Test
    void a_failed_build_names_the_file_that_keeps_mavens_output() throws Exception {
        Path bin = tmp.resolve("bin");
        Files.createDirectories(bin);
        Path recorded = tmp.resolve("recorded.txt");
        Files.writeString(recorded, MAVEN_OUTPUT.replace("[INFO] BUILD SUCCESS",
                "[ERROR] Failed to execute goal maven-shade-plugin: no space left\n[INFO] BUILD FAILURE") + "\n");
        Path mvn = bin.resolve("mvn");
        Files.writeString(mvn, "#!/bin/sh\ncat '" + recorded + "'\nexit 1\n");
        assertThat(mvn.toFile().setExecutable(true)).isTrue();
        Files.setLastModifiedTime(checkout.resolve("pom.xml"), FileTime.fromMillis(System.currentTimeMillis() + 60_000));

        Ran r = launch(java.util.Map.of("KVLEDGER_AOT", "0", "PATH", bin + File.pathSeparator + System.getenv("PATH")),
                caller, checkout.resolve("kvledger").toString(), "stats", "nowhere");
        Path log = checkout.toRealPath().resolve("target/kvledger-build.log");
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.out()).isEmpty();
        assertThat(r.err()).contains(
                "kvledger: building [2/12] kvledger-core\n",
                "kvledger: building [12/12] kvledger-cli\n",
                "[ERROR] Failed to execute goal maven-shade-plugin: no space left\n",
                "kvledger: building the CLI jar failed: Maven's whole output is in " + log + "\n");
        assertThat(r.err()).doesNotContain("\u001b", "[native]", "kvledger stats");
        assertThat(log).hasContent(Files.readString(recorded));
    }

    /**
     * The demo prints the commands to run next with the launcher as the user typed it: a relative
     * path as given (and the --out directory as given, under the caller's directory), or the bare
     * name when PATH found it, through a symlink; without --out it says the journals were left in a
     * new temporary directory and how to keep them elsewhere.
     */
    @Test
    void the_demo_prints_its_next_commands_with_the_launcher_as_typed() throws Exception {
        Ran rel = launch(caller, "../checkout/kvledger", "demo", "--seed", "42", "--requests", "40", "--read-requests", "0",
                "--out", "out");
        assertThat(rel.code()).as(rel.err()).isZero();
        assertThat(rel.out()).contains("journals: out (one directory per node: write/D0 P0)\n",
                "== ../checkout/kvledger hangs out/write ==\n").doesNotContain("temporary directory");
        assertThat(rel.out()).containsPattern("(?m)^(  |no hung request to inspect; follow any request with )"
                + "\\.\\./checkout/kvledger inspect out/write --request ");
        assertThat(caller.resolve("out/write/P0")).isDirectory();

        Path bin = tmp.resolve("bin");
        Path temp = tmp.resolve("temp");
        Files.createDirectories(bin);
        Files.createDirectories(temp);
        assertThat(checkout.resolve("kvledger").toFile().setExecutable(true)).isTrue();
        Files.createSymbolicLink(bin.resolve("kvledger"), checkout.resolve("kvledger"));
        // through a shell, which finds the command on the PATH given (ProcessBuilder would look on this JVM's)
        ProcessBuilder pb = new ProcessBuilder("sh", "-c", "exec kvledger \"$@\"", "sh", "demo", "--seed", "42", "--requests", "40", "--read-requests", "0")
                .directory(caller.toFile());
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        pb.environment().put("KVLEDGER_AOT", "0");
        pb.environment().put("TMPDIR", temp.toString());
        pb.environment().put("PATH", bin + File.pathSeparator + System.getenv("PATH"));
        Path out = tmp.resolve("path.out");
        pb.redirectOutput(out.toFile()).redirectError(tmp.resolve("path.err").toFile());
        Process p = pb.start();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        String o = Files.readString(out, StandardCharsets.UTF_8);
        assertThat(p.exitValue()).as(Files.readString(tmp.resolve("path.err"))).isZero();
        assertThat(o).containsPattern("(?m)^journals: " + java.util.regex.Pattern.quote(temp.toString())
                + "/kvledger-demo-\\S+ \\(one directory per node: write/D0 P0\\)\n  a new temporary directory, left there; "
                + "--out DIR writes them into DIR instead");
        assertThat(o).containsPattern("(?m)^== kvledger hangs \\S+/write ==$")
                .containsPattern("(?m)^(  |no hung request to inspect; follow any request with )kvledger inspect \\S+/write --request ");
    }

    /** The live node's heap size (KVLEDGER_NODE_HEAP, as -Xmx takes it) in MiB, for the huge-page test. */
    @Test
    void the_node_heap_size_is_read_in_mib() throws Exception {
        assertThat(launcherFunction("heap_mib", "2g")).isEqualTo("2048");
        assertThat(launcherFunction("heap_mib", "4G")).isEqualTo("4096");
        assertThat(launcherFunction("heap_mib", "512m")).isEqualTo("512");
        assertThat(launcherFunction("heap_mib", "08g")).as("not octal").isEqualTo("8192");
        assertThat(launcherFunction("heap_mib", "1t")).isEqualTo("1048576");
        assertThat(launcherFunction("heap_mib", "3000000k")).isEqualTo("2929");
        assertThat(launcherFunction("heap_mib", "2147483648")).as("bytes: not read, so no huge pages").isEmpty();
        assertThat(launcherFunction("heap_mib", "big")).isEmpty();
    }

    /**
     * Huge pages for the heap of the journal commands (the launcher's default when the kernel
     * offers them) change no byte of what a command prints, against a run without them; a
     * value of KVLEDGER_THP other than 0 or 1 means the default.
     */
    @Test
    void huge_pages_for_the_heap_change_no_output() throws Exception {
        String script = checkout.resolve("kvledger").toString();
        Ran sim = launch(caller, script, "simulate", "--seed", "4", "--requests", "2", "--faults", "drop=0", "--out", "out",
                "--time-limit-s", "5", "--idle-step-ms", "5000", "--tick-ms", "5000");
        assertThat(sim.code()).as(sim.err()).isZero();
        Ran off = launch(java.util.Map.of("KVLEDGER_AOT", "0", "KVLEDGER_THP", "0"), caller, script, "hangs", "out", "--json");
        assertThat(off.out()).startsWith("{");
        for (String thp : List.of("1", "auto", "yes")) {
            Ran on = launch(java.util.Map.of("KVLEDGER_AOT", "0", "KVLEDGER_THP", thp), caller, script, "hangs", "out", "--json");
            assertThat(on).as("KVLEDGER_THP=" + thp).isEqualTo(off);
        }
    }

    /** Temporary files go where TMPDIR says (the JVM alone would write to /tmp); a TMPDIR that is no directory is ignored. */
    @Test
    void temporary_files_go_where_tmpdir_says() throws Exception {
        String script = checkout.resolve("kvledger").toString();
        Path tmpdir = Files.createDirectories(tmp.resolve("big-disk"));
        Ran demo = launch(java.util.Map.of("KVLEDGER_AOT", "0", "TMPDIR", tmpdir.toString()), caller, script, "demo");
        assertThat(demo.code()).as(demo.err()).isZero();
        assertThat(demo.out()).contains("inspect " + tmpdir.resolve("kvledger-demo-"));
        Ran missing = launch(java.util.Map.of("KVLEDGER_AOT", "0", "TMPDIR", tmp.resolve("nowhere").toString()), caller,
                script, "demo");
        assertThat(missing.code()).as(missing.err()).isZero();
        assertThat(missing.out()).doesNotContain(tmp.resolve("nowhere").toString()).contains("kvledger-demo-");
    }
}
